// AscendC's element types and LocalTensor, as kernel code sees them.
//
// LocalTensor<T> is a view of `count` elements: built by the caller from a
// pointer (code that calls the high-level APIs directly), or handed out by
// TQue/TBuf/PopStackBuffer inside a kernel launched through
// <lngrad/ascendc/launch.hpp>, where it lies in the core's unified buffer.
#pragma once

#include <cstddef>
#include <cstdint>
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

// A non-owning view of `count` elements of T. operator[] is an offset view
// (as on the device: tensor[pos] starts at element pos); operator() and
// GetValue/SetValue access one element. No bounds are checked here; the
// LayerNormGrad calls check every size against the tiling.
template <typename T>
class LocalTensor {
 public:
  LocalTensor() = default;
  LocalTensor(T* data, std::uint32_t count) : data_(data), size_(count) {}

  std::uint32_t GetSize() const { return size_; }
  void SetSize(std::uint32_t count) { size_ = count; }
  T GetValue(std::uint32_t index) const { return data_[index]; }
  void SetValue(std::uint32_t index, T value) const { data_[index] = value; }
  T& operator()(std::uint32_t index) const { return data_[index]; }
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
