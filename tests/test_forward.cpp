// layer_norm (forward) against the float64 reference, and a finite-difference
// check of layer_norm_grad against layer_norm that does not use the reference.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "test_support.hpp"

namespace lngrad::test {
namespace {

class ForwardPerTarget : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override { set_max_target(GetParam()); }
  void TearDown() override { set_max_target(""); }
};

// How y is stored: Stores, and y placed y_line_offset bytes past a 64-byte
// line (see PlacedOutput) unless negative. y_bits, when given, receives y's
// bytes.
struct YPlacement {
  Stores stores = Stores::automatic;
  int y_line_offset = -1;
};

void check_forward(Dtype dtype, Dtype stat_dtype, std::int64_t rows, std::int64_t h, bool affine, double x_mean,
                   const YPlacement& placement = {}, std::vector<unsigned char>* y_bits = nullptr) {
  SCOPED_TRACE(std::string(dtype_name(dtype)) + " stats " + dtype_name(stat_dtype) + " h " + std::to_string(h));
  std::mt19937_64 rng(7);
  std::normal_distribution<double> normal;
  std::vector<double> xv(static_cast<std::size_t>(rows * h)), gv(static_cast<std::size_t>(h)), bv(gv.size());
  for (auto& v : xv) v = x_mean + normal(rng);
  for (auto& v : gv) v = 1 + 0.5 * normal(rng);
  for (auto& v : bv) v = normal(rng);
  const Buffer x(dtype, xv), gamma(dtype, gv), beta(dtype, bv);
  PlacedOutput y(dtype, rows * h, placement.y_line_offset);
  Buffer mean(stat_dtype, rows), var(stat_dtype, rows), rstd(stat_dtype, rows);
  const double eps = 1e-5;
  ForwardOptions opt;
  opt.epsilon = eps;
  opt.y_stores = placement.stores;
  std::optional<ConstTensorView> g, b;
  if (affine) {
    g = gamma.cview({h});
    b = beta.cview({h});
  }
  layer_norm(x.cview({rows, h}), g, b, y.view({rows, h}), mean.view({rows}), var.view({rows}), rstd.view({rows}), opt);
  ASSERT_EQ(y.written_slack_byte(), -1) << "a byte of the slack around y was written";
  if (y_bits != nullptr) *y_bits = y.output_bytes();
  const auto ref = reference::layer_norm(rows, h, x.values(), affine ? gamma.values() : std::vector<double>{},
                                         affine ? beta.values() : std::vector<double>{}, eps);
  const double u = arithmetic_u(dtype);
  for (std::int64_t r = 0; r < rows; ++r) {
    double abs_x = 0, sq = 0;
    for (std::int64_t j = 0; j < h; ++j) {
      abs_x += std::fabs(x.get(r * h + j));
      sq += std::pow(x.get(r * h + j) - ref.mean[r], 2);
    }
    // mean: a sum of h terms (sum_factor) then one division.
    const double e_mean = u * (sum_factor(h) * abs_x / h + 1 * std::fabs(ref.mean[r]));
    // variance: the mean's error enters squared-differences linearly but
    // cancels to first order (sum of x - mean is ~0); the sum of squares
    // rounds like any sum.
    const double e_var = u * sum_factor(h) * sq / h + 2 * e_mean * e_mean + 4 * u * ref.variance[r];
    const double e_rstd = 0.5 * ref.rstd[r] * e_var / (ref.variance[r] + eps) + 3 * u * ref.rstd[r];
    ASSERT_LE(std::fabs(mean.get(r) - ref.mean[r]), stored_bound(stat_dtype, ref.mean[r], e_mean)) << r;
    ASSERT_LE(std::fabs(var.get(r) - ref.variance[r]), stored_bound(stat_dtype, ref.variance[r], e_var)) << r;
    ASSERT_LE(std::fabs(rstd.get(r) - ref.rstd[r]), stored_bound(stat_dtype, ref.rstd[r], e_rstd)) << r;
    for (std::int64_t j = 0; j < h; ++j) {
      const double gj = affine ? gamma.get(j) : 1.0, bj = affine ? beta.get(j) : 0.0;
      const double xm = std::fabs(x.get(r * h + j) - ref.mean[r]);
      const double e = std::fabs(gj) * (e_mean * ref.rstd[r] + xm * e_rstd) +
                       4 * u * (xm * ref.rstd[r] * std::fabs(gj) + std::fabs(bj));
      ASSERT_LE(std::fabs(y.get(r * h + j) - ref.y[r * h + j]), stored_bound(dtype, ref.y[r * h + j], e)) << r << "," << j;
    }
  }
  EXPECT_TRUE(y.guards_intact() && mean.guards_intact() && var.guards_intact() && rstd.guards_intact());
}

TEST_P(ForwardPerTarget, MatchesReference) {
  for (Dtype d : {Dtype::float64, Dtype::float32, Dtype::float16, Dtype::bfloat16}) {
    const Dtype stat = d == Dtype::float64 ? d : Dtype::float32;
    for (std::int64_t h : {1, 5, 16, 33, 768}) check_forward(d, stat, 9, h, true, 0.0);
    check_forward(d, stat, 4, 100, false, 0.0);
  }
  check_forward(Dtype::float32, Dtype::float32, 8, 512, true, 1e3);
  check_forward(Dtype::float16, Dtype::float16, 8, 64, true, 0.0);
}

TEST_P(ForwardPerTarget, StreamedYGivesTheCachedBits) {
  // Non-temporal y stores on rows of whole stores, with y on a cache line or
  // 2, 16 or 48 bytes past one (each row then starts with a head of cached
  // stores; 2 bytes is inside a float32 or float64, which cannot stream), and
  // on rows that are not (cached stores throughout): the same bits as cached
  // stores, within the reference bounds, nothing written beside y.
  for (Dtype d : {Dtype::float64, Dtype::float32, Dtype::float16, Dtype::bfloat16}) {
    const Dtype stat = d == Dtype::float64 ? d : Dtype::float32;
    const std::int64_t elem = static_cast<std::int64_t>(dtype_size(d));
    for (std::int64_t h : std::initializer_list<std::int64_t>{64, 96, 200, 4096 / elem}) {
      for (int offset : {0, 2, 16, 48}) {
        SCOPED_TRACE("y " + std::to_string(offset) + " bytes past a line");
        std::vector<unsigned char> streamed_bits, cached_bits;
        check_forward(d, stat, 13, h, true, 0.0, {Stores::streaming, offset}, &streamed_bits);
        check_forward(d, stat, 13, h, true, 0.0, {Stores::cached, offset}, &cached_bits);
        EXPECT_EQ(streamed_bits, cached_bits);
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Targets, ForwardPerTarget, ::testing::ValuesIn(available_targets()),
                         [](const ::testing::TestParamInfo<std::string>& info) { return info.param; });

// Loss L = sum(w * layer_norm(x, gamma, beta)); its gradient by central
// differences must equal layer_norm_grad(dy = w). float64 throughout; this
// ties the backward to the forward without the reference.
TEST(FiniteDifferences, GradientOfLayerNormMatches) {
  const std::int64_t rows = 3, h = 11;
  std::mt19937_64 rng(11);
  std::normal_distribution<double> normal;
  std::vector<double> x(rows * h), w(rows * h), gamma(h), beta(h);
  for (auto& v : x) v = 2 + 3 * normal(rng);
  for (auto& v : w) v = normal(rng);
  for (auto& v : gamma) v = 1 + 0.3 * normal(rng);
  for (auto& v : beta) v = normal(rng);
  const double eps = 1e-3;
  auto loss = [&](const std::vector<double>& xs, const std::vector<double>& gs, const std::vector<double>& bs) {
    std::vector<double> y(rows * h), mean(rows), var(rows);
    ForwardOptions opt;
    opt.epsilon = eps;
    layer_norm({xs.data(), Dtype::float64, {rows, h}}, ConstTensorView{gs.data(), Dtype::float64, {h}},
               ConstTensorView{bs.data(), Dtype::float64, {h}}, {y.data(), Dtype::float64, {rows, h}},
               {mean.data(), Dtype::float64, {rows}}, {var.data(), Dtype::float64, {rows}}, {}, opt);
    double l = 0;
    for (std::size_t i = 0; i < y.size(); ++i) l += w[i] * y[i];
    return l;
  };
  std::vector<double> y(rows * h), mean(rows), var(rows);
  ForwardOptions fopt;
  fopt.epsilon = eps;
  layer_norm({x.data(), Dtype::float64, {rows, h}}, ConstTensorView{gamma.data(), Dtype::float64, {h}},
             ConstTensorView{beta.data(), Dtype::float64, {h}}, {y.data(), Dtype::float64, {rows, h}},
             {mean.data(), Dtype::float64, {rows}}, {var.data(), Dtype::float64, {rows}}, {}, fopt);
  std::vector<double> pd_x(rows * h), pd_gamma(h), pd_beta(h);
  GradOptions gopt;
  gopt.epsilon = eps;
  layer_norm_grad({w.data(), Dtype::float64, {rows, h}}, {x.data(), Dtype::float64, {rows, h}},
                  {var.data(), Dtype::float64, {rows}}, {mean.data(), Dtype::float64, {rows}},
                  ConstTensorView{gamma.data(), Dtype::float64, {h}}, {pd_x.data(), Dtype::float64, {rows, h}},
                  {pd_gamma.data(), Dtype::float64, {h}}, {pd_beta.data(), Dtype::float64, {h}}, gopt);
  // Central differences: truncation ~ step^2 * |L'''| ~ 1e-10 and rounding
  // ~ 1e-16 * |L| / step ~ 1e-10 with step 1e-5; gradients here are O(1).
  const double step = 1e-5, tol = 1e-7;
  auto central = [&](std::vector<double>& v, std::size_t i, auto&& f) {
    const double saved = v[i];
    v[i] = saved + step;
    const double up = f();
    v[i] = saved - step;
    const double down = f();
    v[i] = saved;
    return (up - down) / (2 * step);
  };
  for (std::size_t i = 0; i < x.size(); ++i) {
    EXPECT_NEAR(pd_x[i], central(x, i, [&] { return loss(x, gamma, beta); }), tol) << "pd_x[" << i << "]";
  }
  for (std::size_t j = 0; j < gamma.size(); ++j) {
    EXPECT_NEAR(pd_gamma[j], central(gamma, j, [&] { return loss(x, gamma, beta); }), tol) << "pd_gamma[" << j << "]";
    EXPECT_NEAR(pd_beta[j], central(beta, j, [&] { return loss(x, gamma, beta); }), tol) << "pd_beta[" << j << "]";
  }
}

}  // namespace
}  // namespace lngrad::test
