// AscendC host tiling for the normalization APIs (LayerNorm, LayerNormGrad,
// LayerNormGradBeta), in CANN's names: ge::Shape / AscendC::TensorShape, the
// tiling structs (CANN's fields in CANN's order) and the Get*TmpSize /
// Get*NDTilingInfo functions, which return CANN's numbers.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "lngrad/ascendc/tiling_data.hpp"

// ---- ge::Shape: the host tiling's shape argument ---------------------------

namespace ge {

class Shape {
 public:
  Shape() = default;
  explicit Shape(const std::vector<std::int64_t>& dims) : dims_(dims) {}

  std::size_t GetDimNum() const { return dims_.size(); }
  // 0 for an axis past the last, as CANN's.
  std::int64_t GetDim(std::size_t idx) const { return idx < dims_.size() ? dims_[idx] : 0; }
  std::vector<std::int64_t> GetDims() const { return dims_; }
  // Product of the dims; 0 for a shape without dims.
  std::int64_t GetShapeSize() const {
    if (dims_.empty()) return 0;
    std::int64_t n = 1;
    for (std::int64_t d : dims_) n *= d;
    return n;
  }

 private:
  std::vector<std::int64_t> dims_;
};

}  // namespace ge

namespace AscendC {

// ---- Tiling structs (CANN's fields, in CANN's order) ------------------------

namespace tiling {

// Defined as host code defines tiling data, so that they have CANN's host
// methods (set_/get_, SaveToBuffer, GetDataSize) and can be nested with
// TILING_DATA_FIELD_DEF_STRUCT; the same types are optiling::X and, in kernel
// code, the unqualified X.

BEGIN_TILING_DATA_DEF(LayerNormGradTiling)
TILING_DATA_FIELD_DEF(uint32_t, stackBufferSize);  // bytes
TILING_DATA_FIELD_DEF(uint32_t, bLength);
TILING_DATA_FIELD_DEF(uint32_t, sLength);
TILING_DATA_FIELD_DEF(uint32_t, hLength);  // storageH
TILING_DATA_FIELD_DEF(uint32_t, originalHLength);
TILING_DATA_FIELD_DEF(uint32_t, oneCalSize);  // elements per pass: nohCalSize * hLength
TILING_DATA_FIELD_DEF(uint32_t, nohCalSize);  // rows per pass
TILING_DATA_FIELD_DEF(uint32_t, loopNum);
TILING_DATA_FIELD_DEF(uint32_t, tailSize);
TILING_DATA_FIELD_DEF(uint32_t, nohTailSize);
TILING_DATA_FIELD_DEF(uint32_t, tmpTensorBSHPos);
TILING_DATA_FIELD_DEF(uint32_t, tmpTensorBSHSize);
TILING_DATA_FIELD_DEF(uint32_t, pdVarTensorPos);
TILING_DATA_FIELD_DEF(uint32_t, pdVarTensorSize);
TILING_DATA_FIELD_DEF(uint32_t, pdMeanTensorPos);
TILING_DATA_FIELD_DEF(uint32_t, pdMeanTensorSize);
TILING_DATA_FIELD_DEF(uint32_t, x1TensorPos);
TILING_DATA_FIELD_DEF(uint32_t, x1TensorSize);
TILING_DATA_FIELD_DEF(uint32_t, x2TensorPos);
TILING_DATA_FIELD_DEF(uint32_t, x2TensorSize);
TILING_DATA_FIELD_DEF(uint32_t, x3TensorPos);
TILING_DATA_FIELD_DEF(uint32_t, x3TensorSize);
TILING_DATA_FIELD_DEF(uint32_t, tmpTensorPos);
TILING_DATA_FIELD_DEF(uint32_t, tmpTensorSize);
TILING_DATA_FIELD_DEF(uint32_t, tmpTensor1Pos);
TILING_DATA_FIELD_DEF(uint32_t, tmpTensor1Size);
TILING_DATA_FIELD_DEF(uint32_t, tmpTensor2Pos);
TILING_DATA_FIELD_DEF(uint32_t, tmpTensor2Size);
TILING_DATA_FIELD_DEF(uint32_t, lastDimValueBack);        // bits of float 1/originH
TILING_DATA_FIELD_DEF(uint32_t, lastDimValueBackMulTwo);  // bits of float 2/originH
END_TILING_DATA_DEF;

BEGIN_TILING_DATA_DEF(LayerNormGradBetaTiling)
TILING_DATA_FIELD_DEF(uint32_t, stackBufferSize);  // a count of floats
TILING_DATA_FIELD_DEF(uint32_t, bLength);
TILING_DATA_FIELD_DEF(uint32_t, sLength);
TILING_DATA_FIELD_DEF(uint32_t, hLength);
TILING_DATA_FIELD_DEF(uint32_t, originalHLength);
TILING_DATA_FIELD_DEF(uint32_t, bshLength);
TILING_DATA_FIELD_DEF(uint32_t, bsLength);
TILING_DATA_FIELD_DEF(uint32_t, oneCalSize);  // elements per pass
TILING_DATA_FIELD_DEF(uint32_t, numberOfTmpBuf);
TILING_DATA_FIELD_DEF(uint32_t, loopRound);
TILING_DATA_FIELD_DEF(uint32_t, inputTailSize);
TILING_DATA_FIELD_DEF(uint32_t, inputTailPos);
TILING_DATA_FIELD_DEF(uint32_t, bsTailSize);
TILING_DATA_FIELD_DEF(uint32_t, bshCurLength);
TILING_DATA_FIELD_DEF(uint32_t, bsCurLength);
TILING_DATA_FIELD_DEF(uint32_t, gammaTempTensorPos);
TILING_DATA_FIELD_DEF(uint32_t, betaTempTensorPos);
TILING_DATA_FIELD_DEF(uint32_t, inputDyTmpTensorPos);
TILING_DATA_FIELD_DEF(uint32_t, resForGammaTmpTensorPos);
TILING_DATA_FIELD_DEF(uint32_t, reserved);
END_TILING_DATA_DEF;

BEGIN_TILING_DATA_DEF(LayerNormTiling)
TILING_DATA_FIELD_DEF(uint32_t, bLength);
TILING_DATA_FIELD_DEF(uint32_t, sLength);
TILING_DATA_FIELD_DEF(uint32_t, hLength);
TILING_DATA_FIELD_DEF(uint32_t, originalHLength);
TILING_DATA_FIELD_DEF(uint32_t, inputXSize);   // B*S*H
TILING_DATA_FIELD_DEF(uint32_t, meanVarSize);  // B*S
TILING_DATA_FIELD_DEF(uint32_t, numberOfTmpBuf);
TILING_DATA_FIELD_DEF(uint32_t, meanTmpTensorPos);  // floats, as every Pos/Size below
TILING_DATA_FIELD_DEF(uint32_t, meanTmpTensorSize);
TILING_DATA_FIELD_DEF(uint32_t, varianceTmpTensorPos);
TILING_DATA_FIELD_DEF(uint32_t, varianceTmpTensorSize);
TILING_DATA_FIELD_DEF(uint32_t, tmpBufSize);  // stackBufferSize / 4
TILING_DATA_FIELD_DEF(uint32_t, oneTmpSize);  // elements per pass
TILING_DATA_FIELD_DEF(uint32_t, firstTmpStartPos);
TILING_DATA_FIELD_DEF(uint32_t, secondTmpStartPos);
TILING_DATA_FIELD_DEF(uint32_t, thirdTmpStartPos);
TILING_DATA_FIELD_DEF(uint32_t, loopRound);
TILING_DATA_FIELD_DEF(uint32_t, inputRoundSize);
TILING_DATA_FIELD_DEF(uint32_t, inputTailSize);
TILING_DATA_FIELD_DEF(uint32_t, inputTailPos);
TILING_DATA_FIELD_DEF(uint32_t, meanVarRoundSize);  // rows per pass
TILING_DATA_FIELD_DEF(uint32_t, meanVarTailSize);
TILING_DATA_FIELD_DEF(uint32_t, meanVarTailPos);
TILING_DATA_FIELD_DEF(uint32_t, bshCurLength);  // the pass being computed (the call rewrites them for the tail)
TILING_DATA_FIELD_DEF(uint32_t, bsCurLength);
TILING_DATA_FIELD_DEF(float, lastDimValueBack);  // 1/originH
END_TILING_DATA_DEF;

// The kernel side copies these word by word: CANN's sizes, no padding.
static_assert(sizeof(LayerNormGradTiling) == 30 * sizeof(std::uint32_t));
static_assert(sizeof(LayerNormGradBetaTiling) == 20 * sizeof(std::uint32_t));
static_assert(sizeof(LayerNormTiling) == 26 * sizeof(std::uint32_t));

}  // namespace tiling

using tiling::LayerNormGradBetaTiling;
using tiling::LayerNormGradTiling;
using tiling::LayerNormTiling;

// CANN's name for the host tiling's shape argument.
using TensorShape = ge::Shape;

// ---- Host tiling -------------------------------------------------------------
// srcShape is {B, S, storageH, originH}; typeSize 2 (half) or 4 (float). The
// numbers are CANN's for the classic chips (see FACTS: tmp sizes and tiling).
// Invalid arguments (not 4 dims, a dim < 1, another typeSize, a buffer too
// small for one row, sizes beyond 32 bits) throw lngrad::Error.

void GetLayerNormGradMaxMinTmpSize(const ge::Shape& srcShape, std::uint32_t typeSize, bool isReuseSource,
                                   std::uint32_t& maxValue, std::uint32_t& minValue);
void GetLayerNormGradNDTilingInfo(const ge::Shape srcShape, std::uint32_t stackBufferSize, std::uint32_t typeSize,
                                  bool isReuseSource, LayerNormGradTiling& tiling);
void GetLayerNormGradBetaMaxMinTmpSize(const ge::Shape& srcShape, std::uint32_t typeSize, bool isReuseSource,
                                       std::uint32_t& maxValue, std::uint32_t& minValue);
void GetLayerNormGradBetaNDTilingInfo(const ge::Shape srcShape, std::uint32_t stackBufferSize,
                                      std::uint32_t typeSize, bool isReuseSource, LayerNormGradBetaTiling& tiling);
// LayerNorm (forward): stackBufferSize must leave, after the half path's
// float mean and variance (2 * B*S rounded up to 8 floats), at least one row
// for each of its numberOfTmpBuf float buffers.
void GetLayerNormMaxMinTmpSize(const TensorShape& srcShape, std::uint32_t typeSize, bool isReuseSource,
                               std::uint32_t& maxValue, std::uint32_t& minValue);
void GetLayerNormNDTilingInfo(const TensorShape& srcShape, std::uint32_t stackBufferSize, std::uint32_t typeSize,
                              bool isReuseSource, LayerNormTiling& tiling);

}  // namespace AscendC

// Host code names the structs optiling::X (CANN's host headers define them
// there): the same types, so the functions above serve both spellings.
namespace optiling {
using AscendC::tiling::LayerNormGradBetaTiling;
using AscendC::tiling::LayerNormGradTiling;
using AscendC::tiling::LayerNormTiling;
}  // namespace optiling
