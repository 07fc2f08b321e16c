// Scalar element access for any storage dtype (row statistics, gamma, the
// final parameter gradients): O(rows + h) work, never the O(rows*h) path.
#pragma once

#include <cstdint>

#include "lngrad/half.hpp"
#include "lngrad/lngrad.hpp"

namespace lngrad {

inline double load_scalar(const void* p, Dtype dtype, std::int64_t i) {
  switch (dtype) {
    case Dtype::float64: return static_cast<const double*>(p)[i];
    case Dtype::float32: return static_cast<const float*>(p)[i];
    case Dtype::float16: return float16_to_float(static_cast<const std::uint16_t*>(p)[i]);
    case Dtype::bfloat16: return bfloat16_to_float(static_cast<const std::uint16_t*>(p)[i]);
  }
  return 0.0;
}

// A is float or double; 16-bit types round from float (exactly once when A is float).
template <typename A>
inline void store_scalar(void* p, Dtype dtype, std::int64_t i, A v) {
  switch (dtype) {
    case Dtype::float64: static_cast<double*>(p)[i] = static_cast<double>(v); return;
    case Dtype::float32: static_cast<float*>(p)[i] = static_cast<float>(v); return;
    case Dtype::float16: static_cast<std::uint16_t*>(p)[i] = float_to_float16(static_cast<float>(v)); return;
    case Dtype::bfloat16: static_cast<std::uint16_t*>(p)[i] = float_to_bfloat16(static_cast<float>(v)); return;
  }
}

}  // namespace lngrad
