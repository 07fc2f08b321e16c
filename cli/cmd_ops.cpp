// grad, grad-x, grad-beta and forward: read .npy inputs, allocate outputs in
// the library's dtypes, call the public API, write the outputs. Every number
// comes from lngrad; this file only moves data and shapes.
#include <algorithm>
#include <cstdio>
#include <optional>
#include <string>
#include <tuple>
#include <utility>
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
                   [--shape S]... [--dtype D]... [--out-format npy|bin] --out DIR

LayerNorm backward (lngrad::layer_norm_grad, seed 000's LayerNormGrad):
  pd_x     = g*rstd + pd_var*(2/H)*(x-mean) + pd_mean/H,  g = dy*gamma
  pd_var   = sum(-0.5*g*(x-mean)*rstd^3)
  pd_mean  = sum(-g*rstd) + pd_var*(1/H)*sum(-2*(x-mean))
  pd_gamma = sum over rows of dy*(x-mean)*rstd,  pd_beta = sum over rows of dy
with rstd = 1/sqrt(variance + epsilon) and H the normalized size.

Inputs (.npy, or raw .bin files: see below):
  --dy, --x        [A.., R..], one dtype
  --variance, --mean
                   [A..] or [A.., 1..1]; x's dtype, float32 or float64 (never
                   narrower than x). With --rstd the --variance file holds rstd.
  --gamma          [R..], x's dtype or float32; absent acts as ones. Its rank
                   fixes the normalized (trailing) axes R.. of x.
Raw files: --shape gives x's shape (and dy's; a raw one of the two also takes
  the other's .npy shape); raw mean/variance take x's leading axes and a raw
  gamma its trailing ones, by --normalized-ndim (default 1).
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
  --out-format F   npy or bin (raw); default: bin when --x is a raw file
Outputs: DIR/pd_x.npy (x's dtype), DIR/pd_gamma.npy and DIR/pd_beta.npy
  (gamma's dtype, or x's without --gamma), those --mask names (.bin when raw).
)";

const char* const kGradXHelp = R"(usage: lngrad grad-x --dy F --x F --variance F --mean F [--gamma F] [--epsilon E]
                     [--rstd] [--normalized-ndim K] [--threads N]
                     [--shape S]... [--dtype D]... [--out-format npy|bin] --out DIR

Seed 002's LayerNormGrad (lngrad::layer_norm_grad_x): pd_x as 'lngrad grad'
and res_for_gamma = (x-mean)*rstd, the input of 'lngrad grad-beta'.
Inputs and options as 'lngrad grad --help'.
Outputs: DIR/pd_x.npy and DIR/res_for_gamma.npy, both in x's dtype and shape
  (.bin when raw).
)";

const char* const kGradBetaHelp = R"(usage: lngrad grad-beta --dy F --res-for-gamma F [--gamma-ndim K] [--threads N]
                        [--shape S]... [--dtype D]... [--out-format npy|bin]
                        --out DIR

Seed 001's LayerNormGradBeta (lngrad::layer_norm_grad_beta):
  pd_gamma = sum over rows of dy*res_for_gamma,  pd_beta = sum over rows of dy
Inputs (.npy, or raw .bin files shaped by --shape or each other's .npy shape):
  --dy             [A.., R..]
  --res-for-gamma  dy's shape; dy's dtype or float32 (float64 when dy is)
Options:
  --gamma-ndim K   number of trailing axes R.. that gamma spans (default 1)
  --threads N      0 (default): all cores; results are identical for any N
  --out-format F   npy or bin (raw); default: bin when --dy is a raw file
Outputs: DIR/pd_gamma.npy and DIR/pd_beta.npy, shape [R..], dy's dtype (.bin
  when raw).
)";

const char* const kForwardHelp = R"(usage: lngrad forward --x F [--gamma F] [--beta F] [--epsilon E]
                      [--normalized-ndim K] [--threads N] [--shape S]...
                      [--dtype D]... [--out-format npy|bin] --out DIR

LayerNorm forward (lngrad::layer_norm), producing the backward's inputs:
  mean = sum(x)/H,  variance = sum((x-mean)^2)/H (biased),
  rstd = 1/sqrt(variance+epsilon),  y = (x-mean)*rstd*gamma + beta
Inputs (.npy or raw): --x [A.., R..] (raw: --shape); --gamma, --beta [R..] in
  x's dtype or float32 (absent: ones and zeros; raw: x's trailing axes).
