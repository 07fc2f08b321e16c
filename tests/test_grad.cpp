// layer_norm_grad, layer_norm_grad_x and layer_norm_grad_beta against the
// float64 reference, on every SIMD target this CPU runs, for every dtype.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <initializer_list>
#include <string>
#include <vector>

#include "kernels/plan.hpp"
#include "scoped_plan.hpp"
#include "test_support.hpp"

namespace lngrad::test {
namespace {

// The tests' small problems fit the caches, where the plan does not fuse;
// ScopedPlan forces it.
// The shortest rows the plan fuses (pass 1 of the next group inside pass 2)
// on the active target once they come from beyond the LLC; where it fuses
// none (16-bit rows with narrow vectors), rows of 8 KiB.
std::int64_t shortest_fused_h(Dtype d) {
  kernels::PlanInputs in = kernels::machine_inputs(d, 64, 1, 1, Stores::automatic);
  in.caches.llc = 0;  // every call beyond it
  for (in.h = 1; in.h <= 8192; ++in.h) {
    if (kernels::plan_grad(in).fused) return in.h;
  }
  return 8192 / static_cast<std::int64_t>(dtype_size(d));
}

// Runs each test once per compiled target the CPU supports.
class PerTarget : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override { set_max_target(GetParam()); }
  void TearDown() override { set_max_target(""); }
};

struct Case {
  ProblemSpec spec;
  Statistic statistic = Statistic::variance;
  Stores stores = Stores::automatic;
  int pd_x_line_offset = -1;  // bytes past a 64-byte line where pd_x starts; -1: as allocated
};

// pd_gamma and pd_beta (either may be null: not checked) against the
// reference, every column. Each term dy*(x-mean)*rstd is formed with a few
// roundings, then summed in blocks of rows combined pairwise (column_factor).
void expect_column_sums(const Problem& p, const reference::GradOutputs& ref, const Buffer* pd_gamma,
                        const Buffer* pd_beta) {
  const double u = arithmetic_u(p.dtype);
  for (std::int64_t j = 0; j < p.h; ++j) {
    double mag_gamma = 0, mag_beta = 0;
    for (std::int64_t r = 0; r < p.rows; ++r) {
      mag_gamma += std::fabs(ref.res_for_gamma[r * p.h + j] * p.ref.dy[r * p.h + j]);
      mag_beta += std::fabs(p.ref.dy[r * p.h + j]);
    }
    if (pd_gamma != nullptr) {
      const double bg = stored_bound(pd_gamma->dtype(), ref.pd_gamma[j], column_factor(p.rows) * u * mag_gamma);
      ASSERT_LE(std::fabs(pd_gamma->get(j) - ref.pd_gamma[j]), bg) << "pd_gamma[" << j << "]";
    }
    if (pd_beta != nullptr) {
      const double bb = stored_bound(pd_beta->dtype(), ref.pd_beta[j], column_factor(p.rows) * u * mag_beta);
      ASSERT_LE(std::fabs(pd_beta->get(j) - ref.pd_beta[j]), bb) << "pd_beta[" << j << "]";
    }
  }
}

// Checks layer_norm_grad against the reference; pd_x's bytes go to pd_x_out.
void check_grad(const Case& c, std::vector<unsigned char>* pd_x_out = nullptr) {
  Problem p = make_problem(c.spec);
  p.ref.epsilon = p.epsilon;
  SCOPED_TRACE("x " + p.x_shape.str() + " " + dtype_name(p.dtype) + " stats " + dtype_name(p.stat_dtype) +
               " params " + dtype_name(p.param_dtype) + (p.has_gamma ? "" : " no-gamma") +
               (c.statistic == Statistic::rstd ? " rstd" : ""));
  if (c.statistic == Statistic::rstd) {
    // Pass rstd of the stored variance, itself stored in the stat dtype.
    for (std::int64_t r = 0; r < p.rows; ++r) p.variance.set(r, 1.0 / std::sqrt(p.ref.variance[r] + p.epsilon));
    p.ref.variance = p.variance.values();
    p.ref.stat_is_rstd = true;
  }
  const auto ref = reference::layer_norm_grad(p.ref);
  const Dtype out_param = p.param_dtype;
  const std::int64_t n = p.rows * p.h;
  PlacedOutput pd_x(p.dtype, n, c.pd_x_line_offset);
  Buffer pd_gamma(out_param, p.h), pd_beta(out_param, p.h);
  GradOptions opt;
  opt.epsilon = p.epsilon;
  opt.statistic = c.statistic;
  opt.pd_x_stores = c.stores;
  std::optional<ConstTensorView> gamma;
  if (p.has_gamma) gamma = p.gamma.cview(p.param_shape);
  layer_norm_grad(p.dy.cview(p.x_shape), p.x.cview(p.x_shape), p.variance.cview(p.stat_shape),
                  p.mean.cview(p.stat_shape), gamma, pd_x.view(p.x_shape),
                  pd_gamma.view(p.param_shape), pd_beta.view(p.param_shape), opt);

  const auto bound = pd_x_bounds(p.ref, ref, p.dtype);
  int failures = 0;
  for (std::int64_t i = 0; i < n && failures < 5; ++i) {
    const double err = std::fabs(pd_x.get(i) - ref.pd_x[i]);
    if (!(err <= bound[i])) {
      ADD_FAILURE() << "pd_x[" << i << "] = " << pd_x.get(i) << ", reference " << ref.pd_x[i] << ", error " << err
                    << " > bound " << bound[i];
      ++failures;
    }
  }
  expect_column_sums(p, ref, &pd_gamma, &pd_beta);
  EXPECT_TRUE(pd_x.guards_intact());
  EXPECT_TRUE(pd_gamma.guards_intact());
  EXPECT_TRUE(pd_beta.guards_intact());
  ASSERT_EQ(pd_x.written_slack_byte(), -1) << "a byte of the slack around pd_x was written";
  if (pd_x_out != nullptr) *pd_x_out = pd_x.output_bytes();
}

const Dtype kDtypes[] = {Dtype::float64, Dtype::float32, Dtype::float16, Dtype::bfloat16};

ProblemSpec spec(Shape shape, int ndim, Dtype dtype) {
  ProblemSpec s;
  s.x_shape = shape;
  s.normalized_ndim = ndim;
  s.dtype = dtype;
  s.stat_dtype = dtype;
  s.param_dtype = dtype;
  return s;
}

TEST_P(PerTarget, OneTwoAndThreeNormalizedAxes) {
  for (Dtype d : kDtypes) {
    check_grad({spec({37, 64}, 1, d)});
    check_grad({spec({3, 5, 24}, 2, d)});
    check_grad({spec({2, 3, 4, 5}, 3, d)});
  }
}

TEST_P(PerTarget, OneRowAndHEqualsOne) {
  for (Dtype d : kDtypes) {
    check_grad({spec({1, 300}, 1, d)});
    check_grad({spec({50, 1}, 1, d)});
  }
}

TEST_P(PerTarget, HAroundTheVectorWidths) {
  // Lanes are 2..16 (float) and 1..8 (double) across targets: cover tails of
  // every length and exact multiples, with and without the 2x unrolled body.
  for (Dtype d : kDtypes) {
    for (std::int64_t h : {2, 3, 7, 8, 9, 15, 16, 17, 31, 32, 33, 47, 63, 64, 65, 127, 128, 129}) {
      check_grad({spec({5, h}, 1, d)});
    }
  }
}

TEST_P(PerTarget, VeryLongRows) {
  for (Dtype d : kDtypes) check_grad({spec({2, 100003}, 1, d)});
}

TEST_P(PerTarget, LongRowsOverlapTheNextGroupsFirstPass) {
  // Rows the plan fuses take pass 1 of the next group inside pass 2 of this
  // one. Cover several groups, a short last group (43 rows in groups of 8, 4,
  // or 2 for float32; calls of 32 and 11 rows), H off the vector width so
  // segments and tails do not line up, and H whose rows just reach the limit.
  const ScopedPlan fuse("fused=1");
  for (Dtype d : kDtypes) {
    const std::int64_t fused_h = shortest_fused_h(d);
    for (std::int64_t h : {fused_h, fused_h + 5, 2 * fused_h + 37}) {
      check_grad({spec({43, h}, 1, d)});
    }
  }
}

TEST_P(PerTarget, CallsRunOnAcrossBlocksOfColumnSums) {
  // Over 1024 rows a kernel call sums several blocks of 32 rows (34 blocks:
  // chunks of 2, the last block 4 rows), moving to the next block's sums
  // between groups, the fused loop included. Rows that take the fused loop,
  // and shorter rows in groups of 8 and 4.
  for (Dtype d : kDtypes) {
    const std::int64_t elem = static_cast<std::int64_t>(dtype_size(d));
    const std::int64_t fused_h = shortest_fused_h(d);
    for (std::int64_t h : {fused_h, std::int64_t{40}, 1536 / elem}) {
      const ScopedPlan fuse(h == fused_h ? "fused=1" : "");
      check_grad({spec({1060, h}, 1, d)});
    }
  }
}

TEST_P(PerTarget, StreamedStoresGiveTheCachedBits) {
  // Non-temporal pd_x stores on rows of whole vectors, with pd_x on a cache
  // line or 2, 16 or 48 bytes past one (each row then starts with a head of
  // cached stores; 2 bytes is inside a float32 or float64, which cannot
  // stream), and on rows that are not whole steps apart (each row at its own
  // line offset: on AVX-512 with each line shifted into place, or staged,
  // which the other targets take and "shift=0" asks of AVX-512): the same bits
  // as cached stores, within the reference bounds, and nothing written
  // outside pd_x (check_grad's guards). Rows of one element have no whole
  // step. The longest rows take the fused loop, also in groups of 3 (a row
  // count not compiled in); 13 rows end on a short group.
  for (Dtype d : kDtypes) {
    const std::int64_t elem = static_cast<std::int64_t>(dtype_size(d));
    for (std::int64_t h : std::initializer_list<std::int64_t>{1, 64, 96, 200, 1000, 8192 / elem, 8192 / elem + 8}) {
      const bool longest = h >= 8192 / elem;
      for (const char* plan : {"", "shift=0", "fused=1", "fused=1,group=3"}) {
        if (longest == (plan[0] != 'f')) continue;
        const ScopedPlan scoped(plan);
        for (int offset : {0, 2, 16, 48}) {
          Case streamed{spec({13, h}, 1, d)};
          streamed.stores = Stores::streaming;
          streamed.pd_x_line_offset = offset;
          Case cached = streamed;
          cached.stores = Stores::cached;
          SCOPED_TRACE(std::string("plan '") + plan + "', pd_x " + std::to_string(offset) + " bytes past a line");
          std::vector<unsigned char> streamed_bits, cached_bits;
          check_grad(streamed, &streamed_bits);
          check_grad(cached, &cached_bits);
          EXPECT_EQ(streamed_bits, cached_bits);
        }
      }
    }
  }
}

TEST_P(PerTarget, StreamedRowsOffALineJoinTheirEdges) {
  // Streamed rows whole lines apart, pd_x off a line: a row's last partial
  // line and the next row's first are joined and stream as one line, within
  // a group, from one group to the next, and not across the rows of two
  // threads (each call's first and last partial lines stay cached stores).
  // H = 1000 (float32, 16-bit: rows not whole lines apart) streams shifted
  // on AVX-512, its rows' shared lines (one or two at each boundary) joined
  // the same way, or elsewhere staged.
  // 100 rows: several groups and column-sum blocks; the same bits as cached
  // stores, nothing written outside pd_x (check_grad's guards).
  for (Dtype d : kDtypes) {
    const std::int64_t elem = static_cast<std::int64_t>(dtype_size(d));
    for (std::int64_t h : std::initializer_list<std::int64_t>{64 / elem, 256 / elem, 4096 / elem, 1000}) {
      for (const char* plan : {"", "threads=3", "group=3", "fused=1,group=2"}) {
        const ScopedPlan scoped(plan);
        for (int offset : {16, 48}) {
          Case streamed{spec({100, h}, 1, d)};
          streamed.stores = Stores::streaming;
          streamed.pd_x_line_offset = offset;
          Case cached = streamed;
          cached.stores = Stores::cached;
          SCOPED_TRACE(std::string("plan '") + plan + "', h " + std::to_string(h) + ", pd_x " +
                       std::to_string(offset) + " bytes past a line");
          std::vector<unsigned char> streamed_bits, cached_bits;
          check_grad(streamed, &streamed_bits);
          check_grad(cached, &cached_bits);
          EXPECT_EQ(streamed_bits, cached_bits);
        }
      }
    }
  }
}

TEST_P(PerTarget, InputsOffALineGiveTheSameBits) {
  // dy and x at any offset past a line, alike or not: the same bits as on a
  // line. On AVX-512, float32 and bfloat16 rows a whole number of 32-bit
  // lanes off a line read pass 1 by aligned lines (ShiftedLoads), the first
  // one masked before the row's start, and the other rows (2 bytes off)
  // straddle lines; rows of 1000 and 2053 elements start at varying offsets
  // of their own. Unfused and fused.
  for (Dtype d : kDtypes) {
    for (Shape shape : {Shape{9, 1000}, Shape{5, 2053}, Shape{3, 100}, Shape{40, 96}, Shape{2, 4099}}) {
      for (const char* plan : {"", "fused=1"}) {
        const ScopedPlan scoped(plan);
        Problem p = make_problem(spec(shape, 1, d));
        const std::int64_t n = p.rows * p.h;
        std::vector<unsigned char> want[3];
        const int offsets[][2] = {{0, 0}, {16, 16}, {32, 0}, {0, 48}, {4, 36}, {2, 2}, {60, 8}};
        for (const auto& off : offsets) {
          if (off[0] % dtype_size(d) != 0 || off[1] % dtype_size(d) != 0) continue;
          SCOPED_TRACE(std::string(dtype_name(d)) + " " + shape.str() + ", plan '" + plan + "', dy " +
                       std::to_string(off[0]) + " and x " + std::to_string(off[1]) + " bytes past a line");
          PlacedOutput dy(d, n, off[0]), x(d, n, off[1]);
          std::memcpy(dy.data(), p.dy.data(), static_cast<std::size_t>(n) * dtype_size(d));
          std::memcpy(x.data(), p.x.data(), static_cast<std::size_t>(n) * dtype_size(d));
          PlacedOutput pd_x(d, n, 0), pd_gamma(d, p.h, 0), pd_beta(d, p.h, 0);
          layer_norm_grad({dy.data(), d, p.x_shape}, {x.data(), d, p.x_shape}, p.variance.cview(p.stat_shape),
                          p.mean.cview(p.stat_shape), p.gamma.cview(p.param_shape), pd_x.view(p.x_shape),
                          pd_gamma.view(p.param_shape), pd_beta.view(p.param_shape));
          const std::vector<unsigned char> got[3] = {pd_x.output_bytes(), pd_gamma.output_bytes(),
                                                     pd_beta.output_bytes()};
          if (off[0] == 0 && off[1] == 0) {
            for (int k = 0; k < 3; ++k) want[k] = got[k];
            continue;
          }
          EXPECT_EQ(got[0], want[0]) << "pd_x";
          EXPECT_EQ(got[1], want[1]) << "pd_gamma";
          EXPECT_EQ(got[2], want[2]) << "pd_beta";
          EXPECT_TRUE(dy.guards_intact() && x.guards_intact());
        }
      }
    }
  }
}

TEST_P(PerTarget, ManyRowsExerciseThePairwiseColumnSums) {
  // 1000 rows: 32 blocks of 32 rows, one chunk each, the last block short.
  // 4320 rows: 135 blocks in chunks of 8, the last chunk of 7 blocks
  // (subtrees of 4, 2 and 1, folded twice before the chunks combine).
  for (Dtype d : kDtypes) {
    check_grad({spec({1000, 24}, 1, d)});
    check_grad({spec({4320, 24}, 1, d)});
  }
}

TEST_P(PerTarget, LargeRowMeanKeepsFullAccuracy) {
  // mean 1e4, std ~1: x - mean is exact in float32 (Sterbenz), so the
  // centred kernel meets the same bound as for mean 0, while an uncentred
  // one would lose ~1e4 times more.
  for (Dtype d : {Dtype::float64, Dtype::float32}) {
    ProblemSpec s = spec({64, 768}, 1, d);
    s.x_mean = 1e4;
    check_grad({s});
  }
}

TEST_P(PerTarget, InexactMeanUsesTheCorrectionTerm) {
  for (Dtype d : kDtypes) {
    ProblemSpec s = spec({16, 96}, 1, d);
    s.mean_shift = 0.3;  // stored mean 0.3 std away from the row mean
    check_grad({s});
  }
}

TEST_P(PerTarget, WiderStatisticsAndParameters) {
  for (Dtype d : {Dtype::float16, Dtype::bfloat16}) {
    ProblemSpec s = spec({9, 40}, 1, d);
    s.stat_dtype = Dtype::float32;
    s.param_dtype = Dtype::float32;
    check_grad({s});
    s.stat_dtype = Dtype::float64;
    check_grad({s});
  }
  ProblemSpec s = spec({9, 40}, 1, Dtype::float32);
  s.stat_dtype = Dtype::float64;
  check_grad({s});
}

TEST_P(PerTarget, AbsentGammaKeepdimStatsAndRstd) {
  for (Dtype d : kDtypes) {
    ProblemSpec s = spec({4, 6, 10}, 1, d);
    s.has_gamma = false;
    check_grad({s});
    s = spec({4, 6, 10}, 2, d);
    s.keepdim_stats = true;
    check_grad({s});
    check_grad({spec({7, 33}, 1, d), Statistic::rstd});
  }
}

TEST_P(PerTarget, GradXWritesPdXAndResForGamma) {
  for (Dtype d : kDtypes) {
    for (Dtype res_dtype : {d, Dtype::float32}) {
      if (d == Dtype::float64 && res_dtype != d) continue;
      Problem p = make_problem(spec({6, 45}, 1, d));
      p.ref.epsilon = p.epsilon;
      const auto ref = reference::layer_norm_grad(p.ref);
      Buffer pd_x(d, p.rows * p.h), res(res_dtype, p.rows * p.h);
      GradXOptions opt;
      opt.epsilon = p.epsilon;
      layer_norm_grad_x(p.dy.cview(p.x_shape), p.x.cview(p.x_shape), p.variance.cview(p.stat_shape),
                        p.mean.cview(p.stat_shape), p.gamma.cview(p.param_shape), pd_x.view(p.x_shape),
                        res.view(p.x_shape), opt);
      const auto bound = pd_x_bounds(p.ref, ref, d);
      for (std::int64_t i = 0; i < p.rows * p.h; ++i) {
        ASSERT_LE(std::fabs(pd_x.get(i) - ref.pd_x[i]), bound[i]) << i;
        // (x-mean)*rstd: the subtraction, rstd and the product round once each.
        const double e = 4 * arithmetic_u(d) * std::fabs(ref.res_for_gamma[i]);
        ASSERT_LE(std::fabs(res.get(i) - ref.res_for_gamma[i]), stored_bound(res_dtype, ref.res_for_gamma[i], e)) << i;
      }
      EXPECT_TRUE(pd_x.guards_intact());
      EXPECT_TRUE(res.guards_intact());
    }
  }
}

TEST_P(PerTarget, GradBetaSumsColumns) {
  // H = 100: whole pairs of vectors (bfloat16 reads them as even/odd) and a
  // rest on every target; H = 19: less than a pair on the widest.
  for (Dtype d : kDtypes) {
    for (Dtype res_dtype : {d, Dtype::float32}) {
      if (d == Dtype::float64 && res_dtype != d) continue;
      for (const std::int64_t h : {19, 100}) {
        const std::int64_t rows = 333;
        ProblemSpec s = spec({rows, h}, 1, d);
        Problem p = make_problem(s);
        Buffer res(res_dtype, p.x.values());  // any data serves as res_for_gamma
        Buffer pd_gamma(d, h), pd_beta(d, h);
        layer_norm_grad_beta(res.cview({3, 111, h}), p.dy.cview({3, 111, h}), pd_gamma.view({h}), pd_beta.view({h}));
        std::vector<double> ref_gamma, ref_beta;
        reference::layer_norm_grad_beta(rows, h, res.values(), p.ref.dy, ref_gamma, ref_beta);
        for (std::int64_t j = 0; j < h; ++j) {
          double mg = 0, mb = 0;
          for (std::int64_t r = 0; r < rows; ++r) {
            mg += std::fabs(res.get(r * h + j) * p.ref.dy[r * h + j]);
            mb += std::fabs(p.ref.dy[r * h + j]);
          }
          const double u = arithmetic_u(d);
          ASSERT_LE(std::fabs(pd_gamma.get(j) - ref_gamma[j]), stored_bound(d, ref_gamma[j], column_factor(rows) * u * mg));
          ASSERT_LE(std::fabs(pd_beta.get(j) - ref_beta[j]), stored_bound(d, ref_beta[j], column_factor(rows) * u * mb));
        }
      }
    }
  }
}

TEST_P(PerTarget, MaskSkipsOutputsAndComputesTheRest) {
  // Each of the 8 masks, every dtype: what is asked for matches the
  // reference in every element, what is not is left byte for byte.
  for (Dtype d : kDtypes) {
    Problem p = make_problem(spec({20, 50}, 1, d));
    p.ref.epsilon = p.epsilon;
    const auto ref = reference::layer_norm_grad(p.ref);
    const auto bound = pd_x_bounds(p.ref, ref, d);
    for (int mask = 0; mask < 8; ++mask) {
      SCOPED_TRACE(std::string(dtype_name(d)) + " mask " + std::to_string(mask));
      Buffer pd_x(d, p.rows * p.h), pd_gamma(d, p.h), pd_beta(d, p.h);
      const Buffer untouched_x = pd_x, untouched_g = pd_gamma, untouched_b = pd_beta;
      GradOptions opt;
      opt.epsilon = p.epsilon;
      opt.compute_pd_x = mask & 1;
      opt.compute_pd_gamma = mask & 2;
      opt.compute_pd_beta = mask & 4;
      // Skipped outputs are passed as empty views.
      layer_norm_grad(p.dy.cview(p.x_shape), p.x.cview(p.x_shape), p.variance.cview(p.stat_shape),
                      p.mean.cview(p.stat_shape), p.gamma.cview(p.param_shape),
                      opt.compute_pd_x ? pd_x.view(p.x_shape) : TensorView{},
                      opt.compute_pd_gamma ? pd_gamma.view(p.param_shape) : TensorView{},
                      opt.compute_pd_beta ? pd_beta.view(p.param_shape) : TensorView{}, opt);
      if (opt.compute_pd_x) {
        for (std::int64_t i = 0; i < p.rows * p.h; ++i) ASSERT_LE(std::fabs(pd_x.get(i) - ref.pd_x[i]), bound[i]) << i;
      } else {
        EXPECT_TRUE(pd_x.bytes_equal(untouched_x));
      }
      expect_column_sums(p, ref, opt.compute_pd_gamma ? &pd_gamma : nullptr, opt.compute_pd_beta ? &pd_beta : nullptr);
      if (!opt.compute_pd_gamma) EXPECT_TRUE(pd_gamma.bytes_equal(untouched_g));
      if (!opt.compute_pd_beta) EXPECT_TRUE(pd_beta.bytes_equal(untouched_b));
    }
  }
}

TEST_P(PerTarget, InPlaceMatchesOutOfPlace) {
  // pd_x exactly over dy or over x (and layer_norm_grad_x's res_for_gamma
  // over the other): the same bits as out of place, on short rows (8 x 70)
  // and on rows that take the fused loop, which reads the next group's rows
  // while it writes this group's pd_x; with cached and streamed stores, on 1
  // and 2 threads (80 rows of over 2 * 2^14 elements: 3 blocks of rows, so
  // both threads take rows).
  for (Dtype d : kDtypes) {
    for (Shape shape : {Shape{8, 70}, Shape{80, shortest_fused_h(d) + 5}}) {
      const ScopedPlan fuse(shape[1] > 70 ? "fused=1" : "");
      Problem p = make_problem(spec(shape, 1, d));
      Buffer pd_x(d, p.rows * p.h), pd_gamma(d, p.h), pd_beta(d, p.h), gx_pd_x(d, p.rows * p.h),
          gx_res(d, p.rows * p.h);
      layer_norm_grad(p.dy.cview(p.x_shape), p.x.cview(p.x_shape), p.variance.cview(p.stat_shape),
                      p.mean.cview(p.stat_shape), p.gamma.cview(p.param_shape), pd_x.view(p.x_shape),
                      pd_gamma.view(p.param_shape), pd_beta.view(p.param_shape));
      layer_norm_grad_x(p.dy.cview(p.x_shape), p.x.cview(p.x_shape), p.variance.cview(p.stat_shape),
                        p.mean.cview(p.stat_shape), p.gamma.cview(p.param_shape), gx_pd_x.view(p.x_shape),
                        gx_res.view(p.x_shape));
      for (int threads : {1, 2}) {
        for (Stores stores : {Stores::cached, Stores::streaming}) {
          for (bool over_dy : {true, false}) {
            SCOPED_TRACE(std::string(dtype_name(d)) + " " + shape.str() + " threads " + std::to_string(threads) +
                         (stores == Stores::streaming ? " streamed" : " cached") + (over_dy ? " over dy" : " over x"));
            Buffer dy = p.dy, x = p.x, g2(d, p.h), b2(d, p.h);
            Buffer& inplace = over_dy ? dy : x;
            GradOptions opt;
            opt.num_threads = threads;
            opt.pd_x_stores = stores;
            layer_norm_grad(dy.cview(p.x_shape), x.cview(p.x_shape), p.variance.cview(p.stat_shape),
                            p.mean.cview(p.stat_shape), p.gamma.cview(p.param_shape), inplace.view(p.x_shape),
                            g2.view(p.param_shape), b2.view(p.param_shape), opt);
            EXPECT_TRUE(inplace.bytes_equal(pd_x));
            EXPECT_TRUE(g2.bytes_equal(pd_gamma));
            EXPECT_TRUE(b2.bytes_equal(pd_beta));

            Buffer dy2 = p.dy, x2 = p.x;
            GradXOptions xopt;
            xopt.num_threads = threads;
            xopt.pd_x_stores = stores;
            layer_norm_grad_x(dy2.cview(p.x_shape), x2.cview(p.x_shape), p.variance.cview(p.stat_shape),
                              p.mean.cview(p.stat_shape), p.gamma.cview(p.param_shape),
                              (over_dy ? dy2 : x2).view(p.x_shape), (over_dy ? x2 : dy2).view(p.x_shape), xopt);
            EXPECT_TRUE((over_dy ? dy2 : x2).bytes_equal(gx_pd_x)) << "layer_norm_grad_x pd_x";
            EXPECT_TRUE((over_dy ? x2 : dy2).bytes_equal(gx_res)) << "layer_norm_grad_x res_for_gamma";
          }
        }
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Targets, PerTarget, ::testing::ValuesIn(available_targets()),
                         [](const ::testing::TestParamInfo<std::string>& info) { return info.param; });

TEST(Targets, NamedCappedAndRestored) {
  const auto targets = available_targets();
  ASSERT_FALSE(targets.empty());
  EXPECT_EQ(active_target(), targets.front());
  set_max_target(targets.back());
  EXPECT_EQ(active_target(), targets.back());
  set_max_target("");
  EXPECT_EQ(active_target(), targets.front());
  EXPECT_THROW(set_max_target("NOT_A_TARGET"), Error);
}

TEST(HEqualsOne, PdXIsExactlyZero) {
  // With one element per row x equals its own mean: every term cancels.
  for (Dtype d : kDtypes) {
    Problem p = make_problem(spec({40, 1}, 1, d));
    Buffer pd_x(d, p.rows), pd_gamma(d, 1), pd_beta(d, 1);
    layer_norm_grad(p.dy.cview(p.x_shape), p.x.cview(p.x_shape), p.variance.cview(p.stat_shape),
                    p.mean.cview(p.stat_shape), p.gamma.cview(p.param_shape), pd_x.view(p.x_shape),
                    pd_gamma.view(p.param_shape), pd_beta.view(p.param_shape));
    for (std::int64_t r = 0; r < p.rows; ++r) EXPECT_EQ(pd_x.get(r), 0.0) << dtype_name(d) << " row " << r;
  }
}

}  // namespace
}  // namespace lngrad::test
