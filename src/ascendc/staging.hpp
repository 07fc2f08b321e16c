// Moving rows between T storage (storageH elements a row, half or float)
// and contiguous float32 rows of originH elements in the scratch.
#pragma once

#include <cstdint>
#include <cstring>

#include "lngrad/half.hpp"

namespace AscendC::detail {

// dst[i*n + j] = float(src[i*stride + j]) for j < n. For float, dst may be
// src itself (compaction in place): rows move forward in order, so a row is
// never overwritten before it is read.
inline void widen_rows(const void* src, std::uint32_t type_size, std::uint64_t rows, std::uint64_t stride,
                       std::uint64_t n, float* dst) {
  if (type_size == 4) {
    const auto* s = static_cast<const float*>(src);
    for (std::uint64_t i = 0; i < rows; ++i) std::memmove(dst + i * n, s + i * stride, n * sizeof(float));
    return;
  }
  const auto* s = static_cast<const std::uint16_t*>(src);
  for (std::uint64_t i = 0; i < rows; ++i) {
    for (std::uint64_t j = 0; j < n; ++j) dst[i * n + j] = lngrad::float16_to_float(s[i * stride + j]);
  }
}

// dst[i*stride + j] = T(src[i*n + j]) for j < n and 0 for n <= j < stride
// (half rounds to nearest-even). For float, src may be the compacted rows
// inside dst (expansion in place): rows move backward, last row first.
inline void narrow_rows(const float* src, std::uint64_t rows, std::uint64_t n, std::uint64_t stride,
                        std::uint32_t type_size, void* dst) {
  if (type_size == 4) {
    auto* d = static_cast<float*>(dst);
    for (std::uint64_t i = rows; i-- > 0;) {
      std::memmove(d + i * stride, src + i * n, n * sizeof(float));
      std::memset(d + i * stride + n, 0, (stride - n) * sizeof(float));
    }
    return;
  }
  auto* d = static_cast<std::uint16_t*>(dst);
  for (std::uint64_t i = 0; i < rows; ++i) {
    for (std::uint64_t j = 0; j < n; ++j) d[i * stride + j] = lngrad::float_to_float16(src[i * n + j]);
    for (std::uint64_t j = n; j < stride; ++j) d[i * stride + j] = 0;
  }
}

}  // namespace AscendC::detail
