// Scalar conversions between float32 and the 16-bit storage types, rounding
// to nearest-even, with Inf and NaN preserved (NaNs become quiet NaNs).
// Header-only so that <lngrad/ascendc.hpp> and tools can use them inline.
#pragma once

#include <cstdint>
#include <cstring>

namespace lngrad {

inline std::uint32_t float_bits(float f) {
  std::uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  return u;
}

inline float bits_float(std::uint32_t u) {
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
}

inline float float16_to_float(std::uint16_t h) {
  const std::uint32_t sign = static_cast<std::uint32_t>(h & 0x8000u) << 16;
  const std::uint32_t magnitude = h & 0x7FFFu;
  if (magnitude >= 0x7C00u) return bits_float(sign | 0x7F800000u | (magnitude & 0x3FFu) << 13);  // Inf, NaN
  // Rebias by multiplying by 2^112: exact for normal and subnormal halves.
  return bits_float(sign | float_bits(bits_float(magnitude << 13) * 0x1p112f));
}

inline std::uint16_t float_to_float16(float f) {
  std::uint32_t u = float_bits(f);
  const std::uint32_t sign = (u >> 16) & 0x8000u;
  u &= 0x7FFFFFFFu;
  if (u >= 0x47800000u) {  // |f| >= 65536 (rounds to Inf), Inf or NaN
    return static_cast<std::uint16_t>(sign | (u > 0x7F800000u ? 0x7E00u : 0x7C00u));
  }
  if (u < 0x38800000u) {  // below the smallest normal half: let an FP add round
    const float shifted = bits_float(u) + 0.5f;  // 0.5 = 2^-1 aligns the half's last bit (2^-24)
    return static_cast<std::uint16_t>(sign | (float_bits(shifted) - 0x3F000000u));
  }
  const std::uint32_t odd = (u >> 13) & 1u;
  u += 0xC8000FFFu + odd;  // rebias exponent by -112 and round to nearest-even
  return static_cast<std::uint16_t>(sign | (u >> 13));
}

inline float bfloat16_to_float(std::uint16_t b) { return bits_float(static_cast<std::uint32_t>(b) << 16); }

inline std::uint16_t float_to_bfloat16(float f) {
  const std::uint32_t u = float_bits(f);
  if ((u & 0x7FFFFFFFu) > 0x7F800000u) return static_cast<std::uint16_t>((u >> 16) | 0x40u);  // quiet NaN
  return static_cast<std::uint16_t>((u + 0x7FFFu + ((u >> 16) & 1u)) >> 16);
}

}  // namespace lngrad
