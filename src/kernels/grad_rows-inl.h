// layer_norm_grad / layer_norm_grad_x rows: pd_x, res_for_gamma and the
// column sums of pd_gamma/pd_beta, two passes over groups of cached rows.
//
// Derivation (per row, H elements; xm = x - mean, g = dy*gamma; seed 002):
//   pd_var  = sum(-0.5*g*xm*rstd^3)              = -0.5*rstd^3*S2,  S2 = sum(g*xm)
//   pd_mean = sum(-g*rstd) + pd_var/H*sum(-2*xm) = -rstd*S1 - 2*pd_var*S3/H,
//             S1 = sum(g), S3 = sum(xm)
//   pd_x    = g*rstd + (2*pd_var/H)*xm + pd_mean/H
//           = rstd*(g - S1/H) + (2*pd_var/H)*(xm - S3/H)
//           = rstd*((g - S1/H) + c*(xhat - rstd*S3/H)),  xhat = xm*rstd, c = -rstd*S2/H
//           = rstd*g + (rstd*c)*xhat - rstd*(S1/H + c*rstd*S3/H)
// One pass gathers S1, S2, S3 from centred values (xm first, never sum(g*x) -
// mean*sum(g)); a second pass over the cached row writes pd_x in the last
// form, two FMAs per element on xhat (centred), its per-row coefficients
// taken from the line above (no rstd^2 or rstd^3 that could overflow for a
// tiny variance: rstd*c is of the size of rstd*g), and adds dy*xhat and
// dy to the pd_gamma/pd_beta accumulators. S3 vanishes for the exact row mean
// and corrects the gradient for a stored mean that is not.
// Per-target code: included by dispatch.cc once per Highway target.
#if defined(LNGRAD_KERNELS_GRAD_ROWS_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef LNGRAD_KERNELS_GRAD_ROWS_INL_H_
#undef LNGRAD_KERNELS_GRAD_ROWS_INL_H_
#else
#define LNGRAD_KERNELS_GRAD_ROWS_INL_H_
#endif

#include <algorithm>
#include <cmath>
#include <cstring>
#include <type_traits>
#include <utility>

#include "common/scalar.hpp"
#include "kernels/convert-inl.h"
#include "kernels/group_loops-inl.h"
#include "kernels/kernels.hpp"
#include "kernels/line_stores-inl.h"
#include "kernels/row_sums-inl.h"

#include <hwy/cache_control.h>
#include <hwy/highway.h>

