// grad, grad-x, grad-beta and forward: read .npy inputs, allocate outputs in
// the library's dtypes, call the public API, write the outputs. Every number
// comes from lngrad; this file only moves data and shapes.
#include <algorithm>
#include <cstdio>
#include <optional>
#include <string>
#include <vector>

#include "args.hpp"
#include "commands.hpp"
#include "lngrad/lngrad.hpp"
#include "tensor_io.hpp"

namespace lngrad::cli {

namespace {

constexpr int kMaxThreads = 1 << 16;

const char* const kGradHelp = R"(usage: lngrad grad --dy F --x F --variance F --mean F [--gamma F] [--epsilon E]
                   [--rstd] [--mask LIST] [--normalized-ndim K] [--threads N]
                   [--dtype bfloat16] --out DIR

LayerNorm backward (lngrad::layer_norm_grad, seed 000's LayerNormGrad):
  pd_x     = g*rstd + pd_var*(2/H)*(x-mean) + pd_mean/H,  g = dy*gamma
  pd_var   = sum(-0.5*g*(x-mean)*rstd^3)
  pd_mean  = sum(-g*rstd) + pd_var*(1/H)*sum(-2*(x-mean))
  pd_gamma = sum over rows of dy*(x-mean)*rstd,  pd_beta = sum over rows of dy
with rstd = 1/sqrt(variance + epsilon) and H the normalized size.

Inputs (.npy):
  --dy, --x        [A.., R..], one dtype
  --variance, --mean
                   [A..] or [A.., 1..1]; x's dtype, float32 or float64 (never
                   narrower than x). With --rstd the --variance file holds rstd.
  --gamma          [R..], x's dtype or float32; absent acts as ones. Its rank
                   fixes the normalized (trailing) axes R.. of x.
Options:
  --epsilon E      default 1e-12 for float32/float64 x, 1e-5 for float16/bfloat16
                   (the Ascend op's); refused with --rstd, which needs none
  --rstd           the --variance file holds rstd = 1/sqrt(variance+eps)
  --mask LIST      the outputs to compute, comma-separated from pd_x, pd_gamma,
                   pd_beta (default: all three)
  --normalized-ndim K
                   number of trailing normalized axes; needed only without
                   --gamma when mean's shape does not tell (e.g. [A.., 1..1]
                   where A ends in 1s)
  --threads N      0 (default): all cores; results are identical for any N
  --out DIR        created if missing
Outputs: DIR/pd_x.npy (x's dtype), DIR/pd_gamma.npy and DIR/pd_beta.npy
  (gamma's dtype, or x's without --gamma), those --mask names.
)";

const char* const kGradXHelp = R"(usage: lngrad grad-x --dy F --x F --variance F --mean F [--gamma F] [--epsilon E]
                     [--rstd] [--normalized-ndim K] [--threads N]
                     [--dtype bfloat16] --out DIR

Seed 002's LayerNormGrad (lngrad::layer_norm_grad_x): pd_x as 'lngrad grad'
and res_for_gamma = (x-mean)*rstd, the input of 'lngrad grad-beta'.
Inputs and options as 'lngrad grad --help'.
Outputs: DIR/pd_x.npy and DIR/res_for_gamma.npy, both in x's dtype and shape.
)";

const char* const kGradBetaHelp = R"(usage: lngrad grad-beta --dy F --res-for-gamma F [--gamma-ndim K] [--threads N]
                        [--dtype bfloat16] --out DIR

Seed 001's LayerNormGradBeta (lngrad::layer_norm_grad_beta):
  pd_gamma = sum over rows of dy*res_for_gamma,  pd_beta = sum over rows of dy
Inputs (.npy):
  --dy             [A.., R..]
  --res-for-gamma  dy's shape; dy's dtype or float32 (float64 when dy is)
Options:
  --gamma-ndim K   number of trailing axes R.. that gamma spans (default 1)
  --threads N      0 (default): all cores; results are identical for any N
Outputs: DIR/pd_gamma.npy and DIR/pd_beta.npy, shape [R..], dy's dtype.
)";

const char* const kForwardHelp = R"(usage: lngrad forward --x F [--gamma F] [--beta F] [--epsilon E]
                      [--normalized-ndim K] [--threads N] [--dtype bfloat16]
                      --out DIR

