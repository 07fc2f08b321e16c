// Statistics at the edge of the formula (variance + eps <= 0, eps = 0,
// rstd given directly) and denormal inputs (docs/HARDENING.md, "Edge values").
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>

#include "support.hpp"

namespace lngrad::hardening {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

// x times s (rounded to its dtype), with mean and variance recomputed from
// the stored values: variance scales by about s^2.
void scale_x(GradProblem& p, double s) {
  for (std::int64_t r = 0; r < p.rows; ++r) {
    double sum = 0, sq = 0;
    for (std::int64_t j = 0; j < p.h; ++j) {
      p.x.set(r * p.h + j, s * p.x.at(r * p.h + j));
      sum += p.x.at(r * p.h + j);
    }
    const double mean = sum / static_cast<double>(p.h);
    for (std::int64_t j = 0; j < p.h; ++j) sq += (p.x.at(r * p.h + j) - mean) * (p.x.at(r * p.h + j) - mean);
    p.mean.set(r, mean);
    p.variance.set(r, sq / static_cast<double>(p.h));
  }
}

bool same_bits(const Tensor& a, const Tensor& b, std::int64_t i) {
  const std::size_t s = dtype_size(a.dtype());
  const auto* pa = static_cast<const std::uint8_t*>(a.data()) + i * s;
  const auto* pb = static_cast<const std::uint8_t*>(b.data()) + i * s;
  return std::equal(pa, pa + s, pb);
}

// variance + eps == 0 gives rstd = 1/sqrt(+-0) = +-Inf: row r of pd_x and
// res_for_gamma is non-finite, every pd_gamma column is non-finite, pd_beta
// and the other rows are exactly as without the row. No trap, no exception.
LNGRAD_TARGET_SUITE(ZeroVariancePlusEpsilon);

TEST_P(ZeroVariancePlusEpsilon, GivesInfiniteRstdConfinedToTheRow) {
  struct Case {
    double variance, epsilon;
  };
  // eps = 2^-10 is exact in every dtype, so variance + eps is exactly 0.
  for (const Case cs : {Case{-0x1p-10, 0x1p-10}, Case{0.0, 0.0}, Case{-0.0, 0.0}}) {
    for (Dtype dtype : kAllDtypes) {
      const std::string what = std::string(dtype_name(dtype)) + " variance " + std::to_string(cs.variance);
      GradProblem clean = make_problem(dtype, stat_for(dtype), 5, 19, 11);
      clean.epsilon = cs.epsilon;
      GradProblem bad = make_problem(dtype, stat_for(dtype), 5, 19, 11);
      bad.epsilon = cs.epsilon;
      bad.variance.set(1, cs.variance);
      const GradOutputs c = run_grad(clean), b = run_grad(bad);
      const GradOutputs cx = run_grad_x(clean), bx = run_grad_x(bad);
      for (std::int64_t r = 0; r < 5; ++r) {
        for (std::int64_t i = r * 19; i < (r + 1) * 19; ++i) {
          if (r == 1) {
            EXPECT_FALSE(std::isfinite(b.pd_x.at(i))) << what << " pd_x[" << i << "]";
            EXPECT_FALSE(std::isfinite(bx.res_for_gamma.at(i))) << what << " res_for_gamma[" << i << "]";
          } else {
            EXPECT_TRUE(same_bits(b.pd_x, c.pd_x, i)) << what << " pd_x[" << i << "]";
            EXPECT_TRUE(same_bits(bx.res_for_gamma, cx.res_for_gamma, i)) << what << " res_for_gamma[" << i << "]";
          }
        }
      }
      for (std::int64_t j = 0; j < 19; ++j) {
        EXPECT_FALSE(std::isfinite(b.pd_gamma.at(j))) << what << " pd_gamma[" << j << "]";
        EXPECT_TRUE(same_bits(b.pd_beta, c.pd_beta, j)) << what << " pd_beta[" << j << "]";
      }
    }
  }
}

// variance + eps < 0: rstd = NaN, so row r of pd_x and res_for_gamma and every
// pd_gamma column are NaN; pd_beta and the other rows are untouched.
LNGRAD_TARGET_SUITE(NegativeVariancePlusEpsilon);

TEST_P(NegativeVariancePlusEpsilon, GivesNaNConfinedToTheRow) {
  for (Dtype dtype : kAllDtypes) {
    GradProblem clean = make_problem(dtype, stat_for(dtype), 4, 33, 13);
    GradProblem bad = make_problem(dtype, stat_for(dtype), 4, 33, 13);
    bad.variance.set(3, -1.0);
    const GradOutputs c = run_grad(clean), b = run_grad(bad), bx = run_grad_x(bad), cx = run_grad_x(clean);
    for (std::int64_t i = 0; i < 4 * 33; ++i) {
      if (i / 33 == 3) {
        EXPECT_TRUE(std::isnan(b.pd_x.at(i))) << dtype_name(dtype) << " pd_x[" << i << "]";
        EXPECT_TRUE(std::isnan(bx.res_for_gamma.at(i))) << dtype_name(dtype) << " res_for_gamma[" << i << "]";
      } else {
        EXPECT_TRUE(same_bits(b.pd_x, c.pd_x, i)) << dtype_name(dtype) << " pd_x[" << i << "]";
        EXPECT_TRUE(same_bits(bx.res_for_gamma, cx.res_for_gamma, i)) << dtype_name(dtype) << " res[" << i << "]";
      }
    }
    for (std::int64_t j = 0; j < 33; ++j) {
      EXPECT_TRUE(std::isnan(b.pd_gamma.at(j))) << dtype_name(dtype) << " pd_gamma[" << j << "]";
      EXPECT_TRUE(same_bits(b.pd_beta, c.pd_beta, j)) << dtype_name(dtype) << " pd_beta[" << j << "]";
    }
  }
}

// eps = 0 is accepted and used as given: results match the reference with
// eps = 0, and the test shows that the dtype's default epsilon (what a call
// that replaced 0 by "not given" would use) lies outside the bound. x is
// scaled so that variance ~ 1e-8 for float32/float64 (eps 1e-12 then shifts
// rstd by ~5e-5 relative, the bound allows ~3e-6) and ~1e-4 for 16-bit x
// (eps 1e-5 shifts it by ~5%, the bound allows 2^-8 and 2^-11).
LNGRAD_TARGET_SUITE(EpsilonZero);

TEST_P(EpsilonZero, IsUsedAsGiven) {
  for (Dtype dtype : kAllDtypes) {
    const bool wide = dtype == Dtype::float32 || dtype == Dtype::float64;
    GradProblem p = make_problem(dtype, stat_for(dtype), 9, 40, 17);
    scale_x(p, wide ? 1e-4 : 1e-2);
    p.epsilon = 0.0;
    const std::string what = std::string(dtype_name(dtype)) + " eps=0";
    expect_near_reference(p, run_grad(p), what);

    reference::GradInputs with_default = reference_inputs(p);
    with_default.epsilon = default_epsilon(dtype);
    const reference::GradOutputs ref = reference::layer_norm_grad(reference_inputs(p));
    const reference::GradOutputs shifted = reference::layer_norm_grad(with_default);
    const std::vector<double> bound = pd_x_bound(reference_inputs(p), dtype);
    double worst = 0;
    for (std::size_t i = 0; i < bound.size(); ++i) worst = std::max(worst, std::fabs(shifted.pd_x[i] - ref.pd_x[i]) / bound[i]);
    EXPECT_GT(worst, 4.0) << what << ": the default epsilon would pass the bound; the test cannot tell it from 0";
  }
}

// Without an epsilon the Ascend default applies (1e-12 for float32/float64,
// 1e-5 for 16-bit x); constant rows (variance 0) then give finite gradients,
// rstd = default_epsilon^-1/2.
LNGRAD_TARGET_SUITE(DefaultEpsilon);

TEST_P(DefaultEpsilon, KeepsConstantRowsFinite) {
  for (Dtype dtype : kAllDtypes) {
    GradProblem p = make_problem(dtype, stat_for(dtype), 3, 24, 19);
    for (std::int64_t r = 0; r < 3; ++r) {
      for (std::int64_t j = 0; j < 24; ++j) p.x.set(r * 24 + j, 1.5 * static_cast<double>(r));
      p.mean.set(r, 1.5 * static_cast<double>(r));
      p.variance.set(r, 0.0);
    }
    GradOutputs out;
    out.pd_x = Tensor(dtype, p.x.shape());
    out.pd_gamma = Tensor(dtype, {24});
    out.pd_beta = Tensor(dtype, {24});
    layer_norm_grad(p.dy.cview(), p.x.cview(), p.variance.cview(), p.mean.cview(), p.gamma_v(), out.pd_x.view(),
                    out.pd_gamma.view(), out.pd_beta.view());  // no epsilon given
    p.epsilon = default_epsilon(dtype);
    EXPECT_EQ(p.epsilon, dtype == Dtype::float16 || dtype == Dtype::bfloat16 ? 1e-5 : 1e-12);
    expect_near_reference(p, out, std::string(dtype_name(dtype)) + " default eps");
  }
}

// A negative or non-finite epsilon is refused before anything is written (by
// the argument checks, which do not depend on the target).
TEST(Epsilon, NegativeOrNonFiniteIsRefused) {
  for (double eps : {-1e-5, -kInf, kInf, std::numeric_limits<double>::quiet_NaN()}) {
    GradProblem p = make_problem(Dtype::float32, Dtype::float32, 2, 8, 23);
    p.epsilon = eps;
    Tensor pd_x(Dtype::float32, p.x.shape()), pd_gamma(Dtype::float32, {8}), pd_beta(Dtype::float32, {8});
    pd_x.fill(7.0);
    pd_gamma.fill(7.0);
    pd_beta.fill(7.0);
    GradOptions opt;
    opt.epsilon = eps;
    try {
      layer_norm_grad(p.dy.cview(), p.x.cview(), p.variance.cview(), p.mean.cview(), p.gamma_v(), pd_x.view(),
                      pd_gamma.view(), pd_beta.view(), opt);
      ADD_FAILURE() << "epsilon " << eps << " accepted";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("epsilon"), std::string::npos) << e.what();
    }
    for (std::int64_t i = 0; i < 16; ++i) EXPECT_EQ(pd_x.at(i), 7.0);
    for (std::int64_t j = 0; j < 8; ++j) EXPECT_EQ(pd_gamma.at(j) + pd_beta.at(j), 14.0);
  }
}

