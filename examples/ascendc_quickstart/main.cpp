/*
 * Host main of the quickstart kernel, as CANN's CPU-debug mains are
 * written: tiling with the host tiling functions, GM from GmAlloc, the
 * launch with ICPU_RUN_KF. Prints pd_x's first row and checks every row
 * against seed 002's formula, evaluated here in double.
 */
#include <cmath>
#include <cstdio>
#include <cstring>
#include <vector>

#include "layer_norm_grad_tiling.h"
#include "tikicpulib.h"

extern "C" __global__ __aicore__ void layer_norm_grad_quick(GM_ADDR dy, GM_ADDR x, GM_ADDR variance, GM_ADDR mean,
                                                            GM_ADDR gamma, GM_ADDR pdX, GM_ADDR res,
                                                            GM_ADDR workspace, GM_ADDR tiling);

int32_t main(int32_t argc, char* argv[])
{
    constexpr uint32_t blockDim = 4, rowsPerCore = 32, tileRows = 8, hLength = 64;
    constexpr uint32_t rows = blockDim * rowsPerCore;
    constexpr float epsilon = 1e-5f;

    // Host tiling: one tile of {1, tileRows, H, H}, its tmp at the minimum.
    optiling::LayerNormGradQuickTilingData tiling;
    AscendC::TensorShape tileShape({1, tileRows, hLength, hLength});
    uint32_t maxTmp = 0, minTmp = 0;
    AscendC::GetLayerNormGradMaxMinTmpSize(tileShape, sizeof(float), false, maxTmp, minTmp);
    AscendC::GetLayerNormGradNDTilingInfo(tileShape, minTmp, sizeof(float), false, tiling.gradTiling);
    tiling.set_rowsPerCore(rowsPerCore);
    tiling.set_tileRows(tileRows);
    tiling.set_hLength(hLength);
    tiling.set_epsilon(epsilon);

    // Inputs: row r is x = r/8 + sin(j), dy = cos(3j), with its exact mean and variance.
    std::vector<float> dy(rows * hLength), x(rows * hLength), mean(rows), variance(rows), gamma(hLength);
    for (uint32_t j = 0; j < hLength; j++) {
        gamma[j] = 1.0f + 0.01f * j;
    }
    for (uint32_t r = 0; r < rows; r++) {
        double sum = 0.0, squares = 0.0;
        for (uint32_t j = 0; j < hLength; j++) {
            x[r * hLength + j] = r / 8.0f + std::sin(static_cast<float>(j));
            dy[r * hLength + j] = std::cos(3.0f * j);
            sum += x[r * hLength + j];
        }
        mean[r] = static_cast<float>(sum / hLength);
        for (uint32_t j = 0; j < hLength; j++) {
            squares += (x[r * hLength + j] - mean[r]) * (x[r * hLength + j] - mean[r]);
        }
        variance[r] = static_cast<float>(squares / hLength);
    }

    const size_t dataBytes = rows * hLength * sizeof(float);
    uint8_t* dyGm = (uint8_t*)AscendC::GmAlloc(dataBytes);
    uint8_t* xGm = (uint8_t*)AscendC::GmAlloc(dataBytes);
    uint8_t* varianceGm = (uint8_t*)AscendC::GmAlloc(rows * sizeof(float));
    uint8_t* meanGm = (uint8_t*)AscendC::GmAlloc(rows * sizeof(float));
    uint8_t* gammaGm = (uint8_t*)AscendC::GmAlloc(hLength * sizeof(float));
    uint8_t* pdXGm = (uint8_t*)AscendC::GmAlloc(dataBytes);
    uint8_t* resGm = (uint8_t*)AscendC::GmAlloc(dataBytes);
    uint8_t* workspace = (uint8_t*)AscendC::GmAlloc(32);
    uint8_t* tilingGm = (uint8_t*)AscendC::GmAlloc(tiling.GetDataSize());
    std::memcpy(dyGm, dy.data(), dataBytes);
    std::memcpy(xGm, x.data(), dataBytes);
    std::memcpy(varianceGm, variance.data(), rows * sizeof(float));
    std::memcpy(meanGm, mean.data(), rows * sizeof(float));
    std::memcpy(gammaGm, gamma.data(), hLength * sizeof(float));
    tiling.SaveToBuffer(tilingGm, tiling.GetDataSize());

    AscendC::SetKernelMode(KernelMode::AIV_MODE);
    ICPU_RUN_KF(layer_norm_grad_quick, blockDim, dyGm, xGm, varianceGm, meanGm, gammaGm, pdXGm, resGm, workspace,
                tilingGm);

    // Seed 002's formula in double; an element fails CANN's precision check
    // for float when it is off by more than 1e-4 both absolutely and relatively.
    const float* pdX = (const float*)pdXGm;
    double worst = 0.0;
    uint32_t failures = 0;
    for (uint32_t r = 0; r < rows; r++) {
        const double rstd = 1.0 / std::sqrt(variance[r] + (double)epsilon);
        double sumG = 0.0, sumGXm = 0.0, sumXm = 0.0;
        for (uint32_t j = 0; j < hLength; j++) {
            const double g = (double)dy[r * hLength + j] * gamma[j], xm = (double)x[r * hLength + j] - mean[r];
            sumG += g;
            sumGXm += g * xm;
            sumXm += xm;
        }
        const double pdVar = -0.5 * sumGXm * rstd * rstd * rstd;
        const double pdMean = -sumG * rstd + pdVar * (-2.0 * sumXm) / hLength;
        for (uint32_t j = 0; j < hLength; j++) {
            const double g = (double)dy[r * hLength + j] * gamma[j], xm = (double)x[r * hLength + j] - mean[r];
            const double want = g * rstd + pdVar * 2.0 / hLength * xm + pdMean / hLength;
            const double diff = std::fabs(pdX[r * hLength + j] - want);
            worst = std::fmax(worst, diff);
            failures += diff > 1e-4 && diff > 1e-4 * std::fabs(want);
        }
    }
    std::printf("pd_x row 0: %.6f %.6f %.6f %.6f ...\n", pdX[0], pdX[1], pdX[2], pdX[3]);
    std::printf("max |pd_x - formula| over %u rows: %.3g; %u elements off by more than 1e-4\n", rows, worst,
                failures);

    for (uint8_t* p : {dyGm, xGm, varianceGm, meanGm, gammaGm, pdXGm, resGm, workspace, tilingGm}) {
        AscendC::GmFree((void*)p);
    }
    std::printf(failures == 0 ? "test pass!\n" : "test failed!\n");
    return failures == 0 ? 0 : 1;
}
