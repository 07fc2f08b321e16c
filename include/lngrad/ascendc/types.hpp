// AscendC's element types and LocalTensor, as kernel code sees them.
//
// LocalTensor<T> is a view of `count` elements: built by the caller from a
// pointer (code that calls the high-level APIs directly), or handed out by
// TQue/TBuf/PopStackBuffer inside a kernel launched through
// <lngrad/ascendc/launch.hpp>, where it lies in the core's unified buffer.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <type_traits>

#include "lngrad/half.hpp"

namespace AscendC {

// ---- Element type and tensor view -----------------------------------------

// IEEE binary16 storage. Converts implicitly from any arithmetic value
// (through float, rounding to nearest-even) and to float (exactly).
class half {
 public:
  half() = default;
  template <typename U, typename = std::enable_if_t<std::is_arithmetic_v<U>>>
  half(U value) : bits_(lngrad::float_to_float16(static_cast<float>(value))) {}  // NOLINT(google-explicit-constructor)
  operator float() const { return lngrad::float16_to_float(bits_); }  // NOLINT(google-explicit-constructor)

  static half FromBits(std::uint16_t bits) {
    half h;
    h.bits_ = bits;
    return h;
  }
  std::uint16_t Bits() const { return bits_; }

 private:
  std::uint16_t bits_ = 0;
};
static_assert(sizeof(half) == 2 && std::is_trivially_copyable_v<half>);

// Where a tensor lives. Kernels see only the unified-buffer positions
// (VECIN, VECOUT, VECCALC) and GM; the cube positions exist so that code
// naming them compiles, and are refused at run time.
enum class TPosition : std::uint8_t {
  GM,
  A1,
  A2,
  B1,
  B2,
  C1,
  C2,
  CO1,
  CO2,
  VECIN,
  VECOUT,
  VECCALC,
  LCM = VECCALC,
  SPM,
  SHM = SPM,
  TSCM,
  C2PIPE2GM,
  C2PIPE2LOCAL,
  MAX,
};
using QuePosition = TPosition;

namespace detail {
// Raises the error every check raises: "<call>: <what>" (a launch adds the
// kernel and the core).
[[noreturn]] void kernel_fail(const char* call, const std::string& what);
[[noreturn]] void index_fail(const char* call, std::uint64_t index, std::uint64_t size);
}  // namespace detail

// A non-owning view of `count` elements of T. operator[] is an offset view
// (as on the device: tensor[pos] starts at element pos); operator() and
// GetValue/SetValue access one element, checked against the view's size.
template <typename T>
class LocalTensor {
 public:
  using PrimType = T;

  LocalTensor() = default;
  LocalTensor(T* data, std::uint32_t count) : data_(data), size_(count) {}

  std::uint32_t GetSize() const { return size_; }
  std::uint32_t GetLength() const { return size_ * static_cast<std::uint32_t>(sizeof(T)); }
  void SetSize(std::uint32_t count) { size_ = count; }
  T GetValue(std::uint32_t index) const { return data_[checked(index, "LocalTensor::GetValue")]; }
  void SetValue(std::uint32_t index, T value) const { data_[checked(index, "LocalTensor::SetValue")] = value; }
  T& operator()(std::uint32_t index) const { return data_[checked(index, "LocalTensor::operator()")]; }
  LocalTensor operator[](std::uint32_t offset) const {
    return LocalTensor(data_ + offset, offset < size_ ? size_ - offset : 0);
  }
  T* GetPhyAddr() const { return data_; }
  T* GetPhyAddr(std::uint32_t offset) const { return data_ + offset; }

  // The same bytes seen as U (the element count scales with the sizes).
  template <typename U>
  LocalTensor<U> ReinterpretCast() const {
    return LocalTensor<U>(reinterpret_cast<U*>(data_),
                          static_cast<std::uint32_t>(std::uint64_t{size_} * sizeof(T) / sizeof(U)));
  }

 private:
  std::uint32_t checked(std::uint32_t index, const char* call) const {
    if (index >= size_) detail::index_fail(call, index, size_);
    return index;
  }

  T* data_ = nullptr;
  std::uint32_t size_ = 0;
};

enum class DataFormat : std::uint8_t { ND = 0, NZ, NCHW, NC1HWC0, NHWC };

struct LayerNormGradShapeInfo {
  DataFormat dataFormat = DataFormat::ND;
};

namespace detail {

// Memory handed to an API call: data and its size in elements of the call's
// type (bytes for a tmp buffer).
struct Buffer {
  void* data;
  std::uint32_t count;
};

// Inside a kernel core: the unified buffer left after the pipe's InitBuffer
// calls (what CANN's APIs use when no sharedTmpBuffer is passed). Outside a
// kernel: {nullptr, 0}, and the high-level APIs allocate their own scratch.
Buffer kernel_stack_buffer();

}  // namespace detail

}  // namespace AscendC
