// _lngrad: the low-level binding of <lngrad/lngrad.hpp> for the Python
// package. Tensors cross as (address, dtype name, shape) triples, so the same
// entry points serve NumPy arrays and torch tensors without linking either;
// the Python layer (lngrad/_core.py) checks the objects behind the addresses
// and keeps them alive for the call. Nothing here computes: each function
// builds views, releases the GIL and calls the library, whose lngrad::Error
// surfaces as lngrad.Error (a ValueError) with the library's message.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <cstdint>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "lngrad/lngrad.hpp"

namespace py = pybind11;

namespace {

// (address, dtype, shape) as the Python layer passes it; None for "absent".
using PyView = std::tuple<std::uintptr_t, std::string, std::vector<std::int64_t>>;
using OptView = std::optional<PyView>;

lngrad::Dtype parse_dtype(const std::string& name) {
  for (lngrad::Dtype d : {lngrad::Dtype::float64, lngrad::Dtype::float32, lngrad::Dtype::float16,
                          lngrad::Dtype::bfloat16}) {
    if (name == lngrad::dtype_name(d)) return d;
  }
  throw py::type_error("dtype: expected float64, float32, float16 or bfloat16, given " + name);
}

// The one place a Python view becomes a library view. Absent -> empty view.
lngrad::TensorView to_view(const OptView& v) {
  if (!v) return {};
  const auto& [address, dtype, shape] = *v;
  return {reinterpret_cast<void*>(address), parse_dtype(dtype), lngrad::Shape(shape)};
}

std::optional<lngrad::ConstTensorView> to_optional(const OptView& v) {
  if (!v) return std::nullopt;
  return lngrad::ConstTensorView(to_view(v));
}

lngrad::Statistic statistic(bool rstd) { return rstd ? lngrad::Statistic::rstd : lngrad::Statistic::variance; }

// pd_x_stores / y_stores by name (the Python layer checks the name first).
lngrad::Stores stores(const std::string& name) {
  if (name == "automatic") return lngrad::Stores::automatic;
  if (name == "cached") return lngrad::Stores::cached;
  if (name == "streaming") return lngrad::Stores::streaming;
  throw py::value_error("stores: expected automatic, cached or streaming, given " + name);
}

void layer_norm_grad(const PyView& dy, const PyView& x, const PyView& variance, const PyView& mean,
                     const OptView& gamma, const OptView& pd_x, const OptView& pd_gamma, const OptView& pd_beta,
                     std::optional<double> epsilon, bool rstd, bool compute_pd_x, bool compute_pd_gamma,
                     bool compute_pd_beta, int normalized_ndim, int num_threads, const std::string& pd_x_stores) {
  lngrad::GradOptions o;
  o.epsilon = epsilon;
  o.statistic = statistic(rstd);
  o.compute_pd_x = compute_pd_x;
  o.compute_pd_gamma = compute_pd_gamma;
  o.compute_pd_beta = compute_pd_beta;
  o.normalized_ndim = normalized_ndim;
  o.num_threads = num_threads;
  o.pd_x_stores = stores(pd_x_stores);
  const auto vdy = to_view(dy), vx = to_view(x), vvar = to_view(variance), vmean = to_view(mean);
  const auto vgamma = to_optional(gamma);
  const auto vpd_x = to_view(pd_x), vpd_gamma = to_view(pd_gamma), vpd_beta = to_view(pd_beta);
  py::gil_scoped_release release;
  lngrad::layer_norm_grad(vdy, vx, vvar, vmean, vgamma, vpd_x, vpd_gamma, vpd_beta, o);
}

void layer_norm_grad_x(const PyView& dy, const PyView& x, const PyView& variance, const PyView& mean,
                       const OptView& gamma, const PyView& pd_x, const PyView& res_for_gamma,
                       std::optional<double> epsilon, bool rstd, int normalized_ndim, int num_threads,
                       const std::string& pd_x_stores) {
  lngrad::GradXOptions o;
  o.epsilon = epsilon;
  o.statistic = statistic(rstd);
  o.normalized_ndim = normalized_ndim;
  o.num_threads = num_threads;
  o.pd_x_stores = stores(pd_x_stores);
  const auto vdy = to_view(dy), vx = to_view(x), vvar = to_view(variance), vmean = to_view(mean);
  const auto vgamma = to_optional(gamma);
  const auto vpd_x = to_view(pd_x), vres = to_view(res_for_gamma);
  py::gil_scoped_release release;
  lngrad::layer_norm_grad_x(vdy, vx, vvar, vmean, vgamma, vpd_x, vres, o);
}

void layer_norm_grad_beta(const PyView& res_for_gamma, const PyView& dy, const PyView& pd_gamma,
                          const PyView& pd_beta, int num_threads) {
  lngrad::GradBetaOptions o;
  o.num_threads = num_threads;
  const auto vres = to_view(res_for_gamma), vdy = to_view(dy);
  const auto vpd_gamma = to_view(pd_gamma), vpd_beta = to_view(pd_beta);
  py::gil_scoped_release release;
  lngrad::layer_norm_grad_beta(vres, vdy, vpd_gamma, vpd_beta, o);
}

void layer_norm(const PyView& x, const OptView& gamma, const OptView& beta, const PyView& y, const PyView& mean,
                const PyView& variance, const OptView& rstd, std::optional<double> epsilon, int normalized_ndim,
                int num_threads, const std::string& y_stores) {
  lngrad::ForwardOptions o;
  o.epsilon = epsilon;
  o.normalized_ndim = normalized_ndim;
  o.num_threads = num_threads;
  o.y_stores = stores(y_stores);
  const auto vx = to_view(x);
  const auto vgamma = to_optional(gamma), vbeta = to_optional(beta);
  const auto vy = to_view(y), vmean = to_view(mean), vvar = to_view(variance), vrstd = to_view(rstd);
  py::gil_scoped_release release;
  lngrad::layer_norm(vx, vgamma, vbeta, vy, vmean, vvar, vrstd, o);
}

}  // namespace

