// layer_norm forward rows: y, mean, variance and rstd.
// Per-target code: included by dispatch.cc once per Highway target.
#if defined(LNGRAD_KERNELS_FORWARD_ROWS_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef LNGRAD_KERNELS_FORWARD_ROWS_INL_H_
#undef LNGRAD_KERNELS_FORWARD_ROWS_INL_H_
#else
#define LNGRAD_KERNELS_FORWARD_ROWS_INL_H_
#endif

#include <cmath>

#include "common/scalar.hpp"
#include "kernels/convert-inl.h"
#include "kernels/kernels.hpp"
#include "kernels/line_stores-inl.h"
#include "kernels/row_sums-inl.h"

#include <hwy/highway.h>

HWY_BEFORE_NAMESPACE();
namespace lngrad {
namespace kernels {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

template <class DF, typename T>
void ForwardRowsT(const ForwardArgs& args, int64_t row_begin, int64_t row_end) {
  using A = hn::TFromD<DF>;
  const DF df;
  const size_t N = hn::Lanes(df);
  const size_t h = static_cast<size_t>(args.h);
  const A* gamma = static_cast<const A*>(args.gamma);
  const A* beta = static_cast<const A*>(args.beta);
  const A inv_h = A(1) / static_cast<A>(h);
  constexpr size_t C = SumClasses<DF>();
  using Sum = RowSums<DF, 1>;
  const size_t whole = h / C * C;  // a row's elements in whole chunks
  ChunkRest<DF, T> rest;
  // bfloat16 rows in (even, odd) pairs as in GradRowsT.
  constexpr bool kEvenOdd = kInPairs<T>;
  // Streamed y: whole stores (a pair for bfloat16) from a head of cached
  // stores on, as GradRowsT's pd_x.
  size_t head = 0;
  const bool stream = StreamRows(args.stream_y, args.y, h, sizeof(T), (kEvenOdd ? 2 * N : N) * sizeof(T), &head);
  // gamma and beta in pair order for y's whole pairs (from the head).
  const A* gamma_p = gamma;
  const A* beta_p = beta;
  if constexpr (kEvenOdd) {
    if (h >= 2 * N) {
      A* scratch = PairScratch(h);
      gamma_p = PairOrdered(df, gamma, h, head, scratch);
      beta_p = PairOrdered(df, beta, h, head, scratch + PairScratchStride(h));
    }
  }
  auto load2 = [&](const T* p, hn::Vec<DF>& a, hn::Vec<DF>& b) HWY_ATTR __attribute__((always_inline)) {
    if constexpr (kEvenOdd) {
      LoadPairAs(df, p, a, b);
    } else {
      a = LoadAs(df, p);
      b = LoadAs(df, p + N);
    }
  };
  for (int64_t r = row_begin; r < row_end; ++r) {
    const T* x = static_cast<const T*>(args.x) + static_cast<size_t>(r) * h;
    T* y = static_cast<T*>(args.y) + static_cast<size_t>(r) * h;
    // Two-pass (centred) statistics over the cached row, each sum in the
    // order of row_sums-inl.h (the same bits on every target with FMA).
    const T* x_rest = whole < h ? rest.Fill(x + whole, h - whole) : nullptr;
    // f(slot, v, lanes) over the row's chunks, the last partial one padded.
    auto for_each_chunk_vector = [&](const auto& f) HWY_ATTR __attribute__((always_inline)) {
      for (size_t j = 0; j < whole; j += C) ForEachChunkVector(df, x + j, C, f);
      if (whole < h) ForEachChunkVector(df, x_rest, h - whole, f);
    };
    Sum sum;
    ZeroSums(df, sum);
    for_each_chunk_vector([&](size_t slot, hn::Vec<DF> v, size_t /* lanes: padding adds +0 */) HWY_ATTR
                              __attribute__((always_inline)) { AddToSum(df, sum, 0, slot, v); });
    const A mean = TotalOf(df, sum, 0) * inv_h;
    const auto vmean = hn::Set(df, mean);
    ZeroSums(df, sum);
    for_each_chunk_vector([&](size_t slot, hn::Vec<DF> v, size_t lanes) HWY_ATTR __attribute__((always_inline)) {
      auto xm = hn::Sub(v, vmean);
      if (lanes < N) xm = hn::IfThenElseZero(hn::FirstN(df, lanes), xm);  // padding
      MulAddToSum(df, sum, 0, slot, xm, xm);
    });
    const A variance = TotalOf(df, sum, 0) * inv_h;
    const A rstd = A(1) / std::sqrt(variance + static_cast<A>(args.epsilon));
    const auto vrstd = hn::Set(df, rstd);
    // y = (x - mean)*rstd*gamma + beta
    auto y_of = [&](hn::Vec<DF> xv, hn::Vec<DF> g, hn::Vec<DF> b) HWY_ATTR __attribute__((always_inline)) {
      return hn::MulAdd(hn::Mul(hn::Sub(xv, vmean), vrstd), g, b);
    };
    size_t j = 0;
    // Elements [j, end) in element order with cached stores: the head, and
    // what follows the whole stores.
    auto cached_up_to = [&](size_t end) HWY_ATTR __attribute__((always_inline)) {
      for (; j + N <= end; j += N) {
        StoreAs(df, y_of(LoadAs(df, x + j), hn::LoadU(df, gamma + j), hn::LoadU(df, beta + j)), y + j);
      }
      if (j < end) {
        const size_t n = end - j;
        StoreTail(df, y_of(LoadTail(df, x + j, n), LoadTail(df, gamma + j, n), LoadTail(df, beta + j, n)), y + j, n);
        j = end;
      }
    };
    cached_up_to(head);
    if constexpr (kEvenOdd) {
      for (; j + 2 * N <= h; j += 2 * N) {
        hn::Vec<DF> a, b;
        load2(x + j, a, b);
        StorePairAs(df, y_of(a, hn::LoadU(df, gamma_p + j), hn::LoadU(df, beta_p + j)),
                    y_of(b, hn::LoadU(df, gamma_p + j + N), hn::LoadU(df, beta_p + j + N)), y + j, stream);
      }
    } else if (stream) {
      for (; j + N <= h; j += N) {
        StreamAs(df, y_of(LoadAs(df, x + j), hn::LoadU(df, gamma + j), hn::LoadU(df, beta + j)), y + j);
      }
    }
    cached_up_to(h);
    store_scalar(args.mean, args.stat_dtype, r, mean);
    store_scalar(args.variance, args.stat_dtype, r, variance);
    if (args.rstd != nullptr) store_scalar(args.rstd, args.stat_dtype, r, rstd);
  }
  if (stream) hwy::FlushStream();  // order the streamed stores before returning
}

void ForwardRows(const ForwardArgs& args, int64_t b, int64_t e) {
  switch (args.dtype) {
    case Dtype::float64: return ForwardRowsT<RowTag<double>, double>(args, b, e);
    case Dtype::float32: return ForwardRowsT<RowTag<float>, float>(args, b, e);
    case Dtype::float16: return ForwardRowsT<RowTag<float>, f16>(args, b, e);
    case Dtype::bfloat16: return ForwardRowsT<RowTag<float>, bf16>(args, b, e);
  }
}

// NOLINTNEXTLINE(google-readability-namespace-comments)
}  // namespace HWY_NAMESPACE
}  // namespace kernels
}  // namespace lngrad
HWY_AFTER_NAMESPACE();

#endif  // LNGRAD_KERNELS_FORWARD_ROWS_INL_H_
