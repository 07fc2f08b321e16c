// AscendC::LayerNormGrad on the host: the tiling's passes (loopNum passes of
// nohCalSize rows, then nohTailSize rows), each staged through the scratch
// and computed by lngrad::layer_norm_grad_x.
//
// A pass of r rows: widen originH of each row of inputDy and inputX, and the
// r means and variances, into float32 rows of the scratch (gamma once for
// all passes); run the op-level float32 gradient with pd_x written over the
// staged dy and res_for_gamma over the staged x; narrow both into the
// outputs with zeros in the padding. The staging is where half is cast up
// (exactly) and where storageH padding is dropped, as the device's casts do.
// Float rows without padding skip it: one call over the tensors themselves.
//
// Scratch layout (floats, each region 32-byte aligned), sized by the largest
// pass R = nohCalSize (nohTailSize when there is no full pass):
//   dy rows R*originH | x rows R*originH (absent with isReuseSource) |
//   gamma originH | mean R | variance R
// With isReuseSource (float), x is compacted in place inside inputX instead.
// This is at most half of CANN's minimum (6 or 4 float buffers of a pass,
// 9 for half), so any buffer of at least the minimum holds it. CANN's own
// Pos fields are not used as addresses: they assume full oneCalSize slots,
// and its rounding of nohCalSize up to 8/16 rows can place them past the
// buffer (half {1, 2, 16, 16} at the minimum: 9 slots of 256 floats in 144).
#include <algorithm>
#include <cmath>
#include <cstring>
#include <sstream>
#include <vector>

#include "ascendc/check.hpp"
#include "lngrad/ascendc/kernel_runtime.hpp"
#include "ascendc/staging.hpp"
#include "lngrad/ascendc.hpp"
#include "lngrad/lngrad.hpp"

