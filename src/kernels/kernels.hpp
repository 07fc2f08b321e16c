// Internal interface between the runtime and the per-target SIMD kernels.
// Plain pointers and sizes only; every argument has been validated.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "kernels/plan.hpp"
#include "lngrad/lngrad.hpp"
#include "runtime/function_ref.hpp"

namespace lngrad::kernels {

// Row gradient: for each row r, pd_x and res_for_gamma (either may be null),
// or, when column sums are asked for (BlockSums), pd_x (or null) and the sums
// over the rows of dy*res_for_gamma and dy, per block of rows, rows added in
// order; res_for_gamma is not written then (no operator asks for both).
// Accumulators are float, or double when dtype is float64.
struct GradArgs {
  Dtype dtype = Dtype::float32;  // dy, x, pd_x
  std::int64_t h = 0;
  const void* dy = nullptr;
  const void* x = nullptr;
  const void* mean = nullptr;
  const void* stat = nullptr;  // variance, or rstd when stat_is_rstd
  Dtype stat_dtype = Dtype::float32;
  bool stat_is_rstd = false;
  double epsilon = 0.0;
  const void* gamma = nullptr;  // h elements of the accumulator type; never null
  void* pd_x = nullptr;
  void* res_for_gamma = nullptr;
  Dtype res_dtype = Dtype::float32;
  // The plan's choices (see GradPlan).
  std::int64_t group_rows = 4;  // <= kMaxGroupRows
  bool fused = false;
  bool stream_pd_x = false;
  bool stage_pd_x = false;
  bool shift_pd_x = false;
  bool align_rows = false;
  std::int64_t prefetch_l1_bytes = 0;
  std::int64_t prefetch_l2_bytes = 0;
  std::int64_t groups_ahead = 0;
};

struct BetaArgs {
  Dtype dy_dtype = Dtype::float32;
  Dtype res_dtype = Dtype::float32;
  std::int64_t h = 0;
  const void* dy = nullptr;
  const void* res_for_gamma = nullptr;
  std::int64_t group_rows = 4;  // the plan's (see BetaPlan)
};

struct ForwardArgs {
  Dtype dtype = Dtype::float32;  // x, y
  std::int64_t h = 0;
  const void* x = nullptr;
  const void* gamma = nullptr;  // h elements of the accumulator type; never null
  const void* beta = nullptr;   // likewise
  double epsilon = 0.0;
  void* y = nullptr;
  Dtype stat_dtype = Dtype::float32;
  void* mean = nullptr;
  void* variance = nullptr;
  void* rstd = nullptr;  // may be null
  bool stream_y = false;  // the plan's (see ForwardPlan)
};

// Where column sums go: before the first row of each block of block_rows
// rows (counted from the call's first row; the last may be shorter) a kernel
// calls next(&acc_gamma, &acc_beta) and WRITES that block's sums there (see
// runtime::RowsFn).
struct BlockSums {
  std::int64_t block_rows = 0;
  runtime::FunctionRef<void(void**, void**)> next;
};

struct KernelTable {
  const char* target;
  // A function, not a value: every compiled target's table is built, also on
  // CPUs that lack the target, and SVE's vector length is read by an SVE
  // instruction.
  TargetTraits (*traits)();
  // sums: null when no column sums are wanted.
  void (*grad_rows)(const GradArgs&, std::int64_t row_begin, std::int64_t row_end, const BlockSums* sums);
  // The rows' column sums of dy*res_for_gamma and dy, as grad_rows.
  void (*beta_rows)(const BetaArgs&, std::int64_t row_begin, std::int64_t row_end, const BlockSums& sums);
  void (*forward_rows)(const ForwardArgs&, std::int64_t row_begin, std::int64_t row_end);
  // dst[i] += src[i], in float or double.
  void (*add_f32)(float* dst, const float* src, std::int64_t n);
  void (*add_f64)(double* dst, const double* src, std::int64_t n);
  // Vector conversions between float and a 16-bit storage type (the ones the
  // row kernels use), exposed so tests can check them on every target.
  void (*to_f32)(Dtype src_dtype, const void* src, float* dst, std::int64_t n);
  void (*from_f32)(Dtype dst_dtype, const float* src, void* dst, std::int64_t n);
};

template <typename A>
using AddFn = void (*)(A*, const A*, std::int64_t);

template <typename A>
AddFn<A> add_fn(const KernelTable& k) {
  if constexpr (sizeof(A) == sizeof(float)) {
    return k.add_f32;
  } else {
    return k.add_f64;
  }
}

// The table of the active target (see set_max_target).
const KernelTable& active();

// Caps dispatch at the named compiled target ("" lifts the cap); throws Error.
void set_max_target(std::string_view name);

// Name of every compiled target this CPU supports, best first.
std::vector<std::string> supported_target_names();

}  // namespace lngrad::kernels
