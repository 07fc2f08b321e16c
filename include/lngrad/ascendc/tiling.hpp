// AscendC host tiling for the normalization APIs, in CANN's names: ge::Shape,
// the tiling structs (CANN's fields in CANN's order) and the Get*TmpSize /
// Get*NDTilingInfo functions, which return CANN's numbers.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

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

struct LayerNormGradTiling {
  std::uint32_t stackBufferSize = 0;  // bytes
  std::uint32_t bLength = 0;
  std::uint32_t sLength = 0;
  std::uint32_t hLength = 0;  // storageH
  std::uint32_t originalHLength = 0;
  std::uint32_t oneCalSize = 0;  // elements per pass: nohCalSize * hLength
  std::uint32_t nohCalSize = 0;  // rows per pass
  std::uint32_t loopNum = 0;
  std::uint32_t tailSize = 0;
  std::uint32_t nohTailSize = 0;
  std::uint32_t tmpTensorBSHPos = 0;
  std::uint32_t tmpTensorBSHSize = 0;
  std::uint32_t pdVarTensorPos = 0;
  std::uint32_t pdVarTensorSize = 0;
  std::uint32_t pdMeanTensorPos = 0;
  std::uint32_t pdMeanTensorSize = 0;
  std::uint32_t x1TensorPos = 0;
  std::uint32_t x1TensorSize = 0;
  std::uint32_t x2TensorPos = 0;
  std::uint32_t x2TensorSize = 0;
  std::uint32_t x3TensorPos = 0;
  std::uint32_t x3TensorSize = 0;
  std::uint32_t tmpTensorPos = 0;
  std::uint32_t tmpTensorSize = 0;
  std::uint32_t tmpTensor1Pos = 0;
  std::uint32_t tmpTensor1Size = 0;
  std::uint32_t tmpTensor2Pos = 0;
  std::uint32_t tmpTensor2Size = 0;
  std::uint32_t lastDimValueBack = 0;        // bits of float 1/originH
  std::uint32_t lastDimValueBackMulTwo = 0;  // bits of float 2/originH
};

struct LayerNormGradBetaTiling {
  std::uint32_t stackBufferSize = 0;  // a count of floats
  std::uint32_t bLength = 0;
  std::uint32_t sLength = 0;
  std::uint32_t hLength = 0;
  std::uint32_t originalHLength = 0;
  std::uint32_t bshLength = 0;
  std::uint32_t bsLength = 0;
  std::uint32_t oneCalSize = 0;  // elements per pass
  std::uint32_t numberOfTmpBuf = 0;
  std::uint32_t loopRound = 0;
  std::uint32_t inputTailSize = 0;
  std::uint32_t inputTailPos = 0;
  std::uint32_t bsTailSize = 0;
  std::uint32_t bshCurLength = 0;
  std::uint32_t bsCurLength = 0;
  std::uint32_t gammaTempTensorPos = 0;
  std::uint32_t betaTempTensorPos = 0;
  std::uint32_t inputDyTmpTensorPos = 0;
  std::uint32_t resForGammaTmpTensorPos = 0;
  std::uint32_t reserved = 0;
};

}  // namespace tiling

using tiling::LayerNormGradBetaTiling;
using tiling::LayerNormGradTiling;

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

}  // namespace AscendC
