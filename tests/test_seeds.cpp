// The seeds' own examples: seed 002 (LayerNormGrad, [1, 8, 8], eps = 1e-4) and
// seed 001 (LayerNormGradBeta) through the op-level API.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "lngrad/lngrad.hpp"
#include "reference.hpp"
#include "seed_data.hpp"
#include "test_support.hpp"

namespace {

using lngrad::Dtype;

TEST(Seed002, PdXAndResForGammaMatchTheListedValues) {
  const auto& s = lngrad::testdata::seed002();
  std::vector<float> pd_x(64), res(64);
  lngrad::GradXOptions opt;
  opt.epsilon = 1e-4;
  lngrad::layer_norm_grad_x({s.dy.data(), Dtype::float32, {1, 8, 8}}, {s.x.data(), Dtype::float32, {1, 8, 8}},
                            {s.variance.data(), Dtype::float32, {1, 8}}, {s.mean.data(), Dtype::float32, {1, 8}},
                            lngrad::ConstTensorView{s.gamma.data(), Dtype::float32, {8}},
                            {pd_x.data(), Dtype::float32, {1, 8, 8}}, {res.data(), Dtype::float32, {1, 8, 8}}, opt);
  // The listed values carry the device's rounding: a float64 evaluation is
  // within 1.4e-5 of them and a careful float32 one within about 2.1e-5
  // (the row sums cancel terms near 400 down to about 3); 5e-5 leaves margin.
  for (int i = 0; i < 64; ++i) {
    EXPECT_NEAR(pd_x[i], s.pd_x[i], 5e-5) << "pd_x[" << i << "]";
    EXPECT_NEAR(res[i], s.res_for_gamma[i], 5e-5) << "res_for_gamma[" << i << "]";
  }
  // Against the float64 evaluation of the same inputs, within the bound the
  // other tests use (test_support.hpp: from the magnitudes of the terms, up
  // to ~400 here, and the roundings of float32 arithmetic). The seed's means
  // are the exact row means, so this does not exercise the correction term
  // for a stored mean that is not (PerTarget.InexactMeanUsesTheCorrectionTerm
  // does).
  lngrad::reference::GradInputs in;
  in.rows = 8;
  in.h = 8;
  in.dy.assign(s.dy.begin(), s.dy.end());
  in.x.assign(s.x.begin(), s.x.end());
  in.variance.assign(s.variance.begin(), s.variance.end());
  in.mean.assign(s.mean.begin(), s.mean.end());
  in.gamma.assign(s.gamma.begin(), s.gamma.end());
  in.epsilon = static_cast<double>(1e-4f);
  const auto ref = lngrad::reference::layer_norm_grad(in);
  const auto bound = lngrad::test::pd_x_bounds(in, ref, Dtype::float32);
  for (int i = 0; i < 64; ++i) {
    EXPECT_NEAR(pd_x[i], ref.pd_x[i], bound[i]) << "pd_x[" << i << "]";
    // (x-mean)*rstd: the subtraction, rstd and the product round once each.
    EXPECT_NEAR(res[i], ref.res_for_gamma[i], 4 * 0x1p-24 * std::fabs(ref.res_for_gamma[i])) << "res_for_gamma[" << i << "]";
  }
}

TEST(Seed001, PdGammaAndPdBetaAreExact) {
  const auto& s = lngrad::testdata::seed001();
  std::vector<float> pd_gamma(8), pd_beta(8);
  lngrad::layer_norm_grad_beta({s.res_for_gamma.data(), Dtype::float32, {1, 8, 8}},
                               {s.dy.data(), Dtype::float32, {1, 8, 8}}, {pd_gamma.data(), Dtype::float32, {8}},
                               {pd_beta.data(), Dtype::float32, {8}});
  for (int j = 0; j < 8; ++j) {
    EXPECT_EQ(pd_gamma[j], s.pd_gamma[j]) << j;  // integer sums below 2^24: exact in float32
    EXPECT_EQ(pd_beta[j], s.pd_beta[j]) << j;
  }
}

}  // namespace
