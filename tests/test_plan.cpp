// The plan: its decisions for given machines (not this one), its override,
// its report, and that no plan changes a result's bits.
#include <gtest/gtest.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "kernels/plan.hpp"
#include "test_support.hpp"

namespace lngrad::test {
namespace {

using kernels::CacheSizes;
using kernels::GradPlan;
using kernels::PlanInputs;
using kernels::TargetTraits;

constexpr TargetTraits kAvx512{64, true, true, true};
constexpr TargetTraits kAvx2{32, true, false, false};
constexpr TargetTraits kSse4{16, true, false, false};
// The Xeon VMs measured (models 167 and 207): 2 MiB L2 per core, an L3 counted as 32 MiB.
// Zen 5 has a 1 MiB L2: the rows that differ there say so (with_core_cache).
constexpr CacheSizes kXeonVm{std::int64_t{1} << 21, std::int64_t{32} << 20};

PlanInputs inputs(Dtype d, std::int64_t rows, std::int64_t h, int threads, TargetTraits target,
                  Stores stores = Stores::automatic) {
  PlanInputs in;
  in.dtype = in.res_dtype = d;
  in.rows = rows;
  in.h = h;
  in.threads = threads;
  in.stores = stores;
  in.target = target;
  in.caches = kXeonVm;
  return in;
}

PlanInputs with_core_cache(PlanInputs in, std::int64_t bytes) {
  in.caches.core = bytes;
  return in;
}

// Keeps tests from leaking an override into each other.
class Plan : public ::testing::Test {
 protected:
  void TearDown() override { kernels::set_plan_override(""); }
};

struct GradRow {
  const char* name;
  PlanInputs in;
  int threads;
  std::int64_t group;
  bool fused, stream;
  std::int64_t prefetch_l1, prefetch_l2, ahead;
};

// Each expectation follows from the rules in plan.cpp (docs/TUNING.md has
// their evidence); the comments give the deciding facts.
TEST_F(Plan, GradDecisionsForGivenMachines) {
  const std::vector<GradRow> table = {
      // 805 MB of rows beyond the 32 MiB LLC; float32 rows of 16 KiB: fused,
      // in pairs, prefetched 4 KiB into the L1 and 8 KiB into the L2, streamed.
      {"f32 16384x4096 AVX-512", inputs(Dtype::float32, 16384, 4096, 2, kAvx512), 2, 2, true, true, 4096, 8192, 0},
      // bfloat16 rows of 8 KiB: fused in 4s, the compiled 16-bit prefetch, no L2 prefetch.
      {"bf16 16384x4096 AVX-512", inputs(Dtype::bfloat16, 16384, 4096, 2, kAvx512), 2, 4, true, true, 4096, 0, 0},
      // 19 MB: inside the LLC, beyond two L2s. Unfused row pairs of 3 KiB go
      // in 4s, no later-group prefetch for 16-bit rows inside the LLC, cached
      // stores.
      {"bf16 4096x768 AVX-512", inputs(Dtype::bfloat16, 4096, 768, 2, kAvx512), 2, 4, false, false, 0, 0, 0},
      // Row pairs of 512 bytes go in 8s (the partials dominate), bfloat16 too.
      {"bf16 65536x128 AVX-512", inputs(Dtype::bfloat16, 65536, 128, 2, kAvx512), 2, 8, false, true, 0, 0, 0},
      // Short float32 rows beyond the LLC: pairs, the group two ahead prefetched.
      {"f32 65536x128 AVX-512", inputs(Dtype::float32, 65536, 128, 2, kAvx512), 2, 2, false, true, 0, 0, 2},
      // Rows from the caches do not fuse; row pairs of 16-32 KiB go in 4s.
      {"bf16 16x4096 AVX-512 hot", inputs(Dtype::bfloat16, 16, 4096, 1, kAvx512), 1, 4, false, false, 0, 0, 0},
      {"f32 16x4096 AVX-512 hot, 1 MiB L2", with_core_cache(inputs(Dtype::float32, 16, 4096, 1, kAvx512), 1 << 20), 1, 4,
       false, false, 0, 0, 0},
      // ... but float32 rows of 16-32 KiB go in 8s in a 2 MiB L2; 64 KiB rows
      // keep 256 KiB groups (pairs), and bfloat16 rows keep 4s.
      {"f32 16x4096 AVX-512 hot, 2 MiB L2", inputs(Dtype::float32, 16, 4096, 1, kAvx512), 1, 8, false, false, 0, 0, 0},
      {"f32 8x8192 AVX-512 hot, 2 MiB L2", inputs(Dtype::float32, 8, 8192, 1, kAvx512), 1, 8, false, false, 0, 0, 0},
      {"f32 4x16384 AVX-512 hot, 2 MiB L2", inputs(Dtype::float32, 4, 16384, 1, kAvx512), 1, 2, false, false, 0, 0, 0},
      // 50 MB, beyond the LLC: fused. 8 MB, inside it: not, the later group
      // prefetched for float32 rows from beyond the L2s.
      {"bf16 2048x4096 AVX-512", inputs(Dtype::bfloat16, 2048, 4096, 2, kAvx512), 2, 4, true, true, 4096, 0, 0},
      {"f32 256x4096 AVX-512", inputs(Dtype::float32, 256, 4096, 1, kAvx512), 1, 4, false, false, 0, 0, 1},
      // Hot in one L2: row pairs of 6 KiB go in 4s, nothing prefetched or
      // streamed; float32 rows of 4-8 KiB go in pairs there too.
      {"f32 64x768 AVX-512 hot", inputs(Dtype::float32, 64, 768, 1, kAvx512), 1, 4, false, false, 0, 0, 0},
      {"f32 32x2048 AVX-512 hot", inputs(Dtype::float32, 32, 2048, 1, kAvx512), 1, 2, false, false, 0, 0, 0},
      {"bf16 64x768 AVX-512 hot", inputs(Dtype::bfloat16, 64, 768, 1, kAvx512), 1, 4, false, false, 0, 0, 0},
      // float32 rows of 3 KiB from the LLC (19 MB, beyond the L2s): pairs too.
      {"f32 2048x768 AVX-512", inputs(Dtype::float32, 2048, 768, 2, kAvx512), 2, 2, false, false, 0, 0, 2},
      // float32 rows not whole lines apart (4000 bytes): pairs, hot too; but
      // not 400-byte ones (pairs of 800 bytes go in 8s).
      {"f32 64x1000 AVX-512 hot", inputs(Dtype::float32, 64, 1000, 1, kAvx512), 1, 2, false, false, 0, 0, 0},
      {"f32 1024x100 AVX-512 hot", inputs(Dtype::float32, 1024, 100, 1, kAvx512), 1, 8, false, false, 0, 0, 0},
      // 12.6 MB, inside the LLC but beyond the L2s: row pairs of 4 KiB go in 8s.
      {"bf16 2048x1024 AVX-512", inputs(Dtype::bfloat16, 2048, 1024, 2, kAvx512), 2, 8, false, false, 0, 0, 0},
      // AVX2: 16-bit rows do not fuse and long ones go in pairs; the pair is
      // 2 KiB apart (no L1 alias), 32-byte steps stream.
      {"bf16 8192x1024 AVX2", inputs(Dtype::bfloat16, 8192, 1024, 2, kAvx2), 2, 2, false, true, 0, 0, 2},
      // AVX2 float32 rows 3 KiB apart: the fifth row aliases the first modulo
      // 4 KiB, so groups of 4; 12 KiB groups prefetch one ahead.
      {"f32 4096x768 AVX2", inputs(Dtype::float32, 4096, 768, 2, kAvx2), 2, 4, false, true, 0, 0, 1},
      // AVX2 rows go in 4s at most, where wide vectors take 8: float32 row
      // pairs of 4-8 KiB (4000-byte rows alias no other of the group) and
      // bfloat16 pairs of 1 KiB or more (cached inside the LLC).
      {"f32 4096x1000 AVX2", inputs(Dtype::float32, 4096, 1000, 2, kAvx2), 2, 4, false, true, 0, 0, 1},
      {"bf16 4096x1000 AVX2", inputs(Dtype::bfloat16, 4096, 1000, 2, kAvx2), 2, 4, false, false, 0, 0, 0},
      // AVX2 float32 rows beyond the LLC do not fuse; rows 16 KiB apart alias
      // one another modulo 4 KiB, so one at a time, the next one prefetched.
      {"f32 16384x4096 AVX2", inputs(Dtype::float32, 16384, 4096, 2, kAvx2), 2, 1, false, true, 0, 0, 1},
      // 100 MB of 512-byte rows: streamed, 2 KiB groups prefetched two ahead.
      {"bf16 65536x256 AVX2", inputs(Dtype::bfloat16, 65536, 256, 2, kAvx2), 2, 4, false, true, 0, 0, 2},
      // 10000 elements: not worth a second thread.
      {"f32 1000x10 threads", inputs(Dtype::float32, 1000, 10, 8, kAvx512), 1, 8, false, false, 0, 0, 0},
  };
  for (const GradRow& row : table) {
    SCOPED_TRACE(row.name);
    const GradPlan p = kernels::plan_grad(row.in);
    EXPECT_EQ(p.threads, row.threads);
    EXPECT_EQ(p.group_rows, row.group);
    EXPECT_EQ(p.fused, row.fused);
    EXPECT_EQ(p.stream_pd_x, row.stream);
    EXPECT_EQ(p.prefetch_l1_bytes, row.prefetch_l1);
    EXPECT_EQ(p.prefetch_l2_bytes, row.prefetch_l2);
    EXPECT_EQ(p.groups_ahead, row.ahead);
    EXPECT_LE(p.group_rows, kernels::kMaxGroupRows);
  }
}

TEST_F(Plan, RefusedStreamingIsReported) {
  // Rows that are not whole steps apart (4004 bytes on AVX2) stream through
  // the staging buffer, automatically beyond the LLC (700x10000 bfloat16).
  GradPlan p = kernels::plan_grad(inputs(Dtype::float32, 13, 1001, 1, kAvx2, Stores::streaming));
  EXPECT_TRUE(p.stream_pd_x && p.stage_pd_x) << kernels::describe(p);
  EXPECT_NE(kernels::describe(p).find("staged=1"), std::string::npos) << kernels::describe(p);
  // AVX-512 shifts each line into place instead, fused rows or not.
  p = kernels::plan_grad(inputs(Dtype::float32, 13, 1000, 1, kAvx512, Stores::streaming));
  EXPECT_TRUE(p.stream_pd_x && !p.fused && p.shift_pd_x && !p.stage_pd_x) << kernels::describe(p);
  p = kernels::plan_grad(inputs(Dtype::bfloat16, 700, 10000, 2, kAvx512));
  EXPECT_TRUE(p.stream_pd_x && p.fused && p.shift_pd_x && !p.stage_pd_x) << kernels::describe(p);
  EXPECT_NE(kernels::describe(p).find("shift=1"), std::string::npos) << kernels::describe(p);
  // AVX2 stages them (H = 10000 would be whole 32-byte steps there).
  p = kernels::plan_grad(inputs(Dtype::bfloat16, 700, 10001, 2, kAvx2));
  EXPECT_TRUE(p.stream_pd_x && p.stage_pd_x && !p.shift_pd_x) << kernels::describe(p);
  // Rows of whole steps stream in place.
  p = kernels::plan_grad(inputs(Dtype::bfloat16, 700, 9984, 2, kAvx512));
  EXPECT_TRUE(p.stream_pd_x && !p.stage_pd_x) << kernels::describe(p);
  // An output that starts inside an element cannot stream.
  PlanInputs odd = inputs(Dtype::float32, 13, 1024, 1, kAvx512, Stores::streaming);
  odd.output_line_offset = 2;
  p = kernels::plan_grad(odd);
  EXPECT_FALSE(p.stream_pd_x);
  EXPECT_NE(kernels::describe(p).find("inside an element"), std::string::npos) << kernels::describe(p);
  // float16 on 16-byte vectors: 8-byte steps, narrower than a vector.
  p = kernels::plan_grad(inputs(Dtype::float16, 65536, 128, 2, kSse4, Stores::streaming));
  EXPECT_FALSE(p.stream_pd_x);
  EXPECT_NE(kernels::describe(p).find("8-byte steps"), std::string::npos) << kernels::describe(p);
  // Asked and possible: streamed, though the rows fit the LLC.
  p = kernels::plan_grad(inputs(Dtype::float32, 13, 1024, 1, kAvx512, Stores::streaming));
  EXPECT_TRUE(p.stream_pd_x);
  // A pd_x off a cache line streams automatically only for rows of 1.5 KiB or
  // more (bfloat16 H = 768; float32 H = 384), a forward's y of 4 KiB.
  PlanInputs off = inputs(Dtype::bfloat16, 65536, 128, 2, kAvx512);
  off.output_line_offset = 16;
  EXPECT_FALSE(kernels::plan_grad(off).stream_pd_x);
  off.h = 512;
  EXPECT_FALSE(kernels::plan_grad(off).stream_pd_x);
  off.h = 768;
  EXPECT_TRUE(kernels::plan_grad(off).stream_pd_x);
  EXPECT_FALSE(kernels::plan_forward(off).stream_y);
  off.h = 2048;
  EXPECT_TRUE(kernels::plan_forward(off).stream_y);
  PlanInputs off32 = inputs(Dtype::float32, 16384, 384, 2, kAvx512);
  off32.output_line_offset = 32;
  EXPECT_TRUE(kernels::plan_grad(off32).stream_pd_x);
  off32.h = 256;
  EXPECT_FALSE(kernels::plan_grad(off32).stream_pd_x);
  // float32 rows off a line from 1.5 KiB to under the aligned head's 3 KiB
  // go in pairs wherever they come from: hot H = 512 here, not H = 256 or
  // 4096 (16 KiB, past the 3-8 KiB that go in pairs anyway), nor H = 512 on
  // a line.
  PlanInputs hot_off = inputs(Dtype::float32, 128, 512, 1, kAvx512);
  EXPECT_EQ(kernels::plan_grad(hot_off).group_rows, 4);
  hot_off.output_line_offset = 16;
  EXPECT_EQ(kernels::plan_grad(hot_off).group_rows, 2);
  hot_off.h = 256;
  EXPECT_EQ(kernels::plan_grad(hot_off).group_rows, 4);
  hot_off.h = 4096;
  EXPECT_EQ(kernels::plan_grad(hot_off).group_rows, 4);
  // Cached rows of 3 KiB or more whole lines apart start pass 2 on lines
  // where they start off one: float32 H = 768, bfloat16 4096; not bfloat16
  // 1024 (2 KiB), rows not whole lines apart, or streamed rows (their head
  // comes with streaming).
  EXPECT_TRUE(kernels::plan_grad(inputs(Dtype::float32, 64, 768, 1, kAvx512)).align_rows);
  EXPECT_TRUE(kernels::plan_grad(inputs(Dtype::bfloat16, 16, 4096, 1, kAvx512)).align_rows);
  EXPECT_FALSE(kernels::plan_grad(inputs(Dtype::bfloat16, 64, 1024, 1, kAvx512)).align_rows);
  EXPECT_FALSE(kernels::plan_grad(inputs(Dtype::float32, 64, 1000, 1, kAvx512)).align_rows);
  EXPECT_FALSE(kernels::plan_grad(inputs(Dtype::float32, 16384, 4096, 2, kAvx512)).align_rows);
  // No output, no streaming.
  off.has_output = false;
  EXPECT_FALSE(kernels::plan_grad(off).stream_pd_x);
}

TEST_F(Plan, BetaAndForwardDecisions) {
  // bfloat16 dy with float32 res_for_gamma, H = 768: 4.5 KiB a row, groups of 8.
  PlanInputs beta = inputs(Dtype::bfloat16, 4096, 768, 2, kAvx512);
  beta.res_dtype = Dtype::float32;
  EXPECT_EQ(kernels::plan_beta(beta).group_rows, 8);
  // Rows of 32 KiB: 4.
  EXPECT_EQ(kernels::plan_beta(inputs(Dtype::float32, 64, 4096, 1, kAvx512)).group_rows, 4);
  // The forward streams y beyond the LLC (x and y: 537 MB), not inside it.
  EXPECT_TRUE(kernels::plan_forward(inputs(Dtype::float32, 16384, 4096, 2, kAvx512)).stream_y);
  EXPECT_FALSE(kernels::plan_forward(inputs(Dtype::float32, 1024, 1024, 2, kAvx512)).stream_y);
  // float16 y in single-vector steps of 32 bytes: rows of 8 KiB are whole steps.
  EXPECT_TRUE(kernels::plan_forward(inputs(Dtype::float16, 16384, 4096, 2, kAvx512)).stream_y);
  // y of rows that are not whole steps apart stays cached (staging it measured
  // level), and the plan says why.
  const kernels::ForwardPlan f =
      kernels::plan_forward(inputs(Dtype::bfloat16, 16384, 1000, 2, kAvx512, Stores::streaming));
  EXPECT_FALSE(f.stream_y);
  EXPECT_NE(kernels::describe(f).find("not whole 64-byte steps"), std::string::npos) << kernels::describe(f);
}

// Parameters off a line are used in place by calls of one group of rows
// (each sum stored once), gamma only for one or two rows (read rows + 1 times).
TEST_F(Plan, ParametersOffALineInPlaceForOneGroupOfRows) {
  struct Case {
    std::int64_t rows, h;
    const char* plan;  // override, or ""
    bool sums, gamma;
  };
  const std::vector<Case> cases = {
      {1, 4096, "", true, true},           // one row: always one group
      {2, 1536, "group=2", true, true},    // two rows, one group
      {4, 768, "group=4", true, false},    // one group of four: gamma copied
      {4, 768, "group=2", false, false},   // two groups: sums loaded back
      {64, 768, "", false, false},         // many groups
  };
  for (const Case& c : cases) {
    kernels::set_plan_override(c.plan);
    const PlanInputs in = inputs(Dtype::float32, c.rows, c.h, 1, kAvx2);
    const GradPlan g = kernels::plan_grad(in);
    EXPECT_EQ(g.sums_in_place, c.sums) << c.rows << "x" << c.h << " '" << c.plan << "'";
    EXPECT_EQ(g.gamma_in_place, c.gamma) << c.rows << "x" << c.h << " '" << c.plan << "'";
  }
  // LayerNormGradBeta: one row is one group, 64 rows are several.
  kernels::set_plan_override("");
  EXPECT_TRUE(kernels::plan_beta(inputs(Dtype::float32, 1, 768, 1, kAvx2)).sums_in_place);
  EXPECT_FALSE(kernels::plan_beta(inputs(Dtype::float32, 64, 768, 1, kAvx2)).sums_in_place);
  kernels::set_plan_override("group=8");
  EXPECT_TRUE(kernels::plan_beta(inputs(Dtype::float32, 8, 768, 1, kAvx2)).sums_in_place);
  kernels::set_plan_override("group=4");
  EXPECT_FALSE(kernels::plan_beta(inputs(Dtype::float32, 8, 768, 1, kAvx2)).sums_in_place);
}

TEST_F(Plan, OverrideReplacesTheRulesChoices) {
  const PlanInputs in = inputs(Dtype::float32, 16384, 4096, 2, kAvx512);
  kernels::set_plan_override("group=3,fused=0,stream=0,threads=1,ahead=1");
  const GradPlan p = kernels::plan_grad(in);
  EXPECT_EQ(p.group_rows, 3);
  EXPECT_FALSE(p.fused);
  EXPECT_FALSE(p.stream_pd_x);
  EXPECT_EQ(p.threads, 1);
  EXPECT_EQ(p.groups_ahead, 1);  // on; a group of 48 KiB prefetches the next one
  kernels::set_plan_override("");
  EXPECT_EQ(kernels::plan_grad(in).group_rows, 2);
}

TEST_F(Plan, BadOverridesAreRefusedAndChangeNothing) {
  kernels::set_plan_override("group=2");
  for (const char* bad : {"group=9", "group=0", "fused=2", "speed=11", "group=", "group=2x", "threads=-1"}) {
    SCOPED_TRACE(bad);
    try {
      kernels::set_plan_override(bad);
      ADD_FAILURE() << "accepted";
    } catch (const Error& e) {
      const std::string what = e.what();
      EXPECT_NE(what.find("plan"), std::string::npos) << what;
      EXPECT_NE(what.find("expected"), std::string::npos) << what;
      EXPECT_NE(what.find("given"), std::string::npos) << what;
    }
  }
  EXPECT_EQ(kernels::plan_grad(inputs(Dtype::float32, 64, 768, 1, kAvx512)).group_rows, 2);  // rules: 4
}

TEST_F(Plan, DescribePlanReportsThisMachinesChoices) {
  // The public report is the plan of this machine's target and caches.
  const PlanInputs in = kernels::machine_inputs(Dtype::bfloat16, 16384, 4096, 2, Stores::automatic);
  const std::string grad = describe_plan(Op::layer_norm_grad, 16384, 4096, Dtype::bfloat16, 2);
  EXPECT_EQ(grad, kernels::describe(kernels::plan_grad(in)));
  for (const char* key : {"threads=2 ", "group=", "fused=", "stream=", "prefetch_l1=", "prefetch_l2=", "ahead="}) {
    EXPECT_NE(grad.find(key), std::string::npos) << key << " in " << grad;
  }
  kernels::set_plan_override("group=3");
  EXPECT_NE(describe_plan(Op::layer_norm_grad, 16384, 4096, Dtype::bfloat16, 2).find("group=3"), std::string::npos);
  EXPECT_NE(describe_plan(Op::layer_norm_grad_beta, 64, 768, Dtype::float32, 1).find("group="), std::string::npos);
  EXPECT_NE(describe_plan(Op::layer_norm, 64, 768, Dtype::float32, 1).find("stream=0"), std::string::npos);
  kernels::set_plan_override("");
  // One row is one group: pd_gamma/pd_beta (and LayerNormGrad's gamma) are
  // used where they lie, not through scratch; 16384 rows are many groups.
  EXPECT_NE(describe_plan(Op::layer_norm_grad, 1, 768, Dtype::float32, 1).find(" sums_in_place=1 gamma_in_place=1"),
            std::string::npos);
  EXPECT_NE(describe_plan(Op::layer_norm_grad_beta, 1, 768, Dtype::float32, 1).find(" sums_in_place=1"),
            std::string::npos);
  EXPECT_EQ(grad.find("in_place"), std::string::npos) << grad;
  EXPECT_EQ(describe_plan(Op::layer_norm_grad_beta, 16384, 768, Dtype::float32, 2).find("in_place"), std::string::npos);
  EXPECT_THROW(describe_plan(Op::layer_norm_grad, 0, 768, Dtype::float32), Error);
  EXPECT_THROW(describe_plan(Op::layer_norm_grad, 64, 768, Dtype::float32, -1), Error);
}

// Every plan gives the same bits: the group size, fusing, prefetching,
// streaming and the thread count change how rows are visited, never the
// arithmetic of a row or the order of the column sums. On every target, in
// every 16/32-bit dtype, with tails (H = 1000, 37) and whole vectors.
TEST_F(Plan, EveryPlanGivesTheSameBits) {
  const std::vector<std::string> plans = {"group=1", "group=2", "group=3", "group=5", "group=8", "fused=1",
                                          "fused=0", "fused=1,group=1", "stream=1", "stream=0", "fused=0,ahead=1",
                                          "fused=1,prefetch_l1=0,prefetch_l2=4096", "threads=2"};
  for (const std::string& target : available_targets()) {
    set_max_target(target);
    for (Dtype d : {Dtype::float32, Dtype::bfloat16, Dtype::float16}) {
      for (Shape shape : {Shape{45, 1000}, Shape{70, 37}, Shape{12, 2048}}) {
        SCOPED_TRACE(target + " " + dtype_name(d) + " " + shape.str());
        ProblemSpec s;
        s.x_shape = shape;
        s.dtype = d;
        Problem p = make_problem(s);
        auto run = [&](Buffer& pd_x, Buffer& pd_gamma, Buffer& pd_beta, Buffer& y) {
          layer_norm_grad(p.dy.cview(p.x_shape), p.x.cview(p.x_shape), p.variance.cview(p.stat_shape),
                          p.mean.cview(p.stat_shape), p.gamma.cview(p.param_shape), pd_x.view(p.x_shape),
                          pd_gamma.view(p.param_shape), pd_beta.view(p.param_shape));
          Buffer mean(p.stat_dtype, p.rows), variance(p.stat_dtype, p.rows), rstd(p.stat_dtype, p.rows);
          layer_norm(p.x.cview(p.x_shape), p.gamma.cview(p.param_shape), std::nullopt, y.view(p.x_shape),
                     mean.view(p.stat_shape), variance.view(p.stat_shape), rstd.view(p.stat_shape));
        };
        Buffer ref_x(d, p.rows * p.h), ref_g(p.param_dtype, p.h), ref_b(p.param_dtype, p.h), ref_y(d, p.rows * p.h);
        kernels::set_plan_override("");
        run(ref_x, ref_g, ref_b, ref_y);
        for (const std::string& plan : plans) {
          SCOPED_TRACE(plan);
          kernels::set_plan_override(plan);
          Buffer pd_x(d, p.rows * p.h), pd_g(p.param_dtype, p.h), pd_b(p.param_dtype, p.h), y(d, p.rows * p.h);
          run(pd_x, pd_g, pd_b, y);
          ASSERT_TRUE(pd_x.bytes_equal(ref_x));
          ASSERT_TRUE(pd_g.bytes_equal(ref_g));
          ASSERT_TRUE(pd_b.bytes_equal(ref_b));
          ASSERT_TRUE(y.bytes_equal(ref_y));
        }
      }
    }
  }
  set_max_target("");
}

}  // namespace
}  // namespace lngrad::test
