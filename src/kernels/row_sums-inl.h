// Row sums in one fixed order on every target with FMA, whatever its vector
// width: pass 1 of layer_norm_grad and layer_norm's statistics give the same
// bits on AVX-512, AVX2, NEON and SVE at any vector length.
//
// The order (docs/PERFORMANCE.md, "The same bits on every target"):
//   - a row's element e goes to running sum (class) e mod C, where C is 128
//     bytes of lanes (32 floats, 16 doubles); each class adds its elements in
//     row order, from +0, with one FMA where the formula has a product;
//   - the C class sums then fold by halves, s[l] += s[l + C/2], down to one.
// A target holds the classes as C/N vectors of N lanes. Elements in order:
// vector i holds classes [iN, iN + N). bfloat16 read in (even, odd) pairs:
// pair p's even elements are vector p, its odd ones vector p + C/2N, so that
// the first fold adds element 2l to 2l + 1; its order is the same on every
// target that reads bfloat16 in pairs (all but the scalar one).
// Targets without FMA (SSE4, SSSE3, the scalar one) round products apart and
// differ in the last bits anyway; they keep two vectors of classes.
// Per-target code: included by dispatch.cc once per Highway target.
#if defined(LNGRAD_KERNELS_ROW_SUMS_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef LNGRAD_KERNELS_ROW_SUMS_INL_H_
#undef LNGRAD_KERNELS_ROW_SUMS_INL_H_
#else
#define LNGRAD_KERNELS_ROW_SUMS_INL_H_
#endif

#include <cstddef>
#include <cstring>

#include "common/aligned.hpp"
#include "kernels/convert-inl.h"

#include <hwy/highway.h>