LayerNorm forward (lngrad::layer_norm), producing the backward's inputs:
  mean = sum(x)/H,  variance = sum((x-mean)^2)/H (biased),
  rstd = 1/sqrt(variance+epsilon),  y = (x-mean)*rstd*gamma + beta
Inputs (.npy): --x [A.., R..]; --gamma, --beta [R..] in x's dtype or float32
  (absent: ones and zeros).
Options:
  --epsilon E      default as 'lngrad grad'
  --normalized-ndim K
                   number of trailing normalized axes R.. (default: gamma's
                   rank, else beta's, else 1)
  --threads N      0 (default): all cores
Outputs: DIR/y.npy (x's dtype and shape); DIR/mean.npy, DIR/variance.npy,
  DIR/rstd.npy of shape [A..], float32 for float16/bfloat16 x, else x's dtype.
)";

// An operand of the library: like load_tensor, and non-empty, so that output
// sizes derived from it are bounded by the input files' sizes.
InputTensor load_operand(const Args& a, const char* option, bool bf16) {
  const std::string path = a.required(option);
  InputTensor t = load_tensor(path, bf16);
  if (t.array.count() == 0) {
    throw UsageError(path + ": empty array (shape " + shape_str(t.array.shape) +
                     "); lngrad needs every extent >= 1");
  }
  return t;
}

bool print_help(const Args& a, const char* text) {
  if (!a.help()) return false;
  std::printf("%s\n%s\n%s", text, kNpyHelp, kExitStatusHelp);
  return true;
}

std::vector<std::int64_t> trailing(const std::vector<std::int64_t>& s, int n) {
  return {s.end() - n, s.end()};
}

std::vector<std::int64_t> leading(const std::vector<std::int64_t>& s, int n) {
  return {s.begin(), s.end() - n};
}

void report(const std::string& dir, const std::vector<OutputTensor>& outputs) {
  for (const OutputTensor& t : outputs) {
    std::printf("wrote %s/%s: %s %s\n", dir.c_str(), t.file.c_str(), dtype_name(t.dtype), shape_str(t.array.shape).c_str());
  }
}

// The inputs shared by grad and grad-x.
struct GradInputs {
  InputTensor dy, x, variance, mean;
  std::optional<InputTensor> gamma;
  std::optional<double> epsilon;
  Statistic statistic = Statistic::variance;
  int normalized_ndim = 0;
  int threads = 0;
  std::string out;

  std::optional<ConstTensorView> gamma_view() const {
    if (!gamma) return std::nullopt;
    return gamma->view();
  }
};

const std::vector<OptionSpec> kGradOptions = {
    {"dy", true},    {"x", true},       {"variance", true},        {"mean", true},    {"gamma", true},
    {"epsilon", true}, {"rstd", false}, {"normalized-ndim", true}, {"threads", true}, {"dtype", true},
    {"out", true}};

GradInputs read_grad_inputs(const Args& a) {
  GradInputs in;
  const bool bf16 = a.bfloat16();
  in.out = a.required("out");
  in.epsilon = a.number("epsilon");
  if (a.flag("rstd")) {
    if (in.epsilon) a.fail("--epsilon has no effect with --rstd (the --variance file already holds rstd)");
    in.statistic = Statistic::rstd;
  }
  in.normalized_ndim = a.integer("normalized-ndim", 1, kMaxRank).value_or(0);
  in.threads = a.integer("threads", 0, kMaxThreads).value_or(0);
  in.dy = load_operand(a, "dy", bf16);
  in.x = load_operand(a, "x", bf16);
  in.variance = load_operand(a, "variance", bf16);
  in.mean = load_operand(a, "mean", bf16);
  if (a.get("gamma")) in.gamma = load_operand(a, "gamma", bf16);
  return in;
}

// pd_gamma/pd_beta need a shape before the call: the trailing axes of x that
// gamma spans, or that --normalized-ndim or mean's shape names (the same rule
// the library applies; it checks the result against every argument again).
int normalized_ndim(const Args& a, const GradInputs& in) {
  const auto& x = in.x.array.shape;
  const auto& mean = in.mean.array.shape;
  int ndim = in.normalized_ndim;
  if (ndim == 0 && in.gamma) ndim = static_cast<int>(in.gamma->array.shape.size());
  if (ndim == 0 && mean.size() < x.size()) ndim = static_cast<int>(x.size() - mean.size());
  for (std::size_t i = 0; ndim == 0 && i < x.size(); ++i) {
    if (mean[i] != x[i]) ndim = static_cast<int>(x.size() - i);
  }
  if (ndim == 0) {
    a.fail("cannot tell the normalized axes from mean's shape " + shape_str(mean) + " and x's " + shape_str(x) +
           ": pass --gamma or --normalized-ndim");
  }
  if (ndim > static_cast<int>(x.size())) {
    a.fail("the normalized axes (" + std::to_string(ndim) + ") outnumber x's axes: x has shape " + shape_str(x));
  }
  return ndim;
}

}  // namespace

