// Bitwise reproducibility for any thread count, and column sums that stay
// accurate over many rows in 16-bit storage.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "scoped_plan.hpp"
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

// A row's pd_x (and layer_norm's y, mean and variance) do not depend on the
// batch the row is computed in: row r alone, in a batch of 7, or among up to
// 16384 rows (other groups, fused or not, streamed stores, two threads) gives the
// same bits, on every target. pd_x goes through pd_x_stores = automatic, so
// the large batch streams where the plan says so.
TEST(Determinism, RowResultsIndependentOfTheBatch) {
  const std::string initial = active_target();
  for (const std::string& target : available_targets()) {
    set_max_target(target);
    for (Dtype d : {Dtype::float32, Dtype::bfloat16, Dtype::float16}) {
      for (std::int64_t h : {std::int64_t{40}, std::int64_t{256}, std::int64_t{2053}}) {
        const std::int64_t rows = h > 1000 ? 96 : h > 100 ? 2048 : 16384;
        SCOPED_TRACE(target + " " + dtype_name(d) + " h=" + std::to_string(h));
        ProblemSpec spec;
        spec.x_shape = Shape{rows, h};
        spec.dtype = d;
        spec.mean_shift = 0.01;  // stored means off the exact row mean: the correction term is live
        const Problem p = make_problem(spec);
        const std::size_t row_bytes = static_cast<std::size_t>(h) * dtype_size(d);
        // pd_x of rows [first, first + count), copied out of the inputs.
        auto pd_x_of = [&](std::int64_t first, std::int64_t count) {
          const Shape xs{count, h}, ss{count};
          Buffer dy(d, count * h), x(d, count * h), mean(p.stat_dtype, count), var(p.stat_dtype, count);
          std::memcpy(dy.data(), static_cast<const char*>(p.dy.data()) + first * row_bytes, count * row_bytes);
          std::memcpy(x.data(), static_cast<const char*>(p.x.data()) + first * row_bytes, count * row_bytes);
          for (std::int64_t r = 0; r < count; ++r) {
            mean.set(r, p.mean.get(first + r));
            var.set(r, p.variance.get(first + r));
          }
          Buffer pd_x(d, count * h);
          GradXOptions o;
          o.epsilon = p.epsilon;
          o.num_threads = 2;
          Buffer res(d, count * h);
          layer_norm_grad_x(dy.cview(xs), x.cview(xs), var.cview(ss), mean.cview(ss), p.gamma.cview(p.param_shape),
                            pd_x.view(xs), res.view(xs), o);
          return pd_x;
        };
        const Buffer all = pd_x_of(0, rows);
        for (auto [first, count] : {std::pair<std::int64_t, std::int64_t>{0, 1}, {rows - 1, 1}, {5, 7}, {rows - 7, 7}}) {
          const Buffer part = pd_x_of(first, count);
          EXPECT_EQ(std::memcmp(part.data(), static_cast<const char*>(all.data()) + first * row_bytes,
                                static_cast<std::size_t>(count) * row_bytes),
                    0)
              << "rows " << first << ".." << first + count - 1;
        }
      }
    }
  }
  set_max_target("");
  EXPECT_EQ(active_target(), initial);
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

// float32 gamma, beta, pd_gamma and pd_beta that start on a 64-byte line are
// used in place; others are copied to (or summed in) scratch on a line, but
// for calls of one group of rows, which sum in place wherever pd_gamma and
// pd_beta start (and of one or two rows, which read gamma in place). Every
// way gives the same bits: only where the values sit differs.
TEST(Determinism, ParametersOnOrOffALineGiveTheSameBits) {
  for (Dtype d : {Dtype::float32, Dtype::bfloat16}) {
    // One group of rows (1, 3 and 4: summed in place; 1: gamma read in
    // place), one block of column sums (64 rows) and several (3000), a tail
    // (1000).
    for (Shape shape : {Shape{1, 1000}, Shape{3, 1000}, Shape{4, 768}, Shape{64, 1000}, Shape{3000, 1000},
                        Shape{64, 4096}}) {
      SCOPED_TRACE(std::string(dtype_name(d)) + " " + shape.str());
      ProblemSpec s;
      s.x_shape = shape;
      s.dtype = d;
      Problem p = make_problem(s);
      const std::int64_t h = p.h;
      // Four float32 arrays of h, each on a line plus `offset` elements.
      auto on_line_plus = [h](std::vector<float>& storage, int offset) {
        storage.assign(static_cast<std::size_t>(h + 32), 0.0f);
        const auto past = reinterpret_cast<std::uintptr_t>(storage.data()) % 64;
        return storage.data() + (64 - past) % 64 / sizeof(float) + offset;
      };
      Buffer outputs[2][6];  // [offset 0 or 1][pd_x, pd_gamma, pd_beta, y, _beta's pd_gamma, pd_beta]
      for (int offset : {0, 1}) {
        std::vector<float> gamma_s, beta_s, pd_gamma_s, pd_beta_s;
        float* gamma = on_line_plus(gamma_s, offset);
        float* beta = on_line_plus(beta_s, offset);
        float* pd_gamma = on_line_plus(pd_gamma_s, offset);
        float* pd_beta = on_line_plus(pd_beta_s, offset);
        for (std::int64_t j = 0; j < h; ++j) {
          gamma[j] = static_cast<float>(p.gamma.get(j));
          beta[j] = static_cast<float>(0.25 * p.gamma.get(h - 1 - j));
        }
        const Shape hs{h};
        Buffer pd_x(d, p.rows * h), y(d, p.rows * h), mean(p.stat_dtype, p.rows), var(p.stat_dtype, p.rows);
        layer_norm_grad(p.dy.cview(p.x_shape), p.x.cview(p.x_shape), p.variance.cview(p.stat_shape),
                        p.mean.cview(p.stat_shape), ConstTensorView{gamma, Dtype::float32, hs},
                        pd_x.view(p.x_shape), TensorView{pd_gamma, Dtype::float32, hs},
                        TensorView{pd_beta, Dtype::float32, hs});
        layer_norm(p.x.cview(p.x_shape), ConstTensorView{gamma, Dtype::float32, hs},
                   ConstTensorView{beta, Dtype::float32, hs}, y.view(p.x_shape), mean.view(p.stat_shape),
                   var.view(p.stat_shape), TensorView{});
        outputs[offset][0] = pd_x;
        outputs[offset][1] = Buffer(Dtype::float32, std::vector<double>(pd_gamma, pd_gamma + h));
        outputs[offset][2] = Buffer(Dtype::float32, std::vector<double>(pd_beta, pd_beta + h));
        outputs[offset][3] = y;
        // LayerNormGradBeta over the same rows (x standing in for res_for_gamma).
        layer_norm_grad_beta(p.x.cview(p.x_shape), p.dy.cview(p.x_shape), TensorView{pd_gamma, Dtype::float32, hs},
                             TensorView{pd_beta, Dtype::float32, hs});
        outputs[offset][4] = Buffer(Dtype::float32, std::vector<double>(pd_gamma, pd_gamma + h));
        outputs[offset][5] = Buffer(Dtype::float32, std::vector<double>(pd_beta, pd_beta + h));
      }
      for (int k = 0; k < 6; ++k) EXPECT_TRUE(outputs[0][k].bytes_equal(outputs[1][k])) << "output " << k;
      // And the values are real: pd_gamma is not left zero.
      EXPECT_NE(outputs[1][1].get(0), 0.0);
      EXPECT_NE(outputs[1][4].get(0), 0.0);
    }
  }
}

// Rows that start off a 64-byte line, as NumPy's and std::vector's buffers
// do (16-48 bytes past one), start pass 2 on lines after a head of partial
// columns (the plan's align_rows, or streaming); rows on a line need none.
// Either way the same bits: only where each column is computed differs.
TEST(Determinism, RowsOnOrOffALineGiveTheSameBits) {
  for (Dtype d : {Dtype::float32, Dtype::bfloat16, Dtype::float64}) {
    // Cached with align_rows (768 float32, 4096 bfloat16), cached without
    // (bfloat16 1024), several blocks of column sums (100 rows).
    for (Shape shape : {Shape{100, 768}, Shape{100, 1024}, Shape{16, 4096}}) {
      for (const char* plan : {"", "align=0", "stream=1"}) {
        SCOPED_TRACE(std::string(dtype_name(d)) + " " + shape.str() + " plan '" + plan + "'");
        const ScopedPlan scoped(plan);
        ProblemSpec s;
        s.x_shape = shape;
        s.dtype = d;
        if (d == Dtype::float64) s.stat_dtype = s.param_dtype = Dtype::float64;  // never narrower than x
        Problem p = make_problem(s);
        const std::size_t bytes = static_cast<std::size_t>(p.rows * p.h) * dtype_size(d);
        Buffer outputs[4][3];  // [offset 0, 16, 32, 48][pd_x, pd_gamma, pd_beta]
        for (int o = 0; o < 4; ++o) {
          // dy, x and pd_x each 16*o bytes past a line.
          std::vector<unsigned char> storage[3];
          unsigned char* at[3];
          for (int k = 0; k < 3; ++k) {
            storage[k].assign(bytes + 128, 0);
            const auto past = reinterpret_cast<std::uintptr_t>(storage[k].data()) % 64;
            at[k] = storage[k].data() + (64 - past) % 64 + 16 * o;
          }
          std::memcpy(at[0], p.dy.data(), bytes);
          std::memcpy(at[1], p.x.data(), bytes);
          Buffer pd_gamma(p.param_dtype, p.h), pd_beta(p.param_dtype, p.h);
          layer_norm_grad(ConstTensorView{at[0], d, p.x_shape}, ConstTensorView{at[1], d, p.x_shape},
                          p.variance.cview(p.stat_shape), p.mean.cview(p.stat_shape), p.gamma.cview(p.param_shape),
                          TensorView{at[2], d, p.x_shape}, pd_gamma.view(p.param_shape), pd_beta.view(p.param_shape));
          outputs[o][0] = Buffer(d, p.rows * p.h);
          std::memcpy(outputs[o][0].data(), at[2], bytes);
          outputs[o][1] = pd_gamma;
          outputs[o][2] = pd_beta;
        }
        for (int o = 1; o < 4; ++o) {
          for (int k = 0; k < 3; ++k) EXPECT_TRUE(outputs[0][k].bytes_equal(outputs[o][k])) << "offset " << 16 * o << " output " << k;
        }
        EXPECT_NE(outputs[0][1].get(0), 0.0);  // the sums are real
      }
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
  // Unfused rows that are not whole lines apart (1001 float32) add a staged
  // group per thread, at most 8 rows, over rows of whole lines (1008; the
  // partial sums of both are padded to 1008 columns, so the 7 columns the
  // lower bound allows for are slack).
  const std::int64_t staged = grad_workspace_bytes(16384, 1001, Dtype::float32, 2);
  const std::int64_t whole = grad_workspace_bytes(16384, 1008, Dtype::float32, 2);
  // At least a group of one row per thread (narrow vectors cut float32
  // groups to alias-free rows), less 7 columns of the rest, which grows
  // linearly with h. A one-lane target (scalar) has whole steps everywhere
  // and stages nothing.
  const bool stages = describe_plan(Op::layer_norm_grad, 16384, 1001, Dtype::float32, 2, Stores::streaming)
                          .find("staged=1") != std::string::npos;
  if (stages) {
    EXPECT_GT(staged - whole, 2 * 1001 * 4 - 7 * whole / 1008);
    EXPECT_LE(staged - whole, 2 * (8 * 1001 * 4 + 128));
  } else {
    EXPECT_LE(staged, whole);
  }
}

}  // namespace
}  // namespace lngrad::test