// rstd given directly (Statistic::rstd), 1 for every row but row 0:
//   rstd = +Inf behaves as variance + eps = 0: row 0 of pd_x and
//     res_for_gamma and every pd_gamma column are non-finite;
//   rstd = 0: row 0 of pd_x and res_for_gamma is exactly 0, and pd_gamma
//     equals, bit for bit, the call on rows 1 and 2 alone (row 0 adds 0);
// either way rows 1 and 2 of pd_x and res_for_gamma and all of pd_beta equal
// the call with rstd 1 in row 0, bit for bit.
LNGRAD_TARGET_SUITE(RstdStatistic);

TEST_P(RstdStatistic, InfinityAndZero) {
  constexpr std::int64_t kRows = 3, kH = 10;
  for (Dtype dtype : kAllDtypes) {
    const Dtype stat = stat_for(dtype);
    const GradProblem p = make_problem(dtype, stat, kRows, kH, 29);
    struct Out {
      GradOutputs grad, grad_x;
    };
    // The problem's rows [first, kRows) with rstd as given (row `first` on).
    auto run = [&](const Tensor& rstd, std::int64_t first) {
      const std::int64_t rows = kRows - first;
      Tensor dy(dtype, {rows, kH}), x(dtype, {rows, kH}), mean(stat, {rows}), r(stat, {rows});
      for (std::int64_t i = 0; i < rows * kH; ++i) {
        dy.set(i, p.dy.at(first * kH + i));
        x.set(i, p.x.at(first * kH + i));
      }
      for (std::int64_t i = 0; i < rows; ++i) {
        mean.set(i, p.mean.at(first + i));
        r.set(i, rstd.at(first + i));
      }
      Out o{{Tensor(dtype, {rows, kH}), {}, Tensor(dtype, {kH}), Tensor(dtype, {kH})},
            {Tensor(dtype, {rows, kH}), Tensor(dtype, {rows, kH}), {}, {}}};
      GradOptions opt;
      opt.statistic = Statistic::rstd;
      layer_norm_grad(dy.cview(), x.cview(), r.cview(), mean.cview(), p.gamma_v(), o.grad.pd_x.view(),
                      o.grad.pd_gamma.view(), o.grad.pd_beta.view(), opt);
      GradXOptions xopt;
      xopt.statistic = Statistic::rstd;
      layer_norm_grad_x(dy.cview(), x.cview(), r.cview(), mean.cview(), p.gamma_v(), o.grad_x.pd_x.view(),
                        o.grad_x.res_for_gamma.view(), xopt);
      return o;
    };
    Tensor ones(stat, {kRows});
    ones.fill(1.0);
    const Out clean = run(ones, 0);
    const Out rest = run(ones, 1);  // rows 1 and 2 alone
    for (double rstd : {kInf, 0.0}) {
      const std::string what = std::string(dtype_name(dtype)) + " rstd " + std::to_string(rstd);
      Tensor r = ones;
      r.set(0, rstd);
      const Out got = run(r, 0);
      for (std::int64_t i = 0; i < kRows * kH; ++i) {
        if (i >= kH) {
          EXPECT_TRUE(same_bits(got.grad.pd_x, clean.grad.pd_x, i)) << what << " pd_x[" << i << "]";
          EXPECT_TRUE(same_bits(got.grad_x.pd_x, clean.grad_x.pd_x, i)) << what << " grad_x pd_x[" << i << "]";
          EXPECT_TRUE(same_bits(got.grad_x.res_for_gamma, clean.grad_x.res_for_gamma, i)) << what << " res[" << i << "]";
        } else if (rstd == 0.0) {
          EXPECT_EQ(got.grad.pd_x.at(i), 0.0) << what << " pd_x[" << i << "]";
          EXPECT_EQ(got.grad_x.pd_x.at(i), 0.0) << what << " grad_x pd_x[" << i << "]";
          EXPECT_EQ(got.grad_x.res_for_gamma.at(i), 0.0) << what << " res[" << i << "]";
        } else {
          EXPECT_FALSE(std::isfinite(got.grad.pd_x.at(i))) << what << " pd_x[" << i << "]";
          EXPECT_FALSE(std::isfinite(got.grad_x.pd_x.at(i))) << what << " grad_x pd_x[" << i << "]";
          EXPECT_FALSE(std::isfinite(got.grad_x.res_for_gamma.at(i))) << what << " res[" << i << "]";
        }
      }
      for (std::int64_t j = 0; j < kH; ++j) {
        EXPECT_TRUE(same_bits(got.grad.pd_beta, clean.grad.pd_beta, j)) << what << " pd_beta[" << j << "]";
        if (rstd == 0.0) {
          EXPECT_TRUE(same_bits(got.grad.pd_gamma, rest.grad.pd_gamma, j)) << what << " pd_gamma[" << j << "]";
        } else {
          EXPECT_FALSE(std::isfinite(got.grad.pd_gamma.at(j))) << what << " pd_gamma[" << j << "]";
        }
      }
    }
  }
}

