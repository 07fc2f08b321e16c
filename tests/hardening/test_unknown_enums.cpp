// Enum values outside the declared ones (a Dtype or Statistic decoded from a
// file, a foreign binding or memory corruption) are refused like any other
// bad argument: lngrad::Error naming the argument, nothing written. Found by
// fuzz_validation (fuzz/regressions/fuzz_validation/unknown-dtype-accepted):
// such a dtype used to pass validation and the call returned without
// computing.
#include <gtest/gtest.h>

#include <string>

#include "support.hpp"

namespace lngrad::hardening {
namespace {

constexpr auto kBadDtype = static_cast<Dtype>(7);
constexpr auto kBadStatistic = static_cast<Statistic>(5);

// Runs `call`, expects Error naming `argument`, and checks the outputs kept
// their fill value.
template <typename Call>
void expect_refused(Call call, const std::string& argument, std::initializer_list<Tensor*> outputs) {
  for (Tensor* t : outputs) t->fill(3.0);
  try {
    call();
    ADD_FAILURE() << "accepted; expected an Error naming " << argument;
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(": " + argument + ": "), std::string::npos) << e.what();
  }
  for (Tensor* t : outputs) {
    for (std::int64_t i = 0; i < t->size(); ++i) ASSERT_EQ(t->at(i), 3.0) << "output written by a refused call";
  }
}

TEST(UnknownEnums, DtypeOfXOrDyIsRefused) {
  const GradProblem p = make_problem(Dtype::float32, Dtype::float32, 4, 16, 131);
  Tensor pd_x(Dtype::float32, p.x.shape()), res(Dtype::float32, p.x.shape());
  Tensor pd_gamma(Dtype::float32, {16}), pd_beta(Dtype::float32, {16});
  Tensor y(Dtype::float32, p.x.shape()), mean(Dtype::float32, {4}), var(Dtype::float32, {4});
  const ConstTensorView bad_x{p.x.data(), kBadDtype, p.x.shape()};
  const ConstTensorView bad_dy{p.dy.data(), kBadDtype, p.dy.shape()};
  const TensorView bad_pd_x{pd_x.data(), kBadDtype, p.x.shape()};

  expect_refused([&] {
    layer_norm_grad(bad_dy, bad_x, p.variance.cview(), p.mean.cview(), p.gamma_v(), bad_pd_x, pd_gamma.view(),
                    pd_beta.view());
  }, "x", {&pd_x, &pd_gamma, &pd_beta});
  expect_refused([&] {
    layer_norm_grad_x(bad_dy, bad_x, p.variance.cview(), p.mean.cview(), p.gamma_v(), bad_pd_x,
                      {res.data(), kBadDtype, p.x.shape()});
  }, "x", {&pd_x, &res});
  expect_refused([&] {
    layer_norm_grad_beta({res.data(), kBadDtype, p.x.shape()}, bad_dy, pd_gamma.view(), pd_beta.view());
  }, "dy", {&pd_gamma, &pd_beta});
  expect_refused([&] {
    layer_norm(bad_x, std::nullopt, std::nullopt, {y.data(), kBadDtype, p.x.shape()}, mean.view(), var.view(), {});
  }, "x", {&y, &mean, &var});
}

TEST(UnknownEnums, StatisticIsRefused) {
  const GradProblem p = make_problem(Dtype::float32, Dtype::float32, 4, 16, 137);
  Tensor pd_x(Dtype::float32, p.x.shape()), res(Dtype::float32, p.x.shape());
  Tensor pd_gamma(Dtype::float32, {16}), pd_beta(Dtype::float32, {16});
  GradOptions o;
  o.statistic = kBadStatistic;
  expect_refused([&] {
    layer_norm_grad(p.dy.cview(), p.x.cview(), p.variance.cview(), p.mean.cview(), p.gamma_v(), pd_x.view(),
                    pd_gamma.view(), pd_beta.view(), o);
  }, "statistic", {&pd_x, &pd_gamma, &pd_beta});
  GradXOptions ox;
  ox.statistic = kBadStatistic;
  expect_refused([&] {
    layer_norm_grad_x(p.dy.cview(), p.x.cview(), p.variance.cview(), p.mean.cview(), p.gamma_v(), pd_x.view(),
                      res.view(), ox);
  }, "statistic", {&pd_x, &res});
}

}  // namespace
}  // namespace lngrad::hardening
