// Every decision a call makes about how its rows are run, computed once, in
// one place compiled once (not per SIMD target), from named inputs. The
// kernels obey the plan; none of them decides on its own. docs/TUNING.md has
// the measurements behind each rule.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "lngrad/lngrad.hpp"

namespace lngrad::kernels {

// Most rows per group of layer_norm_grad: the kernels keep this many rows'
// coefficients (per-row constants) at once.
inline constexpr std::int64_t kMaxGroupRows = 8;

// The fused pass 1's prefetch distance for 16-bit rows is compiled into the
// kernels: held in a register, a distance given at run time spilled the fused
// bfloat16 loop's vectors. The plan reports it; an override cannot change it.
inline constexpr std::int64_t kPrefetch16BitBytes = 4096;

// Unfused rows from beyond the core's cache prefetch the group this many
// groups ahead while pass 2 finishes the current one: 2 for groups of under
// 8 KiB, else 1. (The kernels compute it too, from the same function.)
template <typename Int>
constexpr Int GroupsAhead(Int group_bytes) {
  return group_bytes < Int{8192} ? 2 : 1;
}

// What the rules need to know of the SIMD target the kernels run on.
struct TargetTraits {
  std::int64_t vector_bytes = 64;  // one float (or double) vector
  bool bf16_pairs = true;          // bfloat16 rows go in (even, odd) vector pairs
  bool f16_pair_steps = true;      // float16 rows go two vectors per column step
  bool shifts_lines = true;        // can stream rows off a line by shifting results (AVX-512)
};

struct CacheSizes {
  std::int64_t core = 2 << 20;  // a core's own cache (L2)
  std::int64_t llc = 32 << 20;  // the last-level cache, as counted for these cores
};

// A call as the rules see it.
struct PlanInputs {
  Dtype dtype = Dtype::float32;  // of the row tensors
  Dtype res_dtype = Dtype::float32;  // res_for_gamma (layer_norm_grad_beta)
  std::int64_t rows = 0;
  std::int64_t h = 0;
  int threads = 1;  // asked for (> 0)
  Stores stores = Stores::automatic;
  bool has_output = true;       // pd_x or y is written
  std::int64_t output_line_offset = 0;  // pd_x or y starts this many bytes past a 64-byte line
  TargetTraits target;
  CacheSizes caches;
};

struct GradPlan {
  int threads = 1;
  std::int64_t group_rows = 4;  // rows whose two passes run together
  bool fused = false;           // pass 1 of the next group inside pass 2 of this one
  bool stream_pd_x = false;     // non-temporal pd_x stores
  bool stage_pd_x = false;      // ... through a staging buffer: rows not whole steps apart
  bool shift_pd_x = false;      // ... or with each line shifted into place (instead of staged)
  bool align_rows = false;      // cached rows off a line start pass 2's steps on lines
  std::int64_t prefetch_l1_bytes = 0;  // fused pass 1 prefetches this far ahead into the L1
  std::int64_t prefetch_l2_bytes = 0;  // ... and this far into the L2 (0: not)
  std::int64_t groups_ahead = 0;       // unfused: prefetch the group this many ahead (0: not)
  // float32 pd_gamma/pd_beta, and gamma, used in place even off a 64-byte
  // line (else summed in or copied to scratch on one).
  bool sums_in_place = false;
  bool gamma_in_place = false;
  std::string notes;  // why a wanted choice was not taken
};

struct BetaPlan {
  int threads = 1;
  std::int64_t group_rows = 4;
  bool sums_in_place = false;  // as GradPlan's
};

struct ForwardPlan {
  int threads = 1;
  bool stream_y = false;
  std::string notes;
};

GradPlan plan_grad(const PlanInputs& in);
BetaPlan plan_beta(const PlanInputs& in);
ForwardPlan plan_forward(const PlanInputs& in);

// Threads worth starting for rows x h elements, at most `requested`.
int plan_threads(int requested, std::int64_t rows, std::int64_t h);

// One line each: "threads=2 group=4 fused=1 ...".
std::string describe(const GradPlan& p);
std::string describe(const BetaPlan& p);
std::string describe(const ForwardPlan& p);

// Experiments: LNGRAD_PLAN="group=2,fused=0,stream=1,..." (keys as describe
// prints them) replaces the rules' choices in every plan; read once, checked
// (Error naming the key, expected and given). set_plan_override replaces it
// for the process ("" clears it); throws Error and keeps the old one.
void set_plan_override(std::string_view spec);

// A call on this machine: the active target's traits and this machine's
// caches, the output taken to exist and to start on a cache line.
PlanInputs machine_inputs(Dtype dtype, std::int64_t rows, std::int64_t h, int threads, Stores stores);
// has_output and output_line_offset from where the output goes (null: none).
void set_output(PlanInputs& in, const void* out);

}  // namespace lngrad::kernels