namespace AscendC::detail {

namespace {

using Tiling = LayerNormGradTiling;

constexpr TilingField<Tiling> kFields[] = {
    {"stackBufferSize", &Tiling::stackBufferSize},
    {"oneCalSize", &Tiling::oneCalSize},
    {"nohCalSize", &Tiling::nohCalSize},
    {"loopNum", &Tiling::loopNum},
    {"tailSize", &Tiling::tailSize},
    {"nohTailSize", &Tiling::nohTailSize},
    {"tmpTensorBSHPos", &Tiling::tmpTensorBSHPos},
    {"tmpTensorBSHSize", &Tiling::tmpTensorBSHSize},
    {"pdVarTensorPos", &Tiling::pdVarTensorPos},
    {"pdVarTensorSize", &Tiling::pdVarTensorSize},
    {"pdMeanTensorPos", &Tiling::pdMeanTensorPos},
    {"pdMeanTensorSize", &Tiling::pdMeanTensorSize},
    {"x1TensorPos", &Tiling::x1TensorPos},
    {"x1TensorSize", &Tiling::x1TensorSize},
    {"x2TensorPos", &Tiling::x2TensorPos},
    {"x2TensorSize", &Tiling::x2TensorSize},
    {"x3TensorPos", &Tiling::x3TensorPos},
    {"x3TensorSize", &Tiling::x3TensorSize},
    {"tmpTensorPos", &Tiling::tmpTensorPos},
    {"tmpTensorSize", &Tiling::tmpTensorSize},
    {"tmpTensor1Pos", &Tiling::tmpTensor1Pos},
    {"tmpTensor1Size", &Tiling::tmpTensor1Size},
    {"tmpTensor2Pos", &Tiling::tmpTensor2Pos},
    {"tmpTensor2Size", &Tiling::tmpTensor2Size},
    {"lastDimValueBack", &Tiling::lastDimValueBack},
    {"lastDimValueBackMulTwo", &Tiling::lastDimValueBackMulTwo},
};

std::uint64_t align8(std::uint64_t n) { return (n + 7) / 8 * 8; }

struct Layout {
  std::uint64_t dy = 0, x = 0, gamma = 0, mean = 0, variance = 0, floats = 0;
};

Layout layout(std::uint64_t max_rows, std::uint64_t origin_h, bool x_in_place) {
  Layout l;
  std::uint64_t at = 0;
  l.dy = at;
  at += align8(max_rows * origin_h);
  if (!x_in_place) {
    l.x = at;
    at += align8(max_rows * origin_h);
  }
  l.gamma = at;
  at += align8(origin_h);
  l.mean = at;
  at += align8(max_rows);
  l.variance = at;
  at += max_rows;
  l.floats = at;
  return l;
}


}  // namespace

void LayerNormGrad(Buffer outputPdX, Buffer resForGamma, Buffer inputDy, Buffer inputX, Buffer inputVariance,
                   Buffer inputMean, Buffer inputGamma, Scratch scratch, float epsilon, const LayerNormGradTiling& t,
                   DataFormat format, std::uint32_t typeSize, bool isReuseSource) {
  const Refuser r("LayerNormGrad");
  const std::uint32_t ts = typeSize;
  if (format != DataFormat::ND) {
    r.fail("shapeInfo.dataFormat", "DataFormat::ND (the only layout LayerNormGrad supports)", format_name(format));
  }
  check_reuse(r, isReuseSource, ts);
  check_epsilon(r, epsilon);
  check_rows(r, t.bLength, t.sLength, t.hLength, t.originalHLength, ts);
  const std::uint64_t b = t.bLength, s = t.sLength, h = t.hLength, oh = t.originalHLength;
  const std::uint64_t rows = b * s, bsh = rows * h;
  const std::string dims = shape4(t.bLength, t.sLength, t.hLength, t.originalHLength);
  const ge::Shape shape({static_cast<std::int64_t>(b), static_cast<std::int64_t>(s), static_cast<std::int64_t>(h),
                         static_cast<std::int64_t>(oh)});

  // The tiling must be the host function's plan for its own shape.
  Tiling expected;
  std::uint32_t max_tmp = 0, min_tmp = 0;
  try {
    GetLayerNormGradNDTilingInfo(shape, t.stackBufferSize, ts, isReuseSource, expected);
    GetLayerNormGradMaxMinTmpSize(shape, ts, isReuseSource, max_tmp, min_tmp);
  } catch (const lngrad::Error& e) {
    r.fail("tiling", "a plan that GetLayerNormGradNDTilingInfo can make", e.what());
  }
  require_same_tiling(r, t, expected, kFields,
                      "GetLayerNormGradNDTilingInfo for " + dims + ", stackBufferSize " +
                          std::to_string(t.stackBufferSize) + ", typeSize " + std::to_string(ts) +
                          ", isReuseSource " + (isReuseSource ? "true" : "false"));

  // The tensors must hold the tiling's sizes.
  const std::string bsh_why = "B*S*H from the tiling's " + dims;
  r.tensor("outputPdX", outputPdX, bsh, bsh_why);
  r.tensor("resForGamma", resForGamma, bsh, bsh_why);
  r.tensor("inputDy", inputDy, bsh, bsh_why);
  r.tensor("inputX", inputX, bsh, bsh_why);
  r.tensor("inputVariance", inputVariance, rows, "B*S from the tiling's " + dims);
  r.tensor("inputMean", inputMean, rows, "B*S from the tiling's " + dims);
  r.tensor("inputGamma", inputGamma, h, "storageH from the tiling's " + dims);

  const std::uint64_t max_rows = t.loopNum > 0 ? t.nohCalSize : t.nohTailSize;
  const Layout l = layout(max_rows, oh, isReuseSource);
  const std::uint64_t need = l.floats * sizeof(float);
  std::vector<float> owned;
  float* f = nullptr;
  if (scratch.buffer.data != nullptr) {
    check_scratch(r, scratch, min_tmp, "GetLayerNormGradMaxMinTmpSize minimum for " + dims, t.stackBufferSize,
                  "tiling.stackBufferSize");
    r.scratch_at_least(scratch, need,
                       "at least " + std::to_string(need) + " bytes (float32 work rows for passes of " +
                           std::to_string(max_rows) + " rows, tiling.nohCalSize)");
    f = static_cast<float*>(scratch.buffer.data);
  } else {  // called outside a kernel without sharedTmpBuffer: the library provides what the plan uses
    owned.resize(need / sizeof(float) + 1);  // bounded by the tensors, whatever stackBufferSize says
    f = owned.data();
  }

  // Outputs may be exactly inputDy or inputX: each pass is staged before its
  // rows are written. With isReuseSource inputX is written too, so it must
  // not share memory with the other inputs (except being exactly inputDy).
  Regions regions(r);
  regions.input("inputDy", inputDy.data, bsh * ts);
  if (!isReuseSource) regions.input("inputX", inputX.data, bsh * ts);
  regions.input("inputVariance", inputVariance.data, std::uint64_t{inputVariance.count} * ts);
  regions.input("inputMean", inputMean.data, std::uint64_t{inputMean.count} * ts);
  regions.input("inputGamma", inputGamma.data, h * ts);
  if (isReuseSource) regions.written_input("inputX", inputX.data, bsh * ts, {"inputDy"});
  regions.output("outputPdX", outputPdX.data, bsh * ts, {"inputDy", "inputX"});
  regions.output("resForGamma", resForGamma.data, bsh * ts, {"inputDy", "inputX"});
  if (scratch.buffer.data != nullptr) regions.scratch(scratch_name(scratch), scratch.buffer.data, scratch.buffer.count);

  // ---- Compute: every check has passed. ----
  using lngrad::Dtype;
  lngrad::GradXOptions options;
  options.epsilon = epsilon;  // already rounded to T by the caller
  // A kernel core is one thread (cores run as the pool's tasks); outside a
  // kernel the call may use every core.
  options.num_threads = in_kernel() ? 1 : 0;
  if (ts == 4 && h == oh) {
    // Float rows without padding need no staging: one call over all rows
    // gives the bits the passes would (a row's result does not depend on
    // the rows computed with it), without copying every row twice.
    const auto rn = static_cast<std::int64_t>(rows), hn = static_cast<std::int64_t>(h);
    lngrad::layer_norm_grad_x({inputDy.data, Dtype::float32, {rn, hn}}, {inputX.data, Dtype::float32, {rn, hn}},
                              {inputVariance.data, Dtype::float32, {rn}}, {inputMean.data, Dtype::float32, {rn}},
                              lngrad::ConstTensorView{inputGamma.data, Dtype::float32, {hn}},
                              {outputPdX.data, Dtype::float32, {rn, hn}}, {resForGamma.data, Dtype::float32, {rn, hn}},
                              options);
    return;
  }
  float* gamma = f + l.gamma;
  widen_rows(inputGamma.data, ts, 1, h, oh, gamma);
  const std::uint64_t passes = std::uint64_t{t.loopNum} + (t.tailSize != 0 ? 1 : 0);
  std::uint64_t row0 = 0;
  for (std::uint64_t p = 0; p < passes; ++p) {
    const std::uint64_t n = p < t.loopNum ? t.nohCalSize : t.nohTailSize;
    float* dy = f + l.dy;
    float* x = isReuseSource ? static_cast<float*>(inputX.data) + row0 * h : f + l.x;
    float* mean = f + l.mean;
    float* variance = f + l.variance;
    widen_rows(element_at(inputMean, ts, row0), ts, n, 1, 1, mean);
    widen_rows(element_at(inputVariance, ts, row0), ts, n, 1, 1, variance);
    widen_rows(element_at(inputDy, ts, row0 * h), ts, n, h, oh, dy);
    widen_rows(element_at(inputX, ts, row0 * h), ts, n, h, oh, x);

    const auto rn = static_cast<std::int64_t>(n), ohn = static_cast<std::int64_t>(oh);
    lngrad::layer_norm_grad_x({dy, Dtype::float32, {rn, ohn}}, {x, Dtype::float32, {rn, ohn}},
                              {variance, Dtype::float32, {rn}}, {mean, Dtype::float32, {rn}},
                              lngrad::ConstTensorView{gamma, Dtype::float32, {ohn}},
                              {dy, Dtype::float32, {rn, ohn}},  // pd_x over the staged dy
                              {x, Dtype::float32, {rn, ohn}},   // res_for_gamma over the staged x
                              options);
    // res first: with isReuseSource it lives in inputX, which outputPdX may be.
    narrow_rows(x, n, oh, h, ts, element_at(resForGamma, ts, row0 * h));
    narrow_rows(dy, n, oh, h, ts, element_at(outputPdX, ts, row0 * h));
    row0 += n;
  }
}

}  // namespace AscendC::detail
