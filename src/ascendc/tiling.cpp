// Host tiling for LayerNorm, LayerNormGrad and LayerNormGradBeta: the numbers CANN's
// tiling functions return on the classic chips, so that host code ported
// from a device project plans the same passes. Arithmetic is 64-bit; a
// result that CANN would have wrapped in its uint32_t fields is refused.
#include <cstring>
#include <string>

#include "ascendc/check.hpp"
#include "lngrad/ascendc.hpp"

namespace AscendC {

namespace {

using detail::Refuser;

struct Dims {
  std::uint64_t b, s, h, origin_h;
  std::uint64_t rows() const { return b * s; }
  std::uint64_t bsh() const { return b * s * h; }
};

// CANN's common host checks: typeSize 2 or 4, exactly 4 dims, each >= 1.
Dims check_shape(const Refuser& r, const ge::Shape& shape, std::uint32_t type_size) {
  if (type_size != 2 && type_size != 4) r.fail("typeSize", "2 (half) or 4 (float)", std::to_string(type_size));
  if (shape.GetDimNum() != 4) {
    r.fail("srcShape", "4 dims {B, S, storageH, originH}", std::to_string(shape.GetDimNum()) + " dims");
  }
  std::uint64_t d[4];
  for (std::size_t i = 0; i < 4; ++i) {
    const std::int64_t v = shape.GetDim(i);
    if (v < 1 || v > static_cast<std::int64_t>(UINT32_MAX)) {
      r.fail("srcShape[" + std::to_string(i) + "]", "a value in [1, 4294967295]", std::to_string(v));
    }
    d[i] = static_cast<std::uint64_t>(v);
  }
  const Dims dims{d[0], d[1], d[2], d[3]};
  // Each factor is below 2^32: check B*S before multiplying by storageH so
  // the 64-bit product cannot wrap.
  r.fits_u32("srcShape: B*S", dims.rows());
  r.fits_u32("srcShape: B*S*storageH", dims.bsh());
  return dims;
}

// Float-sized work buffers LayerNormGrad keeps per element of a pass.
std::uint64_t grad_buffer_count(std::uint32_t type_size, bool reuse) {
  if (type_size == 2) return 9;  // isReuseSource does not apply to half
  return reuse ? 4 : 6;
}

std::uint64_t align_up(std::uint64_t n, std::uint64_t to) { return (n + to - 1) / to * to; }

// LayerNorm's float work buffers of a pass: x - mean, its square, the
// normalized row; reusing a float source saves one.
std::uint64_t norm_buffer_count(std::uint32_t type_size, bool reuse) { return reuse && type_size == 4 ? 2 : 3; }

std::uint32_t float_bits(float f) {
  std::uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  return u;
}

}  // namespace

void GetLayerNormGradMaxMinTmpSize(const ge::Shape& srcShape, std::uint32_t typeSize, bool isReuseSource,
                                   std::uint32_t& maxValue, std::uint32_t& minValue) {
  const Refuser r("GetLayerNormGradMaxMinTmpSize");
  const Dims d = check_shape(r, srcShape, typeSize);
  // One pass holds at least a full row for each of H rows (H*H) or the
  // whole input, whichever is smaller; at most the larger of the two.
  const std::uint64_t hh = d.h * d.h;
  const std::uint64_t max_base = d.bsh() > hh ? d.bsh() : hh;
  const std::uint64_t min_base = d.bsh() < hh ? d.bsh() : hh;
  const std::uint64_t per_element = grad_buffer_count(typeSize, isReuseSource) * typeSize;
  maxValue = r.fits_u32("maxValue for srcShape", max_base * per_element);
  minValue = r.fits_u32("minValue for srcShape", min_base * per_element);
}

void GetLayerNormGradNDTilingInfo(const ge::Shape srcShape, std::uint32_t stackBufferSize, std::uint32_t typeSize,
                                  bool isReuseSource, LayerNormGradTiling& tiling) {
  const Refuser r("GetLayerNormGradNDTilingInfo");
  const Dims d = check_shape(r, srcShape, typeSize);
  const std::uint64_t blocks = grad_buffer_count(typeSize, isReuseSource);
  // Rows per pass: the float buffers' share of the stack, in whole rows,
  // then rounded UP to a 32-byte block of row statistics (8 floats or 16
  // halves). The round-up is CANN's: the plan may promise more than the
  // buffer holds, and the kernel entry checks what it really needs.
  std::uint64_t rows = std::uint64_t{stackBufferSize} / sizeof(float) / blocks / d.h;
  if (rows == 0) {
    r.fail("stackBufferSize",
           "at least " + std::to_string(blocks * sizeof(float) * d.h) + " bytes (" + std::to_string(blocks) +
               " float rows of storageH " + std::to_string(d.h) + ")",
           std::to_string(stackBufferSize));
  }
  const std::uint64_t per_block = typeSize == 4 ? 8 : 16;
  rows = (rows + per_block - 1) / per_block * per_block;
  const std::uint32_t one = r.fits_u32("oneCalSize", rows * d.h);

  LayerNormGradTiling t{};
  t.stackBufferSize = stackBufferSize;
  t.bLength = static_cast<std::uint32_t>(d.b);
  t.sLength = static_cast<std::uint32_t>(d.s);
  t.hLength = static_cast<std::uint32_t>(d.h);
  t.originalHLength = static_cast<std::uint32_t>(d.origin_h);
  t.oneCalSize = one;
  t.nohCalSize = static_cast<std::uint32_t>(rows);
  const auto bsh = static_cast<std::uint32_t>(d.bsh());
  t.loopNum = bsh / one;
  t.tailSize = bsh % one;
  t.nohTailSize = t.tailSize / t.hLength;

  // Buffer positions in floats, consecutive slots of oneCalSize. Reusing
  // the float source drops x1/x2 (they become inputDy/inputX); only half
  // needs the three cast buffers.
  auto slot = [&](std::uint64_t k) { return r.fits_u32("a tmp buffer position", k * one); };
  t.tmpTensorBSHPos = 0;
  t.pdVarTensorPos = slot(1);
  t.pdMeanTensorPos = slot(2);
  if (isReuseSource && typeSize == 4) {
    t.x1TensorPos = 0;
    t.x2TensorPos = 0;
    t.x3TensorPos = slot(3);
  } else {
    t.x1TensorPos = slot(3);
    t.x2TensorPos = slot(4);
    t.x3TensorPos = slot(5);
  }
  if (typeSize == 2) {
    t.tmpTensorPos = slot(6);
    t.tmpTensor1Pos = slot(7);
    t.tmpTensor2Pos = slot(8);
  }
  t.tmpTensorBSHSize = t.pdVarTensorSize = t.pdMeanTensorSize = one;
  t.x1TensorSize = t.x2TensorSize = t.x3TensorSize = one;
  t.tmpTensorSize = t.tmpTensor1Size = t.tmpTensor2Size = one;
  t.lastDimValueBack = float_bits(1.0f / static_cast<float>(d.origin_h));
  t.lastDimValueBackMulTwo = float_bits(2.0f / static_cast<float>(d.origin_h));
  tiling = t;
}

void GetLayerNormGradBetaMaxMinTmpSize(const ge::Shape& srcShape, std::uint32_t typeSize, bool /*isReuseSource*/,
                                       std::uint32_t& maxValue, std::uint32_t& minValue) {
  const Refuser r("GetLayerNormGradBetaMaxMinTmpSize");
  const Dims d = check_shape(r, srcShape, typeSize);
  // Float buffers: half casts dy and res (2) next to the two accumulators;
  // float needs the product and one more. Max holds the whole input, min one row.
  const std::uint64_t buffers = typeSize == 2 ? 4 : 2;
  maxValue = r.fits_u32("maxValue for srcShape", d.bsh() * sizeof(float) * buffers);
  minValue = r.fits_u32("minValue for srcShape", d.h * sizeof(float) * buffers);
}

void GetLayerNormGradBetaNDTilingInfo(const ge::Shape srcShape, std::uint32_t stackBufferSize,
                                      std::uint32_t typeSize, bool /*isReuseSource*/,
                                      LayerNormGradBetaTiling& tiling) {
  const Refuser r("GetLayerNormGradBetaNDTilingInfo");
  const Dims d = check_shape(r, srcShape, typeSize);
  const std::uint64_t floats = stackBufferSize / sizeof(float);
  const auto h = static_cast<std::uint32_t>(d.h);
  if (floats < 2 * d.h) {
    r.fail("stackBufferSize",
           "at least " + std::to_string(2 * d.h * sizeof(float)) + " bytes (2 float rows of storageH " +
               std::to_string(d.h) + ")",
           std::to_string(stackBufferSize));
  }
  std::uint64_t one = floats;
  std::uint32_t buffers = 1;
  if (typeSize == 2) {  // two float accumulators of H, then dy and res cast to float
    buffers = 2;
    one = (one - 2 * d.h) / buffers;
  }
  one = one / d.h * d.h;
  if (one == 0) {
    r.fail("stackBufferSize",
           "at least " + std::to_string((2 * d.h + buffers * d.h) * sizeof(float)) + " bytes (room for one row)",
           std::to_string(stackBufferSize));
  }
  if (one >= d.bsh()) one = d.bsh();

  LayerNormGradBetaTiling t{};
  t.stackBufferSize = static_cast<std::uint32_t>(floats);
  t.bLength = static_cast<std::uint32_t>(d.b);
  t.sLength = static_cast<std::uint32_t>(d.s);
  t.hLength = h;
  t.originalHLength = static_cast<std::uint32_t>(d.origin_h);
  t.bshLength = static_cast<std::uint32_t>(d.bsh());
  t.bsLength = static_cast<std::uint32_t>(d.rows());
  t.oneCalSize = static_cast<std::uint32_t>(one);
  t.numberOfTmpBuf = buffers;
  t.loopRound = t.bshLength / t.oneCalSize;
  t.inputTailSize = t.bshLength % t.oneCalSize;
  t.inputTailPos = t.bshLength - t.inputTailSize;
  t.bsTailSize = t.inputTailSize / h;
  t.bshCurLength = t.oneCalSize;
  t.bsCurLength = t.oneCalSize / h;
  if (typeSize == 2) {
    t.gammaTempTensorPos = 0;
    t.betaTempTensorPos = h;
    t.inputDyTmpTensorPos = 2 * h;
    t.resForGammaTmpTensorPos = r.fits_u32("resForGammaTmpTensorPos", 2 * d.h + one);
  }
  tiling = t;
}

void GetLayerNormMaxMinTmpSize(const TensorShape& srcShape, std::uint32_t typeSize, bool isReuseSource,
                               std::uint32_t& maxValue, std::uint32_t& minValue) {
  const Refuser r("GetLayerNormMaxMinTmpSize");
  const Dims d = check_shape(r, srcShape, typeSize);
  // The work buffers hold the whole input (max) or one storage row (min),
  // next to float mean and variance for all B*S rows; each rounded up to 32 bytes.
  const std::uint64_t buffers = norm_buffer_count(typeSize, isReuseSource);
  const std::uint64_t stats = 2 * align_up(d.rows() * sizeof(float), 32);
  maxValue = r.fits_u32("maxValue for srcShape", buffers * align_up(d.bsh() * sizeof(float), 32) + stats);
  minValue = r.fits_u32("minValue for srcShape", buffers * align_up(d.h * sizeof(float), 32) + stats);
}

void GetLayerNormNDTilingInfo(const TensorShape& srcShape, std::uint32_t stackBufferSize, std::uint32_t typeSize,
                              bool isReuseSource, LayerNormTiling& tiling) {
  const Refuser r("GetLayerNormNDTilingInfo");
  const Dims d = check_shape(r, srcShape, typeSize);
  const std::uint64_t buffers = norm_buffer_count(typeSize, isReuseSource);
  const std::uint64_t stats_size = align_up(d.rows(), 8);  // floats, a 32-byte block multiple
  // Half keeps float mean and variance at the start of the stack and casts
  // them at the end; float writes them straight into the outputs.
  const std::uint64_t stats_total = typeSize == 2 ? 2 * stats_size : 0;
  const std::uint64_t floats = stackBufferSize / sizeof(float);
  // CANN's own function wraps below stats_total and leaves the tiling unset
  // when no row fits: refuse both.
  if (floats < stats_total + buffers * d.h) {
    std::string need = std::to_string((stats_total + buffers * d.h) * sizeof(float)) + " bytes (";
    if (stats_total != 0) need += "float mean and variance of " + std::to_string(stats_size) + " rows each, then ";
    need += std::to_string(buffers) + " float rows of storageH " + std::to_string(d.h) + ")";
    r.fail("stackBufferSize", "at least " + need, std::to_string(stackBufferSize));
  }
  std::uint64_t one = (floats - stats_total) / buffers / d.h * d.h;
  if (one > d.bsh()) one = d.bsh();

  LayerNormTiling t{};
  t.bLength = static_cast<std::uint32_t>(d.b);
  t.sLength = static_cast<std::uint32_t>(d.s);
  t.hLength = static_cast<std::uint32_t>(d.h);
  t.originalHLength = static_cast<std::uint32_t>(d.origin_h);
  t.inputXSize = static_cast<std::uint32_t>(d.bsh());
  t.meanVarSize = static_cast<std::uint32_t>(d.rows());
  t.numberOfTmpBuf = static_cast<std::uint32_t>(buffers);
  t.meanTmpTensorPos = 0;
  t.meanTmpTensorSize = r.fits_u32("meanTmpTensorSize", stats_size);
  t.varianceTmpTensorPos = t.meanTmpTensorSize;
  t.varianceTmpTensorSize = t.meanTmpTensorSize;
  t.tmpBufSize = static_cast<std::uint32_t>(floats);
  t.oneTmpSize = static_cast<std::uint32_t>(one);
  t.firstTmpStartPos = static_cast<std::uint32_t>(stats_total);
  t.secondTmpStartPos = static_cast<std::uint32_t>(stats_total + one);
  t.thirdTmpStartPos = static_cast<std::uint32_t>(stats_total + 2 * one);  // <= floats
  t.loopRound = t.inputXSize / t.oneTmpSize;
  t.inputRoundSize = t.oneTmpSize;
  t.inputTailSize = t.inputXSize % t.oneTmpSize;
  t.inputTailPos = t.inputXSize - t.inputTailSize;
  t.meanVarRoundSize = t.inputRoundSize / t.hLength;
  t.meanVarTailSize = t.inputTailSize / t.hLength;
  t.meanVarTailPos = t.meanVarSize - t.meanVarTailSize;
  t.bshCurLength = t.inputRoundSize;
  t.bsCurLength = t.meanVarRoundSize;
  t.lastDimValueBack = 1.0f / static_cast<float>(d.origin_h);
  tiling = t;
}

}  // namespace AscendC
