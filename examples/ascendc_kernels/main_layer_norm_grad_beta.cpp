/*
 * Host main of the LayerNormGradBeta example, written as CANN's CPU-debug
 * mains are. The kernel leaves one [2, H] partial per core; the host adds
 * them in core order. Checks seed 001's example on one core and a larger
 * problem on 8 cores against lngrad's op-level layer_norm_grad_beta.
 */
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <vector>

#include <lngrad/lngrad.hpp>

#include "layer_norm_grad_host.h"
#include "tikicpulib.h"

extern "C" __global__ __aicore__ void layer_norm_grad_beta_custom(GM_ADDR resForGamma, GM_ADDR dy, GM_ADDR partials,
                                                                  GM_ADDR workspace, GM_ADDR tiling);

namespace {

// pd_gamma and pd_beta (hLength each) from the kernel over blockDim cores.
bool RunKernel(const std::vector<float>& res, const std::vector<float>& dy, uint32_t rowNum, uint32_t hLength,
               uint32_t originHLength, uint32_t blockDim, std::vector<float>& pdGamma, std::vector<float>& pdBeta)
{
    LayerNormGradCustomTiling tiling;
    if (!ComputeTiling(rowNum, hLength, originHLength, blockDim, 0.0f, tiling)) {
        std::printf("no tile of rows fits the unified buffer\n");
        return false;
    }
    uint8_t* resGm = GmCopy(res);
    uint8_t* dyGm = GmCopy(dy);
    const size_t partialFloats = size_t{blockDim} * 2 * hLength;
    uint8_t* partials = static_cast<uint8_t*>(AscendC::GmAlloc(partialFloats * sizeof(float)));
    uint8_t* workspace = static_cast<uint8_t*>(AscendC::GmAlloc(32));
    uint8_t* tilingGm = static_cast<uint8_t*>(AscendC::GmAlloc(sizeof(tiling)));
    std::memcpy(tilingGm, &tiling, sizeof(tiling));

    AscendC::SetKernelMode(KernelMode::AIV_MODE);
    ICPU_RUN_KF(layer_norm_grad_beta_custom, blockDim, resGm, dyGm, partials, workspace, tilingGm);

    const float* part = reinterpret_cast<const float*>(partials);
    pdGamma.assign(hLength, 0.0f);
    pdBeta.assign(hLength, 0.0f);
    for (uint32_t core = 0; core < blockDim; core++) {
        for (uint32_t j = 0; j < hLength; j++) {
            pdGamma[j] += part[(size_t{core} * 2) * hLength + j];
            pdBeta[j] += part[(size_t{core} * 2 + 1) * hLength + j];
        }
    }
    for (uint8_t* ptr : {resGm, dyGm, partials, workspace, tilingGm}) {
        AscendC::GmFree(ptr);
    }
    std::printf("  %u rows x H %u (storage %u) on %u cores, tiles of %u rows\n", rowNum, originHLength, hLength,
                blockDim, tiling.tileRows);
    return true;
}

// Seed 001: inputDy = resForGamma = 0..63 as [1, 8, 8].
bool Seed001()
{
    std::printf("seed 001 ([1, 8, 8], one core):\n");
    std::vector<float> v(64);
    for (int i = 0; i < 64; i++) {
        v[i] = static_cast<float>(i);
    }
    const float listedGamma[8] = {8960, 9416, 9888, 10376, 10880, 11400, 11936, 12488};
    const float listedBeta[8] = {224, 232, 240, 248, 256, 264, 272, 280};
    std::vector<float> pdGamma, pdBeta;
    if (!RunKernel(v, v, 8, 8, 8, 1, pdGamma, pdBeta)) {
        return false;
    }
    bool ok = true;
    for (int j = 0; j < 8; j++) {  // sums of integers below 2^24: exact in float
        ok = ok && pdGamma[j] == listedGamma[j] && pdBeta[j] == listedBeta[j];
    }
    std::printf("  pd_gamma and pd_beta %s the listed values\n", ok ? "equal" : "differ from");
    return ok;
}

// 1000 rows of H = 770 (storage 776) on 8 cores against lngrad's op-level
// sums. Both are float32 sums of the same terms in different orders, each
// within (n + 1) * 2^-24 * sum|term| of the exact column sum.
bool Random()
{
    std::printf("random ([1000, 770], 8 cores):\n");
    const GradProblem p = MakeProblem(1000, 770, 2027);
    const std::vector<float>& res = p.x;  // any data serves as res_for_gamma
    std::vector<float> pdGamma, pdBeta;
    if (!RunKernel(res, p.dy, p.rowNum, p.hLength, p.originHLength, 8, pdGamma, pdBeta)) {
        return false;
    }
    using lngrad::Dtype;
    const int64_t rows = p.rowNum, h = p.hLength;
    std::vector<float> goldenGamma(h), goldenBeta(h);
    lngrad::layer_norm_grad_beta({res.data(), Dtype::float32, {rows, h}}, {p.dy.data(), Dtype::float32, {rows, h}},
                                 {goldenGamma.data(), Dtype::float32, {h}}, {goldenBeta.data(), Dtype::float32, {h}});
    const double u = std::ldexp(1.0, -24);
    int failures = 0;
    double worst = 0.0;
    for (int64_t j = 0; j < h; j++) {
        double absGamma = 0.0, absBeta = 0.0;
        for (int64_t i = 0; i < rows; i++) {
            absGamma += std::fabs(static_cast<double>(res[i * h + j]) * p.dy[i * h + j]);
            absBeta += std::fabs(static_cast<double>(p.dy[i * h + j]));
        }
        const double boundGamma = 2.0 * (rows + 1) * u * absGamma, boundBeta = 2.0 * (rows + 1) * u * absBeta;
        const double dg = std::fabs(pdGamma[j] - goldenGamma[j]), db = std::fabs(pdBeta[j] - goldenBeta[j]);
        worst = std::fmax(worst, std::fmax(absGamma > 0 ? dg / boundGamma : dg, absBeta > 0 ? db / boundBeta : db));
        failures += dg > boundGamma || db > boundBeta;
    }
    std::printf("  largest difference from lngrad: %.3g of the float32 bound; %d columns outside it\n", worst,
                failures);
    return failures == 0;
}

}  // namespace

int32_t main(int32_t argc, char* argv[])
{
    (void)argc;
    (void)argv;
    const bool seed = Seed001();
    const bool random = Random();
    std::printf(seed && random ? "test pass!\n" : "test failed!\n");
    return seed && random ? 0 : 1;
}
