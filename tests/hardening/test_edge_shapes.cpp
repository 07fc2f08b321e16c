// Shapes at the edges: H = 1, a single row in every accepted layout, and a
// million short rows (docs/HARDENING.md, "Edge shapes").
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "support.hpp"

namespace lngrad::hardening {
namespace {

// H = 1: the derivative is exactly 0 for any mean (with one element,
// g*rstd cancels the S1 part of pd_mean and pd_var's two terms cancel each
// other). lngrad evaluates pd_x as rstd*(g - S1/H) + a*(xm - S3/H), in which
// both differences are exactly 0 when H = 1, so pd_x is exactly 0 on every
// target, fused multiply-add or not. With mean = x, res_for_gamma and
// pd_gamma are exactly 0 as well.
LNGRAD_TARGET_SUITE(SingleElementRows);

TEST_P(SingleElementRows, PdXIsExactlyZero) {
  for (Dtype dtype : kAllDtypes) {
    GradProblem exact = make_problem(dtype, stat_for(dtype), 37, 1, 41);
    for (std::int64_t r = 0; r < 37; ++r) exact.mean.set(r, exact.x.at(r));
    for (std::int64_t r = 0; r < 37; ++r) ASSERT_EQ(exact.mean.at(r), exact.x.at(r)) << "mean must be exact";
    GradProblem shifted = make_problem(dtype, stat_for(dtype), 37, 1, 41);
    for (std::int64_t r = 0; r < 37; ++r) shifted.mean.set(r, exact.x.at(r) + 0.25 * static_cast<double>(r % 5 - 2));
    const std::string what = dtype_name(dtype);
    const GradOutputs out = run_grad(exact), outx = run_grad_x(exact), moved = run_grad(shifted);
    for (std::int64_t r = 0; r < 37; ++r) {
      EXPECT_EQ(out.pd_x.at(r), 0.0) << what << " row " << r;
      EXPECT_EQ(outx.pd_x.at(r), 0.0) << what << " row " << r;
      EXPECT_EQ(outx.res_for_gamma.at(r), 0.0) << what << " row " << r;
      EXPECT_EQ(moved.pd_x.at(r), 0.0) << what << " (mean not x) row " << r;
    }
    EXPECT_EQ(out.pd_gamma.at(0), 0.0) << what;
    // pd_beta = sum dy; with mean != x, pd_gamma = sum dy*xm*rstd.
    const reference::GradInputs in = reference_inputs(exact);
    EXPECT_NEAR(out.pd_beta.at(0), reference::layer_norm_grad(in).pd_beta[0],
                column_bound(in, dtype, exact.gamma.dtype(), false)[0]) << what;
    const reference::GradInputs in_moved = reference_inputs(shifted);
    EXPECT_NEAR(moved.pd_gamma.at(0), reference::layer_norm_grad(in_moved).pd_gamma[0],
                column_bound(in_moved, dtype, shifted.gamma.dtype(), true)[0]) << what;
  }
}

// One row, in each accepted layout of x and the statistics: x [H] with
// statistics of rank 0 or [1]; x [1, H] with [1] or [1, 1]; x [1, 1, H] with
// [1, 1] or [1, 1, 1]. H = 1000 covers the vector body and a tail.
LNGRAD_TARGET_SUITE(SingleRow);

TEST_P(SingleRow, EveryLayoutMatchesReference) {
  const std::int64_t h = 1000;
  struct Layout {
    Shape x, stat;
  };
  const Layout layouts[] = {{{h}, Shape()}, {{h}, {1}},       {{1, h}, {1}},
                            {{1, h}, {1, 1}}, {{1, 1, h}, {1, 1}}, {{1, 1, h}, {1, 1, 1}}};
  for (Dtype dtype : kAllDtypes) {
    const GradProblem p = make_problem(dtype, stat_for(dtype), 1, h, 47);
    for (const Layout& l : layouts) {
      const std::string what = std::string(dtype_name(dtype)) + " x " + l.x.str() + " stat " + l.stat.str();
      GradOutputs out;
      out.pd_x = Tensor(dtype, l.x);
      out.pd_gamma = Tensor(dtype, {h});
      out.pd_beta = Tensor(dtype, {h});
      GradOptions opt;
      opt.epsilon = p.epsilon;
      layer_norm_grad({p.dy.data(), dtype, l.x}, {p.x.data(), dtype, l.x}, {p.variance.data(), p.variance.dtype(), l.stat},
                      {p.mean.data(), p.mean.dtype(), l.stat}, p.gamma_v(), out.pd_x.view(), out.pd_gamma.view(),
                      out.pd_beta.view(), opt);
      expect_near_reference(p, out, what);
      EXPECT_TRUE(out.pd_x.guards_intact() && out.pd_gamma.guards_intact() && out.pd_beta.guards_intact()) << what;
    }
  }
}

// A million rows of H = 4: per-row overhead and the column reduction over
// many blocks; results match the reference and do not depend on the thread
// count (bit for bit).
LNGRAD_TARGET_SUITE(ManyShortRows);

TEST_P(ManyShortRows, MillionRowsOfFour) {
  for (Dtype dtype : {Dtype::float32, Dtype::bfloat16}) {
    const GradProblem p = make_problem(dtype, Dtype::float32, 1000000, 4, 53);
    const GradOutputs one = run_grad(p, 1);
    expect_near_reference(p, one, std::string(dtype_name(dtype)) + " 1e6 x 4");
    const GradOutputs two = run_grad(p, 2);
    EXPECT_TRUE(one.pd_x.payload() == two.pd_x.payload()) << dtype_name(dtype);
    EXPECT_TRUE(one.pd_gamma.payload() == two.pd_gamma.payload()) << dtype_name(dtype);
    EXPECT_TRUE(one.pd_beta.payload() == two.pd_beta.payload()) << dtype_name(dtype);
  }
}

}  // namespace
}  // namespace lngrad::hardening
