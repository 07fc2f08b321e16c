// layer_norm_grad_beta rows: the column sums of dy*res_for_gamma and dy.
// Per-target code: included by dispatch.cc once per Highway target.
#if defined(LNGRAD_KERNELS_BETA_ROWS_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef LNGRAD_KERNELS_BETA_ROWS_INL_H_
#undef LNGRAD_KERNELS_BETA_ROWS_INL_H_
#else
#define LNGRAD_KERNELS_BETA_ROWS_INL_H_
#endif

#include "kernels/convert-inl.h"
#include "kernels/kernels.hpp"

#include <hwy/highway.h>

HWY_BEFORE_NAMESPACE();
namespace lngrad {
namespace kernels {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

template <class DF, typename TD, typename TR>
void BetaRowsT(const BetaArgs& args, int64_t row_begin, int64_t row_end, void* acc_gamma_v, void* acc_beta_v) {
  using A = hn::TFromD<DF>;
  const DF df;
  const size_t N = hn::Lanes(df);
  const size_t h = static_cast<size_t>(args.h);
  A* acc_gamma = static_cast<A*>(acc_gamma_v);
  A* acc_beta = static_cast<A*>(acc_beta_v);
  const TD* dy = static_cast<const TD*>(args.dy);
  const TR* res = static_cast<const TR*>(args.res_for_gamma);
  constexpr bool kEvenOdd = kInPairs<TD> && std::is_same_v<TD, TR>;
  // Column-wise over groups of rows, as GradRowsT: one read and write of the
  // partial sums per group, rows added in order.
  const size_t group = static_cast<size_t>(args.group_rows);
  bool first_group = true;
  for (int64_t g0 = row_begin; g0 < row_end; g0 += static_cast<int64_t>(group)) {
    const size_t rows = static_cast<size_t>(HWY_MIN(static_cast<int64_t>(group), row_end - g0));
    const size_t offset = static_cast<size_t>(g0) * h;
    auto columns = [&](size_t j0, size_t n, bool full) HWY_ATTR {
      auto sum_g = hn::Zero(df), sum_b = hn::Zero(df);
      if (!first_group) {
        sum_g = LoadPart(df, acc_gamma + j0, n, full);
        sum_b = LoadPart(df, acc_beta + j0, n, full);
      }
      for (size_t k = 0; k < rows; ++k) {
        const size_t at = offset + k * h + j0;
        const auto d = LoadPart(df, dy + at, n, full);
        sum_g = hn::MulAdd(d, LoadPart(df, res + at, n, full), sum_g);
        sum_b = hn::Add(sum_b, d);
      }
      StorePart(df, sum_g, acc_gamma + j0, n, full);
      StorePart(df, sum_b, acc_beta + j0, n, full);
    };
    // bfloat16 dy and res_for_gamma: whole pairs of vectors as (even, odd),
    // as in GradRowsT, the sums in that order until the end of the call.
    auto pair_columns = [&](size_t j0) HWY_ATTR {
      if constexpr (kEvenOdd) {
        auto sum_ge = hn::Zero(df), sum_go = hn::Zero(df), sum_be = hn::Zero(df), sum_bo = hn::Zero(df);
        if (!first_group) {
          sum_ge = hn::LoadU(df, acc_gamma + j0);
          sum_go = hn::LoadU(df, acc_gamma + j0 + N);
          sum_be = hn::LoadU(df, acc_beta + j0);
          sum_bo = hn::LoadU(df, acc_beta + j0 + N);
        }
        for (size_t k = 0; k < rows; ++k) {
          const size_t at = offset + k * h + j0;
          hn::Vec<DF> d_e, d_o, r_e, r_o;
          LoadPairAs(df, dy + at, d_e, d_o);
          LoadPairAs(df, res + at, r_e, r_o);
          sum_ge = hn::MulAdd(d_e, r_e, sum_ge);
          sum_be = hn::Add(sum_be, d_e);
          sum_go = hn::MulAdd(d_o, r_o, sum_go);
          sum_bo = hn::Add(sum_bo, d_o);
        }
        hn::StoreU(sum_ge, df, acc_gamma + j0);
        hn::StoreU(sum_go, df, acc_gamma + j0 + N);
        hn::StoreU(sum_be, df, acc_beta + j0);
        hn::StoreU(sum_bo, df, acc_beta + j0 + N);
      }
    };
    size_t j = 0;
    if constexpr (kEvenOdd) {
      for (; j + 2 * N <= h; j += 2 * N) pair_columns(j);
    }
    for (; j + N <= h; j += N) columns(j, N, true);
    if (j < h) columns(j, h - j, false);
    first_group = false;
  }
  if constexpr (kEvenOdd) {  // the column sums back in element order
    if (!first_group) {
      for (A* acc : {acc_gamma, acc_beta}) PairsToElementOrder(df, PairOrderIndices(df), acc, h / (2 * N));
    }
  }
}

template <typename TD>
void BetaRows16(const BetaArgs& args, int64_t b, int64_t e, void* ag, void* ab) {
  using DF = hn::ScalableTag<float>;
  if (args.res_dtype == Dtype::float32) return BetaRowsT<DF, TD, float>(args, b, e, ag, ab);
  return BetaRowsT<DF, TD, TD>(args, b, e, ag, ab);
}

void BetaRows(const BetaArgs& args, int64_t b, int64_t e, void* ag, void* ab) {
  switch (args.dy_dtype) {
    case Dtype::float64: return BetaRowsT<hn::ScalableTag<double>, double, double>(args, b, e, ag, ab);
    case Dtype::float32: return BetaRowsT<hn::ScalableTag<float>, float, float>(args, b, e, ag, ab);
    case Dtype::float16: return BetaRows16<f16>(args, b, e, ag, ab);
    case Dtype::bfloat16: return BetaRows16<bf16>(args, b, e, ag, ab);
  }
}

// One BetaRows call per block: this kernel has no fused loop to carry over.
void BetaRowsInBlocks(const BetaArgs& args, int64_t b, int64_t e, const BlockSums& sums) {
  for (int64_t r = b; r < e; r += sums.block_rows) {
    void* g = nullptr;
    void* be = nullptr;
    sums.next(&g, &be);
    BetaRows(args, r, HWY_MIN(e, r + sums.block_rows), g, be);
  }
}

// NOLINTNEXTLINE(google-readability-namespace-comments)
}  // namespace HWY_NAMESPACE
}  // namespace kernels
}  // namespace lngrad
HWY_AFTER_NAMESPACE();

#endif  // LNGRAD_KERNELS_BETA_ROWS_INL_H_