int cmd_grad(const Argv& args) {
  std::vector<OptionSpec> specs = kGradOptions;
  specs.push_back({"mask", true});
  const Args a("grad", args, specs);
  if (print_help(a, kGradHelp)) return kExitOk;

  bool want_x = true, want_gamma = true, want_beta = true;
  if (auto mask = a.get("mask")) {
    want_x = want_gamma = want_beta = false;
    std::size_t begin = 0;
    while (begin <= mask->size()) {
      const std::size_t end = std::min(mask->find(',', begin), mask->size());
      const std::string item = mask->substr(begin, end - begin);
      bool* slot = item == "pd_x" ? &want_x : item == "pd_gamma" ? &want_gamma : item == "pd_beta" ? &want_beta : nullptr;
      if (slot == nullptr) a.fail("--mask: expected names from pd_x, pd_gamma, pd_beta, given '" + item + "'");
      if (*slot) a.fail("--mask: '" + item + "' named twice");
      *slot = true;
      begin = end + 1;
    }
  }
  const GradInputs in = read_grad_inputs(a);

  std::vector<OutputTensor> outs;
  TensorView pd_x, pd_gamma, pd_beta;
  if (want_x) outs.push_back(make_output("pd_x.npy", in.x.dtype, in.x.array.shape));
  if (want_gamma || want_beta) {
    const int ndim = normalized_ndim(a, in);
    const auto shape = in.gamma ? in.gamma->array.shape : trailing(in.x.array.shape, ndim);
    const Dtype dtype = in.gamma ? in.gamma->dtype : in.x.dtype;
    if (want_gamma) outs.push_back(make_output("pd_gamma.npy", dtype, shape));
    if (want_beta) outs.push_back(make_output("pd_beta.npy", dtype, shape));
  }
  for (OutputTensor& t : outs) {
    if (t.file == "pd_x.npy") pd_x = t.view();
    if (t.file == "pd_gamma.npy") pd_gamma = t.view();
    if (t.file == "pd_beta.npy") pd_beta = t.view();
  }

  GradOptions opt;
  opt.epsilon = in.epsilon;
  opt.statistic = in.statistic;
  opt.compute_pd_x = want_x;
  opt.compute_pd_gamma = want_gamma;
  opt.compute_pd_beta = want_beta;
  opt.normalized_ndim = in.normalized_ndim;
  opt.num_threads = in.threads;
  layer_norm_grad(in.dy.view(), in.x.view(), in.variance.view(), in.mean.view(), in.gamma_view(), pd_x, pd_gamma,
                  pd_beta, opt);
  write_outputs(in.out, outs);
  report(in.out, outs);
  return kExitOk;
}

int cmd_grad_x(const Argv& args) {
  const Args a("grad-x", args, kGradOptions);
  if (print_help(a, kGradXHelp)) return kExitOk;
  const GradInputs in = read_grad_inputs(a);
  std::vector<OutputTensor> outs;
  outs.push_back(make_output("pd_x.npy", in.x.dtype, in.x.array.shape));
  outs.push_back(make_output("res_for_gamma.npy", in.x.dtype, in.x.array.shape));
  GradXOptions opt;
  opt.epsilon = in.epsilon;
  opt.statistic = in.statistic;
  opt.normalized_ndim = in.normalized_ndim;
  opt.num_threads = in.threads;
  layer_norm_grad_x(in.dy.view(), in.x.view(), in.variance.view(), in.mean.view(), in.gamma_view(), outs[0].view(),
                    outs[1].view(), opt);
  write_outputs(in.out, outs);
  report(in.out, outs);
  return kExitOk;
}

