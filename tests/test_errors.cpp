// Every refusal: lngrad::Error naming the argument, what was expected and
// what was given, with every output left untouched.
#include <gtest/gtest.h>

#include <cstdint>
#include <functional>
#include <initializer_list>
#include <limits>
#include <string>
#include <vector>

#include "test_support.hpp"

namespace lngrad::test {
namespace {

struct GradCall {
  Problem p;
  Buffer pd_x, pd_gamma, pd_beta;
  ConstTensorView dy, x, variance, mean;
  std::optional<ConstTensorView> gamma;
  TensorView out_x, out_gamma, out_beta;
  GradOptions opt;

  GradCall() {
    ProblemSpec s;
    s.x_shape = {4, 6};
    p = make_problem(s);
    pd_x = Buffer(Dtype::float32, 24);
    pd_gamma = Buffer(Dtype::float32, 6);
    pd_beta = Buffer(Dtype::float32, 6);
    dy = p.dy.cview({4, 6});
    x = p.x.cview({4, 6});
    variance = p.variance.cview({4});
    mean = p.mean.cview({4});
    gamma = p.gamma.cview({6});
    out_x = pd_x.view({4, 6});
    out_gamma = pd_gamma.view({6});
    out_beta = pd_beta.view({6});
  }

  // Runs the call, expects Error whose message contains every fragment, and
  // checks that no output byte changed.
  void expect_error(std::initializer_list<std::string> fragments) {
    const Buffer before_x = pd_x, before_g = pd_gamma, before_b = pd_beta;
    try {
      layer_norm_grad(dy, x, variance, mean, gamma, out_x, out_gamma, out_beta, opt);
      ADD_FAILURE() << "no error thrown";
    } catch (const Error& e) {
      const std::string msg = e.what();
      for (const auto& f : fragments) EXPECT_NE(msg.find(f), std::string::npos) << "'" << f << "' not in: " << msg;
    }
    EXPECT_TRUE(pd_x.bytes_equal(before_x));
    EXPECT_TRUE(pd_gamma.bytes_equal(before_g));
    EXPECT_TRUE(pd_beta.bytes_equal(before_b));
  }
};

TEST(Errors, ErrorIsAStdException) {
  static_assert(std::is_base_of_v<std::invalid_argument, Error>);
  GradCall c;
  c.x.shape = {4, 0};
  c.expect_error({"layer_norm_grad", "x", "non-empty", "[4, 0]"});
}

TEST(Errors, EmptyAndNullTensors) {
  { GradCall c; c.dy.shape = {0, 6}; c.expect_error({"dy", "non-empty", "[0, 6]"}); }
  { GradCall c; c.x.data = nullptr; c.expect_error({"x", "non-null", "null"}); }
  { GradCall c; c.mean.data = nullptr; c.expect_error({"mean", "non-null"}); }
  { GradCall c; c.out_x.data = nullptr; c.expect_error({"pd_x", "non-null"}); }
  { GradCall c; c.out_gamma.data = nullptr; c.expect_error({"pd_gamma", "non-null"}); }
  { GradCall c; c.out_beta.data = nullptr; c.expect_error({"pd_beta", "non-null"}); }
  { GradCall c; c.x.shape = {}; c.dy.shape = {}; c.expect_error({"x", "rank >= 1", "rank 0"}); }
}

TEST(Errors, ShapeMismatches) {
  { GradCall c; c.dy.shape = {4, 5}; c.expect_error({"dy", "[4, 6]", "[4, 5]"}); }
  { GradCall c; c.gamma->shape = {5}; c.expect_error({"gamma", "[6]", "[5]"}); }
  { GradCall c; c.mean.shape = {3}; c.expect_error({"mean", "[4] or [4, 1]", "[3]"}); }
  { GradCall c; c.variance.shape = {4, 1}; c.expect_error({"variance", "[4]", "[4, 1]"}); }
  { GradCall c; c.out_x.shape = {24}; c.expect_error({"pd_x", "[4, 6]", "[24]"}); }
  { GradCall c; c.out_beta.shape = {6, 1}; c.expect_error({"pd_beta", "rank 1", "rank 2"}); }
  {
    GradCall c;  // all axes normalized: statistics are [] or [1, 1]
    c.gamma->shape = c.out_gamma.shape = c.out_beta.shape = {4, 6};
    c.mean.shape = {4};
    c.expect_error({"mean", "[] or [1, 1]", "[4]"});
  }
  { GradCall c; c.opt.normalized_ndim = 2; c.expect_error({"normalized_ndim", "rank 1 (as gamma)", "rank 2"}); }
  { GradCall c; c.opt.normalized_ndim = -1; c.expect_error({"normalized_ndim", ">= 0", "-1"}); }
}

TEST(Errors, DtypeRules) {
  { GradCall c; c.dy.dtype = Dtype::float64; c.expect_error({"dy", "float32", "float64"}); }
  {
    // A float16 statistic with float32 x is narrower than x.
    GradCall c;
    c.mean.dtype = Dtype::float16;
    c.variance.dtype = Dtype::float16;
    c.expect_error({"mean", "float32 or float64", "never narrower than x", "float16"});
  }
  { GradCall c; c.variance.dtype = Dtype::float64; c.expect_error({"variance", "the dtype of mean", "float64"}); }
  { GradCall c; c.gamma->dtype = Dtype::bfloat16; c.expect_error({"gamma", "float32", "bfloat16"}); }
  { GradCall c; c.out_x.dtype = Dtype::float16; c.expect_error({"pd_x", "float32", "float16"}); }
  { GradCall c; c.out_gamma.dtype = Dtype::float64; c.expect_error({"pd_gamma", "the dtype of gamma", "float64"}); }
}

TEST(Errors, RankAndSizeLimits) {
  {
    GradCall c;
    const std::int64_t dims[9] = {1, 1, 1, 1, 1, 1, 1, 4, 6};
    c.x.shape = Shape(dims, 9);
    c.expect_error({"x", "rank at most 8", "rank 9"});
  }
  {
    GradCall c;
    const std::int64_t big = std::int64_t{1} << 40;
    c.x.shape = {big, big};
    c.expect_error({"x", "fits in 64 bits"});
  }
}

TEST(Errors, OptionsOutOfRange) {
  { GradCall c; c.opt.epsilon = -1.0; c.expect_error({"epsilon", ">= 0", "-1"}); }
  { GradCall c; c.opt.epsilon = std::numeric_limits<double>::quiet_NaN(); c.expect_error({"epsilon", "finite"}); }
  { GradCall c; c.opt.num_threads = -2; c.expect_error({"num_threads", ">= 0", "-2"}); }
}

TEST(Errors, OverlapsOtherThanExactInPlace) {
  {
    // pd_x shifted by one element over dy.
    GradCall c;
    Buffer shared(Dtype::float32, 25);
    c.dy = shared.cview({4, 6});
    c.out_x = TensorView{static_cast<float*>(shared.data()) + 1, Dtype::float32, {4, 6}};
    c.expect_error({"pd_x", "overlapping dy"});
  }
  {
    GradCall c;
    c.out_gamma = TensorView{const_cast<void*>(c.x.data), Dtype::float32, {6}};
    c.expect_error({"pd_gamma", "overlapping x"});
  }
  {
    GradCall c;
    c.out_beta = c.out_gamma;
    c.expect_error({"pd_beta", "disjoint from the other outputs", "pd_gamma"});
  }
}

TEST(Errors, MaskedOutputsMayBeEmpty) {
  GradCall c;
  c.opt.compute_pd_gamma = false;
  c.opt.compute_pd_beta = false;
  c.out_gamma = {};
  c.out_beta = {};
  EXPECT_NO_THROW(layer_norm_grad(c.dy, c.x, c.variance, c.mean, c.gamma, c.out_x, c.out_gamma, c.out_beta, c.opt));
}

TEST(Errors, OtherFunctionsNameThemselves) {
  GradCall c;
  Buffer res(Dtype::float32, 24);
  try {
    layer_norm_grad_x(c.dy, c.x, c.variance, c.mean, c.gamma, c.out_x, TensorView{res.data(), Dtype::float16, {4, 6}});
    ADD_FAILURE();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("layer_norm_grad_x: res_for_gamma"), std::string::npos) << e.what();
  }
  try {
    layer_norm_grad_beta(res.cview({4, 6}), c.dy, c.out_gamma, TensorView{c.pd_beta.data(), Dtype::float32, {5}});
    ADD_FAILURE();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("layer_norm_grad_beta: pd_beta"), std::string::npos) << e.what();
  }
  Buffer y(Dtype::float32, 24), m(Dtype::float32, 4), v(Dtype::float32, 4);
  try {
    layer_norm(c.x, std::nullopt, std::nullopt, y.view({4, 6}), m.view({4}), v.view({3}), {});
    ADD_FAILURE();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("layer_norm: variance: expected shape [4]"), std::string::npos) << e.what();
  }
}

