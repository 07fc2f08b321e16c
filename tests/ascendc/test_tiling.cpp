// Host tiling against CANN's formulas (FACTS: "Tmp sizes" and "Tiling"):
// hand-worked plans for a few shapes, then the formulas over a sweep of
// shapes, stack sizes, both type sizes and isReuseSource.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "lngrad/ascendc.hpp"

namespace {

using AscendC::tiling::LayerNormGradBetaTiling;
using AscendC::tiling::LayerNormGradTiling;
using AscendC::tiling::LayerNormTiling;

std::uint32_t float_bits(float f) {
  std::uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  return u;
}

ge::Shape shape(std::int64_t b, std::int64_t s, std::int64_t h, std::int64_t oh) { return ge::Shape({b, s, h, oh}); }

struct MinMax {
  std::uint32_t max, min;
};

MinMax grad_tmp(const ge::Shape& s, std::uint32_t type_size, bool reuse) {
  MinMax m{0, 0};
  AscendC::GetLayerNormGradMaxMinTmpSize(s, type_size, reuse, m.max, m.min);
  return m;
}

MinMax beta_tmp(const ge::Shape& s, std::uint32_t type_size, bool reuse) {
  MinMax m{0, 0};
  AscendC::GetLayerNormGradBetaMaxMinTmpSize(s, type_size, reuse, m.max, m.min);
  return m;
}

MinMax norm_tmp(const ge::Shape& s, std::uint32_t type_size, bool reuse) {
  MinMax m{0, 0};
  AscendC::GetLayerNormMaxMinTmpSize(s, type_size, reuse, m.max, m.min);
  return m;
}

// ---- Hand-worked -------------------------------------------------------------

TEST(AscendCTiling, LayerNormGradTmpSizesForSeed002sSampleShape) {
  // {2, 32, 16, 16}: B*S*H = 1024, H*H = 256. Bytes = buffers * base * typeSize.
  const ge::Shape s = shape(2, 32, 16, 16);
  EXPECT_EQ(grad_tmp(s, 4, false).max, 6u * 1024 * 4);
  EXPECT_EQ(grad_tmp(s, 4, false).min, 6u * 256 * 4);
  EXPECT_EQ(grad_tmp(s, 4, true).max, 4u * 1024 * 4);
  EXPECT_EQ(grad_tmp(s, 4, true).min, 4u * 256 * 4);
  EXPECT_EQ(grad_tmp(s, 2, false).max, 9u * 1024 * 2);
  EXPECT_EQ(grad_tmp(s, 2, false).min, 9u * 256 * 2);
  EXPECT_EQ(grad_tmp(s, 2, true).min, 9u * 256 * 2);  // reuse does not apply to half
  // B*S*H below H*H: the roles swap.
  const ge::Shape small = shape(1, 2, 64, 64);  // B*S*H = 128 < H*H = 4096
  EXPECT_EQ(grad_tmp(small, 4, false).max, 6u * 4096 * 4);
  EXPECT_EQ(grad_tmp(small, 4, false).min, 6u * 128 * 4);
}

TEST(AscendCTiling, LayerNormGradFloatAtTheMinimum) {
  // 6144 bytes / 4 / 6 buffers = 256 floats = 16 rows of 16, already a
  // multiple of 8 rows: 4 passes of 256, no tail.
  LayerNormGradTiling t;
  AscendC::GetLayerNormGradNDTilingInfo(shape(2, 32, 16, 16), 6144, 4, false, t);
  EXPECT_EQ(t.stackBufferSize, 6144u);
  EXPECT_EQ(t.bLength, 2u);
  EXPECT_EQ(t.sLength, 32u);
  EXPECT_EQ(t.hLength, 16u);
  EXPECT_EQ(t.originalHLength, 16u);
  EXPECT_EQ(t.oneCalSize, 256u);
  EXPECT_EQ(t.nohCalSize, 16u);
  EXPECT_EQ(t.loopNum, 4u);
  EXPECT_EQ(t.tailSize, 0u);
  EXPECT_EQ(t.nohTailSize, 0u);
  // Slots of 256 floats: BSH, pdVar, pdMean, x1, x2, x3; no half casts.
  EXPECT_EQ(t.tmpTensorBSHPos, 0u);
  EXPECT_EQ(t.pdVarTensorPos, 256u);
  EXPECT_EQ(t.pdMeanTensorPos, 512u);
  EXPECT_EQ(t.x1TensorPos, 768u);
  EXPECT_EQ(t.x2TensorPos, 1024u);
  EXPECT_EQ(t.x3TensorPos, 1280u);
  EXPECT_EQ(t.tmpTensorPos, 0u);
  EXPECT_EQ(t.tmpTensor1Pos, 0u);
  EXPECT_EQ(t.tmpTensor2Pos, 0u);
  for (std::uint32_t size : {t.tmpTensorBSHSize, t.pdVarTensorSize, t.pdMeanTensorSize, t.x1TensorSize,
                             t.x2TensorSize, t.x3TensorSize, t.tmpTensorSize, t.tmpTensor1Size, t.tmpTensor2Size}) {
    EXPECT_EQ(size, 256u);
  }
  EXPECT_EQ(t.lastDimValueBack, 0x3D800000u);        // 1/16 = 2^-4
  EXPECT_EQ(t.lastDimValueBackMulTwo, 0x3E000000u);  // 2/16 = 2^-3
}

TEST(AscendCTiling, LayerNormGradFloatReuseDropsX1AndX2) {
  // 4096 / 4 / 4 = 256 floats = 16 rows; x1/x2 are the inputs, x3 follows pdMean.
  LayerNormGradTiling t;
  AscendC::GetLayerNormGradNDTilingInfo(shape(2, 32, 16, 16), 4096, 4, true, t);
  EXPECT_EQ(t.oneCalSize, 256u);
  EXPECT_EQ(t.loopNum, 4u);
  EXPECT_EQ(t.pdVarTensorPos, 256u);
  EXPECT_EQ(t.pdMeanTensorPos, 512u);
  EXPECT_EQ(t.x1TensorPos, 0u);
  EXPECT_EQ(t.x2TensorPos, 0u);
  EXPECT_EQ(t.x3TensorPos, 768u);
}

TEST(AscendCTiling, LayerNormGradHalfRoundsRowsUpTo16) {
  // 4608 / 4 / 9 = 128 floats = 8 rows of 16, rounded UP to 16 rows: the
  // plan's 9 slots of 256 floats exceed the 1152 floats given (CANN's own
  // rounding; the kernel entry sizes its real use by the pass).
  LayerNormGradTiling t;
  AscendC::GetLayerNormGradNDTilingInfo(shape(2, 32, 16, 16), 4608, 2, false, t);
  EXPECT_EQ(t.nohCalSize, 16u);
  EXPECT_EQ(t.oneCalSize, 256u);
  EXPECT_EQ(t.loopNum, 4u);
  EXPECT_EQ(t.tmpTensorPos, 6u * 256);
  EXPECT_EQ(t.tmpTensor1Pos, 7u * 256);
  EXPECT_EQ(t.tmpTensor2Pos, 8u * 256);
  EXPECT_EQ(t.x3TensorPos, 5u * 256);
}

TEST(AscendCTiling, LayerNormGradWithTailAndPaddedRow) {
  // {1, 10, 24, 20}, 3000 bytes: 3000/4/6 = 125 floats -> 5 rows of 24 = 120
  // -> rounded up to 8 rows: oneCalSize 192. B*S*H = 240: one pass + 48 (2 rows).
  LayerNormGradTiling t;
  AscendC::GetLayerNormGradNDTilingInfo(shape(1, 10, 24, 20), 3000, 4, false, t);
  EXPECT_EQ(t.nohCalSize, 8u);
  EXPECT_EQ(t.oneCalSize, 192u);
  EXPECT_EQ(t.loopNum, 1u);
  EXPECT_EQ(t.tailSize, 48u);
  EXPECT_EQ(t.nohTailSize, 2u);
  EXPECT_EQ(t.lastDimValueBack, float_bits(1.0f / 20.0f));  // originH, not storageH
  EXPECT_EQ(t.lastDimValueBackMulTwo, float_bits(2.0f / 20.0f));
}

TEST(AscendCTiling, LayerNormGradBetaTmpSizes) {
  // max holds the input, min one row: float 2 float buffers, half 4.
  const ge::Shape s = shape(2, 32, 16, 16);
  EXPECT_EQ(beta_tmp(s, 4, false).max, 1024u * 4 * 2);
  EXPECT_EQ(beta_tmp(s, 4, false).min, 16u * 4 * 2);
  EXPECT_EQ(beta_tmp(s, 2, false).max, 1024u * 4 * 4);
  EXPECT_EQ(beta_tmp(s, 2, false).min, 16u * 4 * 4);
  EXPECT_EQ(beta_tmp(s, 4, true).min, beta_tmp(s, 4, false).min);  // isReuseSource changes nothing
}

TEST(AscendCTiling, LayerNormGradBetaFloat) {
  // 1000 bytes = 250 floats >= 2H; oneCalSize 250 -> 240 (10 rows of 24) =
  // the whole input: one pass.
  LayerNormGradBetaTiling t;
  AscendC::GetLayerNormGradBetaNDTilingInfo(shape(1, 10, 24, 20), 1000, 4, false, t);
  EXPECT_EQ(t.stackBufferSize, 250u);  // in floats
  EXPECT_EQ(t.bshLength, 240u);
  EXPECT_EQ(t.bsLength, 10u);
  EXPECT_EQ(t.oneCalSize, 240u);
  EXPECT_EQ(t.numberOfTmpBuf, 1u);
  EXPECT_EQ(t.loopRound, 1u);
  EXPECT_EQ(t.inputTailSize, 0u);
  EXPECT_EQ(t.inputTailPos, 240u);
  EXPECT_EQ(t.bsTailSize, 0u);
  EXPECT_EQ(t.bshCurLength, 240u);
  EXPECT_EQ(t.bsCurLength, 10u);
  EXPECT_EQ(t.gammaTempTensorPos, 0u);
  EXPECT_EQ(t.betaTempTensorPos, 0u);
  EXPECT_EQ(t.inputDyTmpTensorPos, 0u);
  EXPECT_EQ(t.resForGammaTmpTensorPos, 0u);
  EXPECT_EQ(t.originalHLength, 20u);
}

TEST(AscendCTiling, LayerNormGradBetaHalfWithTail) {
  // 1000 bytes = 250 floats; half: (250 - 2*32)/2 = 93 -> 64 (2 rows of 32).
  // {1, 5, 32, 20}: 160 elements = 2 passes of 64 and a tail of 32 (1 row).
  LayerNormGradBetaTiling t;
  AscendC::GetLayerNormGradBetaNDTilingInfo(shape(1, 5, 32, 20), 1000, 2, false, t);
  EXPECT_EQ(t.oneCalSize, 64u);
  EXPECT_EQ(t.numberOfTmpBuf, 2u);
  EXPECT_EQ(t.loopRound, 2u);
  EXPECT_EQ(t.inputTailSize, 32u);
  EXPECT_EQ(t.inputTailPos, 128u);
  EXPECT_EQ(t.bsTailSize, 1u);
  EXPECT_EQ(t.bsCurLength, 2u);
  EXPECT_EQ(t.gammaTempTensorPos, 0u);
  EXPECT_EQ(t.betaTempTensorPos, 32u);
  EXPECT_EQ(t.inputDyTmpTensorPos, 64u);
  EXPECT_EQ(t.resForGammaTmpTensorPos, 128u);
}

TEST(AscendCTiling, LayerNormTmpSizesForTheSampleShape) {
  // {2, 32, 16, 16} (CANN's LayerNorm sample): B*S*H = 1024 floats = 4096
  // bytes, a row 64 bytes, B*S = 64 floats = 256 bytes of mean and as many
  // of variance; 3 work buffers, 2 when a float source is reused.
  const ge::Shape s = shape(2, 32, 16, 16);
  EXPECT_EQ(norm_tmp(s, 4, false).max, 3u * 4096 + 2 * 256);
  EXPECT_EQ(norm_tmp(s, 4, false).min, 3u * 64 + 2 * 256);
  EXPECT_EQ(norm_tmp(s, 4, true).max, 2u * 4096 + 2 * 256);
  EXPECT_EQ(norm_tmp(s, 4, true).min, 2u * 64 + 2 * 256);
  EXPECT_EQ(norm_tmp(s, 2, false).max, 3u * 4096 + 2 * 256);  // sizes are float buffers for half too
  EXPECT_EQ(norm_tmp(s, 2, true).min, 3u * 64 + 2 * 256);     // reuse does not apply to half
  // Each part rounds up to 32 bytes: {1, 3, 8, 8} has 3 floats of mean (12 -> 32 bytes).
  EXPECT_EQ(norm_tmp(shape(1, 3, 8, 8), 4, false).max, 3u * 96 + 2 * 32);
  EXPECT_EQ(norm_tmp(shape(1, 3, 8, 8), 4, false).min, 3u * 32 + 2 * 32);
}

TEST(AscendCTiling, LayerNormFloatAtTheMinimum) {
  // 704 bytes = 176 floats; float keeps no statistics in the stack: 176 / 3
  // = 58 -> 48 (3 rows of 16). 1024 elements: 21 passes of 48 and a 16 tail.
  LayerNormTiling t;
  AscendC::GetLayerNormNDTilingInfo(shape(2, 32, 16, 16), 704, 4, false, t);
  EXPECT_EQ(t.bLength, 2u);
  EXPECT_EQ(t.sLength, 32u);
  EXPECT_EQ(t.hLength, 16u);
  EXPECT_EQ(t.originalHLength, 16u);
  EXPECT_EQ(t.inputXSize, 1024u);
  EXPECT_EQ(t.meanVarSize, 64u);
  EXPECT_EQ(t.numberOfTmpBuf, 3u);
  EXPECT_EQ(t.meanTmpTensorPos, 0u);
  EXPECT_EQ(t.meanTmpTensorSize, 64u);
  EXPECT_EQ(t.varianceTmpTensorPos, 64u);
  EXPECT_EQ(t.varianceTmpTensorSize, 64u);
  EXPECT_EQ(t.tmpBufSize, 176u);
  EXPECT_EQ(t.oneTmpSize, 48u);
  EXPECT_EQ(t.firstTmpStartPos, 0u);
  EXPECT_EQ(t.secondTmpStartPos, 48u);
  EXPECT_EQ(t.thirdTmpStartPos, 96u);
  EXPECT_EQ(t.loopRound, 21u);
  EXPECT_EQ(t.inputRoundSize, 48u);
  EXPECT_EQ(t.inputTailSize, 16u);
  EXPECT_EQ(t.inputTailPos, 1008u);
  EXPECT_EQ(t.meanVarRoundSize, 3u);
  EXPECT_EQ(t.meanVarTailSize, 1u);
  EXPECT_EQ(t.meanVarTailPos, 63u);
  EXPECT_EQ(t.bshCurLength, 48u);
  EXPECT_EQ(t.bsCurLength, 3u);
  EXPECT_EQ(t.lastDimValueBack, 0.0625f);
}

TEST(AscendCTiling, LayerNormHalfKeepsFloatStatisticsFirst) {
  // 704 bytes = 176 floats: mean and variance take 2 * 64, the 3 buffers
  // share 48: one row of 16 each. 64 passes, no tail.
  LayerNormTiling t;
  AscendC::GetLayerNormNDTilingInfo(shape(2, 32, 16, 16), 704, 2, false, t);
  EXPECT_EQ(t.oneTmpSize, 16u);
  EXPECT_EQ(t.firstTmpStartPos, 128u);
  EXPECT_EQ(t.secondTmpStartPos, 144u);
  EXPECT_EQ(t.thirdTmpStartPos, 160u);
  EXPECT_EQ(t.loopRound, 64u);
  EXPECT_EQ(t.inputTailSize, 0u);
  EXPECT_EQ(t.inputTailPos, 1024u);
  EXPECT_EQ(t.meanVarRoundSize, 1u);
  EXPECT_EQ(t.meanVarTailPos, 64u);
}

TEST(AscendCTiling, LayerNormReuseCapAndPaddedRow) {
  // Float reuse: 2 buffers. {1, 3, 24, 20}, 4000 bytes = 1000 floats / 2 =
  // 500 -> 480 rows' worth, capped at the whole input (72): one pass.
  LayerNormTiling t;
  AscendC::GetLayerNormNDTilingInfo(shape(1, 3, 24, 20), 4000, 4, true, t);
  EXPECT_EQ(t.numberOfTmpBuf, 2u);
  EXPECT_EQ(t.oneTmpSize, 72u);
  EXPECT_EQ(t.secondTmpStartPos, 72u);
  EXPECT_EQ(t.thirdTmpStartPos, 144u);  // CANN sets it even when only two buffers are used
  EXPECT_EQ(t.loopRound, 1u);
  EXPECT_EQ(t.inputTailSize, 0u);
  EXPECT_EQ(t.meanTmpTensorSize, 8u);   // 3 rows rounded up to a 32-byte block
  EXPECT_EQ(t.lastDimValueBack, 1.0f / 20.0f);  // originH, not storageH
}

TEST(AscendCTiling, LayerNormRefusesAStackWithoutARow) {
  // Half {2, 32, 16, 16}: 128 floats of statistics + 3 rows of 16 = 704 bytes.
  LayerNormTiling t;
  try {
    AscendC::GetLayerNormNDTilingInfo(shape(2, 32, 16, 16), 700, 2, false, t);
    ADD_FAILURE() << "no error";
  } catch (const lngrad::Error& e) {
    EXPECT_STREQ(e.what(),
                 "GetLayerNormNDTilingInfo: stackBufferSize: expected at least 704 bytes (float mean and variance of "
                 "64 rows each, then 3 float rows of storageH 16), given 700");
  }
  try {
    AscendC::GetLayerNormNDTilingInfo(shape(2, 32, 16, 16), 124, 4, true, t);
    ADD_FAILURE() << "no error";
  } catch (const lngrad::Error& e) {
    EXPECT_STREQ(e.what(),
                 "GetLayerNormNDTilingInfo: stackBufferSize: expected at least 128 bytes (2 float rows of storageH "
                 "16), given 124");
  }
}

// ---- The formulas over a sweep -------------------------------------------------

struct Case {
  std::uint32_t b, s, h, oh;
};

const Case kShapes[] = {{1, 1, 8, 8},   {1, 8, 8, 8},    {2, 32, 16, 16}, {3, 7, 16, 5},  {1, 100, 32, 31},
                        {4, 9, 64, 64}, {2, 3, 128, 100}, {5, 17, 48, 48}, {1, 1, 256, 256}};

TEST(AscendCTiling, FormulasOverShapesStackSizesTypesAndReuse) {
  int plans = 0, with_tail = 0, multi_pass = 0;
  for (const Case& c : kShapes) {
    const ge::Shape s = shape(c.b, c.s, c.h, c.oh);
    const std::uint64_t bsh = std::uint64_t{c.b} * c.s * c.h, hh = std::uint64_t{c.h} * c.h;
    for (std::uint32_t ts : {2u, 4u}) {
      if ((c.h * ts) % 32 != 0) continue;
      for (bool reuse : {false, true}) {
        const std::uint64_t blocks = ts == 2 ? 9 : (reuse ? 4 : 6);
        const MinMax m = grad_tmp(s, ts, reuse);
        EXPECT_EQ(m.max, blocks * std::max(bsh, hh) * ts);
        EXPECT_EQ(m.min, blocks * std::min(bsh, hh) * ts);
        for (std::uint32_t stack : {m.min, (m.min + m.max) / 2, m.max, m.max + 1000}) {
          LayerNormGradTiling t;
          if (stack / 4 / blocks < c.h) {
            // Only CANN's half minimum for a single row (9 * H * 2 bytes,
            // half a float row per buffer) falls below one row: refused.
            EXPECT_TRUE(ts == 2 && bsh == c.h && stack == m.min);
            EXPECT_THROW(AscendC::GetLayerNormGradNDTilingInfo(s, stack, ts, reuse, t), lngrad::Error);
            continue;
          }
          AscendC::GetLayerNormGradNDTilingInfo(s, stack, ts, reuse, t);
          const std::uint64_t fit_rows = stack / 4 / blocks / c.h;  // whole rows the buffers hold
          const std::uint64_t block = ts == 4 ? 8 : 16;
          const std::string at = "shape {" + std::to_string(c.b) + "," + std::to_string(c.s) + "," +
                                 std::to_string(c.h) + "," + std::to_string(c.oh) + "} ts " + std::to_string(ts) +
                                 " reuse " + std::to_string(reuse) + " stack " + std::to_string(stack);
          ASSERT_GT(fit_rows, 0u) << at;
          EXPECT_EQ(t.nohCalSize, (fit_rows + block - 1) / block * block) << at;
          EXPECT_EQ(t.oneCalSize, t.nohCalSize * c.h) << at;
          EXPECT_EQ(t.loopNum, bsh / t.oneCalSize) << at;
          EXPECT_EQ(t.tailSize, bsh % t.oneCalSize) << at;
          EXPECT_EQ(t.nohTailSize, t.tailSize / c.h) << at;
          const std::uint32_t one = t.oneCalSize;
          EXPECT_EQ(t.pdVarTensorPos, one) << at;
          EXPECT_EQ(t.pdMeanTensorPos, 2 * one) << at;
          const bool drop_x12 = reuse && ts == 4;
          EXPECT_EQ(t.x1TensorPos, drop_x12 ? 0 : 3 * one) << at;
          EXPECT_EQ(t.x2TensorPos, drop_x12 ? 0 : 4 * one) << at;
          EXPECT_EQ(t.x3TensorPos, drop_x12 ? 3 * one : 5 * one) << at;
          EXPECT_EQ(t.tmpTensor2Pos, ts == 2 ? 8 * one : 0) << at;
          EXPECT_EQ(t.lastDimValueBack, float_bits(1.0f / static_cast<float>(c.oh))) << at;
          ++plans;
          with_tail += t.tailSize != 0 && t.loopNum > 0;
          multi_pass += t.loopNum > 1;
        }
      }
      const MinMax mb = beta_tmp(s, ts, false);
      const std::uint64_t bufs = ts == 2 ? 4 : 2;
      EXPECT_EQ(mb.max, bsh * 4 * bufs);
      EXPECT_EQ(mb.min, std::uint64_t{c.h} * 4 * bufs);
      for (std::uint32_t stack : {mb.min, mb.min + 4 * c.h * 3 + 12, (mb.min + mb.max) / 2, mb.max}) {
        LayerNormGradBetaTiling t;
        AscendC::GetLayerNormGradBetaNDTilingInfo(s, stack, ts, false, t);
        const std::uint64_t floats = stack / 4;
        std::uint64_t one = ts == 2 ? (floats - 2 * c.h) / 2 : floats;
        one = std::min<std::uint64_t>(one / c.h * c.h, bsh);
        EXPECT_EQ(t.stackBufferSize, floats);
        EXPECT_EQ(t.oneCalSize, one);
        EXPECT_EQ(t.loopRound, bsh / one);
        EXPECT_EQ(t.inputTailSize, bsh % one);
        EXPECT_EQ(t.inputTailPos, bsh - bsh % one);
        EXPECT_EQ(t.bsTailSize, bsh % one / c.h);
        EXPECT_EQ(t.bsCurLength, one / c.h);
        EXPECT_EQ(t.resForGammaTmpTensorPos, ts == 2 ? 2 * c.h + one : 0);
        ++plans;
        with_tail += t.inputTailSize != 0;
      }
    }
  }
  // The sweep reaches the interesting plans, not only single passes.
  EXPECT_GT(plans, 100);
  EXPECT_GT(with_tail, 5);
  EXPECT_GT(multi_pass, 10);
}

// LayerNorm, written from CANN's rules as a second reading: the statistics
// and buffers in 32-byte blocks; the half stack starts with float mean and
// variance; passes of whole rows.
TEST(AscendCTiling, LayerNormFormulasOverShapesStackSizesTypesAndReuse) {
  int plans = 0, with_tail = 0, multi_pass = 0;
  auto block32 = [](std::uint64_t bytes) { return (bytes + 31) / 32 * 32; };
  for (const Case& c : kShapes) {
    const ge::Shape s = shape(c.b, c.s, c.h, c.oh);
    const std::uint64_t rows = std::uint64_t{c.b} * c.s, bsh = rows * c.h;
    for (std::uint32_t ts : {2u, 4u}) {
      for (bool reuse : {false, true}) {
        const std::uint64_t bufs = reuse && ts == 4 ? 2 : 3;
        const MinMax m = norm_tmp(s, ts, reuse);
        EXPECT_EQ(m.max, bufs * block32(bsh * 4) + 2 * block32(rows * 4));
        EXPECT_EQ(m.min, bufs * block32(c.h * 4) + 2 * block32(rows * 4));
        for (std::uint32_t stack : {m.min, m.min + 4 * c.h * 5 + 7, (m.min + m.max) / 2, m.max, m.max + 1000}) {
          const std::string at = "shape {" + std::to_string(c.b) + "," + std::to_string(c.s) + "," +
                                 std::to_string(c.h) + "," + std::to_string(c.oh) + "} ts " + std::to_string(ts) +
                                 " reuse " + std::to_string(reuse) + " stack " + std::to_string(stack);
          LayerNormTiling t;
          AscendC::GetLayerNormNDTilingInfo(s, stack, ts, reuse, t);
          const std::uint64_t stats = (rows + 7) / 8 * 8;
          const std::uint64_t first = ts == 2 ? 2 * stats : 0;
          const std::uint64_t one = std::min((stack / 4 - first) / bufs / c.h * c.h, bsh);
          EXPECT_EQ(t.tmpBufSize, stack / 4) << at;
          EXPECT_EQ(t.meanTmpTensorSize, stats) << at;
          EXPECT_EQ(t.varianceTmpTensorPos, stats) << at;
          EXPECT_EQ(t.oneTmpSize, one) << at;
          EXPECT_EQ(t.firstTmpStartPos, first) << at;
          EXPECT_EQ(t.thirdTmpStartPos, first + 2 * one) << at;
          EXPECT_EQ(t.loopRound, bsh / one) << at;
          EXPECT_EQ(t.inputTailSize, bsh % one) << at;
          EXPECT_EQ(t.inputTailPos, bsh - bsh % one) << at;
          EXPECT_EQ(t.meanVarRoundSize, one / c.h) << at;
          EXPECT_EQ(t.meanVarTailSize, bsh % one / c.h) << at;
          EXPECT_EQ(t.meanVarTailPos, rows - bsh % one / c.h) << at;
          EXPECT_EQ(t.bsCurLength, one / c.h) << at;
          EXPECT_EQ(t.lastDimValueBack, 1.0f / static_cast<float>(c.oh)) << at;
          // The plan's buffers lie inside the stack.
          EXPECT_LE(first + bufs * one, t.tmpBufSize) << at;
          ++plans;
          with_tail += t.inputTailSize != 0 && t.loopRound > 0;
          multi_pass += t.loopRound > 1;
        }
      }
    }
  }
  EXPECT_EQ(plans, 9 * 2 * 2 * 5);
  EXPECT_GT(with_tail, 10);
  EXPECT_GT(multi_pass, 20);
}

}  // namespace