int cmd_grad_beta(const Argv& args) {
  const Args a("grad-beta", args,
               {{"dy", true}, {"res-for-gamma", true}, {"gamma-ndim", true}, {"threads", true}, {"dtype", true},
                {"out", true}});
  if (print_help(a, kGradBetaHelp)) return kExitOk;
  const bool bf16 = a.bfloat16();
  const std::string out = a.required("out");
  const int ndim = a.integer("gamma-ndim", 1, kMaxRank).value_or(1);
  GradBetaOptions opt;
  opt.num_threads = a.integer("threads", 0, kMaxThreads).value_or(0);
  const InputTensor dy = load_operand(a, "dy", bf16);
  const InputTensor res = load_operand(a, "res-for-gamma", bf16);
  if (ndim > static_cast<int>(dy.array.shape.size())) {
    a.fail("--gamma-ndim " + std::to_string(ndim) + " exceeds the rank of dy, shape " + shape_str(dy.array.shape));
  }
  const auto shape = trailing(dy.array.shape, ndim);
  std::vector<OutputTensor> outs;
  outs.push_back(make_output("pd_gamma.npy", dy.dtype, shape));
  outs.push_back(make_output("pd_beta.npy", dy.dtype, shape));
  layer_norm_grad_beta(res.view(), dy.view(), outs[0].view(), outs[1].view(), opt);
  write_outputs(out, outs);
  report(out, outs);
  return kExitOk;
}

int cmd_forward(const Argv& args) {
  const Args a("forward", args,
               {{"x", true}, {"gamma", true}, {"beta", true}, {"epsilon", true}, {"normalized-ndim", true},
                {"threads", true}, {"dtype", true}, {"out", true}});
  if (print_help(a, kForwardHelp)) return kExitOk;
  const bool bf16 = a.bfloat16();
  const std::string out = a.required("out");
  ForwardOptions opt;
  opt.epsilon = a.number("epsilon");
  opt.num_threads = a.integer("threads", 0, kMaxThreads).value_or(0);
  opt.normalized_ndim = a.integer("normalized-ndim", 1, kMaxRank).value_or(0);
  const InputTensor x = load_operand(a, "x", bf16);
  std::optional<InputTensor> gamma, beta;
  if (a.get("gamma")) gamma = load_operand(a, "gamma", bf16);
  if (a.get("beta")) beta = load_operand(a, "beta", bf16);

  // The statistics' shape is x's leading axes, so the normalized rank is
  // needed first; the library checks it against gamma and beta.
  int ndim = opt.normalized_ndim;
  if (ndim == 0 && gamma) ndim = static_cast<int>(gamma->array.shape.size());
  if (ndim == 0 && beta) ndim = static_cast<int>(beta->array.shape.size());
  if (ndim == 0) ndim = 1;
  const auto& xs = x.array.shape;
  if (xs.empty()) a.fail("x must have at least one axis, given a 0-d array");
  if (ndim > static_cast<int>(xs.size())) {
    a.fail("the normalized axes (" + std::to_string(ndim) + ") outnumber x's axes: x has shape " + shape_str(xs));
  }
  const bool narrow = x.dtype == Dtype::float16 || x.dtype == Dtype::bfloat16;
  const Dtype stat = narrow ? Dtype::float32 : x.dtype;
  std::vector<OutputTensor> outs;
  outs.push_back(make_output("y.npy", x.dtype, xs));
  for (const char* name : {"mean.npy", "variance.npy", "rstd.npy"}) outs.push_back(make_output(name, stat, leading(xs, ndim)));
  std::optional<ConstTensorView> gv, bv;
  if (gamma) gv = gamma->view();
  if (beta) bv = beta->view();
  layer_norm(x.view(), gv, bv, outs[0].view(), outs[1].view(), outs[2].view(), outs[3].view(), opt);
  write_outputs(out, outs);
  report(out, outs);
  return kExitOk;
}

}  // namespace lngrad::cli
