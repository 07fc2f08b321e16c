// AscendC::LayerNormGradBeta on the host, in the device's order: rows summed
// strictly in row order into one float32 accumulator per column,
//   pd_gamma[j] = (((0 + dy[0][j]*res[0][j]) + dy[1][j]*res[1][j]) + ...),
//   pd_beta[j]  = (((0 + dy[0][j]) + dy[1][j]) + ...),
// each product rounded to float32 before it is added (the device multiplies,
// then adds), half widened exactly and the sums rounded to half once at the
// end. The tiling's passes split the rows without changing that order, so
// the results are the device's bits whatever the tmp size.
//
// Accumulators: float accumulates in the outputs, as the device does; half in
// the scratch at gammaTempTensorPos / betaTempTensorPos. With isReuseSource
// (float) the device keeps the products in resForGamma: so does this call.
// Only the originH columns are computed; the padding of the outputs is
// written as zero.
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
  check_reuse(r, isReuseSource, ts);
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
    // Half's accumulators at gamma/betaTempTensorPos (H floats each),
    // bounded by the tensors whatever stackBufferSize says.
    owned.resize(ts == 2 ? std::max(t.gammaTempTensorPos, t.betaTempTensorPos) + h : 0);
    f = owned.data();
  }

  // With isReuseSource the products go into resForGamma, so it must not
  // share memory with inputDy.
  Regions regions(r);
  if (isReuseSource) {
    regions.input("inputDy", inputDy.data, bsh * ts);
    regions.written_input("resForGamma", resForGamma.data, bsh * ts, {});
  } else {
    regions.input("resForGamma", resForGamma.data, bsh * ts);
    regions.input("inputDy", inputDy.data, bsh * ts);
  }
  regions.output("outputPdGamma", outputPdGamma.data, h * ts, {});
  regions.output("outputPdBeta", outputPdBeta.data, h * ts, {});
  if (scratch.buffer.data != nullptr) regions.scratch(scratch_name(scratch), scratch.buffer.data, scratch.buffer.count);

  // ---- Compute: every check has passed. ----
  float* acc_gamma = ts == 2 ? f + t.gammaTempTensorPos : static_cast<float*>(outputPdGamma.data);
  float* acc_beta = ts == 2 ? f + t.betaTempTensorPos : static_cast<float*>(outputPdBeta.data);
  std::fill(acc_gamma, acc_gamma + oh, 0.0f);
  std::fill(acc_beta, acc_beta + oh, 0.0f);
  const std::uint64_t rows = b * s;
  if (ts == 4) {
    auto* res = static_cast<float*>(resForGamma.data);
    const auto* dy = static_cast<const float*>(inputDy.data);
    for (std::uint64_t i = 0; i < rows; ++i) {
      for (std::uint64_t j = 0; j < oh; ++j) {
        const float product = dy[i * h + j] * res[i * h + j];
        if (isReuseSource) res[i * h + j] = product;
        acc_gamma[j] += product;
        acc_beta[j] += dy[i * h + j];
      }
    }
    std::fill(acc_gamma + oh, acc_gamma + h, 0.0f);
    std::fill(acc_beta + oh, acc_beta + h, 0.0f);
    return;
  }
  const auto* res = static_cast<const std::uint16_t*>(resForGamma.data);
  const auto* dy = static_cast<const std::uint16_t*>(inputDy.data);
  for (std::uint64_t i = 0; i < rows; ++i) {
    for (std::uint64_t j = 0; j < oh; ++j) {
      const float dy_f = lngrad::float16_to_float(dy[i * h + j]);
      acc_gamma[j] += dy_f * lngrad::float16_to_float(res[i * h + j]);
      acc_beta[j] += dy_f;
    }
  }
  auto* g = static_cast<std::uint16_t*>(outputPdGamma.data);
  auto* be = static_cast<std::uint16_t*>(outputPdBeta.data);
  for (std::uint64_t j = 0; j < h; ++j) {
    g[j] = j < oh ? lngrad::float_to_float16(acc_gamma[j]) : 0;
    be[j] = j < oh ? lngrad::float_to_float16(acc_beta[j]) : 0;
  }
}

}  // namespace AscendC::detail
