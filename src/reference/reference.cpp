#include "reference.hpp"

#include <cmath>
#include <cstddef>

namespace lngrad::reference {

GradOutputs layer_norm_grad(const GradInputs& in) {
  const std::int64_t rows = in.rows, h = in.h;
  const double inv_h = 1.0 / static_cast<double>(h);
  GradOutputs out;
  out.pd_x.assign(static_cast<std::size_t>(rows * h), 0.0);
  out.res_for_gamma.assign(static_cast<std::size_t>(rows * h), 0.0);
  out.pd_gamma.assign(static_cast<std::size_t>(h), 0.0);
  out.pd_beta.assign(static_cast<std::size_t>(h), 0.0);
  for (std::int64_t r = 0; r < rows; ++r) {
    const double mean = in.mean[r];
    // rstd = (variance + eps)^-0.5; (variance + eps)^-1.5 = rstd^3.
    const double rstd = in.stat_is_rstd ? in.variance[r] : std::pow(in.variance[r] + in.epsilon, -0.5);
    const double rstd3 = rstd * rstd * rstd;
    const double* dy = &in.dy[r * h];
    const double* x = &in.x[r * h];
    auto gamma = [&](std::int64_t j) { return in.gamma.empty() ? 1.0 : in.gamma[j]; };
    // pd_xl = dy * gamma
    // pd_var = sum(-0.5 * pd_xl * (x - mean) * (var + eps)^-1.5)
    // pd_mean = sum(-pd_xl * (var + eps)^-0.5) + pd_var * (1/H) * sum(-2 * (x - mean))
    double pd_var = 0.0, sum_neg_pd_xl_rstd = 0.0, sum_neg2_xm = 0.0;
    for (std::int64_t j = 0; j < h; ++j) {
      const double pd_xl = dy[j] * gamma(j);
      const double xm = x[j] - mean;
      pd_var += -0.5 * pd_xl * xm * rstd3;
      sum_neg_pd_xl_rstd += -pd_xl * rstd;
      sum_neg2_xm += -2.0 * xm;
    }
    const double pd_mean = sum_neg_pd_xl_rstd + pd_var * inv_h * sum_neg2_xm;
    // pd_x = pd_xl * rstd + pd_var * (2/H) * (x - mean) + pd_mean * (1/H)
    for (std::int64_t j = 0; j < h; ++j) {
      const double pd_xl = dy[j] * gamma(j);
      const double xm = x[j] - mean;
      out.pd_x[r * h + j] = pd_xl * rstd + pd_var * (2.0 * inv_h) * xm + pd_mean * inv_h;
      const double res = xm * rstd;  // res_for_gamma
      out.res_for_gamma[r * h + j] = res;
      out.pd_gamma[j] += dy[j] * res;
      out.pd_beta[j] += dy[j];
    }
  }
  return out;
}

void layer_norm_grad_beta(std::int64_t rows, std::int64_t h, const std::vector<double>& res_for_gamma,
                          const std::vector<double>& dy, std::vector<double>& pd_gamma,
                          std::vector<double>& pd_beta) {
  pd_gamma.assign(static_cast<std::size_t>(h), 0.0);
  pd_beta.assign(static_cast<std::size_t>(h), 0.0);
  for (std::int64_t r = 0; r < rows; ++r) {
    for (std::int64_t j = 0; j < h; ++j) {
      pd_gamma[j] += dy[r * h + j] * res_for_gamma[r * h + j];
      pd_beta[j] += dy[r * h + j];
    }
  }
}

ForwardOutputs layer_norm(std::int64_t rows, std::int64_t h, const std::vector<double>& x,
                          const std::vector<double>& gamma, const std::vector<double>& beta,
                          double epsilon) {
  ForwardOutputs out;
  out.y.resize(static_cast<std::size_t>(rows * h));
  out.mean.resize(static_cast<std::size_t>(rows));
  out.variance.resize(static_cast<std::size_t>(rows));
  out.rstd.resize(static_cast<std::size_t>(rows));
  for (std::int64_t r = 0; r < rows; ++r) {
    const double* xr = &x[r * h];
    double sum = 0.0;
    for (std::int64_t j = 0; j < h; ++j) sum += xr[j];
    const double mean = sum / static_cast<double>(h);
    double sq = 0.0;
    for (std::int64_t j = 0; j < h; ++j) sq += (xr[j] - mean) * (xr[j] - mean);
    const double variance = sq / static_cast<double>(h);
    const double rstd = 1.0 / std::sqrt(variance + epsilon);
    out.mean[r] = mean;
    out.variance[r] = variance;
    out.rstd[r] = rstd;
    for (std::int64_t j = 0; j < h; ++j) {
      const double g = gamma.empty() ? 1.0 : gamma[j];
      const double b = beta.empty() ? 0.0 : beta[j];
      out.y[r * h + j] = (xr[j] - mean) * rstd * g + b;
    }
  }
  return out;
}

}  // namespace lngrad::reference
