/*
 * Host main of the LayerNorm example, written as CANN's CPU-debug mains
 * are. Runs 1000 rows of H = 768 on 8 cores and checks y, mean and variance
 * against lngrad's op-level layer_norm, which computes a row the same way
 * whatever batch it is in: the kernel's outputs must be its bits.
 */
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <vector>

#include <lngrad/lngrad.hpp>

#include "layer_norm_grad_host.h"
#include "layer_norm_tiling.h"
#include "tikicpulib.h"

extern "C" __global__ __aicore__ void layer_norm_custom(GM_ADDR x, GM_ADDR gamma, GM_ADDR beta, GM_ADDR y,
                                                        GM_ADDR mean, GM_ADDR variance, GM_ADDR workspace,
                                                        GM_ADDR tiling);

namespace {

// Rows per core, the largest tile whose buffers fit the unified buffer (x
// and y double-buffered, the statistics, gamma and beta, the tmp buffer),
// and the API tiling for every tile height up to it.
bool ComputeLayerNormTiling(uint32_t rowNum, uint32_t hLength, uint32_t blockDim, float epsilon,
                            LayerNormCustomTiling& tiling)
{
    tiling = LayerNormCustomTiling{};
    tiling.rowNum = rowNum;
    tiling.hLength = hLength;
    tiling.rowsPerCore = (rowNum + blockDim - 1) / blockDim;
    tiling.epsilon = epsilon;
    const uint32_t maxRows = tiling.rowsPerCore < LN_MAX_TILE_ROWS ? tiling.rowsPerCore : LN_MAX_TILE_ROWS;
    for (uint32_t rows = maxRows; rows >= 1 && tiling.tileRows == 0; rows--) {
        AscendC::TensorShape shape({1, rows, hLength, hLength});
        uint32_t maxTmp = 0, minTmp = 0;
        AscendC::GetLayerNormMaxMinTmpSize(shape, sizeof(float), false, maxTmp, minTmp);
        const uint64_t tile = uint64_t{rows} * hLength * sizeof(float);
        const uint64_t ub = 4 * tile + 4 * Align32(rows * sizeof(float)) + 2 * Align32(hLength * sizeof(float)) +
                            Align32(minTmp);
        if (ub <= UB_SIZE) {
            tiling.tileRows = rows;
            tiling.tmpSize = minTmp;
        }
    }
    if (tiling.tileRows == 0) {
        return false;
    }
    for (uint32_t rows = 1; rows <= tiling.tileRows; rows++) {
        AscendC::TensorShape shape({1, rows, hLength, hLength});
        AscendC::GetLayerNormNDTilingInfo(shape, tiling.tmpSize, sizeof(float), false, tiling.lnTiling[rows - 1]);
    }
    return true;
}

}  // namespace

int32_t main(int32_t argc, char* argv[])
{
    (void)argc;
    (void)argv;
    constexpr uint32_t rowNum = 1000, hLength = 768, blockDim = 8;
    constexpr float epsilon = 1e-5f;
    const GradProblem p = MakeProblem(rowNum, hLength, 2028);  // x, gamma; dy serves as beta's source
    std::vector<float> beta(p.dy.begin(), p.dy.begin() + hLength);

    LayerNormCustomTiling tiling;
    if (!ComputeLayerNormTiling(rowNum, hLength, blockDim, epsilon, tiling)) {
        std::printf("no tile of rows fits the unified buffer\n");
        return 1;
    }
    const size_t dataBytes = p.x.size() * sizeof(float);
    uint8_t* x = GmCopy(p.x);
    uint8_t* gamma = GmCopy(p.gamma);
    uint8_t* betaGm = GmCopy(beta);
    uint8_t* y = static_cast<uint8_t*>(AscendC::GmAlloc(dataBytes));
    uint8_t* mean = static_cast<uint8_t*>(AscendC::GmAlloc(rowNum * sizeof(float)));
    uint8_t* variance = static_cast<uint8_t*>(AscendC::GmAlloc(rowNum * sizeof(float)));
    uint8_t* workspace = static_cast<uint8_t*>(AscendC::GmAlloc(32));
    uint8_t* tilingGm = static_cast<uint8_t*>(AscendC::GmAlloc(sizeof(tiling)));
    std::memcpy(tilingGm, &tiling, sizeof(tiling));

    AscendC::SetKernelMode(KernelMode::AIV_MODE);
    ICPU_RUN_KF(layer_norm_custom, blockDim, x, gamma, betaGm, y, mean, variance, workspace, tilingGm);
    std::printf("LayerNorm: %u rows x H %u on %u cores, tiles of %u rows\n", rowNum, hLength, blockDim,
                tiling.tileRows);

    using lngrad::Dtype;
    const int64_t rows = rowNum, h = hLength;
    std::vector<float> goldenY(p.x.size()), goldenMean(rowNum), goldenVariance(rowNum);
    lngrad::ForwardOptions options;
    options.epsilon = epsilon;
    lngrad::layer_norm({p.x.data(), Dtype::float32, {rows, h}}, lngrad::ConstTensorView{p.gamma.data(),
                       Dtype::float32, {h}}, lngrad::ConstTensorView{beta.data(), Dtype::float32, {h}},
                       {goldenY.data(), Dtype::float32, {rows, h}}, {goldenMean.data(), Dtype::float32, {rows}},
                       {goldenVariance.data(), Dtype::float32, {rows}}, {}, options);
    const bool same = std::memcmp(y, goldenY.data(), dataBytes) == 0 &&
                      std::memcmp(mean, goldenMean.data(), rowNum * sizeof(float)) == 0 &&
                      std::memcmp(variance, goldenVariance.data(), rowNum * sizeof(float)) == 0;
    std::printf("  y, mean and variance %s lngrad's bits\n", same ? "equal" : "differ from");
    for (uint8_t* ptr : {x, gamma, betaGm, y, mean, variance, workspace, tilingGm}) {
        AscendC::GmFree(ptr);
    }
    std::printf(same ? "test pass!\n" : "test failed!\n");
    return same ? 0 : 1;
}
