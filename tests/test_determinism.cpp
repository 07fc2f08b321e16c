// Bitwise reproducibility for any thread count, and column sums that stay
// accurate over many rows in 16-bit storage.
#include <gtest/gtest.h>

#include "test_support.hpp"

namespace lngrad::test {
namespace {

TEST(Determinism, BitIdenticalForAnyThreadCount) {
  for (Dtype d : {Dtype::float32, Dtype::bfloat16, Dtype::float64}) {
    for (Shape shape : {Shape{3001, 96}, Shape{200, 1000}, Shape{20000, 8}}) {
      ProblemSpec s;
      s.x_shape = shape;
      s.dtype = s.stat_dtype = s.param_dtype = d;
      Problem p = make_problem(s);
      Buffer ref_x, ref_g, ref_b;
      for (int threads = 1; threads <= 16; ++threads) {
        for (int repeat = 0; repeat < 2; ++repeat) {
          Buffer pd_x(d, p.rows * p.h), pd_gamma(d, p.h), pd_beta(d, p.h);
          GradOptions opt;
          opt.num_threads = threads;
          layer_norm_grad(p.dy.cview(p.x_shape), p.x.cview(p.x_shape), p.variance.cview(p.stat_shape),
                          p.mean.cview(p.stat_shape), p.gamma.cview(p.param_shape), pd_x.view(p.x_shape),
                          pd_gamma.view(p.param_shape), pd_beta.view(p.param_shape), opt);
          if (threads == 1 && repeat == 0) {
            ref_x = pd_x;
            ref_g = pd_gamma;
            ref_b = pd_beta;
            continue;
          }
          ASSERT_TRUE(pd_x.bytes_equal(ref_x)) << dtype_name(d) << " " << shape.str() << " threads " << threads;
          ASSERT_TRUE(pd_gamma.bytes_equal(ref_g)) << dtype_name(d) << " " << shape.str() << " threads " << threads;
          ASSERT_TRUE(pd_beta.bytes_equal(ref_b)) << dtype_name(d) << " " << shape.str() << " threads " << threads;
        }
      }
    }
  }
}

TEST(Determinism, GradBetaBitIdenticalForAnyThreadCount) {
  ProblemSpec s;
  s.x_shape = {5000, 40};
  Problem p = make_problem(s);
  Buffer first_g, first_b;
  for (int threads : {1, 2, 3, 7, 16}) {
    Buffer g(Dtype::float32, 40), b(Dtype::float32, 40);
    GradBetaOptions opt;
    opt.num_threads = threads;
    layer_norm_grad_beta(p.x.cview(p.x_shape), p.dy.cview(p.x_shape), g.view({40}), b.view({40}), opt);
    if (threads == 1) {
      first_g = g;
      first_b = b;
    } else {
      ASSERT_TRUE(g.bytes_equal(first_g) && b.bytes_equal(first_b)) << threads;
    }
  }
}

TEST(Accuracy, Bfloat16ColumnSumsOverManyRows) {
  // 65536 rows of dy = 0.5: every partial sum is a multiple of 0.5 below
  // 2^24, so float32 accumulation is exact: pd_beta must be 32768 exactly.
  const std::int64_t rows = 65536, h = 16;
  Buffer dy(Dtype::bfloat16, std::vector<double>(rows * h, 0.5));
  Buffer res(Dtype::bfloat16, std::vector<double>(rows * h, 0.25));
  Buffer g(Dtype::bfloat16, h), b(Dtype::bfloat16, h);
  for (int threads : {1, 2}) {
    GradBetaOptions opt;
    opt.num_threads = threads;
    layer_norm_grad_beta(res.cview({rows, h}), dy.cview({rows, h}), g.view({h}), b.view({h}), opt);
    for (std::int64_t j = 0; j < h; ++j) {
      EXPECT_EQ(b.get(j), 32768.0);
      EXPECT_EQ(g.get(j), 8192.0);
    }
  }
}

}  // namespace
}  // namespace lngrad::test

namespace lngrad::test {
namespace {

TEST(Workspace, BoundedIndependentlyOfRowsTimesH) {
  // The column-sum scratch is O((32 + threads * log2(rows)) * h): far below
  // the tensors, and growing only logarithmically with rows.
  const std::int64_t h = 4096;
  const std::int64_t small = grad_workspace_bytes(16384, h, Dtype::float32, 2);
  const std::int64_t large = grad_workspace_bytes(16384 * 64, h, Dtype::float32, 2);
  EXPECT_GT(small, 0);
  EXPECT_LT(small, 16384 * h * 4 / 20);  // < 5% of one input tensor
  EXPECT_LE(large, small + 2 * 6 * 2 * h * 4);  // 64x the rows: at most 6 more levels per thread
  EXPECT_EQ(grad_workspace_bytes(0, h, Dtype::float32, 2), 0);
}

}  // namespace
}  // namespace lngrad::test
