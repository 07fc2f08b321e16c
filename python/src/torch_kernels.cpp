// _lngrad_torch: lngrad as the CPU kernel of aten::native_layer_norm and
// aten::native_layer_norm_backward, the two operators every torch.nn.LayerNorm
// and F.layer_norm reach on the CPU (autograd calls the second for the first).
//
// install() makes the registration TORCH_LIBRARY_IMPL(aten, CPU, m) would
// make, held by a torch::Library object instead of a static one so that
// uninstall() can drop it: the dispatcher keeps the kernels of a key in a
// list, newest first, and removing ours leaves torch's own exactly as before.
//
// A call lngrad does not serve goes to torch's own CPU kernel (the functions
// aten's CPU registration calls): dtypes other than float64/32/16 and
// bfloat16, empty or rank > 8 tensors, shapes torch itself refuses (so the
// message is torch's), and any argument lngrad refuses (lngrad checks every
// argument before it writes, so nothing has been written then).
#include <ATen/Parallel.h>
#include <ATen/core/Tensor.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/native_layer_norm_backward_native.h>
#include <ATen/ops/native_layer_norm_native.h>
#include <c10/util/Exception.h>
#include <pybind11/pybind11.h>
#include <torch/library.h>
#include <torch/version.h>

#include <array>
#include <atomic>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "lngrad/lngrad.hpp"