// ---- Denormals ---------------------------------------------------------------

// A scale whose small multiples are subnormal in the dtype and whose
// 1/8-fractions stay exact in the arithmetic type.
double subnormal_scale(Dtype d) {
  switch (d) {
    case Dtype::float64: return 0x1p-1060;  // subnormal below 2^-1022, grid 2^-1074
    case Dtype::float32: return 0x1p-140;   // below 2^-126, grid 2^-149
    case Dtype::float16: return 0x1p-24;    // below 2^-14, grid 2^-24
    case Dtype::bfloat16: return 0x1p-130;  // below 2^-126, grid 2^-133
  }
  return 1.0;
}

// dy subnormal, x small integers summing to 0 per row, mean 0, variance 1,
// eps 0 (rstd = 1 exactly). Every intermediate (sums of dy, dy*x, their
// halves and eighths) is then a multiple of scale/8 far from overflow, so both
// the library's arithmetic and the reference are exact, and outputs must equal
// the reference rounded once to the storage type, bit for bit. A flush of
// subnormals to zero (FTZ/DAZ) would zero dy and fail every check.
LNGRAD_TARGET_SUITE(Denormals);

TEST_P(Denormals, SubnormalGradientsAreExactNotFlushed) {
  const std::int64_t rows = 3, h = 8;
  const double xs[h] = {-3, -2, -1, 0, 0, 1, 2, 3};
  for (Dtype dtype : kAllDtypes) {
    const double s = subnormal_scale(dtype);
    GradProblem p = make_problem(dtype, stat_for(dtype), rows, h, 31);
    p.epsilon = 0.0;
    p.with_gamma = false;
    for (std::int64_t r = 0; r < rows; ++r) {
      for (std::int64_t j = 0; j < h; ++j) {
        p.x.set(r * h + j, xs[(j + 3 * r) % h]);
        p.dy.set(r * h + j, static_cast<double>(((j * 5 + r * 3) % 15) - 7) * s);
        ASSERT_EQ(p.dy.at(r * h + j), static_cast<double>(((j * 5 + r * 3) % 15) - 7) * s) << "dy not subnormal-exact";
      }
      p.mean.set(r, 0.0);
      p.variance.set(r, 1.0);
    }
    const GradOutputs out = run_grad(p);
    const GradOutputs outx = run_grad_x(p);
    const reference::GradOutputs ref = reference::layer_norm_grad(reference_inputs(p));
    Tensor want_pd_x(dtype, p.x.shape()), want_gamma(dtype, {h}), want_beta(dtype, {h});
    for (std::int64_t i = 0; i < rows * h; ++i) want_pd_x.set(i, ref.pd_x[i]);
    for (std::int64_t j = 0; j < h; ++j) {
      want_gamma.set(j, ref.pd_gamma[j]);
      want_beta.set(j, ref.pd_beta[j]);
    }
    int subnormal_outputs = 0;
    for (std::int64_t i = 0; i < rows * h; ++i) {
      EXPECT_TRUE(same_bits(out.pd_x, want_pd_x, i))
          << dtype_name(dtype) << " pd_x[" << i << "] = " << out.pd_x.at(i) << ", want " << want_pd_x.at(i);
      EXPECT_TRUE(same_bits(outx.pd_x, want_pd_x, i)) << dtype_name(dtype) << " layer_norm_grad_x pd_x[" << i << "]";
      EXPECT_EQ(outx.res_for_gamma.at(i), ref.res_for_gamma[i]);
      subnormal_outputs += want_pd_x.at(i) != 0.0 && std::fabs(want_pd_x.at(i)) < 64 * s;
    }
    for (std::int64_t j = 0; j < h; ++j) {
      EXPECT_TRUE(same_bits(out.pd_gamma, want_gamma, j)) << dtype_name(dtype) << " pd_gamma[" << j << "]";
      EXPECT_TRUE(same_bits(out.pd_beta, want_beta, j)) << dtype_name(dtype) << " pd_beta[" << j << "]";
    }
    EXPECT_GT(subnormal_outputs, rows * h / 2) << "the test must exercise subnormal outputs";
  }
}