// layer_norm_grad_x, layer_norm_grad_beta and layer_norm: each refusal names
// its argument, and leaves every output byte as it was. The refusals include
// the last checks each operator makes (the output overlaps), so that a call
// that computed before checking everything would be seen.
struct Refusal {
  const char* what;
  std::initializer_list<const char*> fragments;
  std::function<void()> call;
};

void expect_refusals_write_nothing(std::initializer_list<Buffer*> outputs, std::initializer_list<Refusal> refusals) {
  for (const Refusal& r : refusals) {
    std::vector<Buffer> before;
    for (Buffer* b : outputs) before.push_back(*b);
    try {
      r.call();
      ADD_FAILURE() << r.what << ": no error thrown";
    } catch (const Error& e) {
      const std::string msg = e.what();
      for (const char* f : r.fragments) EXPECT_NE(msg.find(f), std::string::npos) << r.what << ": '" << f << "' not in: " << msg;
    }
    std::size_t i = 0;
    for (Buffer* b : outputs) EXPECT_TRUE(b->bytes_equal(before[i++])) << r.what << ": output " << i - 1 << " written";
  }
}

TEST(Errors, GradXRefusalsWriteNothing) {
  GradCall c;
  Buffer res(Dtype::float32, 24);
  const TensorView pd_x = c.out_x, res_v = res.view({4, 6});
  auto grad_x = [&](TensorView out_x, TensorView out_res, GradXOptions opt = {}) {
    layer_norm_grad_x(c.dy, c.x, c.variance, c.mean, c.gamma, out_x, out_res, opt);
  };
  GradXOptions bad_eps;
  bad_eps.epsilon = -1.0;
  expect_refusals_write_nothing(
      {&c.pd_x, &res},
      {{"res_for_gamma float16", {"layer_norm_grad_x: res_for_gamma", "float16"},
        [&] { grad_x(pd_x, {res.data(), Dtype::float16, {4, 6}}); }},
       {"negative epsilon", {"layer_norm_grad_x: epsilon"}, [&] { grad_x(pd_x, res_v, bad_eps); }},
       {"res_for_gamma over pd_x", {"layer_norm_grad_x: res_for_gamma", "overlapping pd_x"},
        [&] { grad_x(pd_x, pd_x); }},
       {"res_for_gamma one element into pd_x", {"layer_norm_grad_x: res_for_gamma", "overlapping pd_x"},
        [&] { grad_x(pd_x, {static_cast<float*>(c.pd_x.data()) + 1, Dtype::float32, {4, 6}}); }}});
}

