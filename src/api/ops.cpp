// The public operators: validate every argument, then hand plain pointers to
// the row kernels through the runtime. No formula lives here.
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <tuple>
#include <utility>
#include <vector>

#include "api/validate.hpp"
#include "common/aligned.hpp"
#include "common/scalar.hpp"
#include "kernels/kernels.hpp"
#include "lngrad/lngrad.hpp"
#include "runtime/row_reduce.hpp"
#include "runtime/thread_pool.hpp"

namespace lngrad {

namespace {

using api::Checker;

bool is_16bit(Dtype d) { return d == Dtype::float16 || d == Dtype::bfloat16; }

// Statistics (mean, variance/rstd) may be stored wider than x, never narrower.
std::initializer_list<Dtype> stat_dtypes(Dtype x) {
  static const std::initializer_list<Dtype> f64 = {Dtype::float64};
  static const std::initializer_list<Dtype> f32 = {Dtype::float32, Dtype::float64};
  static const std::initializer_list<Dtype> f16 = {Dtype::float16, Dtype::float32, Dtype::float64};
  static const std::initializer_list<Dtype> bf16 = {Dtype::bfloat16, Dtype::float32, Dtype::float64};
  switch (x) {
    case Dtype::float64: return f64;
    case Dtype::float32: return f32;
    case Dtype::float16: return f16;
    case Dtype::bfloat16: return bf16;
  }
  return f32;
}

// gamma, beta and the parameter gradients: x's dtype or float32.
std::initializer_list<Dtype> param_dtypes(Dtype x) {
  static const std::initializer_list<Dtype> f64 = {Dtype::float64, Dtype::float32};
  static const std::initializer_list<Dtype> f32 = {Dtype::float32};
  static const std::initializer_list<Dtype> f16 = {Dtype::float16, Dtype::float32};
  static const std::initializer_list<Dtype> bf16 = {Dtype::bfloat16, Dtype::float32};
  switch (x) {
    case Dtype::float64: return f64;
    case Dtype::float32: return f32;
    case Dtype::float16: return f16;
    case Dtype::bfloat16: return bf16;
  }
  return f32;
}

// Works out how many trailing axes of x are normalized, checking it against
// every argument that fixes it.
class NormalizedAxes {
 public:
  NormalizedAxes(const Checker& c, int x_rank) : c_(c), x_rank_(x_rank) {}

  void from(const char* name, int rank) {
    if (name == nullptr) return;  // a source that does not apply
    if (ndim_ < 0) {
      ndim_ = rank;
      source_ = name;
    } else if (rank != ndim_) {
      c_.fail(name, "rank " + std::to_string(ndim_) + " (as " + source_ + ")", "rank " + std::to_string(rank));
    }
  }

  void from_option(int requested) {
    if (requested < 0) c_.fail("normalized_ndim", ">= 0", std::to_string(requested));
    if (requested > 0) from("normalized_ndim", requested);
  }

  // Last resort: the statistics' shape ([A..] or [A.., 1..1], as older Ascend code derives it).
  void from_statistic(const char* name, const Shape& stat, const Shape& x) {
    if (ndim_ >= 0) return;
    if (stat.rank() < x.rank()) {
      from(name, x.rank() - stat.rank());
      return;
    }
    for (int i = 0; i < x.rank() && i < stat.rank(); ++i) {
      if (stat[i] != x[i]) {
        from(name, x.rank() - i);
        return;
      }
    }
    c_.fail("normalized_ndim", "gamma or a positive normalized_ndim to fix the normalized axes",
            "none, and " + std::string(name) + "'s shape " + stat.str() + " does not tell them apart from x's");
  }

  int get() const {
    if (ndim_ < 1 || ndim_ > x_rank_) {
      c_.fail(source_, "a normalized rank between 1 and rank(x) = " + std::to_string(x_rank_),
              std::to_string(ndim_));
    }
    return ndim_;
  }

