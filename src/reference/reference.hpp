// The float64 reference: the documented formulas written plainly, one row at a
// time. It is the tests' oracle and the golden-data generator; it is never
// the fast path. Inputs are already widened to double; rows x h row-major.
#pragma once

#include <cstdint>
#include <vector>

namespace lngrad::reference {

struct GradInputs {
  std::int64_t rows = 0, h = 0;
  std::vector<double> dy, x;        // rows*h
  std::vector<double> variance;     // rows; holds rstd when stat_is_rstd
  std::vector<double> mean;         // rows
  std::vector<double> gamma;        // h, or empty for ones
  double epsilon = 0.0;
  bool stat_is_rstd = false;
};

struct GradOutputs {
  std::vector<double> pd_x, res_for_gamma;  // rows*h
  std::vector<double> pd_gamma, pd_beta;    // h
};

// Seed 002's chain rule (with the pd_var*(1/H)*sum(-2*(x-mean)) term of
// pd_mean) and seed 001's parameter gradients.
GradOutputs layer_norm_grad(const GradInputs& in);

// Seed 001's LayerNormGradBeta on given res_for_gamma.
void layer_norm_grad_beta(std::int64_t rows, std::int64_t h, const std::vector<double>& res_for_gamma,
                          const std::vector<double>& dy, std::vector<double>& pd_gamma,
                          std::vector<double>& pd_beta);

struct ForwardOutputs {
  std::vector<double> y;                     // rows*h
  std::vector<double> mean, variance, rstd;  // rows
};

// LayerNorm forward: biased variance, y = (x-mean)*rstd*gamma + beta.
ForwardOutputs layer_norm(std::int64_t rows, std::int64_t h, const std::vector<double>& x,
                          const std::vector<double>& gamma, const std::vector<double>& beta,
                          double epsilon);

}  // namespace lngrad::reference
