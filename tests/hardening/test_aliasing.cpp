// Outputs that alias inputs (docs/HARDENING.md, "Aliasing"). The seeds allow
// source and destination to be the same buffer; lngrad allows exactly that
// and nothing looser:
//   - pd_x (and res_for_gamma) exactly over dy or x, y exactly over x: each
//     element is read before it is written;
//   - pd_gamma/pd_beta exactly over any input: they are written after every
//     read;
// and refuses every other overlap (partial overlaps, outputs over each other,
// pd_x over a statistic or gamma) with lngrad::Error before writing anything.
#include <gtest/gtest.h>

#include <cstring>
#include <functional>
#include <string>

#include "support.hpp"

namespace lngrad::hardening {
namespace {

constexpr std::int64_t kRows = 5, kH = 23;

LNGRAD_TARGET_SUITE(AliasingAllowed);

TEST_P(AliasingAllowed, PdXOverDyOrXEqualsOutOfPlace) {
  for (Dtype dtype : kAllDtypes) {
    const GradProblem p = make_problem(dtype, stat_for(dtype), kRows, kH, 61);
    const GradOutputs want = run_grad(p);
    for (bool over_dy : {true, false}) {
      GradProblem q = make_problem(dtype, stat_for(dtype), kRows, kH, 61);
      Tensor& target = over_dy ? q.dy : q.x;
      Tensor pd_gamma(dtype, {kH}), pd_beta(dtype, {kH});
      GradOptions opt;
      opt.epsilon = q.epsilon;
      layer_norm_grad(q.dy.cview(), q.x.cview(), q.variance.cview(), q.mean.cview(), q.gamma_v(), target.view(),
                      pd_gamma.view(), pd_beta.view(), opt);
      const std::string what = std::string(dtype_name(dtype)) + (over_dy ? " pd_x = dy" : " pd_x = x");
      EXPECT_TRUE(target.payload() == want.pd_x.payload()) << what;
      EXPECT_TRUE(pd_gamma.payload() == want.pd_gamma.payload()) << what;
      EXPECT_TRUE(pd_beta.payload() == want.pd_beta.payload()) << what;
    }
  }
}

TEST_P(AliasingAllowed, GradXInPlaceOverBothInputs) {
  for (Dtype dtype : kAllDtypes) {
    const GradProblem p = make_problem(dtype, stat_for(dtype), kRows, kH, 67);
    const GradOutputs want = run_grad_x(p);
    for (bool pd_x_over_dy : {true, false}) {
      GradProblem q = make_problem(dtype, stat_for(dtype), kRows, kH, 67);
      Tensor& pd_x = pd_x_over_dy ? q.dy : q.x;
      Tensor& res = pd_x_over_dy ? q.x : q.dy;
      GradXOptions opt;
      opt.epsilon = q.epsilon;
      layer_norm_grad_x(q.dy.cview(), q.x.cview(), q.variance.cview(), q.mean.cview(), q.gamma_v(), pd_x.view(),
                        res.view(), opt);
      EXPECT_TRUE(pd_x.payload() == want.pd_x.payload()) << dtype_name(dtype) << " " << pd_x_over_dy;
      EXPECT_TRUE(res.payload() == want.res_for_gamma.payload()) << dtype_name(dtype) << " " << pd_x_over_dy;
    }
  }
}

// pd_gamma and pd_beta are stored after the last read, so either may reuse
// gamma's buffer (or, for one row, dy's).
TEST_P(AliasingAllowed, ParameterGradientsOverInputs) {
  for (Dtype dtype : kAllDtypes) {
    const GradProblem p = make_problem(dtype, stat_for(dtype), 1, kH, 71);
    const GradOutputs want = run_grad(p);
    for (int which = 0; which < 3; ++which) {
      GradProblem q = make_problem(dtype, stat_for(dtype), 1, kH, 71);
      Tensor pd_x(dtype, q.x.shape()), pd_gamma(dtype, {kH}), pd_beta(dtype, {kH});
      // 0: pd_gamma over gamma; 1: pd_beta over gamma; 2: pd_gamma over dy (one row).
      Tensor& g_out = which == 0 ? q.gamma : (which == 2 ? q.dy : pd_gamma);
      Tensor& b_out = which == 1 ? q.gamma : pd_beta;
      GradOptions opt;
      opt.epsilon = q.epsilon;
      layer_norm_grad(q.dy.cview(), q.x.cview(), q.variance.cview(), q.mean.cview(), q.gamma_v(), pd_x.view(),
                      {g_out.data(), dtype, {kH}}, {b_out.data(), dtype, {kH}}, opt);
      EXPECT_TRUE(pd_x.payload() == want.pd_x.payload()) << dtype_name(dtype) << " case " << which;
      EXPECT_TRUE(g_out.payload() == want.pd_gamma.payload()) << dtype_name(dtype) << " case " << which;
      EXPECT_TRUE(b_out.payload() == want.pd_beta.payload()) << dtype_name(dtype) << " case " << which;
    }
  }
}

TEST_P(AliasingAllowed, BetaOverResForGammaAndForwardOverX) {
  for (Dtype dtype : kAllDtypes) {
    const GradProblem p = make_problem(dtype, stat_for(dtype), 1, kH, 73);
    Tensor want_g(dtype, {kH}), want_b(dtype, {kH});
    layer_norm_grad_beta(p.x.cview(), p.dy.cview(), want_g.view(), want_b.view());
    Tensor res = p.x, pd_beta(dtype, {kH});
    layer_norm_grad_beta(res.cview(), p.dy.cview(), {res.data(), dtype, {kH}}, pd_beta.view());
    EXPECT_TRUE(res.payload() == want_g.payload()) << dtype_name(dtype);
    EXPECT_TRUE(pd_beta.payload() == want_b.payload()) << dtype_name(dtype);

    const Dtype stat = stat_for(dtype);
    Tensor y(dtype, p.x.shape()), mean(stat, {1}), var(stat, {1}), mean2(stat, {1}), var2(stat, {1});
    layer_norm(p.x.cview(), p.gamma.cview(), std::nullopt, y.view(), mean.view(), var.view(), {});
    Tensor x = p.x;
    layer_norm(x.cview(), p.gamma.cview(), std::nullopt, x.view(), mean2.view(), var2.view(), {});
    EXPECT_TRUE(x.payload() == y.payload()) << dtype_name(dtype);
    EXPECT_TRUE(mean.payload() == mean2.payload() && var.payload() == var2.payload()) << dtype_name(dtype);
  }
}

// ---- Refused overlaps ----------------------------------------------------------
// Refused before any kernel runs: the checks do not depend on the target.

// All tensors of one float32 problem in one buffer, so that any placement can
// be expressed as an element offset; the whole buffer is compared after a
// refused call.
struct Arena {
  std::vector<float> mem;
  std::int64_t dy = 0, x, var, mean, gamma, pd_x, pd_gamma, pd_beta, res, end;
  Arena() {
    x = dy + kRows * kH;
    var = x + kRows * kH;
    mean = var + kRows;
    gamma = mean + kRows;
    pd_x = gamma + kH;
    res = pd_x + kRows * kH;
    pd_gamma = res + kRows * kH;
    pd_beta = pd_gamma + kH;
    end = pd_beta + kH;
    mem.resize(static_cast<std::size_t>(end + kRows * kH));  // slack for shifted views
    const GradProblem p = make_problem(Dtype::float32, Dtype::float32, kRows, kH, 79);
    for (std::int64_t i = 0; i < kRows * kH; ++i) {
      mem[dy + i] = static_cast<float>(p.dy.at(i));
      mem[x + i] = static_cast<float>(p.x.at(i));
    }
    for (std::int64_t r = 0; r < kRows; ++r) {
      mem[var + r] = static_cast<float>(p.variance.at(r));
      mem[mean + r] = static_cast<float>(p.mean.at(r));
    }
    for (std::int64_t j = 0; j < kH; ++j) mem[gamma + j] = static_cast<float>(p.gamma.at(j));
    for (std::int64_t i = pd_x; i < static_cast<std::int64_t>(mem.size()); ++i) mem[i] = -12345.0f;
  }
  float* at(std::int64_t offset) { return mem.data() + offset; }
  ConstTensorView rows_view(std::int64_t offset) { return {at(offset), Dtype::float32, {kRows, kH}}; }
  TensorView rows_out(std::int64_t offset) { return {at(offset), Dtype::float32, {kRows, kH}}; }
  TensorView cols_out(std::int64_t offset) { return {at(offset), Dtype::float32, {kH}}; }
};

struct Refusal {
  const char* name;
  const char* argument;  // the output the message must name
  std::function<void(Arena&)> call;
};

void grad(Arena& a, std::int64_t pd_x, std::int64_t pd_gamma, std::int64_t pd_beta) {
  layer_norm_grad(a.rows_view(a.dy), a.rows_view(a.x), {a.at(a.var), Dtype::float32, {kRows}},
                  {a.at(a.mean), Dtype::float32, {kRows}}, ConstTensorView{a.at(a.gamma), Dtype::float32, {kH}},
                  a.rows_out(pd_x), a.cols_out(pd_gamma), a.cols_out(pd_beta));
}

void grad_x(Arena& a, std::int64_t pd_x, std::int64_t res) {
  layer_norm_grad_x(a.rows_view(a.dy), a.rows_view(a.x), {a.at(a.var), Dtype::float32, {kRows}},
                    {a.at(a.mean), Dtype::float32, {kRows}}, ConstTensorView{a.at(a.gamma), Dtype::float32, {kH}},
                    a.rows_out(pd_x), a.rows_out(res));
}

TEST(AliasingRefused, PartialAndForeignOverlapsThrowAndWriteNothing) {
  const Refusal cases[] = {
      {"pd_x one element past dy", "pd_x", [](Arena& a) { grad(a, a.dy + 1, a.pd_gamma, a.pd_beta); }},
      {"pd_x one element before x", "pd_x", [](Arena& a) { grad(a, a.x - 1, a.pd_gamma, a.pd_beta); }},
      {"pd_x over the variance", "pd_x", [](Arena& a) { grad(a, a.var - 3, a.pd_gamma, a.pd_beta); }},
      {"pd_x over mean and gamma", "pd_x", [](Arena& a) { grad(a, a.mean, a.pd_gamma, a.pd_beta); }},
      {"pd_gamma over pd_beta", "pd_beta", [](Arena& a) { grad(a, a.pd_x, a.pd_gamma, a.pd_gamma); }},
      {"pd_gamma inside pd_x", "pd_gamma", [](Arena& a) { grad(a, a.pd_x, a.pd_x + 7, a.pd_beta); }},
      {"pd_gamma straddling dy and x", "pd_gamma",
       [](Arena& a) { grad(a, a.pd_x, a.x - 4, a.pd_beta); }},
      {"pd_beta half over gamma", "pd_beta", [](Arena& a) { grad(a, a.pd_x, a.pd_gamma, a.gamma + kH / 2); }},
      {"grad_x outputs over each other", "res_for_gamma", [](Arena& a) { grad_x(a, a.pd_x, a.pd_x); }},
      {"grad_x res one element past x", "res_for_gamma", [](Arena& a) { grad_x(a, a.pd_x, a.x + 1); }},
      {"grad_x pd_x over dy and x", "pd_x", [](Arena& a) { grad_x(a, a.dy + kH, a.res); }},
      {"beta pd_gamma inside dy", "pd_gamma",
       [](Arena& a) {
         layer_norm_grad_beta(a.rows_view(a.x), a.rows_view(a.dy), a.cols_out(a.dy + 3), a.cols_out(a.pd_beta));
       }},
      {"forward y one element past x", "y",
       [](Arena& a) {
         layer_norm(a.rows_view(a.x), std::nullopt, std::nullopt, a.rows_out(a.x + 1),
                    {a.at(a.pd_gamma), Dtype::float32, {kRows}}, {a.at(a.pd_beta), Dtype::float32, {kRows}}, {});
       }},
      {"forward mean inside x", "mean",
       [](Arena& a) {
         layer_norm(a.rows_view(a.x), std::nullopt, std::nullopt, a.rows_out(a.pd_x),
                    {a.at(a.x + 2), Dtype::float32, {kRows}}, {a.at(a.pd_beta), Dtype::float32, {kRows}}, {});
       }},
  };
  for (const Refusal& c : cases) {
    Arena a;
    const std::vector<float> before = a.mem;
    try {
      c.call(a);
      ADD_FAILURE() << c.name << ": accepted";
    } catch (const Error& e) {
      const std::string msg = e.what();
      EXPECT_NE(msg.find(std::string(": ") + c.argument + ":"), std::string::npos) << c.name << ": " << msg;
      EXPECT_NE(msg.find("overlapping"), std::string::npos) << c.name << ": " << msg;
    }
    EXPECT_EQ(std::memcmp(before.data(), a.mem.data(), before.size() * sizeof(float)), 0)
        << c.name << ": memory written by a refused call";
  }
}

}  // namespace
}  // namespace lngrad::hardening
