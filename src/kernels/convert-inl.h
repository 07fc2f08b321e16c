// Loads and stores of the storage types (float32, float64, bfloat16, float16)
// as float (or double) vectors: whole vectors, bfloat16 pairs, and tails.
// Per-target code: included by dispatch.cc once per Highway target.
#if defined(LNGRAD_KERNELS_CONVERT_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef LNGRAD_KERNELS_CONVERT_INL_H_
#undef LNGRAD_KERNELS_CONVERT_INL_H_
#else
#define LNGRAD_KERNELS_CONVERT_INL_H_
#endif

#include <cstring>
#include <type_traits>
#include <vector>

#include "common/aligned.hpp"
#include "lngrad/half.hpp"

#include <hwy/cache_control.h>
#include <hwy/highway.h>

// F16C hardware conversions round correctly; Highway 1.0.3's emulation for the
// other targets truncates and ignores Inf/NaN, so those use integer code here.
#undef LNGRAD_HW_F16
#if HWY_ARCH_X86 && (HWY_TARGET <= HWY_AVX2)
#define LNGRAD_HW_F16 1
#else
#define LNGRAD_HW_F16 0
#endif

HWY_BEFORE_NAMESPACE();
namespace lngrad {
namespace kernels {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

using bf16 = hwy::bfloat16_t;
using f16 = hwy::float16_t;

// ---- Loads and stores of storage types as float (or double) vectors. -------

template <class DF>
HWY_INLINE hn::Vec<DF> LoadAs(DF df, const float* p) {
  return hn::LoadU(df, p);
}
template <class DF>
HWY_INLINE hn::Vec<DF> LoadAs(DF df, const double* p) {
  return hn::LoadU(df, p);
}
// Decode: 16-bit storage lanes (as uint16_t) as a float vector.
template <class DF>
using Bits16 = hn::Vec<hn::Rebind<uint16_t, DF>>;

template <class DF>
HWY_INLINE hn::Vec<DF> DecodeAs(DF df, Bits16<DF> bits, const bf16* /* tag */) {
  const hn::RebindToUnsigned<DF> du32;
  return hn::BitCast(df, hn::ShiftLeft<16>(hn::PromoteTo(du32, bits)));
}
template <class DF>
HWY_INLINE hn::Vec<DF> DecodeAs(DF df, Bits16<DF> bits, const f16* /* tag */) {
#if LNGRAD_HW_F16
  const hn::Rebind<f16, DF> df16;
  return hn::PromoteTo(df, hn::BitCast(df16, bits));
#else
  const hn::RebindToUnsigned<DF> du32;
  const hn::RebindToSigned<DF> di32;
  const auto h = hn::PromoteTo(du32, bits);
  const auto sign = hn::ShiftLeft<16>(hn::And(h, hn::Set(du32, 0x8000u)));
  const auto magnitude = hn::And(h, hn::Set(du32, 0x7FFFu));
  const auto shifted = hn::ShiftLeft<13>(magnitude);
  // Rebias by 2^112: exact for normal and subnormal halves.
  const auto finite = hn::BitCast(du32, hn::Mul(hn::BitCast(df, shifted), hn::Set(df, 0x1p112f)));
  const auto special = hn::Or(shifted, hn::Set(du32, 0x7F800000u));  // Inf, NaN
  const auto is_special = hn::RebindMask(du32, hn::Gt(hn::BitCast(di32, magnitude), hn::Set(di32, 0x7BFF)));
  return hn::BitCast(df, hn::Or(sign, hn::IfThenElse(is_special, special, finite)));
#endif
}
template <class DF, typename T, std::enable_if_t<sizeof(T) == 2, int> = 0>
HWY_INLINE hn::Vec<DF> LoadAs(DF df, const T* p) {
  const hn::Rebind<uint16_t, DF> du16;
  return DecodeAs(df, hn::LoadU(du16, reinterpret_cast<const uint16_t*>(p)), p);
}

// Encode: a float (or double) vector in the storage representation; 16-bit
// types become uint16_t lanes.
template <typename T>
using StorageLane = std::conditional_t<sizeof(T) == 2, uint16_t, T>;

template <class DF>
HWY_INLINE hn::Vec<DF> Encode(DF /* df */, hn::Vec<DF> v, float* /* tag */) {
  return v;
}
template <class DF>
HWY_INLINE hn::Vec<DF> Encode(DF /* df */, hn::Vec<DF> v, double* /* tag */) {
  return v;
}
template <class DF>
HWY_INLINE hn::Vec<hn::Rebind<uint16_t, DF>> Encode(DF /* df */, hn::Vec<DF> v, bf16* /* tag */) {
  // Round to nearest-even (Highway 1.0.3's DemoteTo truncates); NaN stays NaN.
  const hn::RebindToUnsigned<DF> du32;
  const hn::RebindToSigned<DF> di32;
  const hn::Rebind<uint16_t, DF> du16;
  const auto u = hn::BitCast(du32, v);
  const auto lsb = hn::And(hn::ShiftRight<16>(u), hn::Set(du32, 1u));
  const auto rounded = hn::ShiftRight<16>(hn::Add(hn::Add(u, hn::Set(du32, 0x7FFFu)), lsb));
  const auto quiet = hn::Or(hn::ShiftRight<16>(u), hn::Set(du32, 0x40u));
  const auto out = hn::IfThenElse(hn::RebindMask(du32, hn::IsNaN(v)), quiet, rounded);
  return hn::DemoteTo(du16, hn::BitCast(di32, out));
}
template <class DF>
HWY_INLINE hn::Vec<hn::Rebind<uint16_t, DF>> Encode(DF df, hn::Vec<DF> v, f16* /* tag */) {
  const hn::Rebind<uint16_t, DF> du16;
#if LNGRAD_HW_F16
  const hn::Rebind<f16, DF> df16;
  (void)df;
  return hn::BitCast(du16, hn::DemoteTo(df16, v));
#else
  // Vector form of lngrad::float_to_float16 (round to nearest-even).
  const hn::RebindToUnsigned<DF> du32;
  const hn::RebindToSigned<DF> di32;
  const auto u = hn::BitCast(du32, v);
  const auto sign = hn::And(hn::ShiftRight<16>(u), hn::Set(du32, 0x8000u));
  const auto a = hn::And(u, hn::Set(du32, 0x7FFFFFFFu));
  const auto ai = hn::BitCast(di32, a);
  const auto is_big = hn::RebindMask(du32, hn::Gt(ai, hn::Set(di32, 0x477FFFFF)));
  const auto is_nan = hn::RebindMask(du32, hn::Gt(ai, hn::Set(di32, 0x7F800000)));
  const auto is_small = hn::RebindMask(du32, hn::Lt(ai, hn::Set(di32, 0x38800000)));
  const auto big = hn::IfThenElse(is_nan, hn::Set(du32, 0x7E00u), hn::Set(du32, 0x7C00u));
  const auto small = hn::Sub(hn::BitCast(du32, hn::Add(hn::BitCast(df, a), hn::Set(df, 0.5f))),
                             hn::Set(du32, 0x3F000000u));
  const auto odd = hn::And(hn::ShiftRight<13>(a), hn::Set(du32, 1u));
  const auto normal = hn::ShiftRight<13>(hn::Add(hn::Add(a, hn::Set(du32, 0xC8000FFFu)), odd));
  const auto out = hn::Or(sign, hn::IfThenElse(is_big, big, hn::IfThenElse(is_small, small, normal)));
  return hn::DemoteTo(du16, hn::BitCast(di32, out));
#endif
}

template <class DF, typename T>
HWY_INLINE void StoreAs(DF df, hn::Vec<DF> v, T* p) {
  // The descriptor from DF: on SVE, DFromV of a half-width vector (16-bit T)
  // is a whole vector's, and the store would write twice the elements.
  hn::StoreU(Encode(df, v, p), hn::Rebind<StorageLane<T>, DF>(), reinterpret_cast<StorageLane<T>*>(p));
}

// Non-temporal store; p must be aligned to the encoded vector's size.
// Highway 1.0.3 streams a vector narrower than 16 bytes (16-bit T on the
// 128-bit targets) as 16 bytes, past its end and faulting unless 16-byte
// aligned: such a vector takes an ordinary store.
template <class DF, typename T>
HWY_INLINE void StreamAs(DF df, hn::Vec<DF> v, T* p) {
  const auto e = Encode(df, v, p);
  using DE = hn::Rebind<StorageLane<T>, DF>;  // as in StoreAs
  if constexpr (hn::MaxLanes(DE()) * sizeof(hn::TFromD<DE>) < 16) {
    hn::StoreU(e, DE(), reinterpret_cast<StorageLane<T>*>(p));
  } else {
    hn::Stream(e, DE(), reinterpret_cast<StorageLane<T>*>(p));
  }
}

#undef LNGRAD_NATIVE_BF16
#if HWY_TARGET == HWY_AVX3
// bfloat16 stored with AVX512-BF16's vcvtneps2bf16: one instruction instead of
// the integer rounding above, with the same result (nearest-even, NaN keeps
// its sign and top payload bits and is quieted), except that it flushes
// subnormal inputs; a vector holding one takes the integer path. Only the
// AVX3_BF16 table uses this type, and only on CPUs that have the instruction.
// Inline assembly, because Highway 1.0.3 has no target with AVX512-BF16.
enum class NativeBf16 : uint16_t {};
#define LNGRAD_NATIVE_BF16 1

template <class DF>
HWY_INLINE hn::Vec<DF> DecodeAs(DF df, Bits16<DF> bits, const NativeBf16* /* tag */) {
  return DecodeAs(df, bits, static_cast<const bf16*>(nullptr));
}
template <class DF>
HWY_INLINE hn::Vec<hn::Rebind<uint16_t, DF>> Encode(DF df, hn::Vec<DF> v, NativeBf16* /* tag */) {
  static_assert(sizeof(v.raw) == 64, "whole 512-bit vectors only");
  constexpr int kSubnormal = 0x20;  // vfpclassps category
  if (HWY_UNLIKELY(_mm512_fpclass_ps_mask(v.raw, kSubnormal) != 0)) {
    return Encode(df, v, static_cast<bf16*>(nullptr));
  }
  __m256i out;
  asm("vcvtneps2bf16 %1, %0" : "=v"(out) : "v"(v.raw));
  return hn::Vec<hn::Rebind<uint16_t, DF>>{out};
}
#else
#define LNGRAD_NATIVE_BF16 0
#endif

// ---- Lines shifted across two vectors (AVX-512). ----------------------------
// Rows that start off a line are read (ShiftedLoads) and streamed
// (ShiftedLines) a whole line at a time, each 64-byte vector joined from two
// by one two-vector permute. (Highway 1.0.3 has no run-time shift of two
// vectors, hence the intrinsics.)
#undef LNGRAD_SHIFTED_LINES
#if HWY_ARCH_X86 && HWY_TARGET <= HWY_AVX3
#define LNGRAD_SHIFTED_LINES 1
// The index for ShiftAcross by s lanes.
template <typename U>
HWY_INLINE hn::Vec<hn::Full512<U>> LaneShift(size_t s) {
  const hn::Full512<U> d;
  return hn::Add(hn::Iota(d, 0), hn::Set(d, static_cast<U>(s)));
}
// Lane i is lane i + s of (lo, hi) read as one vector of twice the lanes,
// `index` being LaneShift(s), s < the lanes of a vector.
template <typename U>
HWY_INLINE hn::Vec<hn::Full512<U>> ShiftAcross(hn::Vec<hn::Full512<U>> lo, hn::Vec<hn::Full512<U>> hi,
                                               hn::Vec<hn::Full512<U>> index) {
  if constexpr (sizeof(U) == 2) {
    return hn::Vec<hn::Full512<U>>{_mm512_permutex2var_epi16(lo.raw, index.raw, hi.raw)};
  } else {
    static_assert(sizeof(U) == 4, "16- or 32-bit lanes");
    return hn::Vec<hn::Full512<U>>{_mm512_permutex2var_epi32(lo.raw, index.raw, hi.raw)};
  }
}
#else
#define LNGRAD_SHIFTED_LINES 0
#endif

// ---- The first n lanes of a vector, in place. ------------------------------
// Masked loads and stores where a masked access cannot fault past the mask:
// AVX-512 and SVE for every lane size; AVX2 (vmaskmov) for 32- and 64-bit
// lanes, and for 16-bit ones as 32-bit words with an odd last lane apart.
// Masked-off lanes read as +0 and are not written. Without them (SSE4, NEON,
// the scalar target) tails go through a buffer (LoadTail, StoreTail).
#undef LNGRAD_MASKED_TAILS
#if !HWY_MEM_OPS_MIGHT_FAULT || HWY_TARGET == HWY_AVX2
#define LNGRAD_MASKED_TAILS 1
template <class D>
HWY_INLINE hn::Vec<D> LoadFirst(D d, const hn::TFromD<D>* p, size_t n) {
#if HWY_TARGET == HWY_AVX2
  if constexpr (sizeof(hn::TFromD<D>) == 2) {
    const hn::Repartition<uint32_t, D> dw;
    const auto words = hn::BitCast(d, hn::MaskedLoad(hn::FirstN(dw, n / 2), dw, reinterpret_cast<const uint32_t*>(p)));
    if (n % 2 == 0) return words;
    return hn::IfThenElseZero(hn::FirstN(d, n), hn::IfThenElse(hn::FirstN(d, n - 1), words, hn::Set(d, p[n - 1])));
  }
#endif
  return hn::MaskedLoad(hn::FirstN(d, n), d, p);
}
template <class D>
HWY_INLINE void StoreFirst(D d, hn::Vec<D> v, hn::TFromD<D>* p, size_t n) {
#if HWY_TARGET == HWY_AVX2
  if constexpr (sizeof(hn::TFromD<D>) == 2) {
    const hn::Repartition<uint32_t, D> dw;
    hn::BlendedStore(hn::BitCast(dw, v), hn::FirstN(dw, n / 2), dw, reinterpret_cast<uint32_t*>(p));
    if (n % 2 != 0) p[n - 1] = hn::ExtractLane(v, n - 1);
    return;
  }
#endif
  hn::BlendedStore(v, hn::FirstN(d, n), d, p);
}
// The first n of the `size` elements at src, the rest +0, in dst; size is a
// whole number of vectors. Masked loads and whole stores: vector loads of dst
// that follow get their data forwarded, which narrower stores (memcpy) delay
// until they reach the cache.
template <typename T>
HWY_NOINLINE void CopyFirst(T* dst, const T* src, size_t n, size_t size) {
  using L = StorageLane<T>;
  const hn::CappedTag<L, 64 / sizeof(L)> d;
  const size_t N = hn::Lanes(d);
  for (size_t i = 0; i < size; i += N) {
    const size_t left = n > i ? n - i : 0;
    hn::StoreU(LoadFirst(d, reinterpret_cast<const L*>(src) + i, HWY_MIN(left, N)), d, reinterpret_cast<L*>(dst) + i);
  }
}
#else
#define LNGRAD_MASKED_TAILS 0
#endif

// ---- bfloat16 in pairs of vectors. -------------------------------------------
// A bfloat16 is the upper half of a float32, so 2N of them loaded as N 32-bit
// lanes give the even elements by a shift and the odd ones by a mask: no
// widening shuffles (two per N elements otherwise). Rows of bfloat16 are
// processed in such pairs of vectors, gamma and the column sums kept in the
// same even/odd order (faster than widening loads: docs/TUNING.md).
// layer_norm and layer_norm_grad_beta read bfloat16 rows the same way.
template <typename T>
struct IsBf16 : std::is_same<T, bf16> {};
#if LNGRAD_NATIVE_BF16
template <>
struct IsBf16<NativeBf16> : std::true_type {};
#endif
template <typename T>
constexpr bool kInPairs = IsBf16<T>::value && HWY_TARGET != HWY_SCALAR;
// float16 rows go through layer_norm_grad's pass 2 two vectors at a time as
// well, in element order, where a vector of floats is a cache line
// (AVX-512): each row's pd_x then takes whole-line stores, which may stream.
// One vector at a time left every line half-written while the group's other
// rows were stored, so pd_x went through the cache, whose write-allocate
// reads its lines first: a fourth stream of memory traffic.
template <typename T>
constexpr bool kF16LineSteps = std::is_same_v<T, f16> && HWY_MAX_BYTES >= 64;

template <class DF>
using PairOrder = decltype(hn::SetTableIndices(DF(), static_cast<const int32_t*>(nullptr)));

// The calling thread's buffer for two PairOrdered copies of h floats, the
// first at its start, on a line, the second up to a line past
// PairScratchStride(h); grows, never shrinks (part of grad_workspace_bytes;
// layer_norm uses it too).
inline size_t PairScratchStride(size_t h) { return static_cast<size_t>(line_padded<float>(static_cast<int64_t>(h))); }
inline float* PairScratch(size_t h) {
  static thread_local LineVector<float> buffer;
  const size_t room = 2 * PairScratchStride(h) + kLineBytes / sizeof(float);
  if (buffer.size() < room) buffer.resize(room);
  return buffer.data();
}

// Elements before a line that put element `at` of an array on one.
template <typename A>
size_t LeadToLine(size_t at) {
  constexpr size_t kPerLine = kLineBytes / sizeof(A);
  return (kPerLine - at % kPerLine) % kPerLine;
}
// The calling thread's buffer for pass 2's copies of gamma and of a block's
// column sums placed after a head (GradRowsT); grows, never shrinks (part of
// grad_workspace_bytes).
template <typename A>
A* HeadScratch(size_t elements) {
  static thread_local LineVector<A> buffer;
  if (buffer.size() < elements) buffer.resize(elements);
  return buffer.data();
}

#if HWY_TARGET != HWY_SCALAR  // one lane per vector: no pairs

// 2N bfloat16 (as uint16_t lanes) as (even, odd) float vectors.
template <class DF>
HWY_INLINE void SplitPair(DF df, hn::Vec<hn::Repartition<uint16_t, DF>> bits, hn::Vec<DF>& even,
                          hn::Vec<DF>& odd) {
  const hn::RebindToUnsigned<DF> du32;
  const auto u = hn::BitCast(du32, bits);
  even = hn::BitCast(df, hn::ShiftLeft<16>(u));
  odd = hn::BitCast(df, hn::And(u, hn::Set(du32, 0xFFFF0000u)));
}

// Elements [0, 2N) at p as (even, odd) float vectors.
template <class DF, typename T>
HWY_INLINE void LoadPairAs(DF df, const T* p, hn::Vec<DF>& even, hn::Vec<DF>& odd) {
  const hn::Repartition<uint16_t, DF> du16;
  SplitPair(df, hn::LoadU(du16, reinterpret_cast<const uint16_t*>(p)), even, odd);
}

#if !HWY_MEM_OPS_MIGHT_FAULT
// The first n < 2N elements at p as LoadPairAs splits them, the rest +0,
// by a masked load.
template <class DF, typename T>
HWY_INLINE void LoadPairTail(DF df, const T* p, size_t n, hn::Vec<DF>& even, hn::Vec<DF>& odd) {
  const hn::Repartition<uint16_t, DF> du16;
  SplitPair(df, LoadFirst(du16, reinterpret_cast<const uint16_t*>(p), n), even, odd);
}
#endif

// The 2N bfloat16 of (even, odd) in element order; rounds as Encode does.
template <class DF>
HWY_INLINE hn::Vec<hn::Repartition<uint16_t, DF>> EncodePair(DF /* df */, hn::Vec<DF> even, hn::Vec<DF> odd,
                                                             bf16* /* tag */) {
  const hn::RebindToUnsigned<DF> du32;
  const hn::Repartition<uint16_t, DF> du16;
  // The bfloat16 in the upper half of each lane.
  auto rounded = [&](hn::Vec<DF> v) HWY_ATTR {
    const auto u = hn::BitCast(du32, v);
    const auto lsb = hn::And(hn::ShiftRight<16>(u), hn::Set(du32, 1u));
    const auto nearest = hn::Add(hn::Add(u, hn::Set(du32, 0x7FFFu)), lsb);
    return hn::IfThenElse(hn::RebindMask(du32, hn::IsNaN(v)), hn::Or(u, hn::Set(du32, 0x400000u)), nearest);
  };
  const auto lo = hn::ShiftRight<16>(rounded(even));
  const auto hi = hn::And(rounded(odd), hn::Set(du32, 0xFFFF0000u));
  return hn::BitCast(du16, hn::Or(lo, hi));
}

// float16 pairs are two vectors in element order (kF16LineSteps).
template <class DF>
HWY_INLINE void LoadPairAs(DF df, const f16* p, hn::Vec<DF>& first, hn::Vec<DF>& second) {
  first = LoadAs(df, p);
  second = LoadAs(df, p + hn::Lanes(df));
}
template <class DF>
HWY_INLINE hn::Vec<hn::Repartition<uint16_t, DF>> EncodePair(DF df, hn::Vec<DF> first, hn::Vec<DF> second,
                                                             f16* tag) {
  const hn::Repartition<uint16_t, DF> du16;
  return hn::Combine(du16, Encode(df, second, tag), Encode(df, first, tag));
}

#if LNGRAD_NATIVE_BF16
template <class DF>
HWY_INLINE hn::Vec<hn::Repartition<uint16_t, DF>> EncodePair(DF df, hn::Vec<DF> even, hn::Vec<DF> odd,
                                                             NativeBf16* /* tag */) {
  constexpr int kSubnormal = 0x20;  // as in Encode
  if (HWY_UNLIKELY(!_kortestz_mask16_u8(_mm512_fpclass_ps_mask(even.raw, kSubnormal),
                                         _mm512_fpclass_ps_mask(odd.raw, kSubnormal)))) {
    return EncodePair(df, even, odd, static_cast<bf16*>(nullptr));
  }
  __m512i halves;  // even's 16 results, then odd's
  asm("vcvtne2ps2bf16 %2, %1, %0" : "=v"(halves) : "v"(odd.raw), "v"(even.raw));
  const __m512i order = _mm512_set_epi16(31, 15, 30, 14, 29, 13, 28, 12, 27, 11, 26, 10, 25, 9, 24, 8, 23, 7, 22, 6,
                                         21, 5, 20, 4, 19, 3, 18, 2, 17, 1, 16, 0);
  return hn::Vec<hn::Repartition<uint16_t, DF>>{_mm512_permutexvar_epi16(order, halves)};
}
#endif

template <class DF, typename T>
HWY_INLINE void StorePairAs(DF df, hn::Vec<DF> even, hn::Vec<DF> odd, T* p, bool stream) {
  const hn::Repartition<uint16_t, DF> du16;
  const auto e = EncodePair(df, even, odd, p);
  if (stream) {
    hn::Stream(e, du16, reinterpret_cast<uint16_t*>(p));
  } else {
    hn::StoreU(e, du16, reinterpret_cast<uint16_t*>(p));
  }
}

// Lane indices that, followed by InterleaveLower/Upper (which work within
// 128-bit blocks), put (even, odd) back in element order.
template <class DF>
PairOrder<DF> PairOrderIndices(DF df) {
  const size_t N = hn::Lanes(df);
  constexpr size_t kBlock = 16 / sizeof(hn::TFromD<DF>);
  alignas(64) int32_t idx[HWY_MAX_BYTES / sizeof(int32_t)] = {};
  for (size_t l = 0; l < N; ++l) {
    const size_t b = l / kBlock, r = l % kBlock;
    idx[l] = static_cast<int32_t>(r < kBlock / 2 ? b * kBlock / 2 + r : N / 2 + b * kBlock / 2 + r - kBlock / 2);
  }
  return hn::SetTableIndices(df, idx);
}

// Floats in pair order back in element order, at p.
template <class DF>
HWY_INLINE void StorePairNatural(DF df, hn::Vec<DF> even, hn::Vec<DF> odd, PairOrder<DF> order,
                                 hn::TFromD<DF>* p) {
  const auto e = hn::TableLookupLanes(even, order);
  const auto o = hn::TableLookupLanes(odd, order);
  hn::StoreU(hn::InterleaveLower(df, e, o), df, p);
  hn::StoreU(hn::InterleaveUpper(df, e, o), df, p + hn::Lanes(df));
}

// `pairs` whole pairs of floats from p on, in (even, odd) order, back in
// element order.
template <class DF>
void PairsToElementOrder(DF df, PairOrder<DF> order, float* p, size_t pairs) {
  const size_t N = hn::Lanes(df);
  for (size_t t = 0; t < pairs; ++t, p += 2 * N) {
    StorePairNatural(df, hn::LoadU(df, p), hn::LoadU(df, p + N), order, p);
  }
}

// A whole pair step's res_for_gamma (even, odd as LoadPairAs splits them) at
// element `at` of res: as T, or for 16-bit T as float32 when as_float (res
// then holds floats), in element order.
template <class DF, typename T>
HWY_INLINE void StoreResPair(DF df, hn::Vec<DF> even, hn::Vec<DF> odd, PairOrder<DF> order, T* res, size_t at,
                             bool as_float) {
  if (!as_float) return StorePairAs(df, even, odd, res + at, false);
  hn::TFromD<DF>* p = static_cast<hn::TFromD<DF>*>(static_cast<void*>(res)) + at;
  if constexpr (kInPairs<T>) {
    StorePairNatural(df, even, odd, order, p);
  } else {
    hn::StoreU(even, df, p);
    hn::StoreU(odd, df, p + hn::Lanes(df));
  }
}

// A copy of the h floats at src with the pairs from element `base` on in
// (even, odd) order, the rest as they are; returns dst.
template <class DF>
const float* PairOrdered(DF df, const float* src, size_t h, size_t base, float* dst) {
  const size_t N = hn::Lanes(df);
  std::memcpy(dst, src, h * sizeof(float));
  for (size_t j = base; j + 2 * N <= h; j += 2 * N) {
    const auto lo = hn::LoadU(df, src + j);
    const auto hi = hn::LoadU(df, src + j + N);
    hn::StoreU(hn::ConcatEven(df, hi, lo), df, dst + j);
    hn::StoreU(hn::ConcatOdd(df, hi, lo), df, dst + j + N);
  }
  return dst;
}
#endif  // HWY_TARGET != HWY_SCALAR

// Tails (fewer than Lanes elements): masked loads and stores where there are
// (LNGRAD_MASKED_TAILS); elsewhere through a zeroed lane-sized buffer. Either
// way the lanes past the tail read as +0.
#if !LNGRAD_MASKED_TAILS
constexpr size_t kMaxLaneBytes = HWY_MAX_BYTES;

template <class DF, typename T>
HWY_INLINE hn::Vec<DF> LoadTail(DF df, const T* p, size_t n) {
  alignas(64) T buf[kMaxLaneBytes / sizeof(float)] = {};
  std::memcpy(static_cast<void*>(buf), p, n * sizeof(T));
  return LoadAs(df, buf);
}

template <class DF, typename T>
HWY_INLINE void StoreTail(DF df, hn::Vec<DF> v, T* p, size_t n) {
  alignas(64) T buf[kMaxLaneBytes / sizeof(float)];
  StoreAs(df, v, buf);
  std::memcpy(static_cast<void*>(p), buf, n * sizeof(T));
}
#else
// Out of line on AVX2: inlined there, their masks and blends made GCC 12
// roll up GradRowsT's compiled 4-row loops (docs/TUNING.md).
#undef LNGRAD_TAIL_INLINE
#if HWY_TARGET == HWY_AVX2
#define LNGRAD_TAIL_INLINE HWY_NOINLINE
#else
#define LNGRAD_TAIL_INLINE HWY_INLINE
#endif
template <class DF, typename T>
LNGRAD_TAIL_INLINE hn::Vec<DF> LoadTail(DF df, const T* p, size_t n) {
  const hn::Rebind<StorageLane<T>, DF> ds;
  const auto bits = LoadFirst(ds, reinterpret_cast<const StorageLane<T>*>(p), n);
  if constexpr (sizeof(T) == 2) {
    return DecodeAs(df, bits, p);
  } else {
    return bits;
  }
}

template <class DF, typename T>
LNGRAD_TAIL_INLINE void StoreTail(DF df, hn::Vec<DF> v, T* p, size_t n) {
  const hn::Rebind<StorageLane<T>, DF> ds;
  StoreFirst(ds, Encode(df, v, p), reinterpret_cast<StorageLane<T>*>(p), n);
}
#endif

// A whole vector at p (full), or its first n elements (LoadTail, StoreTail).
template <class DF, typename T>
HWY_INLINE hn::Vec<DF> LoadPart(DF df, const T* p, size_t n, bool full) {
  return full ? LoadAs(df, p) : LoadTail(df, p, n);
}

template <class DF, typename T>
HWY_INLINE void StorePart(DF df, hn::Vec<DF> v, T* p, size_t n, bool full) {
  if (full) {
    StoreAs(df, v, p);
  } else {
    StoreTail(df, v, p, n);
  }
}

// NOLINTNEXTLINE(google-readability-namespace-comments)
}  // namespace HWY_NAMESPACE
}  // namespace kernels
}  // namespace lngrad
HWY_AFTER_NAMESPACE();

#endif  // LNGRAD_KERNELS_CONVERT_INL_H_
