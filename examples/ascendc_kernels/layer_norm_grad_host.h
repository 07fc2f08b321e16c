/*
 * Host side of the LayerNormGrad / LayerNormGradBeta examples: the tiling a
 * host computes for the kernels, and the test data.
 */
#ifndef LAYER_NORM_GRAD_HOST_H
#define LAYER_NORM_GRAD_HOST_H

#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

#include "layer_norm_grad_tiling.h"
#include "tikicpulib.h"
#include "tiling/tiling_api.h"

constexpr uint32_t UB_SIZE = 192 * 1024;  // Atlas A2/A3

// Global memory holding a copy of v.
inline uint8_t* GmCopy(const std::vector<float>& v)
{
    uint8_t* p = static_cast<uint8_t*>(AscendC::GmAlloc(v.size() * sizeof(float)));
    std::memcpy(p, v.data(), v.size() * sizeof(float));
    return p;
}

inline uint32_t Align32(uint32_t bytes) { return (bytes + 31) / 32 * 32; }

// Unified buffer the LayerNormGrad kernel takes for tiles of `rows` rows:
// dy, x, pd_x, res_for_gamma and the two statistics double-buffered, gamma,
// the tmp buffer.
inline uint64_t GradKernelUb(uint32_t rows, uint32_t hLength, uint32_t tmpSize)
{
    const uint64_t tile = uint64_t{rows} * hLength * sizeof(float);
    return 8 * tile + 4 * Align32(rows * sizeof(float)) + Align32(hLength * sizeof(float)) + Align32(tmpSize);
}

// ... and the LayerNormGradBeta kernel: res_for_gamma and dy double-buffered,
// the core's sums, a tile's sums, the tmp buffer.
inline uint64_t BetaKernelUb(uint32_t rows, uint32_t hLength, uint32_t tmpSize)
{
    const uint64_t tile = uint64_t{rows} * hLength * sizeof(float);
    return 4 * tile + 4 * Align32(hLength * sizeof(float)) + Align32(tmpSize);
}

// Rows per core, the largest tile that fits the unified buffer, and the API
// tilings for every tile height up to it. Returns false if one row does not fit.
inline bool ComputeTiling(uint32_t rowNum, uint32_t hLength, uint32_t originHLength, uint32_t blockDim,
                          float epsilon, LayerNormGradCustomTiling& tiling)
{
    tiling = LayerNormGradCustomTiling{};
    tiling.rowNum = rowNum;
    tiling.hLength = hLength;
    tiling.originHLength = originHLength;
    tiling.rowsPerCore = (rowNum + blockDim - 1) / blockDim;
    tiling.epsilon = epsilon;
    uint32_t maxRows = tiling.rowsPerCore < MAX_TILE_ROWS ? tiling.rowsPerCore : MAX_TILE_ROWS;
    for (uint32_t rows = maxRows; rows >= 1; rows--) {
        ge::Shape shape({1, rows, hLength, originHLength});
        uint32_t maxTmp = 0, gradTmp = 0, betaTmp = 0;
        AscendC::GetLayerNormGradMaxMinTmpSize(shape, sizeof(float), false, maxTmp, gradTmp);
        AscendC::GetLayerNormGradBetaMaxMinTmpSize(shape, sizeof(float), false, maxTmp, betaTmp);
        if (GradKernelUb(rows, hLength, gradTmp) <= UB_SIZE && BetaKernelUb(rows, hLength, betaTmp) <= UB_SIZE) {
            tiling.tileRows = rows;
            tiling.gradTmpSize = gradTmp;
            tiling.betaTmpSize = betaTmp;
            break;
        }
    }
    if (tiling.tileRows == 0) {
        return false;
    }
    for (uint32_t rows = 1; rows <= tiling.tileRows; rows++) {
        ge::Shape shape({1, rows, hLength, originHLength});
        AscendC::GetLayerNormGradNDTilingInfo(shape, tiling.gradTmpSize, sizeof(float), false,
                                              tiling.gradTiling[rows - 1]);
        AscendC::GetLayerNormGradBetaNDTilingInfo(shape, tiling.betaTmpSize, sizeof(float), false,
                                                  tiling.betaTiling[rows - 1]);
    }
    return true;
}

// Reproducible test data: values in [-1, 1) from a 64-bit LCG.
class TestData {
public:
    explicit TestData(uint64_t seed) : state_(seed) {}
    float Next()
    {
        state_ = state_ * 6364136223846793005ULL + 1442695040888963407ULL;
        return static_cast<float>(static_cast<double>(state_ >> 11) / 9007199254740992.0 * 2.0 - 1.0);
    }

private:
    uint64_t state_;
};

// A [rowNum, hLength] float problem whose first originHLength columns of
// each row hold data (padding zero), with the rows' exact means and
// variances rounded to float.
struct GradProblem {
    uint32_t rowNum = 0, hLength = 0, originHLength = 0;
    std::vector<float> dy, x, mean, variance, gamma;
};

inline GradProblem MakeProblem(uint32_t rowNum, uint32_t originHLength, uint64_t seed)
{
    GradProblem p;
    p.rowNum = rowNum;
    p.originHLength = originHLength;
    p.hLength = (originHLength + 7) / 8 * 8;
    p.dy.assign(size_t{rowNum} * p.hLength, 0.0f);
    p.x = p.dy;
    p.mean.resize(rowNum);
    p.variance.resize(rowNum);
    p.gamma.assign(p.hLength, 0.0f);
    TestData data(seed);
    for (uint32_t j = 0; j < originHLength; j++) {
        p.gamma[j] = 1.0f + 0.5f * data.Next();
    }
    for (uint32_t i = 0; i < rowNum; i++) {
        const float offset = 3.0f * data.Next();
        double sum = 0.0, squares = 0.0;
        for (uint32_t j = 0; j < originHLength; j++) {
            const size_t at = size_t{i} * p.hLength + j;
            p.x[at] = offset + data.Next();
            p.dy[at] = data.Next();
            sum += p.x[at];
        }
        const double mean = sum / originHLength;
        for (uint32_t j = 0; j < originHLength; j++) {
            const double d = p.x[size_t{i} * p.hLength + j] - mean;
            squares += d * d;
        }
        p.mean[i] = static_cast<float>(mean);
        p.variance[i] = static_cast<float>(squares / originHLength);
    }
    return p;
}

#endif // LAYER_NORM_GRAD_HOST_H