 private:
  const Checker& c_;
  int x_rank_;
  int ndim_ = -1;  // not yet fixed
  std::string source_;
};

// mean/variance/rstd: [A..] or [A.., 1..1].
void check_statistic_shape(const Checker& c, const char* name, const Shape& given, const Shape& x, int ndim) {
  const Shape lead = api::leading(x, ndim);
  std::int64_t with_ones[kMaxRank] = {};
  for (int i = 0; i < x.rank(); ++i) with_ones[i] = i < lead.rank() ? lead[i] : 1;
  const Shape keep(with_ones, static_cast<std::size_t>(x.rank()));
  auto equal = [](const Shape& a, const Shape& b) {
    if (a.rank() != b.rank()) return false;
    for (int i = 0; i < a.rank(); ++i) {
      if (a[i] != b[i]) return false;
    }
    return true;
  };
  if (!equal(given, lead) && !equal(given, keep)) {
    c.fail(name, "shape " + lead.str() + " or " + keep.str() + " (x's leading axes)", given.str());
  }
}

// The dtype of accumulator type A.
template <typename A>
constexpr Dtype kAccDtype = sizeof(A) == sizeof(float) ? Dtype::float32 : Dtype::float64;

template <typename A>
LineVector<A>& scratch(int slot) {
  static thread_local LineVector<A> buffers[3];
  return buffers[slot];
}

// gamma (or beta) as h values of the accumulator type, starting on a line:
// the caller's own buffer when it already is (or `off_line_ok`), else widened
// or copied into scratch; absent -> fill.
template <typename A>
const A* widen_param(const std::optional<ConstTensorView>& p, std::int64_t h, A fill, int slot,
                     bool off_line_ok = false) {
  if (p && p->dtype == kAccDtype<A> && (off_line_ok || on_line(p->data))) return static_cast<const A*>(p->data);
  LineVector<A>& buf = scratch<A>(slot);
  buf.resize(static_cast<std::size_t>(h));
  if (!p) {
    std::fill(buf.begin(), buf.end(), fill);
  } else if (p->dtype == kAccDtype<A>) {
    std::memcpy(buf.data(), p->data, sizeof(A) * static_cast<std::size_t>(h));
  } else if constexpr (sizeof(A) == sizeof(float)) {
    kernels::active().to_f32(p->dtype, p->data, buf.data(), h);
  } else {
    for (std::int64_t j = 0; j < h; ++j) buf[j] = static_cast<A>(load_scalar(p->data, p->dtype, j));
  }
  return buf.data();
}

// Where the column sums for `dst` go: dst itself when it holds the
// accumulator type and starts on a line (or `off_line_ok`), else `fallback`,
// to be stored by store_params.
template <typename A>
A* sums_into(const TensorView& dst, A* fallback, bool off_line_ok) {
  const bool in_place = dst.data != nullptr && dst.dtype == kAccDtype<A> && (off_line_ok || on_line(dst.data));
  return in_place ? static_cast<A*>(dst.data) : fallback;
}

// Stores column sums into dst unless sums_into put them there already.
template <typename A>
void store_params(const A* src, const TensorView& dst, std::int64_t h) {
  if (src == dst.data) return;
  if (dst.data == nullptr) return;
  if (dst.dtype == kAccDtype<A>) {  // summed off the caller's line (sums_into)
    std::memcpy(dst.data, src, sizeof(A) * static_cast<std::size_t>(h));
  } else if constexpr (sizeof(A) == sizeof(float)) {
    kernels::active().from_f32(dst.dtype, src, dst.data, h);
  } else {
    for (std::int64_t j = 0; j < h; ++j) store_scalar(dst.data, dst.dtype, j, src[j]);
  }
}

struct ColumnSums {
  TensorView pd_gamma, pd_beta;  // empty view: not wanted
};

// The column sums of rows x h that a row kernel, kernel(row_begin, row_end,
// block_sums), computes per block of rows, reduced in a fixed order
// (runtime::reduce_rows) and stored into pd_gamma/pd_beta; `in_place`: the
// plan's sums_in_place.
template <typename A>
void sum_columns(std::int64_t rows, std::int64_t h, int threads, bool in_place,
                 runtime::FunctionRef<void(std::int64_t, std::int64_t, const kernels::BlockSums&)> kernel,
                 const ColumnSums& sums) {
  LineVector<A>& out = scratch<A>(1);
  const std::int64_t half = line_padded<A>(h);
  out.resize(static_cast<std::size_t>(2 * half));
  A* const sum_gamma = sums_into(sums.pd_gamma, out.data(), in_place);
  A* const sum_beta = sums_into(sums.pd_beta, out.data() + half, in_place);
  auto fn = [&](std::int64_t b, std::int64_t e, runtime::NextBlockFn<A> next) {
    auto next_untyped = [&](void** gamma, void** beta) {
      A* g = nullptr;
      A* be = nullptr;
      next(&g, &be);
      *gamma = g;
      *beta = be;
    };
    kernel(b, e, kernels::BlockSums{runtime::kBlockRows, next_untyped});
  };
  runtime::reduce_rows<A>(rows, h, threads, fn, kernels::add_fn<A>(kernels::active()), sum_gamma, sum_beta);
  store_params(sum_gamma, sums.pd_gamma, h);
  store_params(sum_beta, sums.pd_beta, h);
}

// The plan's inputs for a call on rows x h of `dtype`, writing `out` (or null).
kernels::PlanInputs plan_inputs(Dtype dtype, std::int64_t rows, std::int64_t h, int threads, Stores stores,
                                const void* out) {
  kernels::PlanInputs in = kernels::machine_inputs(dtype, rows, h, threads, stores);
  kernels::set_output(in, out);
  return in;
}

// Runs grad rows, with column sums when asked for.
template <typename A>
void run_grad(kernels::GradArgs args, const std::optional<ConstTensorView>& gamma, std::int64_t rows,
              int threads, Stores stores, const ColumnSums& sums) {
  const std::int64_t h = args.h;
  const kernels::GradPlan plan = kernels::plan_grad(plan_inputs(args.dtype, rows, h, threads, stores, args.pd_x));
  args.gamma = widen_param<A>(gamma, h, A(1), 0, plan.gamma_in_place);
  threads = plan.threads;
  args.group_rows = plan.group_rows;
  args.fused = plan.fused;
  args.stream_pd_x = plan.stream_pd_x;
  args.stage_pd_x = plan.stage_pd_x;
  args.shift_pd_x = plan.shift_pd_x;
  args.align_rows = plan.align_rows;
  args.prefetch_l1_bytes = plan.prefetch_l1_bytes;
  args.prefetch_l2_bytes = plan.prefetch_l2_bytes;
  args.groups_ahead = plan.groups_ahead;
  const kernels::KernelTable& k = kernels::active();
  if (sums.pd_gamma.data == nullptr && sums.pd_beta.data == nullptr) {
    runtime::for_rows(rows, h, threads, [&](std::int64_t b, std::int64_t e) { k.grad_rows(args, b, e, nullptr); });
    return;
  }
  auto fn = [&](std::int64_t b, std::int64_t e, const kernels::BlockSums& s) { k.grad_rows(args, b, e, &s); };
  sum_columns<A>(rows, h, threads, plan.sums_in_place, fn, sums);
}

}  // namespace

double default_epsilon(Dtype x_dtype) { return is_16bit(x_dtype) ? 1e-5 : 1e-12; }

namespace {

// The inputs layer_norm_grad and layer_norm_grad_x share, checked in one
// place: dy, x, the statistics and gamma, the normalized axes (also fixed by
// `extra_axes`, e.g. pd_gamma's rank), epsilon and threads. Registers the
// inputs for the overlap rules and fills the kernel arguments they define.
struct GradSetup {
  Shape norm_shape;
  std::int64_t rows = 0;
  int threads = 1;
  kernels::GradArgs args;
};

struct AxisSource {
  const char* name;
  int rank;
};

GradSetup check_grad_inputs(Checker& c, const ConstTensorView& dy, const ConstTensorView& x,
                            const ConstTensorView& variance, const ConstTensorView& mean,
                            const std::optional<ConstTensorView>& gamma, Statistic statistic,
                            std::optional<double> epsilon, int normalized_ndim, int num_threads,
                            std::initializer_list<AxisSource> extra_axes) {
  if (statistic != Statistic::variance && statistic != Statistic::rstd) {
    c.fail("statistic", "Statistic::variance or Statistic::rstd",
           "value " + std::to_string(static_cast<unsigned>(statistic)));
  }
  c.tensor("x", x);
  if (x.shape.rank() < 1) c.fail("x", "rank >= 1", "rank 0");
  c.tensor("dy", dy);
  c.shape_equals("dy", dy.shape, x.shape, "the shape of x");
  c.dtype_in("dy", dy.dtype, {x.dtype}, "the dtype of x");

  NormalizedAxes axes(c, x.shape.rank());
  if (gamma) {
    c.tensor("gamma", *gamma);
    axes.from("gamma", gamma->shape.rank());
  }
  for (const AxisSource& source : extra_axes) axes.from(source.name, source.rank);
  axes.from_option(normalized_ndim);
  c.tensor("mean", mean);
  axes.from_statistic("mean", mean.shape, x.shape);
  const int ndim = axes.get();
  GradSetup setup;
  setup.norm_shape = api::trailing(x.shape, ndim);
  const std::int64_t h = api::numel(setup.norm_shape);
  setup.rows = api::numel(x.shape) / h;

  if (gamma) {
    c.shape_equals("gamma", gamma->shape, setup.norm_shape, "x's trailing axes");
    c.dtype_in("gamma", gamma->dtype, param_dtypes(x.dtype), "x's dtype or float32");
  }
  check_statistic_shape(c, "mean", mean.shape, x.shape, ndim);
  c.dtype_in("mean", mean.dtype, stat_dtypes(x.dtype), "never narrower than x");
  const char* stat_name = statistic == Statistic::rstd ? "variance (rstd)" : "variance";
  c.tensor(stat_name, variance);
  c.shape_equals(stat_name, variance.shape, mean.shape, "the shape of mean");
  c.dtype_in(stat_name, variance.dtype, {mean.dtype}, "the dtype of mean");
  const double eps = statistic == Statistic::variance ? c.epsilon(epsilon, x.dtype) : 0.0;
  setup.threads = static_cast<int>(c.threads(num_threads));

  c.input("dy", dy);
  c.input("x", x);
  c.input(stat_name, variance);
  c.input("mean", mean);
  if (gamma) c.input("gamma", *gamma);

  kernels::GradArgs& args = setup.args;
  args.dtype = x.dtype;
  args.h = h;
  args.dy = dy.data;
  args.x = x.data;
  args.mean = mean.data;
  args.stat = variance.data;
  args.stat_dtype = mean.dtype;
  args.stat_is_rstd = statistic == Statistic::rstd;
  args.epsilon = eps;
  return setup;
}

void check_like_x(const Checker& c, const char* name, const TensorView& view, const ConstTensorView& x) {
  c.tensor(name, view);
  c.shape_equals(name, view.shape, x.shape, "the shape of x");
  c.dtype_in(name, view.dtype, {x.dtype}, "the dtype of x");
}

}  // namespace

void layer_norm_grad(ConstTensorView dy, ConstTensorView x, ConstTensorView variance, ConstTensorView mean,
                     std::optional<ConstTensorView> gamma, TensorView pd_x, TensorView pd_gamma, TensorView pd_beta,
                     const GradOptions& options) {
  Checker c("layer_norm_grad");
  const bool want_gamma = options.compute_pd_gamma && pd_gamma.data != nullptr;
  const bool want_beta = options.compute_pd_beta && pd_beta.data != nullptr;
  GradSetup setup = check_grad_inputs(
      c, dy, x, variance, mean, gamma, options.statistic, options.epsilon, options.normalized_ndim,
      options.num_threads,
      {{want_gamma ? "pd_gamma" : nullptr, pd_gamma.shape.rank()}, {want_beta ? "pd_beta" : nullptr, pd_beta.shape.rank()}});

  if (options.compute_pd_x) check_like_x(c, "pd_x", pd_x, x);
  std::optional<Dtype> param_dtype;
  if (gamma) param_dtype = gamma->dtype;
  for (auto [name, wanted, view] : {std::tuple{"pd_gamma", options.compute_pd_gamma, &pd_gamma},
                                    std::tuple{"pd_beta", options.compute_pd_beta, &pd_beta}}) {
    if (!wanted) continue;
    c.tensor(name, *view);
    c.shape_equals(name, view->shape, setup.norm_shape, "x's trailing axes");
    if (param_dtype) {
      c.dtype_in(name, view->dtype, {*param_dtype}, gamma ? "the dtype of gamma" : "the dtype of pd_gamma");
    } else {
      c.dtype_in(name, view->dtype, param_dtypes(x.dtype), "x's dtype or float32");
      param_dtype = view->dtype;
    }
  }
  if (options.compute_pd_x) c.output("pd_x", pd_x, {"dy", "x"}, false);
  if (options.compute_pd_gamma) c.output("pd_gamma", pd_gamma, {}, true);
  if (options.compute_pd_beta) c.output("pd_beta", pd_beta, {}, true);

  setup.args.pd_x = options.compute_pd_x ? pd_x.data : nullptr;
  ColumnSums sums;
  if (options.compute_pd_gamma) sums.pd_gamma = pd_gamma;
  if (options.compute_pd_beta) sums.pd_beta = pd_beta;
  if (setup.args.pd_x == nullptr && sums.pd_gamma.data == nullptr && sums.pd_beta.data == nullptr) return;
  if (x.dtype == Dtype::float64) {
    run_grad<double>(setup.args, gamma, setup.rows, setup.threads, options.pd_x_stores, sums);
  } else {
    run_grad<float>(setup.args, gamma, setup.rows, setup.threads, options.pd_x_stores, sums);
  }
}

void layer_norm_grad_x(ConstTensorView dy, ConstTensorView x, ConstTensorView variance, ConstTensorView mean,
                       std::optional<ConstTensorView> gamma, TensorView pd_x, TensorView res_for_gamma,
                       const GradXOptions& options) {
  Checker c("layer_norm_grad_x");
  GradSetup setup = check_grad_inputs(c, dy, x, variance, mean, gamma, options.statistic, options.epsilon,
                                      options.normalized_ndim, options.num_threads, {});
  check_like_x(c, "pd_x", pd_x, x);
  c.tensor("res_for_gamma", res_for_gamma);
  c.shape_equals("res_for_gamma", res_for_gamma.shape, x.shape, "the shape of x");
  if (x.dtype == Dtype::float64) {
    c.dtype_in("res_for_gamma", res_for_gamma.dtype, {Dtype::float64}, "the dtype of x");
  } else {
    c.dtype_in("res_for_gamma", res_for_gamma.dtype, {x.dtype, Dtype::float32}, "x's dtype or float32");
  }
  c.output("pd_x", pd_x, {"dy", "x"}, false);
  c.output("res_for_gamma", res_for_gamma, {"dy", "x"}, false);

  setup.args.pd_x = pd_x.data;
  setup.args.res_for_gamma = res_for_gamma.data;
  setup.args.res_dtype = res_for_gamma.dtype;
  if (x.dtype == Dtype::float64) {
    run_grad<double>(setup.args, gamma, setup.rows, setup.threads, options.pd_x_stores, {});
  } else {
    run_grad<float>(setup.args, gamma, setup.rows, setup.threads, options.pd_x_stores, {});
  }
}

namespace {
template <typename A>
void run_beta(kernels::BetaArgs args, std::int64_t rows, int threads, const TensorView& pd_gamma,
              const TensorView& pd_beta) {
  kernels::PlanInputs in = kernels::machine_inputs(args.dy_dtype, rows, args.h, threads, Stores::automatic);
  in.res_dtype = args.res_dtype;
  const kernels::BetaPlan plan = kernels::plan_beta(in);
  args.group_rows = plan.group_rows;
  const kernels::KernelTable& k = kernels::active();
  auto fn = [&](std::int64_t b, std::int64_t e, const kernels::BlockSums& s) { k.beta_rows(args, b, e, s); };
  sum_columns<A>(rows, args.h, plan.threads, plan.sums_in_place, fn, {pd_gamma, pd_beta});
}
}  // namespace

void layer_norm_grad_beta(ConstTensorView res_for_gamma, ConstTensorView dy, TensorView pd_gamma,
                          TensorView pd_beta, const GradBetaOptions& options) {
  Checker c("layer_norm_grad_beta");
  c.tensor("dy", dy);
  if (dy.shape.rank() < 1) c.fail("dy", "rank >= 1", "rank 0");
  c.tensor("res_for_gamma", res_for_gamma);
  c.shape_equals("res_for_gamma", res_for_gamma.shape, dy.shape, "the shape of dy");
  if (dy.dtype == Dtype::float64) {
    c.dtype_in("res_for_gamma", res_for_gamma.dtype, {Dtype::float64}, "the dtype of dy");
  } else {
    c.dtype_in("res_for_gamma", res_for_gamma.dtype, {dy.dtype, Dtype::float32}, "dy's dtype or float32");
  }
  c.tensor("pd_gamma", pd_gamma);
  NormalizedAxes axes(c, dy.shape.rank());
  axes.from("pd_gamma", pd_gamma.shape.rank());
  const int ndim = axes.get();
  const Shape norm_shape = api::trailing(dy.shape, ndim);
  c.shape_equals("pd_gamma", pd_gamma.shape, norm_shape, "dy's trailing axes");
  c.dtype_in("pd_gamma", pd_gamma.dtype, param_dtypes(dy.dtype), "dy's dtype or float32");
  c.tensor("pd_beta", pd_beta);
  c.shape_equals("pd_beta", pd_beta.shape, pd_gamma.shape, "the shape of pd_gamma");
  c.dtype_in("pd_beta", pd_beta.dtype, {pd_gamma.dtype}, "the dtype of pd_gamma");
  const int threads = static_cast<int>(c.threads(options.num_threads));
  c.input("res_for_gamma", res_for_gamma);
  c.input("dy", dy);
  c.output("pd_gamma", pd_gamma, {}, true);
  c.output("pd_beta", pd_beta, {}, true);

  kernels::BetaArgs args;
  args.dy_dtype = dy.dtype;
  args.res_dtype = res_for_gamma.dtype;
  args.h = api::numel(norm_shape);
  args.dy = dy.data;
  args.res_for_gamma = res_for_gamma.data;
  const std::int64_t rows = api::numel(dy.shape) / args.h;
  if (dy.dtype == Dtype::float64) {
    run_beta<double>(args, rows, threads, pd_gamma, pd_beta);
  } else {
    run_beta<float>(args, rows, threads, pd_gamma, pd_beta);
  }
}

void layer_norm(ConstTensorView x, std::optional<ConstTensorView> gamma, std::optional<ConstTensorView> beta,
                TensorView y, TensorView mean, TensorView variance, TensorView rstd, const ForwardOptions& options) {
  Checker c("layer_norm");
  c.tensor("x", x);
  if (x.shape.rank() < 1) c.fail("x", "rank >= 1", "rank 0");
  NormalizedAxes axes(c, x.shape.rank());
  if (gamma) {
    c.tensor("gamma", *gamma);
    axes.from("gamma", gamma->shape.rank());
  }
  if (beta) {
    c.tensor("beta", *beta);
    axes.from("beta", beta->shape.rank());
  }
  axes.from_option(options.normalized_ndim);
  c.tensor("mean", mean);
  axes.from_statistic("mean", mean.shape, x.shape);
  const int ndim = axes.get();
  const Shape norm_shape = api::trailing(x.shape, ndim);
  const std::int64_t h = api::numel(norm_shape);
  const std::int64_t rows = api::numel(x.shape) / h;
  for (auto [name, p] : {std::pair{"gamma", &gamma}, std::pair{"beta", &beta}}) {
    if (!*p) continue;
    c.shape_equals(name, (*p)->shape, norm_shape, "x's trailing axes");
    c.dtype_in(name, (*p)->dtype, param_dtypes(x.dtype), "x's dtype or float32");
  }
  c.tensor("y", y);
  c.shape_equals("y", y.shape, x.shape, "the shape of x");
  c.dtype_in("y", y.dtype, {x.dtype}, "the dtype of x");
  check_statistic_shape(c, "mean", mean.shape, x.shape, ndim);
  c.dtype_in("mean", mean.dtype, stat_dtypes(x.dtype), "never narrower than x");
  c.tensor("variance", variance);
  c.shape_equals("variance", variance.shape, mean.shape, "the shape of mean");
  c.dtype_in("variance", variance.dtype, {mean.dtype}, "the dtype of mean");
  if (rstd.data != nullptr) {
    c.tensor("rstd", rstd);
    c.shape_equals("rstd", rstd.shape, mean.shape, "the shape of mean");
    c.dtype_in("rstd", rstd.dtype, {mean.dtype}, "the dtype of mean");
  }
  const double eps = c.epsilon(options.epsilon, x.dtype);
  const int threads = static_cast<int>(c.threads(options.num_threads));
  c.input("x", x);
  if (gamma) c.input("gamma", *gamma);
  if (beta) c.input("beta", *beta);
  c.output("y", y, {"x"}, false);
  c.output("mean", mean, {}, false);
  c.output("variance", variance, {}, false);
  if (rstd.data != nullptr) c.output("rstd", rstd, {}, false);

  kernels::ForwardArgs args;
  args.dtype = x.dtype;
  args.h = h;
  args.x = x.data;
  args.epsilon = eps;
  args.y = y.data;
  args.stat_dtype = mean.dtype;
  args.mean = mean.data;
  args.variance = variance.data;
  args.rstd = rstd.data;
  const kernels::ForwardPlan plan = kernels::plan_forward(plan_inputs(x.dtype, rows, h, threads, options.y_stores, y.data));
  args.stream_y = plan.stream_y;
  if (x.dtype == Dtype::float64) {
    args.gamma = widen_param<double>(gamma, h, 1.0, 0);
    args.beta = widen_param<double>(beta, h, 0.0, 2);
  } else {
    args.gamma = widen_param<float>(gamma, h, 1.0f, 0);
    args.beta = widen_param<float>(beta, h, 0.0f, 2);
  }
  const kernels::KernelTable& k = kernels::active();
  runtime::for_rows(rows, h, plan.threads, [&](std::int64_t b, std::int64_t e) { k.forward_rows(args, b, e); });
}

}  // namespace lngrad
