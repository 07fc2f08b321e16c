// 16-bit conversions: the scalar ones in <lngrad/half.hpp> against the IEEE
// definition (nearest value, ties to even), and the SIMD ones of every target
// against the scalar ones, bit for bit.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

#include "kernels/kernels.hpp"
#include "lngrad/half.hpp"
#include "lngrad/lngrad.hpp"

namespace lngrad {
namespace {

bool is_nan16(std::uint16_t h, Dtype d) {
  return d == Dtype::float16 ? (h & 0x7C00) == 0x7C00 && (h & 0x3FF) : (h & 0x7F80) == 0x7F80 && (h & 0x7F);
}

double value16(std::uint16_t h, Dtype d) { return d == Dtype::float16 ? float16_to_float(h) : bfloat16_to_float(h); }
std::uint16_t round16(float f, Dtype d) { return d == Dtype::float16 ? float_to_float16(f) : float_to_bfloat16(f); }

// Independent oracle: the result is the representable value nearest to f
// (in double, exact for these formats), ties going to the even encoding;
// beyond the largest finite value, infinity as IEEE rounding defines it.
void expect_correctly_rounded(float f, Dtype d) {
  const std::uint16_t h = round16(f, d);
  if (std::isnan(f)) {
    EXPECT_TRUE(is_nan16(h, d)) << f;
    return;
  }
  const double v = value16(h, d);
  const double target = f;
  // Neighbours of h toward zero and away from zero (same sign).
  const std::uint16_t magnitude = h & 0x7FFF, sign = h & 0x8000;
  const double below = magnitude == 0 ? -value16(static_cast<std::uint16_t>(0x8000 ^ sign) | 1, d)
                                      : value16(static_cast<std::uint16_t>(sign | (magnitude - 1)), d);
  const double above = value16(static_cast<std::uint16_t>(sign | (magnitude + 1)), d);
  if (std::isinf(v)) {
    // Overflow: f must be at least halfway from the largest finite value to the next power step.
    ASSERT_GE(std::fabs(target), std::fabs(below) + (std::fabs(below) - std::fabs(value16(sign | (magnitude - 2), d))) / 2)
        << f;
    return;
  }
  const double err = std::fabs(v - target);
  ASSERT_LE(err, std::fabs(below - target)) << f;
  if (!std::isinf(above)) {
    ASSERT_LE(err, std::fabs(above - target)) << f;
    if (err == std::fabs(above - target) || err == std::fabs(below - target)) {
      EXPECT_EQ(h & 1, 0) << "tie not to even: " << f;
    }
  }
}

std::vector<float> test_floats() {
  std::vector<float> v = {0.0f, -0.0f, 1.0f, -1.0f, 65504.0f, 65519.99f, 65520.0f, 1e10f, -1e10f,
                          0x1p-24f, 0x1p-25f, 0x1.8p-25f, 0x1p-26f, 0x1p-14f, 0x1.ff8p-15f, 1e-30f,
                          INFINITY, -INFINITY, NAN, 3.0e38f, 0x1.01p0f, 0x1.0081p0f, 0x1.008p0f, 0x1.018p0f};
  // Every halfway point between consecutive values of both formats.
  for (std::uint32_t h = 0; h < 0x7C00; h += 7) {
    v.push_back(static_cast<float>((static_cast<double>(float16_to_float(static_cast<std::uint16_t>(h))) +
                                    float16_to_float(static_cast<std::uint16_t>(h + 1))) / 2));
  }
  for (std::uint32_t b = 0; b < 0x7F80; b += 5) {
    v.push_back(bits_float((b << 16) | 0x8000u));
    v.push_back(bits_float((b << 16) | 0x8001u));
  }
  std::mt19937 rng(3);
  for (int i = 0; i < 20000; ++i) v.push_back(bits_float(rng()));
  return v;
}

TEST(Conversions, ScalarRoundsToNearestEven) {
  for (float f : test_floats()) {
    expect_correctly_rounded(f, Dtype::float16);
    expect_correctly_rounded(f, Dtype::bfloat16);
  }
}

TEST(Conversions, ScalarWideningIsExactAndRoundTrips) {
  for (std::uint32_t h = 0; h < 0x10000; ++h) {
    const auto h16 = static_cast<std::uint16_t>(h);
    for (Dtype d : {Dtype::float16, Dtype::bfloat16}) {
      if (is_nan16(h16, d)) {
        EXPECT_TRUE(std::isnan(value16(h16, d)));
        continue;
      }
      EXPECT_EQ(round16(static_cast<float>(value16(h16, d)), d), h16) << std::hex << h;
    }
  }
  EXPECT_EQ(float16_to_float(0x0001), 0x1p-24f);  // smallest subnormal
  EXPECT_EQ(float16_to_float(0x7BFF), 65504.0f);
  EXPECT_EQ(bfloat16_to_float(0x3F80), 1.0f);
}

class ConversionsPerTarget : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override { set_max_target(GetParam()); }
  void TearDown() override { set_max_target(""); }
};

TEST_P(ConversionsPerTarget, SimdMatchesScalarBitForBit) {
  const kernels::KernelTable& k = kernels::active();
  ASSERT_EQ(std::string(k.target), GetParam());
  for (Dtype d : {Dtype::float16, Dtype::bfloat16}) {
    // Widening: all 65536 encodings (odd count exercises the tail).
    std::vector<std::uint16_t> all(65535);
    for (std::size_t i = 0; i < all.size(); ++i) all[i] = static_cast<std::uint16_t>(i);
    std::vector<float> wide(all.size());
    k.to_f32(d, all.data(), wide.data(), static_cast<std::int64_t>(all.size()));
    for (std::size_t i = 0; i < all.size(); ++i) {
      const double expect = value16(all[i], d);
      if (std::isnan(expect)) {
        ASSERT_TRUE(std::isnan(wide[i])) << std::hex << i;
      } else {
        ASSERT_EQ(float_bits(wide[i]), float_bits(static_cast<float>(expect))) << dtype_name(d) << std::hex << " " << i;
      }
    }
    // Narrowing.
    const std::vector<float> floats = test_floats();
    std::vector<std::uint16_t> narrow(floats.size());
    k.from_f32(d, floats.data(), narrow.data(), static_cast<std::int64_t>(floats.size()));
    for (std::size_t i = 0; i < floats.size(); ++i) {
      if (std::isnan(floats[i])) {
        ASSERT_TRUE(is_nan16(narrow[i], d));
      } else {
        ASSERT_EQ(narrow[i], round16(floats[i], d)) << dtype_name(d) << " " << floats[i];
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Targets, ConversionsPerTarget, ::testing::ValuesIn(available_targets()),
                         [](const ::testing::TestParamInfo<std::string>& info) { return info.param; });

}  // namespace
}  // namespace lngrad
