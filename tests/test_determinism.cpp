// Bitwise reproducibility for any thread count, and column sums that stay
// accurate over many rows in 16-bit storage.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

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

// AVX3_BF16 only swaps the bfloat16 store instruction (vcvtneps2bf16, with
// the integer path kept for subnormals), so it must reproduce AVX3's bits,
// including pd_x values that round to bfloat16 subnormals.
TEST(Determinism, Avx3Bf16MatchesAvx3BitForBit) {
  const std::vector<std::string> targets = available_targets();
  const auto has = [&](const char* name) { return std::find(targets.begin(), targets.end(), name) != targets.end(); };
  if (!has("AVX3_BF16") || !has("AVX3")) GTEST_SKIP() << "this CPU lacks AVX512-BF16";
  ProblemSpec s;
  s.x_shape = {67, 250};  // tails after 15 whole 16-lane vectors
  s.dtype = s.param_dtype = Dtype::bfloat16;  // pd_gamma, pd_beta stored as bfloat16 too
  Problem p = make_problem(s);
  // Row 0's dy of order 2^-130 makes its pd_x float32 subnormals.
  for (std::int64_t i = 0; i < p.h; ++i) p.dy.set(i, static_cast<double>(i % 7 - 3) * 0x1p-130);
  Buffer outputs[2][3];
  const char* names[2] = {"AVX3_BF16", "AVX3"};
  for (int t = 0; t < 2; ++t) {
    set_max_target(names[t]);
    ASSERT_EQ(active_target(), names[t]);
    Buffer pd_x(s.dtype, p.rows * p.h), pd_gamma(s.param_dtype, p.h), pd_beta(s.param_dtype, p.h);
    layer_norm_grad(p.dy.cview(p.x_shape), p.x.cview(p.x_shape), p.variance.cview(p.stat_shape),
                    p.mean.cview(p.stat_shape), p.gamma.cview(p.param_shape), pd_x.view(p.x_shape),
                    pd_gamma.view(p.param_shape), pd_beta.view(p.param_shape));
    outputs[t][0] = pd_x;
    outputs[t][1] = pd_gamma;
    outputs[t][2] = pd_beta;
  }
  set_max_target("");
  for (int k = 0; k < 3; ++k) EXPECT_TRUE(outputs[0][k].bytes_equal(outputs[1][k])) << "output " << k;
}

TEST(Accuracy, Bfloat16ColumnSumsOverManyRows) {
  // 65536 rows of bfloat16 dy: 32769 of +0.5, then 32767 of -0.5. Every
  // partial sum is a multiple of 0.5 below 2^24, so float32 accumulation in
  // any order is exact: pd_beta = 1 and, with res_for_gamma = 0.25,
  // pd_gamma = 0.25, exactly. The partial sums reach 16384.5, where bfloat16
  // accumulation (spacing 128 there) would stall; and a row lost or counted
  // twice moves the result by 0.5, which bfloat16 outputs show as well as
  // float32 ones (bfloat16's spacing at 1 is 2^-7).
  const std::int64_t rows = 65536, h = 16, positive = 32769;
  std::vector<double> dy_values(rows * h, -0.5);
  std::fill(dy_values.begin(), dy_values.begin() + positive * h, 0.5);
  Buffer dy(Dtype::bfloat16, dy_values);
  Buffer res(Dtype::bfloat16, std::vector<double>(rows * h, 0.25));
  for (Dtype out : {Dtype::bfloat16, Dtype::float32}) {
    for (int threads : {1, 2}) {
      Buffer g(out, h), b(out, h);
      GradBetaOptions opt;
      opt.num_threads = threads;
      layer_norm_grad_beta(res.cview({rows, h}), dy.cview({rows, h}), g.view({h}), b.view({h}), opt);
      for (std::int64_t j = 0; j < h; ++j) {
        EXPECT_EQ(b.get(j), 1.0) << dtype_name(out) << " threads " << threads << " column " << j;
        EXPECT_EQ(g.get(j), 0.25) << dtype_name(out) << " threads " << threads << " column " << j;
      }
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
