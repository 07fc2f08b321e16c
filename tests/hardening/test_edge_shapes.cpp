// Shapes at the edges: H = 1, a single row in every accepted layout, and a
// million short rows (docs/HARDENING.md, "Edge shapes").
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "support.hpp"

namespace lngrad::hardening {
namespace {

const Dtype kAllDtypes[] = {Dtype::float32, Dtype::float64, Dtype::float16, Dtype::bfloat16};

Dtype stat_for(Dtype x) { return x == Dtype::float64 ? Dtype::float64 : Dtype::float32; }

void expect_near_reference(const GradProblem& p, const GradOutputs& out, const std::string& what) {
  const reference::GradInputs in = reference_inputs(p);
  const reference::GradOutputs ref = reference::layer_norm_grad(in);
  const std::vector<double> bx = pd_x_bound(in, p.x.dtype());
  const std::vector<double> bg = column_bound(in, p.x.dtype(), p.gamma.dtype(), true);
  const std::vector<double> bb = column_bound(in, p.x.dtype(), p.gamma.dtype(), false);
  for (std::int64_t i = 0; i < p.rows * p.h; ++i) {
    ASSERT_NEAR(out.pd_x.at(i), ref.pd_x[i], bx[i]) << what << " pd_x[" << i << "]";
  }
  for (std::int64_t j = 0; j < p.h; ++j) {
    ASSERT_NEAR(out.pd_gamma.at(j), ref.pd_gamma[j], bg[j]) << what << " pd_gamma[" << j << "]";
    ASSERT_NEAR(out.pd_beta.at(j), ref.pd_beta[j], bb[j]) << what << " pd_beta[" << j << "]";
  }
}

// Runs body once per SIMD target this CPU supports, restoring dispatch after.
template <typename Body>
void for_each_target(Body body) {
  for (const std::string& target : available_targets()) {
    set_max_target(target);
    SCOPED_TRACE("target " + target);
    body(target);
  }
  set_max_target("");
}

// H = 1: the exact derivative is 0 for any mean (with one element,
// pd_var*(2/H)*xm and the pd_var*(1/H)*sum(-2*xm) term of pd_mean cancel, and
// g*rstd cancels -g*rstd). With mean = x (the exact row mean) xm = 0 and
// pd_x = g*rstd - round(g*rstd): 0 where the target evaluates it with a
// separate multiply, the product's rounding error (at most u*|g*rstd|) where
// it uses a fused multiply-add. res_for_gamma and pd_gamma are exactly 0.
TEST(SingleElementRows, GradientIsZeroUpToOneRounding) {
  for (Dtype dtype : kAllDtypes) {
    GradProblem p = make_problem(dtype, stat_for(dtype), 37, 1, 41);
    for (std::int64_t r = 0; r < 37; ++r) p.mean.set(r, p.x.at(r));
    for (std::int64_t r = 0; r < 37; ++r) ASSERT_EQ(p.mean.at(r), p.x.at(r)) << "mean must be exact";
    for_each_target([&](const std::string&) {
      const GradOutputs out = run_grad(p);
      const GradOutputs outx = run_grad_x(p);
      const reference::GradInputs in = reference_inputs(p);
      const double u = arithmetic_roundoff(dtype);
      // A residual below the 16-bit types' smallest subnormal (2^-24 for
      // float16) may round up to it.
      const double floor = dtype == Dtype::float16 ? 0x1p-24 : 0.0;
      for (std::int64_t r = 0; r < 37; ++r) {
        const double g_rstd = in.dy[r] * in.gamma[0] / std::sqrt(in.variance[r] + in.epsilon);
        EXPECT_LE(std::fabs(out.pd_x.at(r)), 2 * u * std::fabs(g_rstd) + floor) << dtype_name(dtype) << " row " << r;
        EXPECT_LE(std::fabs(outx.pd_x.at(r)), 2 * u * std::fabs(g_rstd) + floor) << dtype_name(dtype) << " row " << r;
        EXPECT_EQ(outx.res_for_gamma.at(r), 0.0);
      }
      EXPECT_EQ(out.pd_gamma.at(0), 0.0) << dtype_name(dtype);
      const std::vector<double> bb = column_bound(in, dtype, p.gamma.dtype(), false);
      EXPECT_NEAR(out.pd_beta.at(0), reference::layer_norm_grad(in).pd_beta[0], bb[0]) << dtype_name(dtype);
    });
  }
}

// H = 1 with a stored mean that is not x: still 0 in exact arithmetic; the
// library's residual stays within the usual bound from the terms' sizes.
TEST(SingleElementRows, ArbitraryMeanMatchesReference) {
  for (Dtype dtype : kAllDtypes) {
    const GradProblem p = make_problem(dtype, stat_for(dtype), 29, 1, 43);
    GradProblem q = make_problem(dtype, stat_for(dtype), 29, 1, 43);
    for (std::int64_t r = 0; r < 29; ++r) q.mean.set(r, p.x.at(r) + 0.25 * static_cast<double>(r % 5 - 2));
    for_each_target([&](const std::string& t) { expect_near_reference(q, run_grad(q), dtype_name(dtype) + (" " + t)); });
  }
}

// One row, in each accepted layout of x and the statistics: x [H] with
// statistics of rank 0 or [1]; x [1, H] with [1] or [1, 1]; x [1, 1, H] with
// [1, 1] or [1, 1, 1]. H = 1000 covers the vector body and a tail.
TEST(SingleRow, EveryLayoutMatchesReference) {
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
TEST(ManyShortRows, MillionRowsOfFour) {
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
