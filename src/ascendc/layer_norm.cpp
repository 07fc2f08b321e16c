// AscendC::LayerNorm on the host: the tiling's passes (loopRound passes of
// meanVarRoundSize rows, then meanVarTailSize rows), each computed by
// lngrad::layer_norm on the rows where they lie (storageH == originH: no
// staging).
//
// Mean and variance are float32, as on the device: float writes them straight
// into the outputs; half keeps them at the tiling's meanTmpTensorPos /
// varianceTmpTensorPos in the scratch and rounds them into the outputs after
// the last pass. y is rounded once, by the op-level kernel.
#include <algorithm>
#include <limits>
#include <sstream>
#include <vector>

#include "ascendc/check.hpp"
#include "lngrad/ascendc/kernel_runtime.hpp"
#include "lngrad/ascendc.hpp"
#include "lngrad/half.hpp"
#include "lngrad/lngrad.hpp"

namespace AscendC::detail {

namespace {

using Tiling = LayerNormTiling;

constexpr TilingField<Tiling> kFields[] = {
    {"inputXSize", &Tiling::inputXSize},
    {"meanVarSize", &Tiling::meanVarSize},
    {"numberOfTmpBuf", &Tiling::numberOfTmpBuf},
    {"meanTmpTensorPos", &Tiling::meanTmpTensorPos},
    {"meanTmpTensorSize", &Tiling::meanTmpTensorSize},
    {"varianceTmpTensorPos", &Tiling::varianceTmpTensorPos},
    {"varianceTmpTensorSize", &Tiling::varianceTmpTensorSize},
    {"oneTmpSize", &Tiling::oneTmpSize},
    {"firstTmpStartPos", &Tiling::firstTmpStartPos},
    {"secondTmpStartPos", &Tiling::secondTmpStartPos},
    {"thirdTmpStartPos", &Tiling::thirdTmpStartPos},
    {"loopRound", &Tiling::loopRound},
    {"inputRoundSize", &Tiling::inputRoundSize},
    {"inputTailSize", &Tiling::inputTailSize},
    {"inputTailPos", &Tiling::inputTailPos},
    {"meanVarRoundSize", &Tiling::meanVarRoundSize},
    {"meanVarTailSize", &Tiling::meanVarTailSize},
    {"meanVarTailPos", &Tiling::meanVarTailPos},
    {"bshCurLength", &Tiling::bshCurLength},
    {"bsCurLength", &Tiling::bsCurLength},
};


}  // namespace

void LayerNorm(Buffer output, Buffer outputMean, Buffer outputVariance, Buffer inputX, Buffer gamma, Buffer beta,
               Scratch scratch, float epsilon, LayerNormTiling& t, std::uint32_t typeSize, bool isReuseSource) {
  const Refuser r("LayerNorm");
  const std::uint32_t ts = typeSize;
  check_reuse(r, isReuseSource, ts);
  check_epsilon(r, epsilon);
  check_rows(r, t.bLength, t.sLength, t.hLength, t.originalHLength, ts);
  if (t.originalHLength != t.hLength) {
    r.fail("tiling.originalHLength",
           "tiling.hLength = " + std::to_string(t.hLength) +
               " (LayerNorm takes unpadded rows: the device's variance would count the padding)",
           std::to_string(t.originalHLength));
  }
  const std::uint64_t h = t.hLength, rows = std::uint64_t{t.bLength} * t.sLength, bsh = rows * h;
  const std::string dims = shape4(t.bLength, t.sLength, t.hLength, t.originalHLength);
  const TensorShape shape({static_cast<std::int64_t>(t.bLength), static_cast<std::int64_t>(t.sLength),
                           static_cast<std::int64_t>(h), static_cast<std::int64_t>(h)});

  // The tiling must be the host function's plan for its own shape. It keeps
  // the stack size in floats; the host function takes bytes.
  const std::uint64_t stack_bytes = std::uint64_t{t.tmpBufSize} * sizeof(float);
  Tiling expected;
  std::uint32_t max_tmp = 0, min_tmp = 0;
  try {
    GetLayerNormNDTilingInfo(shape, r.fits_u32("tiling.tmpBufSize * 4", stack_bytes), ts, isReuseSource, expected);
    GetLayerNormMaxMinTmpSize(shape, ts, isReuseSource, max_tmp, min_tmp);
  } catch (const lngrad::Error& e) {
    r.fail("tiling", "a plan that GetLayerNormNDTilingInfo can make", e.what());
  }
  if (t.inputTailSize != 0 && t.bshCurLength == t.inputTailSize && t.bsCurLength == t.meanVarTailSize &&
      t.bshCurLength != expected.bshCurLength) {
    r.fail("tiling.bshCurLength",
           std::to_string(expected.bshCurLength) +
               " (tiling.inputRoundSize; a LayerNorm call with a tail pass leaves the tail's size in bshCurLength "
               "and bsCurLength, as on the device: pass each call a fresh copy of the host tiling)",
           std::to_string(t.bshCurLength));
  }
  require_same_tiling(r, t, expected, kFields,
                      "GetLayerNormNDTilingInfo for " + dims + ", stackBufferSize " + std::to_string(stack_bytes) +
                          " bytes, typeSize " + std::to_string(ts) + ", isReuseSource " +
                          (isReuseSource ? "true" : "false"));
  if (lngrad::float_bits(t.lastDimValueBack) != lngrad::float_bits(expected.lastDimValueBack)) {
    std::ostringstream want, given;
    want.precision(9);
    given.precision(9);
    want << expected.lastDimValueBack << " (1/originH)";
    given << t.lastDimValueBack;
    r.fail("tiling.lastDimValueBack", want.str(), given.str());
  }

  const std::string bsh_why = "B*S*H from the tiling's " + dims;
  r.tensor("output", output, bsh, bsh_why);
  r.tensor("outputMean", outputMean, rows, "B*S from the tiling's " + dims);
  r.tensor("outputVariance", outputVariance, rows, "B*S from the tiling's " + dims);
  r.tensor("inputX", inputX, bsh, bsh_why);
  r.tensor("gamma", gamma, h, "H from the tiling's " + dims);
  r.tensor("beta", beta, h, "H from the tiling's " + dims);

  const std::uint64_t passes = std::uint64_t{t.loopRound} + (t.inputTailSize != 0 ? 1 : 0);
  const bool output_is_x = output.data == inputX.data;
  if (isReuseSource && output_is_x && passes > 1) {
    r.fail("isReuseSource",
           "false when output is inputX and the plan has several passes (the device works in inputX's first "
           "tiling.oneTmpSize elements on every pass, overwriting the first pass's output)",
           "true with " + std::to_string(passes) + " passes");
  }

  // Half's float statistics of all rows, at the tiling's positions.
  const std::uint64_t stats_floats =
      ts == 2 ? static_cast<std::uint64_t>(t.varianceTmpTensorPos) + t.varianceTmpTensorSize : 0;
  std::vector<float> owned;
  float* f = nullptr;
  if (scratch.buffer.data != nullptr) {
    check_scratch(r, scratch, min_tmp, "GetLayerNormMaxMinTmpSize minimum for " + dims, stack_bytes,
                  "tiling.tmpBufSize * 4");
    f = static_cast<float*>(scratch.buffer.data);  // stats_floats <= tmpBufSize: the plan's own statistics
  } else {  // called outside a kernel without sharedTmpBuffer: the library provides what the plan uses
    owned.resize(stats_floats);
    f = owned.data();
  }

  // output may be exactly inputX; the statistics are disjoint from everything.
  Regions regions(r);
  if (isReuseSource && !output_is_x) {
    regions.written_input("inputX", inputX.data, bsh * ts, {});
  } else {
    regions.input("inputX", inputX.data, bsh * ts);
  }
  regions.input("gamma", gamma.data, h * ts);
  regions.input("beta", beta.data, h * ts);
  regions.output("output", output.data, bsh * ts, {"inputX"});
  regions.output("outputMean", outputMean.data, std::uint64_t{outputMean.count} * ts, {});
  regions.output("outputVariance", outputVariance.data, std::uint64_t{outputVariance.count} * ts, {});
  if (scratch.buffer.data != nullptr) regions.scratch(scratch_name(scratch), scratch.buffer.data, scratch.buffer.count);

  // ---- Compute: every check has passed. ----
  using lngrad::Dtype;
  const Dtype dt = ts == 2 ? Dtype::float16 : Dtype::float32;
  float* mean = ts == 2 ? f + t.meanTmpTensorPos : static_cast<float*>(outputMean.data);
  float* variance = ts == 2 ? f + t.varianceTmpTensorPos : static_cast<float*>(outputVariance.data);
  lngrad::ForwardOptions options;
  options.epsilon = epsilon;  // already rounded to T by the caller
  // A kernel core is one thread (cores run as the pool's tasks); outside a
  // kernel the call may use every core.
  options.num_threads = in_kernel() ? 1 : 0;
  const auto hn = static_cast<std::int64_t>(h);
  std::uint64_t row0 = 0;
  for (std::uint64_t p = 0; p < passes; ++p) {
    const std::uint64_t n = p < t.loopRound ? t.meanVarRoundSize : t.meanVarTailSize;
    const auto rn = static_cast<std::int64_t>(n);
    lngrad::layer_norm({element_at(inputX, ts, row0 * h), dt, {rn, hn}}, lngrad::ConstTensorView{gamma.data, dt, {hn}},
                       lngrad::ConstTensorView{beta.data, dt, {hn}}, {element_at(output, ts, row0 * h), dt, {rn, hn}},
                       {mean + row0, Dtype::float32, {rn}}, {variance + row0, Dtype::float32, {rn}}, {}, options);
    row0 += n;
  }
  if (t.inputTailSize != 0) {  // the device's call leaves the tail pass's sizes
    t.bshCurLength = t.inputTailSize;
    t.bsCurLength = t.meanVarTailSize;
  }
  if (ts == 2) {
    auto* m = static_cast<std::uint16_t*>(outputMean.data);
    auto* v = static_cast<std::uint16_t*>(outputVariance.data);
    for (std::uint64_t i = 0; i < rows; ++i) {
      m[i] = lngrad::float_to_float16(mean[i]);
      v[i] = lngrad::float_to_float16(variance[i]);
    }
  }
  if (isReuseSource && !output_is_x) {
    // What the device leaves there is its scratch: make a later read visible.
    auto* x = static_cast<float*>(inputX.data);
    std::fill(x, x + t.oneTmpSize, std::numeric_limits<float>::quiet_NaN());
  }
}

}  // namespace AscendC::detail