Options:
  --epsilon E      default as 'lngrad grad'
  --normalized-ndim K
                   number of trailing normalized axes R.. (default: gamma's
                   rank, else beta's, else 1)
  --threads N      0 (default): all cores
  --out-format F   npy or bin (raw); default: bin when --x is a raw file
Outputs: DIR/y.npy (x's dtype and shape); DIR/mean.npy, DIR/variance.npy,
  DIR/rstd.npy of shape [A..], float32 for float16/bfloat16 x, else x's dtype
  (.bin when raw).
)";

Dims trailing(const Dims& s, int n) { return {s.end() - n, s.end()}; }

Dims leading(const Dims& s, int n) { return {s.begin(), s.end() - n}; }

// An operand of the library: like load_tensor, and non-empty, so that output
// sizes derived from it are bounded by the input files' sizes.
InputTensor load_operand(const Args& a, const TensorSpecs& specs, const char* option,
                         const std::optional<Dims>& shape) {
  const std::string path = a.required(option);
  InputTensor t =
      load_tensor("--" + std::string(option) + " " + path, path, option, specs, RawDefaults{shape, std::nullopt, false});
  if (t.array.count() == 0) {
    throw UsageError(path + ": empty array (shape " + shape_str(t.array.shape) +
                     "); lngrad needs every extent >= 1");
  }
  return t;
}

std::optional<InputTensor> load_optional(const Args& a, const TensorSpecs& specs, const char* option,
                                         const std::optional<Dims>& shape) {
  if (!a.get(option)) return std::nullopt;
  return load_operand(a, specs, option, shape);
}

// Two inputs of one shape (dy and x, mean and variance): a raw one takes the
// other's shape when that one is an .npy file, else `shape`.
std::pair<InputTensor, InputTensor> load_pair(const Args& a, const TensorSpecs& specs, const char* first,
                                              const char* second, const std::optional<Dims>& shape) {
  if (!is_npy(a.required(first)) && is_npy(a.required(second))) {
    InputTensor t2 = load_operand(a, specs, second, shape);
    InputTensor t1 = load_operand(a, specs, first, t2.array.shape);
    return {std::move(t1), std::move(t2)};
  }
  InputTensor t1 = load_operand(a, specs, first, shape);
  InputTensor t2 = load_operand(a, specs, second, t1.raw ? shape : std::optional<Dims>(t1.array.shape));
  return {std::move(t1), std::move(t2)};
}

// Checks that name flags and files: "--dy dy.npy has shape [6, 10, 48], --x x.npy has [6, 10, 40]".
void same_shape(const InputTensor& a, const InputTensor& b) {
  if (a.array.shape != b.array.shape) {
    throw UsageError(a.label + " has shape " + shape_str(a.array.shape) + ", " + b.label + " has " +
                     shape_str(b.array.shape));
  }
}

void same_dtype(const InputTensor& a, const InputTensor& b) {
  if (a.dtype != b.dtype) {
    throw UsageError(a.label + " holds " + dtype_name(a.dtype) + ", " + b.label + " holds " + dtype_name(b.dtype));
  }
}

// gamma or beta [R..] against x [A.., R..].
void trailing_of(const InputTensor& param, const InputTensor& x) {
  const auto& p = param.array.shape;
  const auto& s = x.array.shape;
  if (p.size() > s.size() || !std::equal(p.begin(), p.end(), s.end() - static_cast<std::ptrdiff_t>(p.size()))) {
    throw UsageError(param.label + " has shape " + shape_str(p) + ", " + x.label + " has " + shape_str(s) +
                     ", whose trailing axes it must equal");
  }
}

// --out-format: true for bin, false for npy, nothing when not given (then
// outputs are raw when the command's main input is).
std::optional<bool> out_format(const Args& a) {
  const auto format = a.get("out-format");
  if (!format) return std::nullopt;
  if (*format != "npy" && *format != "bin") a.fail("option '--out-format': expected npy or bin, given '" + *format + "'");
  return *format == "bin";
}

bool print_help(const Args& a, const char* text) {
  if (!a.help()) return false;
  std::printf("%s\n%s\n%s", text, kNpyHelp, kExitStatusHelp);
  return true;
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
  bool raw_out = false;
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
    {"epsilon", true}, {"rstd", false}, {"normalized-ndim", true}, {"threads", true}, {"dtype", true, true},
    {"shape", true, true}, {"out-format", true}, {"out", true}};

GradInputs read_grad_inputs(const Args& a) {
  GradInputs in;
  const TensorSpecs specs(a, {"dy", "x", "variance", "mean", "gamma"});
  in.out = a.required("out");
  in.epsilon = a.number("epsilon");
  if (a.flag("rstd")) {
    if (in.epsilon) a.fail("--epsilon has no effect with --rstd (the --variance file already holds rstd)");
    in.statistic = Statistic::rstd;
  }
  in.normalized_ndim = a.integer("normalized-ndim", 1, kMaxRank).value_or(0);
  in.threads = a.integer("threads", 0, kMaxThreads).value_or(0);
  const std::optional<bool> raw_out = out_format(a);
  std::tie(in.dy, in.x) = load_pair(a, specs, "dy", "x", specs.default_shape());
  in.raw_out = raw_out.value_or(in.x.raw);
  same_shape(in.dy, in.x);
  same_dtype(in.dy, in.x);

  // Shapes for raw gamma, mean and variance: x's trailing and leading axes.
  const auto& xs = in.x.array.shape;
  const int ndim = std::min(in.normalized_ndim > 0 ? in.normalized_ndim : 1, static_cast<int>(xs.size()));
  in.gamma = load_optional(a, specs, "gamma", trailing(xs, ndim));
  if (in.gamma) trailing_of(*in.gamma, in.x);
  const int stat_ndim = in.gamma && in.normalized_ndim == 0 ? static_cast<int>(in.gamma->array.shape.size()) : ndim;
  std::tie(in.mean, in.variance) = load_pair(a, specs, "mean", "variance", leading(xs, stat_ndim));
  same_shape(in.mean, in.variance);
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

// mean (and variance, of the same shape) against x, where gamma or
// --normalized-ndim fixes the normalized axes; otherwise mean's shape fixes
// them and the library checks the rest.
void check_statistics(const GradInputs& in) {
  int ndim = in.gamma ? static_cast<int>(in.gamma->array.shape.size()) : in.normalized_ndim;
  const auto& xs = in.x.array.shape;
  if (ndim == 0 || ndim > static_cast<int>(xs.size())) return;
  const Dims lead = leading(xs, ndim);
  Dims kept = lead;
  kept.resize(xs.size(), 1);
  const auto& ms = in.mean.array.shape;
  if (ms != lead && ms != kept) {
    throw UsageError(in.mean.label + " has shape " + shape_str(ms) + ", " + in.x.label + " has " + shape_str(xs) +
                     ": mean and variance take x's leading axes, " + shape_str(lead) +
                     (lead != kept ? " or " + shape_str(kept) : ""));
  }
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
  check_statistics(in);

  std::vector<OutputTensor> outs;
  TensorView pd_x, pd_gamma, pd_beta;
  if (want_x) outs.push_back(make_output("pd_x", in.raw_out, in.x.dtype, in.x.array.shape));
  if (want_gamma || want_beta) {
    const int ndim = normalized_ndim(a, in);
    const auto shape = in.gamma ? in.gamma->array.shape : trailing(in.x.array.shape, ndim);
    const Dtype dtype = in.gamma ? in.gamma->dtype : in.x.dtype;
    if (want_gamma) outs.push_back(make_output("pd_gamma", in.raw_out, dtype, shape));
    if (want_beta) outs.push_back(make_output("pd_beta", in.raw_out, dtype, shape));
  }
  for (OutputTensor& t : outs) {
    const std::string stem = t.file.substr(0, t.file.size() - 4);
    if (stem == "pd_x") pd_x = t.view();
    if (stem == "pd_gamma") pd_gamma = t.view();
    if (stem == "pd_beta") pd_beta = t.view();
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
  check_statistics(in);
  std::vector<OutputTensor> outs;
  outs.push_back(make_output("pd_x", in.raw_out, in.x.dtype, in.x.array.shape));
  outs.push_back(make_output("res_for_gamma", in.raw_out, in.x.dtype, in.x.array.shape));
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
               {{"dy", true}, {"res-for-gamma", true}, {"gamma-ndim", true}, {"threads", true}, {"dtype", true, true},
                {"shape", true, true}, {"out-format", true}, {"out", true}});
  if (print_help(a, kGradBetaHelp)) return kExitOk;
  const TensorSpecs specs(a, {"dy", "res-for-gamma"});
  const std::string out = a.required("out");
  const int ndim = a.integer("gamma-ndim", 1, kMaxRank).value_or(1);
  GradBetaOptions opt;
  opt.num_threads = a.integer("threads", 0, kMaxThreads).value_or(0);
  const std::optional<bool> raw_out = out_format(a);
  const auto [dy, res] = load_pair(a, specs, "dy", "res-for-gamma", specs.default_shape());
  const bool raw = raw_out.value_or(dy.raw);
  same_shape(dy, res);
  if (ndim > static_cast<int>(dy.array.shape.size())) {
    a.fail("--gamma-ndim " + std::to_string(ndim) + " exceeds the rank of dy, shape " + shape_str(dy.array.shape));
  }
  const auto shape = trailing(dy.array.shape, ndim);
  std::vector<OutputTensor> outs;
  outs.push_back(make_output("pd_gamma", raw, dy.dtype, shape));
  outs.push_back(make_output("pd_beta", raw, dy.dtype, shape));
  layer_norm_grad_beta(res.view(), dy.view(), outs[0].view(), outs[1].view(), opt);
  write_outputs(out, outs);
  report(out, outs);
  return kExitOk;
}

int cmd_forward(const Argv& args) {
  const Args a("forward", args,
               {{"x", true}, {"gamma", true}, {"beta", true}, {"epsilon", true}, {"normalized-ndim", true},
                {"threads", true}, {"dtype", true, true}, {"shape", true, true}, {"out-format", true}, {"out", true}});
  if (print_help(a, kForwardHelp)) return kExitOk;
  const TensorSpecs specs(a, {"x", "gamma", "beta"});
  const std::string out = a.required("out");
  ForwardOptions opt;
  opt.epsilon = a.number("epsilon");
  opt.num_threads = a.integer("threads", 0, kMaxThreads).value_or(0);
  opt.normalized_ndim = a.integer("normalized-ndim", 1, kMaxRank).value_or(0);
  const std::optional<bool> raw_out = out_format(a);
  const InputTensor x = load_operand(a, specs, "x", specs.default_shape());
  const bool raw = raw_out.value_or(x.raw);
  const auto& xs = x.array.shape;
  if (xs.empty()) a.fail("x must have at least one axis, given a 0-d array");
  // Raw gamma and beta: x's trailing --normalized-ndim axes (default 1).
  const std::optional<Dims> param_shape =
      trailing(xs, std::min(opt.normalized_ndim > 0 ? opt.normalized_ndim : 1, static_cast<int>(xs.size())));
  const std::optional<InputTensor> gamma = load_optional(a, specs, "gamma", param_shape);
  const std::optional<InputTensor> beta = load_optional(a, specs, "beta", param_shape);
  for (const auto* p : {&gamma, &beta}) {
    if (*p) trailing_of(**p, x);
  }
  if (gamma && beta) same_shape(*gamma, *beta);

  // The statistics' shape is x's leading axes, so the normalized rank is
  // needed first; the library checks it against gamma and beta.
  int ndim = opt.normalized_ndim;
  if (ndim == 0 && gamma) ndim = static_cast<int>(gamma->array.shape.size());
  if (ndim == 0 && beta) ndim = static_cast<int>(beta->array.shape.size());
  if (ndim == 0) ndim = 1;
  if (ndim > static_cast<int>(xs.size())) {
    a.fail("the normalized axes (" + std::to_string(ndim) + ") outnumber x's axes: x has shape " + shape_str(xs));
  }
  const bool narrow = x.dtype == Dtype::float16 || x.dtype == Dtype::bfloat16;
  const Dtype stat = narrow ? Dtype::float32 : x.dtype;
  std::vector<OutputTensor> outs;
  outs.push_back(make_output("y", raw, x.dtype, xs));
  for (const char* name : {"mean", "variance", "rstd"}) outs.push_back(make_output(name, raw, stat, leading(xs, ndim)));
  std::optional<ConstTensorView> gv, bv;
  if (gamma) gv = gamma->view();
  if (beta) bv = beta->view();
  layer_norm(x.view(), gv, bv, outs[0].view(), outs[1].view(), outs[2].view(), outs[3].view(), opt);
  write_outputs(out, outs);
  report(out, outs);
  return kExitOk;
}

}  // namespace lngrad::cli
