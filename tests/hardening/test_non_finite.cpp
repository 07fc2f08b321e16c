// NaN and Inf in one input element: what it poisons and what it leaves
// bit-identical (docs/HARDENING.md, "Non-finite inputs"). Mean and variance
// are inputs of the backward, so a bad element reaches only the sums that
// read it:
//   dy[r][k]:   S1, S2 of row r -> all of pd_x[r]; pd_gamma[k], pd_beta[k].
//   x[r][k]:    S2, S3 of row r -> all of pd_x[r]; res[r][k] -> pd_gamma[k].
//   mean[r]:    every xm of row r -> pd_x[r], res[r], every pd_gamma column.
//   variance[r] (NaN, -Inf): rstd = NaN, as mean[r].
//   variance[r] = +Inf: rstd = 0, the limit of a row of unbounded spread:
//               pd_x[r] = 0, res[r] = 0, row r adds nothing to pd_gamma.
//   gamma[k]:   g[r][k] of every row -> every row of pd_x; pd_gamma and
//               pd_beta never read gamma.
// Everything else equals, bit for bit, a call on the same inputs without the
// bad value (rows and columns are computed independently and reduced in a
// fixed order).
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>
#include <tuple>

#include "support.hpp"

namespace lngrad::hardening {
namespace {

enum class Where { dy, x, mean, variance, gamma };

const char* where_name(Where w) {
  switch (w) {
    case Where::dy: return "dy";
    case Where::x: return "x";
    case Where::mean: return "mean";
    case Where::variance: return "variance";
    case Where::gamma: return "gamma";
  }
  return "?";
}

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr std::int64_t kRows = 6, kH = 21, kBadRow = 2;

using Param = std::tuple<std::string, Dtype, Where>;  // target, dtype, input

void poison(GradProblem& p, Where where, double value, std::int64_t k) {
  switch (where) {
    case Where::dy: p.dy.set(kBadRow * kH + k, value); return;
    case Where::x: p.x.set(kBadRow * kH + k, value); return;
    case Where::mean: p.mean.set(kBadRow, value); return;
    case Where::variance: p.variance.set(kBadRow, value); return;
    case Where::gamma: p.gamma.set(k, value); return;
  }
}

// Element i of a and b have the same bits.
bool same_bits(const Tensor& a, const Tensor& b, std::int64_t i) {
  const std::size_t s = dtype_size(a.dtype());
  const auto* pa = static_cast<const std::uint8_t*>(a.data()) + i * s;
  const auto* pb = static_cast<const std::uint8_t*>(b.data()) + i * s;
  return std::equal(pa, pa + s, pb);
}

// One bad value (`value` at column k, row kBadRow for per-element inputs).
void check_poisoned(Dtype dtype, Where where, double value, std::int64_t k) {
  const Dtype stat = dtype == Dtype::float64 ? Dtype::float64 : Dtype::float32;
  const GradProblem clean = make_problem(dtype, stat, kRows, kH, 7);
  GradProblem bad = make_problem(dtype, stat, kRows, kH, 7);
  poison(bad, where, value, k);

  const GradOutputs c = run_grad(clean), b = run_grad(bad);
  const GradOutputs cx = run_grad_x(clean), bx = run_grad_x(bad);
  const bool rstd_zero = where == Where::variance && value == kInf;

  // pd_x (both ops) and res_for_gamma, row by row.
  for (std::int64_t r = 0; r < kRows; ++r) {
    const std::int64_t b0 = r * kH, e0 = b0 + kH;
    const bool row_hit = where == Where::gamma || r == kBadRow;
    for (const auto* pair : {&c, &cx}) {
      const Tensor& clean_pd_x = pair->pd_x;
      const Tensor& bad_pd_x = pair == &c ? b.pd_x : bx.pd_x;
      if (row_hit && rstd_zero) {
        for (std::int64_t i = b0; i < e0; ++i) EXPECT_EQ(bad_pd_x.at(i), 0.0) << "pd_x[" << i << "]";
      } else if (row_hit) {
        EXPECT_TRUE(all_non_finite(bad_pd_x, b0, e0)) << "pd_x row " << r;
      } else {
        for (std::int64_t i = b0; i < e0; ++i) EXPECT_TRUE(same_bits(bad_pd_x, clean_pd_x, i)) << "pd_x[" << i << "]";
      }
    }
    for (std::int64_t i = b0; i < e0; ++i) {
      const bool res_row = r == kBadRow && (where == Where::mean || where == Where::variance);
      const bool res_elem = r == kBadRow && where == Where::x && i == b0 + k;
      if (res_row && rstd_zero) {
        EXPECT_EQ(bx.res_for_gamma.at(i), 0.0) << "res_for_gamma[" << i << "]";
      } else if (res_row || res_elem) {
        EXPECT_FALSE(std::isfinite(bx.res_for_gamma.at(i))) << "res_for_gamma[" << i << "]";
      } else {
        EXPECT_TRUE(same_bits(bx.res_for_gamma, cx.res_for_gamma, i)) << "res_for_gamma[" << i << "]";
      }
    }
  }

  // pd_gamma and pd_beta, column by column.
  GradOutputs zero_row;  // rstd = 0: row r must add exactly what a zero dy row adds.
  if (rstd_zero) {
    GradProblem z = make_problem(dtype, stat, kRows, kH, 7);
    for (std::int64_t j = 0; j < kH; ++j) z.dy.set(kBadRow * kH + j, 0.0);
    zero_row = run_grad(z);
  }
  for (std::int64_t j = 0; j < kH; ++j) {
    const bool gamma_hit = where == Where::mean || (where == Where::variance && !rstd_zero) ||
                           ((where == Where::dy || where == Where::x) && j == k);
    if (rstd_zero) {
      EXPECT_EQ(b.pd_gamma.at(j), zero_row.pd_gamma.at(j)) << "pd_gamma[" << j << "]";
    } else if (gamma_hit) {
      EXPECT_FALSE(std::isfinite(b.pd_gamma.at(j))) << "pd_gamma[" << j << "]";
    } else {
      EXPECT_TRUE(same_bits(b.pd_gamma, c.pd_gamma, j)) << "pd_gamma[" << j << "]";
    }
    if (where == Where::dy && j == k) {
      EXPECT_FALSE(std::isfinite(b.pd_beta.at(j))) << "pd_beta[" << j << "]";
    } else {
      EXPECT_TRUE(same_bits(b.pd_beta, c.pd_beta, j)) << "pd_beta[" << j << "]";
    }
  }
}

class NonFinite : public ::testing::TestWithParam<Param> {
 protected:
  void SetUp() override { set_max_target(std::get<0>(GetParam())); }
  void TearDown() override { set_max_target(""); }
};

// NaN, +Inf and -Inf, at column 3 (in the vector body) and column 19 (in the
// tail: 21 = 16 + 5 floats, 2*8 + 5 doubles on AVX-512). One test per target,
// dtype and input; the values and columns inside (a test per case cost a
// process each, 720 of them, under the sanitizers).
TEST_P(NonFinite, PoisonsOnlyWhatReadsIt) {
  const auto [target, dtype, where] = GetParam();
  for (double value : {kNaN, kInf, -kInf}) {
    for (std::int64_t k : {3, 19}) {
      SCOPED_TRACE(std::string(where_name(where)) + " = " + std::to_string(value) + " at column " + std::to_string(k));
      check_poisoned(dtype, where, value, k);
    }
  }
}

std::string param_name(const ::testing::TestParamInfo<Param>& info) {
  const auto [target, dtype, where] = info.param;
  return std::string(dtype_name(dtype)) + "_" + where_name(where) + "_" + target;
}

INSTANTIATE_TEST_SUITE_P(AllInputs, NonFinite,
                         ::testing::Combine(::testing::ValuesIn(available_targets()),
                                            ::testing::Values(Dtype::float32, Dtype::float64, Dtype::float16,
                                                              Dtype::bfloat16),
                                            ::testing::Values(Where::dy, Where::x, Where::mean, Where::variance,
                                                              Where::gamma)),
                         param_name);

// layer_norm_grad_beta: a bad res_for_gamma[r][k] reaches pd_gamma[k] only; a
// bad dy[r][k] pd_gamma[k] and pd_beta[k].
LNGRAD_TARGET_SUITE(NonFiniteBeta);

TEST_P(NonFiniteBeta, PoisonsOnlyItsColumn) {
  for (Dtype dtype : {Dtype::float32, Dtype::float64, Dtype::float16, Dtype::bfloat16}) {
    for (bool in_dy : {false, true}) {
      const GradProblem p = make_problem(dtype, Dtype::float32, kRows, kH, 3);
      Tensor res = p.x;  // any finite values serve as res_for_gamma
      Tensor dy = p.dy;
      auto run = [&](const Tensor& r, const Tensor& d) {
        std::pair<Tensor, Tensor> out{Tensor(dtype, {kH}), Tensor(dtype, {kH})};
        layer_norm_grad_beta(r.cview(), d.cview(), out.first.view(), out.second.view());
        return out;
      };
      const auto clean = run(res, dy);
      (in_dy ? dy : res).set(kBadRow * kH + 5, kNaN);
      const auto bad = run(res, dy);
      for (std::int64_t j = 0; j < kH; ++j) {
        if (j == 5) {
          EXPECT_TRUE(std::isnan(bad.first.at(j))) << dtype_name(dtype) << " pd_gamma[" << j << "]";
          EXPECT_EQ(std::isnan(bad.second.at(j)), in_dy) << dtype_name(dtype) << " pd_beta[" << j << "]";
          if (!in_dy) EXPECT_TRUE(same_bits(bad.second, clean.second, j));
        } else {
          EXPECT_TRUE(same_bits(bad.first, clean.first, j)) << dtype_name(dtype) << " pd_gamma[" << j << "]";
          EXPECT_TRUE(same_bits(bad.second, clean.second, j)) << dtype_name(dtype) << " pd_beta[" << j << "]";
        }
      }
    }
  }
}

// layer_norm (forward): a bad x[r][k] makes row r's mean, variance and every
// y[r][j] non-finite (the row statistics read it); other rows are unchanged.
LNGRAD_TARGET_SUITE(NonFiniteForward);

TEST_P(NonFiniteForward, PoisonsOnlyItsRow) {
  for (Dtype dtype : {Dtype::float32, Dtype::float64, Dtype::float16, Dtype::bfloat16}) {
    for (double value : {kNaN, kInf, -kInf}) {
      const Dtype stat = dtype == Dtype::float64 ? Dtype::float64 : Dtype::float32;
      const GradProblem p = make_problem(dtype, stat, kRows, kH, 5);
      Tensor x = p.x;
      auto run = [&](const Tensor& in) {
        struct Out {
          Tensor y, mean, var, rstd;
        } o{Tensor(dtype, in.shape()), Tensor(stat, {kRows}), Tensor(stat, {kRows}), Tensor(stat, {kRows})};
        layer_norm(in.cview(), p.gamma.cview(), std::nullopt, o.y.view(), o.mean.view(), o.var.view(), o.rstd.view());
        return o;
      };
      const auto clean = run(x);
      x.set(kBadRow * kH + 11, value);
      const auto bad = run(x);
      for (std::int64_t r = 0; r < kRows; ++r) {
        if (r == kBadRow) {
          EXPECT_TRUE(all_non_finite(bad.y, r * kH, (r + 1) * kH)) << dtype_name(dtype) << " y row " << r;
          EXPECT_FALSE(std::isfinite(bad.mean.at(r)));
          EXPECT_FALSE(std::isfinite(bad.var.at(r)));
          continue;
        }
        for (std::int64_t i = r * kH; i < (r + 1) * kH; ++i) EXPECT_TRUE(same_bits(bad.y, clean.y, i)) << i;
        EXPECT_TRUE(same_bits(bad.mean, clean.mean, r));
        EXPECT_TRUE(same_bits(bad.var, clean.var, r));
        EXPECT_TRUE(same_bits(bad.rstd, clean.rstd, r));
      }
    }
  }
}

}  // namespace
}  // namespace lngrad::hardening
