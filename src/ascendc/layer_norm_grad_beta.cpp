// AscendC::LayerNormGradBeta on the host: the tiling's passes (loopRound
// passes of bsCurLength rows, then bsTailSize rows), each summed by
// lngrad::layer_norm_grad_beta, the pass sums added in pass order into
// float32 accumulators, as the device accumulates.
//
// Column sums do not mix columns, so a pass is handed over as it lies in
// memory: [rows, storageH] of T (the op-level kernel widens half exactly);
// the padding columns are computed and then written as zero.
//
// Scratch (floats), at the tiling's positions:
//   half:  accumulators at gammaTempTensorPos / betaTempTensorPos (H each),
//          a pass's sums at inputDyTmpTensorPos (2H, inside the dy/res slots)
//   float: a pass's sums at 0 (2H, the minimum); the outputs accumulate,
//          as on the device.
// The outputs are written only from the accumulators, so they may not share
// memory with the inputs.
#include <algorithm>
#include <cstring>
#include <vector>

#include "ascendc/check.hpp"
#include "lngrad/ascendc.hpp"
#include "lngrad/half.hpp"
#include "lngrad/lngrad.hpp"

namespace AscendC::detail {

namespace {

using Tiling = LayerNormGradBetaTiling;

constexpr TilingField<Tiling> kFields[] = {
    {"bshLength", &Tiling::bshLength},
    {"bsLength", &Tiling::bsLength},
    {"oneCalSize", &Tiling::oneCalSize},
    {"numberOfTmpBuf", &Tiling::numberOfTmpBuf},
    {"loopRound", &Tiling::loopRound},
    {"inputTailSize", &Tiling::inputTailSize},
    {"inputTailPos", &Tiling::inputTailPos},
    {"bsTailSize", &Tiling::bsTailSize},
    {"bshCurLength", &Tiling::bshCurLength},
    {"bsCurLength", &Tiling::bsCurLength},
    {"gammaTempTensorPos", &Tiling::gammaTempTensorPos},
    {"betaTempTensorPos", &Tiling::betaTempTensorPos},
    {"inputDyTmpTensorPos", &Tiling::inputDyTmpTensorPos},
    {"resForGammaTmpTensorPos", &Tiling::resForGammaTmpTensorPos},
    {"reserved", &Tiling::reserved},
};

}  // namespace

void LayerNormGradBeta(Buffer outputPdGamma, Buffer outputPdBeta, Buffer resForGamma, Buffer inputDy,
                       Scratch scratch, const LayerNormGradBetaTiling& t, std::uint32_t typeSize,
                       bool isReuseSource) {
  const Refuser r("LayerNormGradBeta");
  const std::uint32_t ts = typeSize;
  if (isReuseSource && ts == 2) {
    r.fail("isReuseSource", "false for half (only a float source can be reused)", "true");
  }
  check_rows(r, t.bLength, t.sLength, t.hLength, t.originalHLength, ts);
  const std::uint64_t b = t.bLength, s = t.sLength, h = t.hLength, oh = t.originalHLength;
  const std::uint64_t bsh = b * s * h;
  const std::string dims = shape4(t.bLength, t.sLength, t.hLength, t.originalHLength);
  const ge::Shape shape({static_cast<std::int64_t>(b), static_cast<std::int64_t>(s), static_cast<std::int64_t>(h),
                         static_cast<std::int64_t>(oh)});

  // The tiling keeps the stack size in floats; the host function takes bytes.
  const std::uint64_t stack_bytes = std::uint64_t{t.stackBufferSize} * sizeof(float);
  Tiling expected;
  std::uint32_t max_tmp = 0, min_tmp = 0;
  try {
    GetLayerNormGradBetaNDTilingInfo(shape, r.fits_u32("tiling.stackBufferSize * 4", stack_bytes), ts,
                                     isReuseSource, expected);
    GetLayerNormGradBetaMaxMinTmpSize(shape, ts, isReuseSource, max_tmp, min_tmp);
  } catch (const lngrad::Error& e) {
    r.fail("tiling", "a plan that GetLayerNormGradBetaNDTilingInfo can make", e.what());
  }
  require_same_tiling(r, t, expected, kFields,
                      "GetLayerNormGradBetaNDTilingInfo for " + dims + ", stackBufferSize " +
                          std::to_string(stack_bytes) + " bytes, typeSize " + std::to_string(ts));

  const std::string bsh_why = "B*S*H from the tiling's " + dims;
  r.tensor("outputPdGamma", outputPdGamma, h, "storageH from the tiling's " + dims);
  r.tensor("outputPdBeta", outputPdBeta, h, "storageH from the tiling's " + dims);
  r.tensor("resForGamma", resForGamma, bsh, bsh_why);
  r.tensor("inputDy", inputDy, bsh, bsh_why);

  std::vector<float> owned;
  float* f = nullptr;
  if (scratch.buffer.data != nullptr) {
    check_scratch(r, scratch, min_tmp, "GetLayerNormGradBetaMaxMinTmpSize minimum for " + dims, stack_bytes,
                  "tiling.stackBufferSize");
    f = static_cast<float*>(scratch.buffer.data);
  } else {  // called outside a kernel without sharedTmpBuffer: the library provides what the plan uses
    // Pass sums (2H at inputDyTmpTensorPos, or at 0 for float) and, for half,
    // the accumulators at gamma/betaTempTensorPos: bounded by the tensors,
    // whatever stackBufferSize says.
    std::uint64_t floats = 2 * h;
    if (ts == 2) {
      floats = std::max<std::uint64_t>({std::uint64_t{t.inputDyTmpTensorPos} + 2 * h,
                                        std::uint64_t{t.gammaTempTensorPos} + h, std::uint64_t{t.betaTempTensorPos} + h});
    }
    owned.resize(floats);
    f = owned.data();
  }

  Regions regions(r);
  regions.input("resForGamma", resForGamma.data, bsh * ts);
  regions.input("inputDy", inputDy.data, bsh * ts);
  regions.output("outputPdGamma", outputPdGamma.data, h * ts, {});
  regions.output("outputPdBeta", outputPdBeta.data, h * ts, {});
  if (scratch.buffer.data != nullptr) regions.scratch(scratch_name(scratch), scratch.buffer.data, scratch.buffer.count);

  // ---- Compute: every check has passed. ----
  using lngrad::Dtype;
  const Dtype dtype = ts == 2 ? Dtype::float16 : Dtype::float32;
  // Both layouts fit the tiling's stackBufferSize: half needs 2H + 2*oneCalSize
  // >= 4H floats there, float needs 2H (the tiling function's own minimum).
  float* acc_gamma = ts == 2 ? f + t.gammaTempTensorPos : static_cast<float*>(outputPdGamma.data);
  float* acc_beta = ts == 2 ? f + t.betaTempTensorPos : static_cast<float*>(outputPdBeta.data);
  float* pass_sums = f + (ts == 2 ? t.inputDyTmpTensorPos : 0);
  const std::uint64_t passes = std::uint64_t{t.loopRound} + (t.inputTailSize != 0 ? 1 : 0);
  const auto hn = static_cast<std::int64_t>(h);
  std::uint64_t row0 = 0;
  for (std::uint64_t p = 0; p < passes; ++p) {
    const std::uint64_t n = p < t.loopRound ? t.bsCurLength : t.bsTailSize;
    const auto* res = static_cast<const std::byte*>(resForGamma.data) + row0 * h * ts;
    const auto* dy = static_cast<const std::byte*>(inputDy.data) + row0 * h * ts;
    // The first pass starts the sums; later ones go to pass_sums and are added.
    float* gamma_out = p == 0 ? acc_gamma : pass_sums;
    float* beta_out = p == 0 ? acc_beta : pass_sums + h;
    lngrad::layer_norm_grad_beta({res, dtype, {static_cast<std::int64_t>(n), hn}},
                                 {dy, dtype, {static_cast<std::int64_t>(n), hn}}, {gamma_out, Dtype::float32, {hn}},
                                 {beta_out, Dtype::float32, {hn}});
    if (p > 0) {
      for (std::uint64_t j = 0; j < oh; ++j) {
        acc_gamma[j] += pass_sums[j];
        acc_beta[j] += pass_sums[h + j];
      }
    }
    row0 += n;
  }

  if (ts == 2) {
    auto* g = static_cast<std::uint16_t*>(outputPdGamma.data);
    auto* be = static_cast<std::uint16_t*>(outputPdBeta.data);
    for (std::uint64_t j = 0; j < h; ++j) {
      g[j] = j < oh ? lngrad::float_to_float16(acc_gamma[j]) : 0;
      be[j] = j < oh ? lngrad::float_to_float16(acc_beta[j]) : 0;
    }
  } else {
    std::fill(acc_gamma + oh, acc_gamma + h, 0.0f);
    std::fill(acc_beta + oh, acc_beta + h, 0.0f);
  }
}

}  // namespace AscendC::detail