PYBIND11_MODULE(_lngrad, m) {
  m.doc() =
      "Low-level binding of the lngrad C++ library. Tensors are passed as (address, dtype, shape) "
      "views of contiguous memory that the caller keeps alive; use the lngrad package instead.";
  py::register_exception<lngrad::Error>(m, "Error", PyExc_ValueError);

  m.def("layer_norm_grad", &layer_norm_grad, py::arg("dy"), py::arg("x"), py::arg("variance"), py::arg("mean"),
        py::arg("gamma"), py::arg("pd_x"), py::arg("pd_gamma"), py::arg("pd_beta"), py::arg("epsilon"),
        py::arg("rstd"), py::arg("compute_pd_x"), py::arg("compute_pd_gamma"), py::arg("compute_pd_beta"),
        py::arg("normalized_ndim"), py::arg("num_threads"), py::arg("pd_x_stores"));
  m.def("layer_norm_grad_x", &layer_norm_grad_x, py::arg("dy"), py::arg("x"), py::arg("variance"), py::arg("mean"),
        py::arg("gamma"), py::arg("pd_x"), py::arg("res_for_gamma"), py::arg("epsilon"), py::arg("rstd"),
        py::arg("normalized_ndim"), py::arg("num_threads"), py::arg("pd_x_stores"));
  m.def("layer_norm_grad_beta", &layer_norm_grad_beta, py::arg("res_for_gamma"), py::arg("dy"), py::arg("pd_gamma"),
        py::arg("pd_beta"), py::arg("num_threads"));
  m.def("layer_norm", &layer_norm, py::arg("x"), py::arg("gamma"), py::arg("beta"), py::arg("y"), py::arg("mean"),
        py::arg("variance"), py::arg("rstd"), py::arg("epsilon"), py::arg("normalized_ndim"),
        py::arg("num_threads"), py::arg("y_stores"));

  m.def(
      "default_epsilon", [](const std::string& dtype) { return lngrad::default_epsilon(parse_dtype(dtype)); },
      py::arg("dtype"));
  m.def("available_targets", &lngrad::available_targets);
  m.def("active_target", &lngrad::active_target);
  m.def(
      "set_max_target", [](const std::string& name) { lngrad::set_max_target(name); }, py::arg("name"));
  m.def("default_num_threads", &lngrad::default_num_threads);
  m.attr("__version__") = lngrad::version();
}