HWY_BEFORE_NAMESPACE();
namespace lngrad {
namespace kernels {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// kPdX and kAcc (the column sums) select compiled variants; res_for_gamma,
// rarer, is a run-time branch, which keeps the number of instantiations (and
// the build time of this file under the sanitizers) down.
// kShifted: pd_x streams by ShiftedLines (GradRowsFor checks that it can),
// in a compiled copy of its own: sharing a function with the other store
// kinds' loops slowed those by up to 1.5x (GCC 12; docs/TUNING.md).
template <class DF, typename T, bool kPdX, bool kAcc, bool kShifted = false>
void GradRowsT(const GradArgs& args, int64_t row_begin, int64_t row_end, const BlockSums* block_sums) {
  using A = hn::TFromD<DF>;
  const DF df;
  const size_t N = hn::Lanes(df);
  const size_t h = static_cast<size_t>(args.h);
  const A* gamma = static_cast<const A*>(args.gamma);
  A* acc_gamma = nullptr;  // the current block's column sums
  A* acc_beta = nullptr;
  const A inv_h = A(1) / static_cast<A>(h);
  // The plan's choices. The group size is bounded for the compiler: as an
  // unbounded value it made the group loop slower (see docs/TUNING.md).
  const bool fused = args.fused;
  const size_t group = HWY_MAX(size_t{1}, HWY_MIN(static_cast<size_t>(args.group_rows), size_t{kMaxGroupRows}));
  const bool prefetch_later_group = !fused && args.groups_ahead != 0;
  // Recomputed here rather than read from args: as a loaded value it slowed
  // the fused loop, which never uses it (see docs/TUNING.md).
  const size_t groups_ahead = GroupsAhead(group * h * sizeof(T));
  const size_t prefetch_l1_bytes =
      sizeof(T) == 2 ? static_cast<size_t>(kPrefetch16BitBytes) : static_cast<size_t>(args.prefetch_l1_bytes);
  const size_t prefetch_l2_bytes = static_cast<size_t>(args.prefetch_l2_bytes);
  // Compiled for float32 rows only, the one kind the plan prefetches so.
  const bool prefetch_l2 = sizeof(T) == sizeof(float) && prefetch_l2_bytes != 0;
  const T* dy_base = static_cast<const T*>(args.dy);
  const T* x_base = static_cast<const T*>(args.x);
  constexpr bool kPairs = kInPairs<T>;
  constexpr bool kPairSteps = kPairs || kF16LineSteps<T>;
  const size_t W = kPairSteps ? 2 * N : N;  // elements of a whole column step of pass 2

  // gamma as pass 1 reads it: pairs from element 0, element order after the
  // last whole pair. Pass 2 reads it so too unless it starts at a head.
  const A* gamma1 = gamma;
  const A* gamma2 = gamma;
  A* pair_scratch = nullptr;
  if constexpr (kPairs) {
    if (h >= 2 * N) {
      pair_scratch = PairScratch(h);
      gamma1 = gamma2 = PairOrdered(df, gamma, h, 0, pair_scratch);
    }
  }

  // Streamed pd_x (when the plan says so): whole steps from a head of cached
  // stores on.
  size_t head = 0;
  const bool stream =
      !kShifted && StreamRows(kPdX && args.stream_pd_x, args.pd_x, h, sizeof(T), W * sizeof(T), &head);
  const bool steps_are_lines = W * sizeof(T) == kLineBytes;
  // Cached rows whole lines apart that start off a line (NumPy's and
  // std::vector's buffers) take such a head too when the plan says so, and
  // pass 2's gamma and column sums are then copies placed so that the
  // steps' elements start on lines as well.
  if (args.align_rows && !stream && !kShifted && steps_are_lines) {
    RowsAlignedAlike(kPdX ? args.pd_x : args.dy, h, sizeof(T), W * sizeof(T), &head);
  }
  // Rows that are not whole steps apart stream through the staging buffer
  // (StreamLines) when the plan says so, or shifted (kShifted).
  const bool staged = !kShifted && kPdX && args.stream_pd_x && args.stage_pd_x && !stream;
  unsigned char* const staging = staged ? StagingBuffer(group * h * sizeof(T)) : nullptr;
  const size_t head_lead = stream ? 0 : LeadToLine<A>(head);
  if constexpr (kPairs) {
    if (pair_scratch != nullptr && head != 0) {
      gamma2 = PairOrdered(df, gamma, h, head, pair_scratch + PairScratchStride(h) + head_lead);
    }
  }
  A* head_scratch = nullptr;
  const size_t head_stride = static_cast<size_t>(line_padded<A>(static_cast<int64_t>(h + head_lead)));
  if (head_lead != 0) {
    head_scratch = HeadScratch<A>(3 * head_stride);
    if (!kPairs || pair_scratch == nullptr) {
      A* g = head_scratch + 2 * head_stride + head_lead;
      std::memcpy(g, gamma, h * sizeof(A));
      gamma2 = g;
    }
  }
  A* block_gamma = nullptr;
  A* block_beta = nullptr;
  const size_t steps = (h - head) / W;
  // Streamed rows whose boundaries fall inside lines join those lines:
  // rows whole lines apart but off one, and shifted rows.
  const bool join_edges = ((stream && head != 0) || kShifted) && steps_are_lines && steps != 0;
  JoinedEdges<T> edges(h * sizeof(T), (h - head - steps * W) * sizeof(T));

  // Per-row coefficients of pd_x = rstd*((g - S1/H) + c*(xhat - rstd*S3/H)),
  // expanded as g_scale*g + xhat_scale*xhat + offset: two FMAs per vector
  // where the centred form took four operations.
  struct Row {
    A mean, rstd, g_scale, xhat_scale, offset;
  };

  // Pass 1: S1 = sum(g), S2 = sum(g*xm), S3 = sum(xm), each in the order of
  // row_sums-inl.h (the same bits on every target with FMA), over chunks of
  // C elements; a row's last, partial chunk is read as ChunkRest says.
  using V = hn::Vec<DF>;
  using Sums = RowSums<DF, 3>;
  constexpr size_t C = SumClasses<DF>();
  const size_t M = ChunkVectors(df);
  enum : size_t { kS1, kS2, kS3 };
  // gamma of the last, partial chunk, zero-padded and in chunk order.
  alignas(64) A gamma_rest[C] = {};
  if (h % C != 0) {
    alignas(64) A padded[C] = {};
    std::memcpy(padded, gamma + h / C * C, h % C * sizeof(A));
    if constexpr (kPairs) {
      PairOrdered(df, padded, C, 0, gamma_rest);
    } else {
      std::memcpy(gamma_rest, padded, sizeof(padded));
    }
  }
  ChunkRest<DF, T> dy_rest, x_rest;
  auto begin_row = [&](int64_t r, auto& sums) HWY_ATTR __attribute__((always_inline)) {
    Row row{};
    row.mean = static_cast<A>(load_scalar(args.mean, args.stat_dtype, r));
    const A stat = static_cast<A>(load_scalar(args.stat, args.stat_dtype, r));
    row.rstd = args.stat_is_rstd ? stat : A(1) / std::sqrt(stat + static_cast<A>(args.epsilon));
    ZeroSums(df, sums);
    return row;
  };
  // One vector of a chunk, in class slot `slot`, its gamma at gam.
  auto stats_vector = [&](auto& s, size_t slot, V d, V xm, const A* gam) HWY_ATTR __attribute__((always_inline)) {
    const auto g = hn::Mul(d, hn::LoadU(df, gam));
    AddToSum(df, s, kS1, slot, g);
    MulAddToSum(df, s, kS2, slot, g, xm);
    AddToSum(df, s, kS3, slot, xm);
  };
  // The chunk at dy, x (gamma at gam, in chunk order); elements from `valid`
  // on are padding (zero dy and gamma), their xm masked off when `masked`.
  auto stats_chunk = [&](const T* dy, const T* x, const A* gam, V vmean, auto& s, auto masked, size_t valid) HWY_ATTR
      __attribute__((always_inline)) {
    ForEachChunkVector(df, dy, x, valid, [&](size_t slot, V d, V xv, size_t at, size_t lanes) HWY_ATTR
                       __attribute__((always_inline)) {
      auto xm = hn::Sub(xv, vmean);
      if constexpr (decltype(masked)::value) xm = hn::IfThenElseZero(hn::FirstN(df, lanes), xm);
      stats_vector(s, slot, d, xm, gam + at);
    });
  };
  // bfloat16 rows that start off a line read whole chunks by aligned lines
  // (ShiftedLoads): the same vectors in the same classes, while the line
  // after a chunk still lies in the row.
#if LNGRAD_SHIFTED_LINES
  constexpr bool kLineLoads = kPairs;
  using Loads = ShiftedLoads;
  auto stats_chunk_lines = [&](Loads& dy, Loads& x, const A* gam, V vmean, auto& s) HWY_ATTR
      __attribute__((always_inline)) {
    ForEachChunkLine(df, dy, x, [&](size_t slot, V d, V xv, size_t at) HWY_ATTR __attribute__((always_inline)) {
      stats_vector(s, slot, d, hn::Sub(xv, vmean), gam + at);
    });
  };
  auto line_chunk_fits = [h](size_t j) { return (j + C) * sizeof(T) + kLineBytes <= h * sizeof(T); };
  // Starts reading the rows at dy and x by lines, where they take it.
  auto begin_lines = [](Loads& dy_lines, Loads& x_lines, const T* dy, const T* x) {
    if (!kLineLoads || !Loads::Apply(dy, x)) return false;
    dy_lines.Begin(dy);
    x_lines.Begin(x);
    return true;
  };
#endif
  // The rest of the row from j (a multiple of C), then its coefficients.
  auto finish_row = [&](Row& row, const T* dy, const T* x, size_t j, auto& s) HWY_ATTR
      __attribute__((always_inline)) {
    const auto vmean = hn::Set(df, row.mean);
#if LNGRAD_SHIFTED_LINES
    if constexpr (kLineLoads) {
      Loads dy_lines, x_lines;
      if (line_chunk_fits(j) && begin_lines(dy_lines, x_lines, dy + j, x + j)) {
        for (; line_chunk_fits(j); j += C) stats_chunk_lines(dy_lines, x_lines, gamma1 + j, vmean, s);
      }
    }
#endif
    for (; j + C <= h; j += C) stats_chunk(dy + j, x + j, gamma1 + j, vmean, s, std::false_type(), C);
    if (j < h) {
      stats_chunk(dy_rest.Fill(dy + j, h - j), x_rest.Fill(x + j, h - j), gamma_rest, vmean, s, std::true_type(),
                  h - j);
    }
    const A s1 = TotalOf(df, s, kS1);
    const A s2 = TotalOf(df, s, kS2);
    const A s3 = TotalOf(df, s, kS3);
    const A c = -(row.rstd * s2) * inv_h;
    const A mean_g = s1 * inv_h;
    const A mean_xhat = row.rstd * s3 * inv_h;
    // With H = 1 every term cancels exactly; zeroed coefficients keep pd_x
    // exactly 0 there, as the centred form has it, and Inf or NaN still
    // propagate.
    const A unless_h1 = h == 1 ? A(0) : A(1);
    row.g_scale = row.rstd * unless_h1;
    row.xhat_scale = row.rstd * c * unless_h1;
    row.offset = -(row.rstd * (mean_g + c * mean_xhat)) * unless_h1;
  };
  auto pass1 = [&](int64_t r) HWY_ATTR __attribute__((always_inline)) {
    Sums sums;
    Row row = begin_row(r, sums);
    const size_t at = static_cast<size_t>(r) * h;
    finish_row(row, dy_base + at, x_base + at, 0, sums);
    return row;
  };

  // res_for_gamma is stored as T, or for 16-bit T as float32 when asked
  // (the accumulator type, so the same store as for float32 T).
  void* const res_out = kAcc ? nullptr : args.res_for_gamma;  // see GradArgs
  T* const pd_x_base = static_cast<T*>(args.pd_x);  // a local: stores would make args' reload per row
  const bool res_f32 = args.res_dtype == Dtype::float32;
  // pd_x of one vector of row c, and res_for_gamma (xhat) in res.
  auto row_vector = [&](const Row& c, V d, V x, V gam, V& res) HWY_ATTR __attribute__((always_inline)) {
    const auto vrstd = hn::Set(df, c.rstd);
    res = hn::Mul(hn::Sub(x, hn::Set(df, c.mean)), vrstd);
    const auto scaled_g = hn::MulAdd(hn::Mul(d, gam), hn::Set(df, c.g_scale), hn::Set(df, c.offset));
    return hn::MulAdd(hn::Set(df, c.xhat_scale), res, scaled_g);
  };
  // Puts pair-ordered floats back in element order (float32 res_for_gamma,
  // and the column sums at the end).
  PairOrder<DF> pair_order{};
  if constexpr (kPairs) pair_order = PairOrderIndices(df);
  bool first_group = true;  // of the current block
  // Groups end where blocks of column sums end. The call runs on across
  // block boundaries, the fused loop included: one call per block would leave
  // a group unfused and reorder gamma per block.
  const int64_t block_rows = kAcc ? block_sums->block_rows : row_end - row_begin;
  int64_t block_end = row_begin;  // of the current block
  auto group_at = [&](int64_t r) {
    const int64_t end = r < block_end ? block_end : HWY_MIN(row_end, r + block_rows);
    return static_cast<size_t>(HWY_MIN(static_cast<int64_t>(group), end - r));
  };
  // The current block's sums, from pairs back in element order.
  auto finish_block = [&] {
    if constexpr (kPairs && kAcc) {
      for (A* acc : {acc_gamma, acc_beta}) PairsToElementOrder(df, pair_order, acc + head, steps);
    }
    if (block_gamma != nullptr) {
      std::memcpy(block_gamma, acc_gamma, h * sizeof(A));
      std::memcpy(block_beta, acc_beta, h * sizeof(A));
    }
  };
  Row coef_store[2][kMaxGroupRows];
  Row* coef = coef_store[0];
  Row* coef_next = coef_store[1];
  for (int64_t g0 = row_begin, n0 = 0; g0 < row_end; g0 = n0) {
    if (g0 == block_end) {  // a block starts
      block_end = HWY_MIN(row_end, g0 + block_rows);
      if constexpr (kAcc) {
        if (g0 != row_begin) finish_block();
        void* g = nullptr;
        void* b = nullptr;
        block_sums->next(&g, &b);
        acc_gamma = static_cast<A*>(g);
        acc_beta = static_cast<A*>(b);
        if (head_scratch != nullptr) {
          block_gamma = acc_gamma;
          block_beta = acc_beta;
          acc_gamma = head_scratch + head_lead;
          acc_beta = head_scratch + head_stride + head_lead;
        }
        first_group = true;
      }
    }
    const size_t rows = group_at(g0);
    n0 = g0 + static_cast<int64_t>(rows);  // the next group's first row
    if (!fused || g0 == row_begin) {  // else the previous group's pass 2 computed them
      for (size_t k = 0; k < rows; ++k) coef[k] = pass1(g0 + static_cast<int64_t>(k));
    }
    const size_t offset = static_cast<size_t>(g0) * h;
    // A constant of the group: as the loop variable itself it was reloaded
    // from memory at every step, after each (possibly aliasing) store.
    const bool load_sums = kAcc && !first_group;
    // This group's pd_x rows: in place, or staged.
    T* const group_pd_x = !kPdX ? nullptr : staged ? StagedAt(staging, pd_x_base + offset) : pd_x_base + offset;
    if (join_edges) edges.Begin(pd_x_base + offset);

    // Pass 2 over the cached group: elements [j0, j0 + n) of every row, n <=
    // N. Loads of an index precede its stores, so pd_x/res_for_gamma may be
    // dy or x itself (in-place).
    auto columns = [&](size_t j0, size_t n, bool full, auto stream_now, auto row_count) HWY_ATTR
                       __attribute__((always_inline)) {
      auto sum_g = hn::Zero(df), sum_b = hn::Zero(df);
      if (load_sums) {
        sum_g = LoadPart(df, acc_gamma + j0, n, full);
        sum_b = LoadPart(df, acc_beta + j0, n, full);
      }
      const auto gam = LoadPart(df, (kPairs ? gamma : gamma2) + j0, n, full);
      ForEachRow(row_count, [&](size_t k) HWY_ATTR __attribute__((always_inline)) {
        const size_t at = offset + k * h + j0;
        const auto d = LoadPart(df, dy_base + at, n, full);
        V res_v;
        const auto out = row_vector(coef[k], d, LoadPart(df, x_base + at, n, full), gam, res_v);
        if constexpr (kPdX) {
          T* pd_x = group_pd_x + (k * h + j0);
          if (!full) {
            StoreTail(df, out, join_edges ? edges.At(pd_x, j0 < head ? k : k + 1) : pd_x, n);
          } else if constexpr (kShiftedStores<decltype(stream_now)>) {  // float32, float64
            stream_now.lines[k].Put(hn::BitCast(hn::Repartition<ShiftLane<T>, DF>(), out), pd_x, j0 == 0);
          } else if (stream_now) {
            StreamAs(df, out, pd_x);
          } else {
            StoreAs(df, out, pd_x);
          }
        }
        if (res_out != nullptr) {
          if (sizeof(T) == 2 && res_f32) {
            StorePart(df, res_v, static_cast<hn::TFromD<DF>*>(res_out) + at, n, full);
          } else {
            StorePart(df, res_v, static_cast<T*>(res_out) + at, n, full);
          }
        }
        if constexpr (kAcc) {
          sum_g = hn::MulAdd(d, res_v, sum_g);
          sum_b = hn::Add(sum_b, d);
        }
      });
      if constexpr (kAcc) {
        StorePart(df, sum_g, acc_gamma + j0, n, full);
        StorePart(df, sum_b, acc_beta + j0, n, full);
      }
    };
    // A whole step of bfloat16 rows: elements [j0, j0 + 2N) in pairs; of
    // float16 rows (kF16LineSteps), two vectors, _e then _o (compiled for
    // those only).
    auto pair_columns = [&](size_t j0, auto stream_now, auto row_count) HWY_ATTR __attribute__((always_inline)) {
      if constexpr (kPairSteps) {
        auto sum_ge = hn::Zero(df), sum_go = hn::Zero(df), sum_be = hn::Zero(df), sum_bo = hn::Zero(df);
        if (load_sums) {
          sum_ge = hn::LoadU(df, acc_gamma + j0);
          sum_go = hn::LoadU(df, acc_gamma + j0 + N);
          sum_be = hn::LoadU(df, acc_beta + j0);
          sum_bo = hn::LoadU(df, acc_beta + j0 + N);
        }
        const auto gam_e = hn::LoadU(df, gamma2 + j0);
        const auto gam_o = hn::LoadU(df, gamma2 + j0 + N);
        ForEachRow(row_count, [&](size_t k) HWY_ATTR __attribute__((always_inline)) {
          const size_t at = offset + k * h + j0;
          V d_e, d_o, x_e, x_o, res_e, res_o;
          LoadPairAs(df, dy_base + at, d_e, d_o);
          LoadPairAs(df, x_base + at, x_e, x_o);
          const auto out_e = row_vector(coef[k], d_e, x_e, gam_e, res_e);
          const auto out_o = row_vector(coef[k], d_o, x_o, gam_o, res_o);
          if constexpr (kShiftedStores<decltype(stream_now)>) {
            stream_now.lines[k].Put(EncodePair(df, out_e, out_o, pd_x_base), group_pd_x + (k * h + j0), j0 == 0);
          } else if constexpr (kPdX) {
            StorePairAs(df, out_e, out_o, group_pd_x + (k * h + j0), stream_now);
          }
          if (res_out != nullptr) StoreResPair(df, res_e, res_o, pair_order, static_cast<T*>(res_out), at, res_f32);
          if constexpr (kAcc) {
            sum_ge = hn::MulAdd(d_e, res_e, sum_ge);
            sum_be = hn::Add(sum_be, d_e);
            sum_go = hn::MulAdd(d_o, res_o, sum_go);
            sum_bo = hn::Add(sum_bo, d_o);
          }
        });
        if constexpr (kAcc) {
          hn::StoreU(sum_ge, df, acc_gamma + j0);
          hn::StoreU(sum_go, df, acc_gamma + j0 + N);
          hn::StoreU(sum_be, df, acc_beta + j0);
          hn::StoreU(sum_bo, df, acc_beta + j0 + N);
        }
      }
    };
    // Whole step t (of W elements) after the head.
    auto whole_step = [&](size_t t, auto stream_now, auto row_count) HWY_ATTR __attribute__((always_inline)) {
      if constexpr (kPairSteps) {
        pair_columns(head + t * W, stream_now, row_count);
      } else {
        columns(head + t * N, N, true, stream_now, row_count);
      }
    };
    // Head and tail (partial vectors) share one copy of the column step.
    auto partial_columns = [&](size_t j0, size_t n) HWY_ATTR { columns(j0, n, false, false, rows); };
    // Elements [j0, j0 + n), n < W, in element order.
    auto rest_columns = [&](size_t j0, size_t n) HWY_ATTR {
      for (size_t j = j0; j < j0 + n; j += N) partial_columns(j, HWY_MIN(N, j0 + n - j));
    };
    // Pass 2, column by column. Fused, pass 1 of the next group's rows runs
    // in the same loop, one row after another: the next rows stream in from
    // memory while this group is finished from cache. Pass 2's whole steps
    // are split evenly among the next rows; in each step pass 1
    // advances `per_step` vectors of its current row.
    const size_t next_rows = fused && n0 < row_end ? group_at(n0) : 0;
    if (head != 0) rest_columns(0, head);
    const size_t row_vectors = h / N;
    // The lines `distance` bytes past pass 1's next chunk at element `from`
    // of dy and x (into the L2 or the L1); prefetches stay inside this call's
    // rows.
    const size_t prefetch_limit = static_cast<size_t>(row_end) * h;
    auto prefetch_ahead = [&](size_t from, size_t distance, bool to_l2) HWY_ATTR __attribute__((always_inline)) {
      if (from + (distance + C * sizeof(T)) / sizeof(T) > prefetch_limit) return;
      for (size_t b = distance; b < distance + C * sizeof(T); b += 64) {
        const char* d = reinterpret_cast<const char*>(dy_base + from) + b;
        const char* x = reinterpret_cast<const char*>(x_base + from) + b;
        if (to_l2) {
          PrefetchToL2(d);
          PrefetchToL2(x);
        } else {
          hwy::Prefetch(d);
          hwy::Prefetch(x);
        }
      }
    };
    // The whole steps of pass 2 (with pass 1 of the next rows when fused).
    // always_inline: as a call of its own it read every capture through its
    // closure, again after each (possibly aliasing) store.
    auto whole_steps = [&](auto stream_now, auto row_count) HWY_ATTR __attribute__((always_inline)) {
      size_t t = 0;
      for (size_t q = 0; q < next_rows; ++q) {
        const size_t at = static_cast<size_t>(n0) * h + q * h;
        const T* ndy = dy_base + at;
        const T* nx = x_base + at;
        Sums sums;
        coef_next[q] = begin_row(n0 + static_cast<int64_t>(q), sums);
        const auto vmean = hn::Set(df, coef_next[q].mean);
        const size_t segment_end = steps * (q + 1) / next_rows;
        const size_t segment = segment_end - t;
        size_t per_step = segment == 0 ? row_vectors : (row_vectors + segment - 1) / segment;
        per_step = HWY_MAX(M, (per_step + M - 1) / M * M);  // whole chunks
        const size_t fused_steps = HWY_MIN(segment, row_vectors / per_step);
        size_t j1 = 0;
#if LNGRAD_SHIFTED_LINES
        Loads dy_lines, x_lines;
        const bool by_lines = begin_lines(dy_lines, x_lines, ndy, nx);
#endif
        for (size_t i = 0; i < fused_steps; ++i, ++t) {
          whole_step(t, stream_now, row_count);
          for (size_t p = 0; p < per_step; p += M, j1 += C) {
            prefetch_ahead(at + j1, prefetch_l1_bytes, false);
            if (prefetch_l2) prefetch_ahead(at + j1, prefetch_l2_bytes, true);
#if LNGRAD_SHIFTED_LINES
            if (by_lines && line_chunk_fits(j1)) {
              stats_chunk_lines(dy_lines, x_lines, gamma1 + j1, vmean, sums);
              continue;
            }
#endif
            stats_chunk(ndy + j1, nx + j1, gamma1 + j1, vmean, sums, std::false_type(), C);
          }
        }
        for (; t < segment_end; ++t) whole_step(t, stream_now, row_count);
        finish_row(coef_next[q], ndy, nx, j1, sums);
      }
      if (prefetch_later_group && steps != 0) {
        const int64_t p0 = g0 + static_cast<int64_t>(groups_ahead * group);
        const size_t later_rows = p0 < row_end ? static_cast<size_t>(HWY_MIN(static_cast<int64_t>(group), row_end - p0)) : 0;
        const size_t bytes = later_rows * h * sizeof(T);
        const char* pdy = reinterpret_cast<const char*>(dy_base + static_cast<size_t>(p0) * h);
        const char* px = reinterpret_cast<const char*>(x_base + static_cast<size_t>(p0) * h);
        size_t done = 0;
        for (; t < steps; ++t) {  // spread over pass 2's steps
          whole_step(t, stream_now, row_count);
          for (const size_t until = bytes * (t + 1) / steps; done < until; done += 64) {
            hwy::Prefetch(pdy + done);
            hwy::Prefetch(px + done);
          }
        }
      }
      for (; t < steps; ++t) whole_step(t, stream_now, row_count);
    };
    // Groups of 4 rows (the most common size), 1 (alias-free groups on AVX2)
    // and 2 (long 16-bit rows on AVX2) have their row count and store kind
    // compiled in: the rows' coefficients then stay in registers across the
    // steps, and no branch per row and step remains. Groups of 8 have too
    // many coefficients for the registers. Evidence: docs/TUNING.md.
    // Sanitizer builds keep one compiled copy, the 4-row loop with a run-time
    // store kind: under clang 14's ASan+UBSan this file then takes 6 minutes,
    // over 14 with all six. The copies are one source instantiated with other
    // constants, touching the same addresses; the ordinary build tests them.
    if constexpr (kShifted) {
      // Shifted lines: float32 pairs compiled in. The other groups (bfloat16
      // rows in 4s and 8s) run with a run-time row count: the compiled group
      // of 4 ran slower (docs/TUNING.md).
#if LNGRAD_SHIFTED_LINES
      if (steps != 0) {
        ShiftedLines<ShiftLane<T>> lines[kMaxGroupRows];
        for (size_t k = 0; k < rows; ++k) {
          T* row = group_pd_x + k * h;
          lines[k].Begin(row, join_edges ? edges.At(row, k) : row);
        }
        const ShiftedStores<ShiftedLines<ShiftLane<T>>> shifted{{}, lines};
#if !LNGRAD_SANITIZED
        if (rows == 2) {
          whole_steps(shifted, std::integral_constant<size_t, 2>());
        } else
#endif
        {
          whole_steps(shifted, rows);
        }
        for (size_t k = 0; k < rows; ++k) {
          T* end = group_pd_x + k * h + steps * W;
          lines[k].Finish(join_edges ? edges.At(end, k + 1) : end);
        }
      }
#endif
    } else {
#if LNGRAD_SANITIZED
      if (rows == 4) {
        whole_steps(stream, std::integral_constant<size_t, 4>());
      } else {
        whole_steps(stream, rows);
      }
#else
      auto compiled_steps = [&](auto row_count) HWY_ATTR __attribute__((always_inline)) {
        if (stream) {
          whole_steps(std::true_type(), row_count);
        } else {
          whole_steps(std::false_type(), row_count);
        }
      };
      if (rows == 4) {
        compiled_steps(std::integral_constant<size_t, 4>());
      } else if (rows == 1) {
        compiled_steps(std::integral_constant<size_t, 1>());
      } else if (rows == 2) {
        compiled_steps(std::integral_constant<size_t, 2>());
      } else {
        whole_steps(stream, rows);
      }
#endif
    }
    if (head + steps * W < h) rest_columns(head + steps * W, h - head - steps * W);
    if (join_edges) edges.Finish(rows, n0 < row_end);
    if (staged) {
      for (size_t k = 0; k < rows; ++k) {
        StreamLines(pd_x_base + offset + k * h, group_pd_x + k * h, h * sizeof(T));
      }
    }
    first_group = false;
    std::swap(coef, coef_next);
  }
  if (row_end > row_begin) finish_block();
  if (stream || staged || kShifted) hwy::FlushStream();  // order the streamed stores before returning
}

template <class DF, typename T>
void GradRowsFor(const GradArgs& args, int64_t b, int64_t e, const BlockSums* sums) {
  const bool pdx = args.pd_x != nullptr, acc = sums != nullptr;
#if LNGRAD_SHIFTED_LINES
  if (pdx && args.stream_pd_x && args.shift_pd_x && reinterpret_cast<uintptr_t>(args.pd_x) % sizeof(T) == 0) {
    if (acc) return GradRowsT<DF, T, true, true, true>(args, b, e, sums);
    return GradRowsT<DF, T, true, false, true>(args, b, e, sums);
  }
#endif
  if (pdx && acc) return GradRowsT<DF, T, true, true>(args, b, e, sums);
  if (pdx) return GradRowsT<DF, T, true, false>(args, b, e, sums);
  // Every caller asks for pd_x or column sums (or both).
  if (acc) GradRowsT<DF, T, false, true>(args, b, e, sums);
}

void GradRows(const GradArgs& args, int64_t b, int64_t e, const BlockSums* sums) {
  switch (args.dtype) {
    case Dtype::float64: return GradRowsFor<RowTag<double>, double>(args, b, e, sums);
    case Dtype::float32: return GradRowsFor<RowTag<float>, float>(args, b, e, sums);
    case Dtype::float16: return GradRowsFor<RowTag<float>, f16>(args, b, e, sums);
    case Dtype::bfloat16: return GradRowsFor<RowTag<float>, bf16>(args, b, e, sums);
  }
}

// NOLINTNEXTLINE(google-readability-namespace-comments)
}  // namespace HWY_NAMESPACE
}  // namespace kernels
}  // namespace lngrad
HWY_AFTER_NAMESPACE();

#endif  // LNGRAD_KERNELS_GRAD_ROWS_INL_H_
