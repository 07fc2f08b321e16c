// The host stand-ins of CANN's types: half, LocalTensor, ge::Shape.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <vector>

#include "lngrad/ascendc.hpp"

namespace {

using AscendC::half;
using AscendC::LocalTensor;

TEST(AscendCTypes, HalfIsBinary16WithRoundToNearestEven) {
  EXPECT_EQ(half(1.0f).Bits(), 0x3C00);
  EXPECT_EQ(half(-2.0f).Bits(), 0xC000);
  EXPECT_EQ(half(65504.0f).Bits(), 0x7BFF);  // the largest finite half
  EXPECT_EQ(half(1e6f).Bits(), 0x7C00);      // overflows to +Inf
  // Halfway between 1 and 1 + 2^-10 goes to the even 1; halfway above
  // 1 + 2^-10 goes up to the even 1 + 2^-9.
  EXPECT_EQ(half(1.0f + 0x1p-11f).Bits(), 0x3C00);
  EXPECT_EQ(half(1.0f + 3 * 0x1p-11f).Bits(), 0x3C02);
  EXPECT_EQ(half(0x1p-24f).Bits(), 0x0001);  // the smallest subnormal
  EXPECT_EQ(float(half::FromBits(0x3555)), 0.333251953125f);
  EXPECT_TRUE(std::isnan(float(half(NAN))));
  const half h = 1e-4;  // epsilon written as a double literal, as kernels do
  EXPECT_EQ(h.Bits(), 0x068E);  // 1.0001659e-4, the nearest half
}

TEST(AscendCTypes, LocalTensorIsAViewWithDeviceIndexing) {
  std::vector<float> data = {0, 1, 2, 3, 4, 5, 6, 7};
  LocalTensor<float> t(data.data(), 8);
  EXPECT_EQ(t.GetSize(), 8u);
  EXPECT_EQ(t.GetPhyAddr(), data.data());
  EXPECT_EQ(t.GetValue(3), 3.0f);
  t.SetValue(3, 30.0f);
  EXPECT_EQ(data[3], 30.0f);
  t(4) = 40.0f;
  EXPECT_EQ(data[4], 40.0f);
  // operator[] is an offset view, as stackBuffer[pos] on the device.
  LocalTensor<float> tail = t[6];
  EXPECT_EQ(tail.GetPhyAddr(), data.data() + 6);
  EXPECT_EQ(tail.GetSize(), 2u);
  EXPECT_EQ(tail.GetValue(1), 7.0f);
  LocalTensor<std::uint8_t> raw = t.ReinterpretCast<std::uint8_t>();
  EXPECT_EQ(raw.GetSize(), 32u);
  EXPECT_EQ(raw.ReinterpretCast<float>().GetValue(6), 6.0f);
}

TEST(AscendCTypes, GeShape) {
  const ge::Shape s({2, 32, 16, 15});
  EXPECT_EQ(s.GetDimNum(), 4u);
  EXPECT_EQ(s.GetDim(2), 16);
  EXPECT_EQ(s.GetDim(9), 0);
  EXPECT_EQ(s.GetShapeSize(), 2 * 32 * 16 * 15);
  EXPECT_EQ(ge::Shape().GetShapeSize(), 0);
}

}  // namespace