TEST(Errors, GradBetaRefusalsWriteNothing) {
  GradCall c;
  Buffer res(Dtype::float32, c.p.x.values()), both(Dtype::float32, 12);
  auto beta = [&](TensorView g, TensorView b) { layer_norm_grad_beta(res.cview({4, 6}), c.dy, g, b); };
  expect_refusals_write_nothing(
      {&c.pd_gamma, &c.pd_beta, &both},
      {{"pd_beta shape", {"layer_norm_grad_beta: pd_beta", "[6]", "[5]"},
        [&] { beta(c.out_gamma, {c.pd_beta.data(), Dtype::float32, {5}}); }},
       {"pd_beta dtype", {"layer_norm_grad_beta: pd_beta", "float16"},
        [&] { beta(c.out_gamma, {c.pd_beta.data(), Dtype::float16, {6}}); }},
       {"pd_beta over pd_gamma", {"layer_norm_grad_beta: pd_beta", "overlapping pd_gamma"},
        [&] { beta(both.view({6}), {static_cast<float*>(both.data()) + 3, Dtype::float32, {6}}); }},
       {"pd_gamma over dy's first row", {"layer_norm_grad_beta: pd_gamma", "overlapping dy"},
        [&] { beta({const_cast<void*>(c.dy.data), Dtype::float32, {6}}, c.out_beta); }}});
}

TEST(Errors, ForwardRefusalsWriteNothing) {
  GradCall c;
  Buffer y(Dtype::float32, 24), mean(Dtype::float32, 4), var(Dtype::float32, 4), rstd(Dtype::float32, 4);
  auto forward = [&](TensorView out_y, TensorView out_rstd, ForwardOptions opt = {}) {
    layer_norm(c.x, c.gamma, std::nullopt, out_y, mean.view({4}), var.view({4}), out_rstd, opt);
  };
  ForwardOptions bad_eps;
  bad_eps.epsilon = std::numeric_limits<double>::infinity();
  expect_refusals_write_nothing(
      {&y, &mean, &var, &rstd},
      {{"rstd shape", {"layer_norm: rstd", "[4]", "[3]"}, [&] { forward(y.view({4, 6}), rstd.view({3})); }},
       {"rstd dtype", {"layer_norm: rstd", "float64"},
        [&] { forward(y.view({4, 6}), {rstd.data(), Dtype::float64, {4}}); }},
       {"infinite epsilon", {"layer_norm: epsilon"}, [&] { forward(y.view({4, 6}), rstd.view({4}), bad_eps); }},
       {"rstd over variance", {"layer_norm: rstd", "overlapping variance"},
        [&] { forward(y.view({4, 6}), var.view({4})); }},
       {"y one element past x", {"layer_norm: y", "overlapping x"},
        [&] { forward({static_cast<float*>(const_cast<void*>(c.x.data)) + 1, Dtype::float32, {4, 6}}, rstd.view({4})); }}});
}

}  // namespace
}  // namespace lngrad::test
