// Data movement and the vector calls kernels around LayerNormGrad use, in
// CANN's names: DataCopy (GM <-> UB, UB -> UB, contiguous or block-strided),
// DataCopyPad, Duplicate, the element-wise arithmetic and Cast.
//
// Every call checks what the device requires: unified-buffer operands in
// this core's UB and 32-byte aligned, no operand touched past its tensor,
// DataCopy lengths in whole 32-byte blocks (the device silently rounds a
// shorter length down). Arithmetic on half is done in float and rounded to
// nearest-even once, as one device instruction rounds.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "lngrad/ascendc/kernel.hpp"
#include "lngrad/ascendc/kernel_runtime.hpp"
#include "lngrad/ascendc/types.hpp"

namespace AscendC {

namespace detail {

template <typename T>
Operand local(const char* role, const LocalTensor<T>& t, std::uint64_t used_bytes) {
  return {role, Side::local, t.GetPhyAddr(), t.GetLength(), used_bytes};
}
template <typename T>
Operand global(const char* role, const GlobalTensor<T>& t, std::uint64_t used_bytes) {
  return {role, Side::global, t.GetPhyAddr(), t.GetSize() * sizeof(T), used_bytes};
}

// Contiguous copy of count elements between two operands.
void copy_contiguous(const char* call, const Operand& dst, const Operand& src, std::uint64_t count,
                     std::uint32_t elem);
// Block-strided copy: blocks of block_bytes, gap bytes between blocks on
// each side.
void copy_blocks(const char* call, const Operand& dst, const Operand& src, std::uint64_t blocks,
                 std::uint64_t block_bytes, std::uint64_t src_gap, std::uint64_t dst_gap);
// DataCopyPad: blocks of block_bytes from GM into 32-byte-rounded UB blocks
// with left/right padding (pad_value of pad_bytes bytes when is_pad), or
// from such UB blocks back to GM.
struct PadLayout {
  std::uint64_t blocks, block_bytes, src_gap, dst_gap;
  std::uint32_t left_bytes, right_bytes, elem;
  bool is_pad;
  const void* pad_value;
};
void copy_pad_to_local(const Operand& dst, const Operand& src, const PadLayout& p);
void copy_pad_to_global(const Operand& dst, const Operand& src, const PadLayout& p);

template <typename T>
constexpr void check_vector_type() {
  static_assert(std::is_same_v<T, half> || std::is_same_v<T, float> || std::is_same_v<T, std::int32_t> ||
                    std::is_same_v<T, std::int16_t>,
                "AscendC vector calls: T must be half, float, int16_t or int32_t");
}

// Element i of an operand read as float (half widened exactly) and written back.
template <typename T>
float load(const T* p, std::uint64_t i) {
  return static_cast<float>(p[i]);
}
template <typename T>
void store(T* p, std::uint64_t i, float v) {
  if constexpr (std::is_integral_v<T>) {
    p[i] = static_cast<T>(v);
  } else {
    p[i] = T(v);
  }
}

// dst[i] = f(i) for count elements after the operands' checks. Integers
// are computed in their own type by the integral overloads below.
template <typename T, typename F>
void elementwise(const char* call, const LocalTensor<T>& dst, std::int32_t count, F&& f) {
  if (count < 0) kernel_fail(call, "count " + std::to_string(count) + " is negative");
  check_operand(call, local("dst", dst, std::uint64_t(count) * sizeof(T)));
  T* d = dst.GetPhyAddr();
  for (std::int32_t i = 0; i < count; ++i) f(d, static_cast<std::uint64_t>(i));
}

}  // namespace detail

// ---- DataCopy --------------------------------------------------------------------

struct DataCopyParams {
  DataCopyParams() = default;
  DataCopyParams(std::uint16_t count, std::uint16_t len, std::uint16_t srcStrideIn, std::uint16_t dstStrideIn)
      : blockCount(count), blockLen(len), srcStride(srcStrideIn), dstStride(dstStrideIn) {}
  std::uint16_t blockCount = 1;
  std::uint16_t blockLen = 0;   // 32-byte blocks
  std::uint16_t srcStride = 0;  // 32-byte blocks between the source's blocks
  std::uint16_t dstStride = 0;  // 32-byte blocks between the destination's blocks
};

template <typename T>
void DataCopy(const LocalTensor<T>& dst, const GlobalTensor<T>& src, std::uint32_t count) {
  const std::uint64_t bytes = std::uint64_t{count} * sizeof(T);
  detail::copy_contiguous("DataCopy(GM -> UB)", detail::local("dst", dst, bytes), detail::global("src", src, bytes),
                          count, sizeof(T));
}
template <typename T>
void DataCopy(const GlobalTensor<T>& dst, const LocalTensor<T>& src, std::uint32_t count) {
  const std::uint64_t bytes = std::uint64_t{count} * sizeof(T);
  detail::copy_contiguous("DataCopy(UB -> GM)", detail::global("dst", dst, bytes), detail::local("src", src, bytes),
                          count, sizeof(T));
}
template <typename T>
void DataCopy(const LocalTensor<T>& dst, const LocalTensor<T>& src, std::uint32_t count) {
  const std::uint64_t bytes = std::uint64_t{count} * sizeof(T);
  detail::copy_contiguous("DataCopy(UB -> UB)", detail::local("dst", dst, bytes), detail::local("src", src, bytes),
                          count, sizeof(T));
}

namespace detail {
template <typename T>
Operand operand(const char* role, const LocalTensor<T>& t, std::uint64_t used_bytes) {
  return local(role, t, used_bytes);
}
template <typename T>
Operand operand(const char* role, const GlobalTensor<T>& t, std::uint64_t used_bytes) {
  return global(role, t, used_bytes);
}

// DataCopyParams counts blocks, lengths and gaps in 32-byte blocks.
template <typename D, typename S>
void copy_with_params(const char* call, const D& dst, const S& src, const DataCopyParams& p) {
  constexpr std::uint64_t kBlock = 32;
  const std::uint64_t block_bytes = p.blockLen * kBlock;
  const std::uint64_t src_gap = p.srcStride * kBlock, dst_gap = p.dstStride * kBlock;
  copy_blocks(call, operand("dst", dst, strided_span(p.blockCount, block_bytes, dst_gap)),
              operand("src", src, strided_span(p.blockCount, block_bytes, src_gap)), p.blockCount, block_bytes,
              src_gap, dst_gap);
}
}  // namespace detail

template <typename T>
void DataCopy(const LocalTensor<T>& dst, const GlobalTensor<T>& src, const DataCopyParams& params) {
  detail::copy_with_params("DataCopy(GM -> UB, DataCopyParams)", dst, src, params);
}
template <typename T>
void DataCopy(const GlobalTensor<T>& dst, const LocalTensor<T>& src, const DataCopyParams& params) {
  detail::copy_with_params("DataCopy(UB -> GM, DataCopyParams)", dst, src, params);
}
template <typename T>
void DataCopy(const LocalTensor<T>& dst, const LocalTensor<T>& src, const DataCopyParams& params) {
  detail::copy_with_params("DataCopy(UB -> UB, DataCopyParams)", dst, src, params);
}

// ---- DataCopyPad: lengths in bytes, UB blocks rounded up to 32 bytes ---------------

struct DataCopyExtParams {
  DataCopyExtParams() = default;
  DataCopyExtParams(std::uint16_t count, std::uint32_t len, std::uint32_t srcStrideIn, std::uint32_t dstStrideIn,
                    std::uint32_t rsvIn)
      : blockCount(count), blockLen(len), srcStride(srcStrideIn), dstStride(dstStrideIn), rsv(rsvIn) {}
  std::uint16_t blockCount = 1;
  std::uint32_t blockLen = 0;   // bytes
  std::uint32_t srcStride = 0;  // GM side: bytes; UB side: 32-byte blocks
  std::uint32_t dstStride = 0;  // GM side: bytes; UB side: 32-byte blocks
  std::uint32_t rsv = 0;
};

template <typename T>
struct DataCopyPadExtParams {
  DataCopyPadExtParams() = default;
  DataCopyPadExtParams(bool isPadValue, std::uint8_t leftPadValue, std::uint8_t rightPadValue, T padValue)
      : isPad(isPadValue), leftPadding(leftPadValue), rightPadding(rightPadValue), paddingValue(padValue) {}
  bool isPad = false;
  std::uint8_t leftPadding = 0;   // elements
  std::uint8_t rightPadding = 0;  // elements
  T paddingValue{};
};

template <typename T>
void DataCopyPad(const LocalTensor<T>& dst, const GlobalTensor<T>& src, const DataCopyExtParams& dataCopyParams,
                 const DataCopyPadExtParams<T>& padParams) {
  const detail::PadLayout p{dataCopyParams.blockCount, dataCopyParams.blockLen,  dataCopyParams.srcStride,
                            dataCopyParams.dstStride,  padParams.leftPadding * std::uint32_t{sizeof(T)},
                            padParams.rightPadding * std::uint32_t{sizeof(T)}, sizeof(T), padParams.isPad,
                            &padParams.paddingValue};
  detail::copy_pad_to_local(detail::local("dst", dst, 0), detail::global("src", src, 0), p);
}
template <typename T>
void DataCopyPad(const GlobalTensor<T>& dst, const LocalTensor<T>& src, const DataCopyExtParams& dataCopyParams) {
  const detail::PadLayout p{dataCopyParams.blockCount, dataCopyParams.blockLen, dataCopyParams.srcStride,
                            dataCopyParams.dstStride,  0, 0, sizeof(T), false, nullptr};
  detail::copy_pad_to_global(detail::global("dst", dst, 0), detail::local("src", src, 0), p);
}

// ---- Vector calls on count elements ---------------------------------------------------

template <typename T>
void Duplicate(const LocalTensor<T>& dst, const T& scalarValue, const std::int32_t& count) {
  const T value = scalarValue;
  detail::elementwise("Duplicate", dst, count, [&](T* d, std::uint64_t i) { d[i] = value; });
}

namespace detail {
template <typename T, typename Op>
void binary(const char* call, const LocalTensor<T>& dst, const LocalTensor<T>& src0, const LocalTensor<T>& src1,
            std::int32_t count, Op op) {
  check_vector_type<T>();
  const std::uint64_t bytes = count > 0 ? std::uint64_t(count) * sizeof(T) : 0;
  check_operand(call, local("src0", src0, bytes));
  check_operand(call, local("src1", src1, bytes));
  const T* a = src0.GetPhyAddr();
  const T* b = src1.GetPhyAddr();
  elementwise(call, dst, count, [&](T* d, std::uint64_t i) {
    if constexpr (std::is_integral_v<T>) {
      d[i] = static_cast<T>(op(a[i], b[i]));
    } else {
      store(d, i, op(load(a, i), load(b, i)));
    }
  });
}
template <typename T, typename Op>
void unary(const char* call, const LocalTensor<T>& dst, const LocalTensor<T>& src, std::int32_t count, Op op) {
  check_vector_type<T>();
  check_operand(call, local("src", src, count > 0 ? std::uint64_t(count) * sizeof(T) : 0));
  const T* a = src.GetPhyAddr();
  elementwise(call, dst, count, [&](T* d, std::uint64_t i) {
    if constexpr (std::is_integral_v<T>) {
      d[i] = static_cast<T>(op(a[i]));
    } else {
      store(d, i, op(load(a, i)));
    }
  });
}
}  // namespace detail

template <typename T>
void Add(const LocalTensor<T>& dst, const LocalTensor<T>& src0, const LocalTensor<T>& src1, const std::int32_t& count) {
  detail::binary("Add", dst, src0, src1, count, [](auto a, auto b) { return a + b; });
}
template <typename T>
void Sub(const LocalTensor<T>& dst, const LocalTensor<T>& src0, const LocalTensor<T>& src1, const std::int32_t& count) {
  detail::binary("Sub", dst, src0, src1, count, [](auto a, auto b) { return a - b; });
}
template <typename T>
void Mul(const LocalTensor<T>& dst, const LocalTensor<T>& src0, const LocalTensor<T>& src1, const std::int32_t& count) {
  detail::binary("Mul", dst, src0, src1, count, [](auto a, auto b) { return a * b; });
}
template <typename T>
void Div(const LocalTensor<T>& dst, const LocalTensor<T>& src0, const LocalTensor<T>& src1, const std::int32_t& count) {
  detail::binary("Div", dst, src0, src1, count, [](auto a, auto b) { return a / b; });
}
template <typename T>
void Max(const LocalTensor<T>& dst, const LocalTensor<T>& src0, const LocalTensor<T>& src1, const std::int32_t& count) {
  detail::binary("Max", dst, src0, src1, count, [](auto a, auto b) { return a > b ? a : b; });
}
template <typename T>
void Min(const LocalTensor<T>& dst, const LocalTensor<T>& src0, const LocalTensor<T>& src1, const std::int32_t& count) {
  detail::binary("Min", dst, src0, src1, count, [](auto a, auto b) { return a < b ? a : b; });
}
template <typename T>
void Adds(const LocalTensor<T>& dst, const LocalTensor<T>& src, const T& scalarValue, const std::int32_t& count) {
  const float s = static_cast<float>(scalarValue);
  detail::unary("Adds", dst, src, count, [s](auto a) { return a + static_cast<decltype(a)>(s); });
}
template <typename T>
void Muls(const LocalTensor<T>& dst, const LocalTensor<T>& src, const T& scalarValue, const std::int32_t& count) {
  const float s = static_cast<float>(scalarValue);
  detail::unary("Muls", dst, src, count, [s](auto a) { return a * static_cast<decltype(a)>(s); });
}
template <typename T>
void Exp(const LocalTensor<T>& dst, const LocalTensor<T>& src, const std::int32_t& count) {
  detail::unary("Exp", dst, src, count, [](auto a) { return std::exp(a); });
}
template <typename T>
void Ln(const LocalTensor<T>& dst, const LocalTensor<T>& src, const std::int32_t& count) {
  detail::unary("Ln", dst, src, count, [](auto a) { return std::log(a); });
}
template <typename T>
void Abs(const LocalTensor<T>& dst, const LocalTensor<T>& src, const std::int32_t& count) {
  detail::unary("Abs", dst, src, count, [](auto a) { return a < 0 ? -a : a; });
}
template <typename T>
void Sqrt(const LocalTensor<T>& dst, const LocalTensor<T>& src, const std::int32_t& count) {
  detail::unary("Sqrt", dst, src, count, [](auto a) { return std::sqrt(a); });
}
template <typename T>
void Reciprocal(const LocalTensor<T>& dst, const LocalTensor<T>& src, const std::int32_t& count) {
  detail::unary("Reciprocal", dst, src, count, [](auto a) { return 1.0f / a; });
}

// ---- Cast between half and float -------------------------------------------------------

enum class RoundMode : std::uint8_t { CAST_NONE = 0, CAST_RINT, CAST_FLOOR, CAST_CEIL, CAST_ROUND, CAST_TRUNC, CAST_ODD };

// half -> float is exact; float -> half rounds to nearest-even (CAST_NONE
// or CAST_RINT, the modes kernels use for it); other modes are refused.
template <typename U, typename S>
void Cast(const LocalTensor<U>& dst, const LocalTensor<S>& src, const RoundMode& roundMode, const std::uint32_t& count) {
  static_assert((std::is_same_v<U, float> && std::is_same_v<S, half>) ||
                    (std::is_same_v<U, half> && std::is_same_v<S, float>) ||
                    (std::is_same_v<U, float> && std::is_same_v<S, float>),
                "AscendC::Cast: half <-> float only");
  if (std::is_same_v<U, half> && roundMode != RoundMode::CAST_NONE && roundMode != RoundMode::CAST_RINT) {
    detail::kernel_fail("Cast", "float -> half is modelled with CAST_NONE or CAST_RINT only, given mode " +
                                    std::to_string(static_cast<int>(roundMode)));
  }
  detail::check_operand("Cast", detail::local("src", src, std::uint64_t{count} * sizeof(S)));
  const S* s = src.GetPhyAddr();
  detail::elementwise("Cast", dst, static_cast<std::int32_t>(count),
                      [&](U* d, std::uint64_t i) { d[i] = U(static_cast<float>(s[i])); });
}

}  // namespace AscendC