// A subnormal variance with eps = 0: rstd = variance^-1/2 is large but every
// output is of order rstd*|dy| and representable. The library must match the
// reference: an evaluation that forms rstd^3 (2^210 here) overflows the
// float32 arithmetic and returns Inf/NaN for a finite answer.
TEST_P(Denormals, SubnormalVarianceGivesFiniteGradients) {
  struct Case {
    Dtype dtype;
    double variance;  // subnormal in the dtype
  };
  for (const Case cs : {Case{Dtype::float32, 0x1p-140}, Case{Dtype::bfloat16, 0x1p-130},
                        Case{Dtype::float16, 0x1p-24}}) {
    GradProblem p = make_problem(cs.dtype, cs.dtype, 4, 12, 37);
    p.epsilon = 0.0;
    const double spread = std::sqrt(cs.variance);  // x - mean of the order of the standard deviation
    for (std::int64_t r = 0; r < 4; ++r) {
      for (std::int64_t j = 0; j < 12; ++j) p.x.set(r * 12 + j, static_cast<double>((j * 7 + r) % 9 - 4) * spread);
      p.mean.set(r, 0.0);
      p.variance.set(r, cs.variance);
      ASSERT_EQ(p.variance.at(r), cs.variance);
    }
    expect_near_reference(p, run_grad(p), std::string(dtype_name(cs.dtype)) + " subnormal variance");
  }
}

}  // namespace
}  // namespace lngrad::hardening