namespace {

using at::IntArrayRef;
using at::Tensor;
using Triple = std::tuple<Tensor, Tensor, Tensor>;

// What install() was given: kFollowTorch, or lngrad's num_threads (0: all cores).
constexpr int kFollowTorch = -1;
std::atomic<int> g_threads{kFollowTorch};

// The thread count of the next call.
int threads() {
  const int n = g_threads.load(std::memory_order_relaxed);
  return n == kFollowTorch ? at::get_num_threads() : n;
}

std::optional<lngrad::Dtype> dtype_of(const Tensor& t) {
  switch (t.scalar_type()) {
    case at::kDouble: return lngrad::Dtype::float64;
    case at::kFloat: return lngrad::Dtype::float32;
    case at::kHalf: return lngrad::Dtype::float16;
    case at::kBFloat16: return lngrad::Dtype::bfloat16;
    default: return std::nullopt;
  }
}

lngrad::Shape shape_of(const Tensor& t) { return {t.sizes().data(), t.sizes().size()}; }

// A tensor lngrad can read or write in place: strided, contiguous, CPU, a
// dtype it knows. Callers make tensors contiguous first.
bool readable(const Tensor& t) {
  return t.layout() == at::kStrided && t.device().is_cpu() && t.is_contiguous() && !t.is_neg() && !t.is_conj() &&
         dtype_of(t).has_value();
}

lngrad::ConstTensorView in(const Tensor& t) { return {t.data_ptr(), *dtype_of(t), shape_of(t)}; }
lngrad::TensorView out(const Tensor& t) { return {t.data_ptr(), *dtype_of(t), shape_of(t)}; }
std::optional<lngrad::ConstTensorView> maybe_in(const Tensor& t) {
  if (!t.defined()) return std::nullopt;
  return in(t);
}

Tensor contiguous(const c10::optional<Tensor>& t) {
  return t.has_value() && t->defined() ? t->contiguous() : Tensor();
}

// The shapes torch requires of the call; anything else goes to torch, which
// refuses it with its own message.
bool served_shapes(const Tensor& x, IntArrayRef normalized_shape, const Tensor& weight, const Tensor& bias) {
  const auto n = static_cast<std::int64_t>(normalized_shape.size());
  if (n < 1 || x.dim() < n || x.dim() > lngrad::kMaxRank || x.numel() == 0) return false;
  if (x.sizes().slice(static_cast<std::size_t>(x.dim() - n)) != normalized_shape) return false;
  for (const Tensor* p : {&weight, &bias}) {
    if (p->defined() && (p->sizes() != normalized_shape || !readable(*p))) return false;
  }
  return readable(x);
}

// mean and rstd as torch shapes them: x's leading axes, then a 1 per normalized axis.
std::vector<std::int64_t> stat_shape(const Tensor& x, std::size_t normalized_ndim) {
  std::vector<std::int64_t> s(x.sizes().begin(), x.sizes().end() - static_cast<std::ptrdiff_t>(normalized_ndim));
  s.resize(static_cast<std::size_t>(x.dim()), 1);
  return s;
}

Triple forward(const Tensor& input, IntArrayRef normalized_shape, const c10::optional<Tensor>& weight_opt,
               const c10::optional<Tensor>& bias_opt, double eps) {
  const Tensor x = input.contiguous(), weight = contiguous(weight_opt), bias = contiguous(bias_opt);
  if (served_shapes(x, normalized_shape, weight, bias)) {
    // Statistics in float32 for 16-bit x (torch 1.13 keeps them in x's
    // dtype): the backward reads them, and a bfloat16 rstd alone would cost
    // pd_x 8 bits.
    const bool narrow = x.scalar_type() == at::kHalf || x.scalar_type() == at::kBFloat16;
    const auto stats = x.options().dtype(narrow ? at::kFloat : x.scalar_type());
    const auto shape = stat_shape(x, normalized_shape.size());
    Tensor y = at::empty(x.sizes(), x.options());
    Tensor mean = at::empty(shape, stats), variance = at::empty(shape, stats), rstd = at::empty(shape, stats);
    lngrad::ForwardOptions o;
    o.epsilon = eps;
    o.normalized_ndim = static_cast<int>(normalized_shape.size());
    o.num_threads = threads();
    try {
      lngrad::layer_norm(in(x), maybe_in(weight), maybe_in(bias), out(y), out(mean), out(variance), out(rstd), o);
      return {y, mean, rstd};
    } catch (const lngrad::Error&) {
      // A combination lngrad refuses (e.g. float64 x with float32 weight):
      // nothing was written; torch decides.
    }
  }
  return at::native::layer_norm_cpu(input, normalized_shape, weight_opt, bias_opt, eps);
}

Triple backward(const Tensor& grad_out, const Tensor& input, IntArrayRef normalized_shape, const Tensor& mean,
                const Tensor& rstd, const c10::optional<Tensor>& weight_opt, const c10::optional<Tensor>& bias_opt,
                std::array<bool, 3> mask) {
  const Tensor x = input.contiguous(), weight = contiguous(weight_opt), bias = contiguous(bias_opt);
  const Tensor dy = grad_out.contiguous(), m = mean.contiguous(), r = rstd.contiguous();
  // pd_beta takes the parameters' dtype: weight's, else bias's, else x's.
  const Tensor& param = weight.defined() ? weight : bias;
  const bool want_gamma = mask[1] && weight.defined();
  const bool want_beta = mask[2] && param.defined();
  if (served_shapes(x, normalized_shape, weight, bias) && dy.sizes() == x.sizes() && readable(dy) && readable(m) &&
      readable(r) && (mask[0] || want_gamma || want_beta)) {
    Tensor pd_x = mask[0] ? at::empty(x.sizes(), x.options()) : Tensor();
    const auto param_options = param.defined() ? param.options() : x.options();
    Tensor pd_gamma = want_gamma ? at::empty(normalized_shape, param_options) : Tensor();
    Tensor pd_beta = want_beta ? at::empty(normalized_shape, param_options) : Tensor();
    lngrad::GradOptions o;
    o.statistic = lngrad::Statistic::rstd;
    o.compute_pd_x = mask[0];
    o.compute_pd_gamma = want_gamma;
    o.compute_pd_beta = want_beta;
    o.normalized_ndim = static_cast<int>(normalized_shape.size());
    o.num_threads = threads();
    const auto view = [](const Tensor& t) { return t.defined() ? out(t) : lngrad::TensorView{}; };
    try {
      lngrad::layer_norm_grad(in(dy), in(x), in(r), in(m), maybe_in(weight), view(pd_x), view(pd_gamma),
                              view(pd_beta), o);
      return {pd_x, pd_gamma, pd_beta};
    } catch (const lngrad::Error&) {
      // Refused before anything was written (e.g. statistics narrower than x): torch decides.
    }
  }
  return at::native::layer_norm_backward_cpu(grad_out, input, normalized_shape, mean, rstd, weight_opt, bias_opt,
                                             mask);
}

// The override is what install() asks for: torch's "Overriding a previously
// registered kernel" warning is not shown for it.
class Quiet final : public c10::WarningHandler {
 public:
  void process(const c10::SourceLocation& /*where*/, const std::string& /*message*/, bool /*verbatim*/) override {}
};

std::mutex g_mutex;
// Not a static object: one left installed at exit is not torn down while the
// dispatcher may already be gone; the registration ends with the process.
torch::Library* g_library = nullptr;

void install(int num_threads) {
  const std::lock_guard<std::mutex> lock(g_mutex);
  g_threads.store(num_threads, std::memory_order_relaxed);
  if (g_library) return;
  Quiet quiet;
  const c10::Warning::WarningHandlerGuard guard(&quiet);
  auto library = std::make_unique<torch::Library>(torch::Library::IMPL, "aten", c10::DispatchKey::CPU, __FILE__,
                                                  static_cast<std::uint32_t>(__LINE__));
  library->impl("native_layer_norm", TORCH_FN(forward));
  library->impl("native_layer_norm_backward", TORCH_FN(backward));
  g_library = library.release();
}

void uninstall() {
  const std::lock_guard<std::mutex> lock(g_mutex);
  delete g_library;
  g_library = nullptr;
  g_threads.store(kFollowTorch, std::memory_order_relaxed);
}

bool installed() {
  const std::lock_guard<std::mutex> lock(g_mutex);
  return g_library != nullptr;
}

int num_threads_setting() { return g_threads.load(std::memory_order_relaxed); }

// The count the kernels would use now, for tests (lngrad's results do not show it).
int effective_threads() { return threads(); }

}  // namespace

PYBIND11_MODULE(_lngrad_torch, m) {
  m.doc() = "lngrad as torch's CPU LayerNorm kernels; use lngrad.torch.install() instead.";
  m.def("install", &install, pybind11::arg("num_threads"));
  m.def("uninstall", &uninstall);
  m.def("installed", &installed);
  m.def("num_threads", &num_threads_setting);
  m.def("effective_threads", &effective_threads);
  m.attr("FOLLOW_TORCH") = kFollowTorch;
  m.attr("torch_version") = TORCH_VERSION;
}