HWY_BEFORE_NAMESPACE();
namespace lngrad {
namespace kernels {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// The tag of the row kernels: at most 64 bytes, so that a vector never holds
// more lanes than there are classes (SVE vectors may be up to 256 bytes).
template <typename A>
using RowTag = hn::CappedTag<A, 64 / sizeof(A)>;

// C, the number of classes of a row sum.
template <class DF>
constexpr size_t SumClasses() {
#if HWY_NATIVE_FMA
  return 128 / sizeof(hn::TFromD<DF>);
#else
  return 2 * hn::MaxLanes(DF());
#endif
}

// Vectors per chunk of C elements (C/N).
template <class DF>
HWY_INLINE size_t ChunkVectors(DF df) {
  return SumClasses<DF>() / hn::Lanes(df);
}

#if HWY_HAVE_SCALABLE
// S row sums of C classes each, in memory: SVE vectors are sizeless and
// cannot be array elements.
template <class DF, size_t S>
using RowSums = hn::TFromD<DF>[S][SumClasses<DF>()];

template <class DF, size_t S>
HWY_INLINE hn::Vec<DF> GetSum(DF df, const RowSums<DF, S>& sums, size_t s, size_t i) {
  return hn::LoadU(df, sums[s] + i * hn::Lanes(df));
}
template <class DF, size_t S>
HWY_INLINE void PutSum(DF df, RowSums<DF, S>& sums, size_t s, size_t i, hn::Vec<DF> v) {
  hn::StoreU(v, df, sums[s] + i * hn::Lanes(df));
}
#else
// S row sums as C/N vectors each (a plain array: on NEON a struct of vectors
// gets a constructor without the target's attributes).
template <class DF, size_t S>
using RowSums = hn::Vec<DF>[S][SumClasses<DF>() / hn::MaxLanes(DF())];

template <class DF, size_t S>
HWY_INLINE hn::Vec<DF> GetSum(DF /* df */, const RowSums<DF, S>& sums, size_t s, size_t i) {
  return sums[s][i];
}
template <class DF, size_t S>
HWY_INLINE void PutSum(DF /* df */, RowSums<DF, S>& sums, size_t s, size_t i, hn::Vec<DF> v) {
  sums[s][i] = v;
}
#endif

template <class DF, size_t S>
HWY_INLINE void ZeroSums(DF df, RowSums<DF, S>& sums) {
  const size_t M = ChunkVectors(df);
  for (size_t s = 0; s < S; ++s) {
    for (size_t i = 0; i < M; ++i) PutSum(df, sums, s, i, hn::Zero(df));
  }
}

// Class vector i of sum s += v, and += a*b.
template <class DF, size_t S>
HWY_INLINE void AddToSum(DF df, RowSums<DF, S>& sums, size_t s, size_t i, hn::Vec<DF> v) {
  PutSum(df, sums, s, i, hn::Add(GetSum(df, sums, s, i), v));
}
template <class DF, size_t S>
HWY_INLINE void MulAddToSum(DF df, RowSums<DF, S>& sums, size_t s, size_t i, hn::Vec<DF> a, hn::Vec<DF> b) {
  PutSum(df, sums, s, i, hn::MulAdd(a, b, GetSum(df, sums, s, i)));
}

#if !HWY_HAVE_SCALABLE
// The lanes of v folded by halves, as SumOfLanes does on x86 (which it does
// not promise).
template <class D>
HWY_INLINE hn::TFromD<D> FoldLanes(D d, hn::Vec<D> v) {
#if HWY_TARGET == HWY_SCALAR
  (void)d;
  return hn::GetLane(v);
#else
  if constexpr (hn::MaxLanes(D()) == 1) {
    (void)d;
    return hn::GetLane(v);
  } else {
    const hn::Half<D> dh;
    return FoldLanes(dh, hn::Add(hn::LowerHalf(dh, v), hn::UpperHalf(dh, v)));
  }
#endif
}
#endif

// Whether a row's last, partial chunk is read in place by masked loads (which
// cannot fault past the mask on AVX-512 and SVE) rather than from a
// zero-padded copy. AVX2 masks too but reads the copy: in place, the masks
// made GCC 12 roll up GradRowsT's compiled row loops (docs/TUNING.md).
constexpr bool kMaskedRest = !HWY_MEM_OPS_MIGHT_FAULT && HWY_TARGET != HWY_SCALAR;

// The vector of N elements at p, of which the first n belong to the row;
// with kMaskedRest the others read as +0, as they do from a padded copy.
template <class DF, typename T>
HWY_INLINE hn::Vec<DF> LoadChunkVector(DF df, const T* p, size_t n) {
  if constexpr (kMaskedRest) {
    if (n < hn::Lanes(df)) return LoadTail(df, p, n);
  }
  return LoadAs(df, p);
}
// The same for the pair of 2N elements at p.
template <class DF, typename T>
HWY_INLINE void LoadChunkPair(DF df, const T* p, size_t n, hn::Vec<DF>& even, hn::Vec<DF>& odd) {
#if !HWY_MEM_OPS_MIGHT_FAULT
  if (n < 2 * hn::Lanes(df)) return LoadPairTail(df, p, n, even, odd);
#else
  (void)n;
#endif
  LoadPairAs(df, p, even, odd);
}

// The elements [0, C) at a and b (C = SumClasses) as vectors with their class
// slots: f(slot, va, vb, at, lanes), where `at` is the vector's offset in a
// chunk-ordered copy of a third operand (gamma) and `lanes` how many of its
// lanes hold elements below `valid` (the rest is padding).
template <class DF, typename T, class F>
HWY_INLINE void ForEachChunkVector(DF df, const T* a, const T* b, size_t valid, const F& f) {
  const size_t N = hn::Lanes(df), M = ChunkVectors(df);
  auto below = [valid](size_t at) { return valid > at ? valid - at : 0; };
  if constexpr (kInPairs<T>) {
    for (size_t q = 0; q < M / 2; ++q) {
      const size_t at = 2 * q * N, n = below(at);
      hn::Vec<DF> a_even, a_odd, b_even, b_odd;
      LoadChunkPair(df, a + at, n, a_even, a_odd);
      LoadChunkPair(df, b + at, n, b_even, b_odd);
      f(q, a_even, b_even, at, (n + 1) / 2);
      f(q + M / 2, a_odd, b_odd, at + N, n / 2);
    }
  } else {
    for (size_t i = 0; i < M; ++i) {
      const size_t at = i * N, n = below(at);
      f(i, LoadChunkVector(df, a + at, n), LoadChunkVector(df, b + at, n), at, n);
    }
  }
}
// The same for the elements at a alone: f(slot, va, lanes). Its own copy:
// GCC 12 for SVE crashed (in ivopts) on the one above given one pointer twice.
template <class DF, typename T, class F>
HWY_INLINE void ForEachChunkVector(DF df, const T* a, size_t valid, const F& f) {
  const size_t N = hn::Lanes(df), M = ChunkVectors(df);
  auto below = [valid](size_t at) { return valid > at ? valid - at : 0; };
  if constexpr (kInPairs<T>) {
    for (size_t q = 0; q < M / 2; ++q) {
      const size_t at = 2 * q * N, n = below(at);
      hn::Vec<DF> even, odd;
      LoadChunkPair(df, a + at, n, even, odd);
      f(q, even, (n + 1) / 2);
      f(q + M / 2, odd, n / 2);
    }
  } else {
    for (size_t i = 0; i < M; ++i) {
      const size_t at = i * N, n = below(at);
      f(i, LoadChunkVector(df, a + at, n), n);
    }
  }
}

#if LNGRAD_SHIFTED_LINES
// The 64-byte steps of a row a whole number of 32-bit lanes past a line, read
// one aligned line per step and joined to the line before, instead of loads
// that straddle two lines (docs/TUNING.md). 32-bit lanes serve every type,
// with AVX-512F's permute.
class ShiftedLoads {
 public:
  using D = hn::Full512<uint32_t>;
  using Line = hn::Vec<D>;

  // Whether rows at a and b take them: a whole number of lanes past a line,
  // and one of them off a line.
  static bool Apply(const void* a, const void* b) {
    const uintptr_t p = reinterpret_cast<uintptr_t>(a), q = reinterpret_cast<uintptr_t>(b);
    return (p % kLineBytes != 0 || q % kLineBytes != 0) && p % sizeof(uint32_t) == 0 && q % sizeof(uint32_t) == 0;
  }
  // The row's steps from `row` on; its first line's bytes before `row` are
  // not read (they may lie before the buffer).
  void Begin(const void* row) {
    const size_t shift = reinterpret_cast<uintptr_t>(row) % kLineBytes;
    const size_t k = shift / sizeof(uint32_t);
    line_ = reinterpret_cast<const uint32_t*>(static_cast<const unsigned char*>(row) - shift);
    index_ = LaneShift<uint32_t>(k);
    prev_ = hn::MaskedLoad(hn::Not(hn::FirstN(D(), k)), D(), line_);
  }
  // The next step's 64 bytes; reads the whole line after them.
  HWY_INLINE Line Next() {
    line_ += kLanes;
    const Line next = hn::Load(D(), line_);
    const Line v = ShiftAcross<uint32_t>(prev_, next, index_);  // lane i: lane i + k of (prev, next)
    prev_ = next;
    return v;
  }

 private:
  static constexpr size_t kLanes = kLineBytes / sizeof(uint32_t);
  Line index_, prev_;  // set by Begin (see ShiftedLines)
  const uint32_t* line_ = nullptr;
};

// The elements [0, C) of bfloat16 rows read by lines, a and b, as
// ForEachChunkVector gives them: f(slot, va, vb, at).
template <class DF, class F>
HWY_INLINE void ForEachChunkLine(DF df, ShiftedLoads& a, ShiftedLoads& b, const F& f) {
  constexpr size_t kN = hn::MaxLanes(DF()), kM = SumClasses<DF>() / kN;  // constants: the loop unrolls
  const hn::Repartition<uint16_t, DF> du16;
  for (size_t q = 0; q < kM / 2; ++q) {
    hn::Vec<DF> a_even, a_odd, b_even, b_odd;
    SplitPair(df, hn::BitCast(du16, a.Next()), a_even, a_odd);
    SplitPair(df, hn::BitCast(du16, b.Next()), b_even, b_odd);
    f(q, a_even, b_even, 2 * q * kN);
    f(q + kM / 2, a_odd, b_odd, 2 * q * kN + kN);
  }
}
#endif  // LNGRAD_SHIFTED_LINES

// Where a row's last, partial chunk is read: Fill(p, n) gives the n < C
// elements at p in place (kMaskedRest), or copied into a buffer zero-padded
// to C elements, by masked loads where there are (AVX2). Made once per call:
// every row has the same n, so memcpy leaves the padding zero.
template <class DF, typename T, bool kInPlace = kMaskedRest>
class ChunkRest {
 public:
  const T* Fill(const T* p, size_t n) {
#if LNGRAD_MASKED_TAILS
    CopyFirst(lanes_, p, n, SumClasses<DF>());
#else
    std::memcpy(static_cast<void*>(lanes_), p, n * sizeof(T));
#endif
    return lanes_;
  }

 private:
  T lanes_[SumClasses<DF>()] = {};
};
template <class DF, typename T>
class ChunkRest<DF, T, true> {
 public:
  const T* Fill(const T* p, size_t /* n */) { return p; }
};

// Sum s, its classes folded by halves.
template <class DF, size_t S>
HWY_INLINE hn::TFromD<DF> TotalOf(DF df, const RowSums<DF, S>& sums, size_t s) {
#if HWY_HAVE_SCALABLE
  (void)df;
  hn::TFromD<DF> c[SumClasses<DF>()];
  for (size_t l = 0; l < SumClasses<DF>(); ++l) c[l] = sums[s][l];
  for (size_t w = SumClasses<DF>() / 2; w != 0; w /= 2) {
    for (size_t l = 0; l < w; ++l) c[l] += c[l + w];
  }
  return c[0];
#else
  constexpr size_t kM = SumClasses<DF>() / hn::MaxLanes(DF());
  if constexpr (kM == 1) {
    return FoldLanes(df, sums[s][0]);
  } else {
    hn::Vec<DF> v[kM / 2];
    for (size_t i = 0; i < kM / 2; ++i) v[i] = hn::Add(sums[s][i], sums[s][i + kM / 2]);
    for (size_t w = kM / 4; w != 0; w /= 2) {
      for (size_t i = 0; i < w; ++i) v[i] = hn::Add(v[i], v[i + w]);
    }
    return FoldLanes(df, v[0]);
  }
#endif
}

// NOLINTNEXTLINE(google-readability-namespace-comments)
}  // namespace HWY_NAMESPACE
}  // namespace kernels
}  // namespace lngrad
HWY_AFTER_NAMESPACE();

#endif  // LNGRAD_KERNELS_ROW_SUMS_INL_H_
