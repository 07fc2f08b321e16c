// The SIMD row kernels, written once with Highway and compiled for every
// target in HWY_TARGETS (foreach_target re-includes this file per target).
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
#include <algorithm>
#include <atomic>
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif

#include "common/scalar.hpp"
#include "kernels/kernels.hpp"
#include "lngrad/half.hpp"

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "kernels/kernels.cc"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/cache_control.h>
#include <hwy/highway.h>

// Whether a sanitizer instruments this build (see GradRowsT's compiled copies).
#ifndef LNGRAD_SANITIZED
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define LNGRAD_SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer) || __has_feature(undefined_behavior_sanitizer)
#define LNGRAD_SANITIZED 1
#endif
#endif
#endif
#ifndef LNGRAD_SANITIZED
#define LNGRAD_SANITIZED 0
#endif

// F16C hardware conversions round correctly; Highway 1.0.3's emulation for the
// other targets truncates and ignores Inf/NaN, so those use integer code here.
#undef LNGRAD_HW_F16
#if HWY_ARCH_X86 && (HWY_TARGET <= HWY_AVX2)
#define LNGRAD_HW_F16 1
#else
#define LNGRAD_HW_F16 0
#endif

// GradRowsT's pass-1 sums: a struct of vectors on x86; elsewhere a struct of
// references to local vectors. SVE vectors are sizeless types, which cannot
// be members, and on NEON the implicit constructor of a struct of vectors
// lacks the target attribute its members' constructors need ("inlining
// failed ... target specific option mismatch").
#undef LNGRAD_SUMS_BY_REFERENCE
#if HWY_ARCH_X86
#define LNGRAD_SUMS_BY_REFERENCE 0
#else
#define LNGRAD_SUMS_BY_REFERENCE 1
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
template <class DF>
HWY_INLINE hn::Vec<DF> LoadAs(DF df, const bf16* p) {
  const hn::RebindToUnsigned<DF> du32;
  const hn::Rebind<uint16_t, DF> du16;
  const auto bits = hn::PromoteTo(du32, hn::LoadU(du16, reinterpret_cast<const uint16_t*>(p)));
  return hn::BitCast(df, hn::ShiftLeft<16>(bits));
}
template <class DF>
HWY_INLINE hn::Vec<DF> LoadAs(DF df, const f16* p) {
#if LNGRAD_HW_F16
  const hn::Rebind<f16, DF> df16;
  return hn::PromoteTo(df, hn::LoadU(df16, p));
#else
  const hn::RebindToUnsigned<DF> du32;
  const hn::RebindToSigned<DF> di32;
  const hn::Rebind<uint16_t, DF> du16;
  const auto h = hn::PromoteTo(du32, hn::LoadU(du16, reinterpret_cast<const uint16_t*>(p)));
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
HWY_INLINE hn::Vec<DF> LoadAs(DF df, const NativeBf16* p) {
  return LoadAs(df, reinterpret_cast<const bf16*>(p));
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

// ---- bfloat16 in pairs of vectors. -------------------------------------------
// A bfloat16 is the upper half of a float32, so 2N of them loaded as N 32-bit
// lanes give the even elements by a shift and the odd ones by a mask: no
// widening shuffles (two per N elements otherwise). Rows of bfloat16 are
// processed in such pairs of vectors, gamma and the column sums kept in the
// same even/odd order. Hot in L1 (AVX3, one thread) both passes ran ~40%
// faster per element than with widening loads; layer_norm_grad, 2 threads:
// +10% to +25% for 4096x768 and 8192x1024, +2% to +10% for 2048x4096,
// 512x12288 and 65536x128, level for the DRAM-bound 16384x4096. layer_norm
// and layer_norm_grad_beta read bfloat16 rows the same way.
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
// reads its lines first: a fourth stream of memory traffic. AMD EPYC (Zen 5),
// 2 threads, 16384x4096 and 65536x4096: see GradRowsT.
template <typename T>
constexpr bool kF16LineSteps = std::is_same_v<T, f16> && HWY_MAX_BYTES >= 64;

template <class DF>
using PairOrder = decltype(hn::SetTableIndices(DF(), static_cast<const int32_t*>(nullptr)));

// The calling thread's buffer for PairOrdered copies; grows, never shrinks
// (part of grad_workspace_bytes; layer_norm uses it too).
inline float* PairScratch(size_t n) {
  static thread_local std::vector<float> buffer;
  if (buffer.size() < n) buffer.resize(n);
  return buffer.data();
}

#if HWY_TARGET != HWY_SCALAR  // one lane per vector: no pairs

// Elements [0, 2N) at p as (even, odd) float vectors.
template <class DF, typename T>
HWY_INLINE void LoadPairAs(DF df, const T* p, hn::Vec<DF>& even, hn::Vec<DF>& odd) {
  const hn::RebindToUnsigned<DF> du32;
  const hn::Repartition<uint16_t, DF> du16;
  const auto u = hn::BitCast(du32, hn::LoadU(du16, reinterpret_cast<const uint16_t*>(p)));
  even = hn::BitCast(df, hn::ShiftLeft<16>(u));
  odd = hn::BitCast(df, hn::And(u, hn::Set(du32, 0xFFFF0000u)));
}

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

// Whether rows of h elements of elem_bytes at out take non-temporal stores of
// store_bytes each (wanted, and every row aligned alike: rows whole stores
// apart), and in *head the elements each row first stores through the cache
// to reach a store boundary.
inline bool StreamRows(bool wanted, const void* out, size_t h, size_t elem_bytes, size_t store_bytes, size_t* head) {
  *head = 0;
  if (!wanted || (h * elem_bytes) % store_bytes != 0) return false;
  const size_t misalign = reinterpret_cast<uintptr_t>(out) % store_bytes;
  if (misalign % elem_bytes == 0 && misalign != 0) *head = HWY_MIN(h, (store_bytes - misalign) / elem_bytes);
  return true;
}

// Tails (fewer than Lanes elements) go through a zeroed lane-sized buffer so
// that one vector code path serves every length.
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

// A whole vector at p (full), or the first n elements through the tail buffer.
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

// ---- layer_norm_grad / layer_norm_grad_x rows. -------------------------------

// Rows go in groups whose dy and x stay in cache: pass 1 reads each row from
// memory once for its sums (for long rows, inside the previous group's pass
// 2; see kFuseBytes); pass 2 walks the group's columns together, so
// the pd_gamma/pd_beta partials are read and written once per group rather
// than once per row, in the same row order (bit-identical to summing row by
// row). Group size, measured on 16384x512 .. 2048x4096 in float32 and
// bfloat16: 8 rows when a row of dy and x takes 4-8 KiB (the group then
// fills about the L1), else 4; at most kGroupBytes for very long rows. Rows
// under 1 KiB take 8 too: the partials' loads and stores per group weigh on
// few elements there (one thread, hot: float32 1024x64 +17%, bfloat16
// 1024x128 +14%; 2 threads, float32 8192x64 +8%, bfloat16 65536x128 +1% to
// +3%, up to +15% while memory ran fast).
constexpr size_t kGroupRows = 8;
constexpr size_t kGroupBytes = size_t{256} * 1024;

// Rows whose dy and x take at least this many bytes (half of it for 16-bit
// storage: H >= 1024 either way) run pass 1 of the next group inside pass 2
// of the current one (see GradRowsT); shorter rows do the two passes one
// after the other, which measured faster for them (the fused loop's
// bookkeeping is per row). Fused, 2 threads, against unfused: +5% to +18%
// for 8192x2048 .. 16384x4096 and 512x12288 in all three 16-bit and float32
// dtypes except float16 512x12288 (-8%); +8% for float32 H = 1024. 16-bit
// rows of 4 KiB (the benchmark, alternating builds): bfloat16 8192x1024 +5%
// to +10%, float16 +7% to +15%, though -6% to -12% hot in L2 (256x1024, one
// thread); fusing float32 rows of 6 KiB (H = 768) lost 5-13%.
constexpr size_t kFuseRowPairBytes = 8192;
template <typename T>
constexpr size_t kFuseBytes = sizeof(T) == 2 ? kFuseRowPairBytes / 2 : kFuseRowPairBytes;
// How far ahead of its loads the fused pass 1 prefetches: the hardware
// prefetcher alone leaves those loads waiting on DRAM once pass 2's work sits
// between them (fused without it measured 10-30% slower than unfused).
// 16-bit rows go 4 KiB ahead: against 2 KiB, 2 threads, alternating builds,
// +5-7% for 8192x1024 and 2048x4096, +1-3% for 512x12288, -2..+4% for
// 16384x4096 (bfloat16 and float16). float32 rows go 4 KiB ahead when the
// tensors exceed the LLC, with the L2 prefetch below (2 threads, same
// process, memory running fast (triad ~105 GB/s): +15% to +25% for
// 16384x4096, 2048x4096, 4096x2048, 8192x1024 and 512x12288, one thread
// +24%; running slow (~56 GB/s): +5% to +17% for 2048x4096, 8192x1024 and
// 512x12288, 16384x4096 -3%) and 2 KiB inside it (4 KiB: 1024x2048 -6%,
// 256x4096 -8%). 3 KiB lost 9% of the gain while memory ran fast; 5-6 KiB
// measured within 3% of 4.
template <typename T>
constexpr size_t PrefetchBytes(bool beyond_llc) {
  return sizeof(T) == 2 || (sizeof(T) == 4 && beyond_llc) ? 4096 : 2048;
}
// float32 rows from beyond the core's cache also prefetch 8 KiB ahead into
// the L2, where the hardware has more requests in flight than the L1 has:
// against the 2 KiB L1 prefetch alone, 2 threads, same process, +10% to
// +21% for 2048x4096, +3% to +14% for 8192x1024, +15% for 512x12288, +3%
// for 16384x4096 while memory ran slow (~60 GB/s); alternating builds, +12%
// to +19% for 16384x4096 while it ran fast. With the 4 KiB L1 prefetch it
// adds 0-2%. (For 16-bit rows the L2 prefetch was level.)
template <typename T>
constexpr size_t kPrefetchL2Bytes = sizeof(T) == 4 ? 8192 : 0;

// A prefetch into the L2 only (Highway 1.0.3 has the L1 one alone).
inline void PrefetchToL2(const void* p) {
#if defined(__GNUC__) || defined(__clang__)
  __builtin_prefetch(p, 0, 2);
#else
  (void)p;
#endif
}

// Rows too short to fuse, from beyond the core's cache, prefetch a later
// group's dy and x while pass 2 finishes the current one (the hardware
// prefetcher alone leaves pass 1 waiting): 2 groups ahead when a group's row
// tensor slice is under 8 KiB, else 1. 2 threads, against none: float32
// 4096x768 +6% to +9% (alternating builds; +2% to +8% in one process with
// the rows flushed from the LLC), 16384x256 float32 +3% to +15%, bfloat16
// 8192x512 -3% to +5%, bfloat16 4096x768 level to -5%. 16-bit rows under 512
// bytes do not: bfloat16/float16 65536x128 lost 1-8%. Data in the core's
// cache does not either: one thread, hot, float32 64x768 lost 12%. Nor do
// 16-bit rows while the tensors fit the LLC (2 threads, same process, first
// variant discarded, 3 runs: bfloat16 8192x512 +2% to +3%, float16 4096x768
// -2% to +5%, bfloat16 4096x768 -3% to +4%); float32 rows there were mixed
// (2048x768 +8%, 8192x256 -7% to +2%) and keep it.
constexpr size_t kPrefetchGroupBytes = 8192;
constexpr size_t kPrefetchMinRowBytes = 512;

// body(k) for the rows k of a group, `rows` of them: a size_t, or a
// std::integral_constant for a group size compiled in. Unrolled over the
// rows, GCC keeps every row's coefficients at fixed places: +15-20% for
// float32 65536x128 and up to +40% for bfloat16 512x12288 (2 threads). Not
// asked of clang, for which it doubled this file's build time under the
// sanitizers and often failed.
template <class Rows, class Body>
HWY_INLINE void ForEachRow(Rows rows, const Body& body) {
  if constexpr (std::is_integral_v<Rows>) {
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC unroll 8
#endif
    for (size_t k = 0; k < rows; ++k) body(k);
  } else {
    for (size_t k = 0; k < Rows::value; ++k) body(k);
  }
}

inline size_t group_rows(size_t row_pair_bytes) {
  const size_t preferred = row_pair_bytes < 1024 || (row_pair_bytes >= 4096 && row_pair_bytes < 8192) ? 8 : 4;
  return HWY_MAX(size_t{1}, HWY_MIN(preferred, kGroupBytes / row_pair_bytes));
}

// With vectors narrower than a cache line (AVX2 and below), pass 2 comes
// back to each line of a group's rows at the next column step, so the
// group's lines at one column must stay in the L1 between the two visits.
// Rows a multiple of 4 KiB apart share one L1 set (8 ways on the machines
// measured) in each of dy, x and pd_x, and streamed stores to such rows also
// stall behind one another. AliasFreeRows is the most rows, up to `rows`,
// that go in a group of rows `stride` bytes apart with no two of them within
// a line of each other modulo 4 KiB. AMD EPYC (Zen 3), AVX2, 2 threads,
// float32, streamed pd_x: 16384x4096, 8192x1024, 2048x4096 and 512x12288 in
// groups of 1 instead of 2 ran 3-4x faster (4.4 -> 14-17 GB/s), 8192x512 in
// pairs 2.4x faster than in 4s.
inline size_t AliasFreeRows(size_t stride, size_t rows) {
  constexpr size_t kPage = 4096;
  constexpr size_t kMinApart = 64;
  for (size_t g = 2; g <= rows; ++g) {
    const size_t d = (g - 1) * stride % kPage;  // rows g-1 apart; nearer pairs were checked before
    if (HWY_MIN(d, kPage - d) < kMinApart) return g - 1;
  }
  return rows;
}

// Whether layer_norm_grad's rows of h elements fuse (see kFuseBytes). With
// narrow vectors 16-bit rows do not: pass 2 of bfloat16/float16 pairs and
// pass 1's six sums do not fit AVX2's 16 registers together (Zen 3, 2
// threads, against fused: +5% to +30% for 16384x4096, 8192x1024 and
// 512x12288; one thread in L2, 64x2048, +30%).
template <typename T>
bool GradFused(size_t h, bool narrow) {
  return (sizeof(T) != 2 || !narrow) && 2 * h * sizeof(T) >= kFuseBytes<T>;
}

// Rows per group of layer_norm_grad with narrow vectors (AVX2 and below),
// measured on Zen 3 with 2 threads: 16-bit rows of 1024 elements or more
// (unfused there) go in pairs (against 8 for bfloat16, 4 for float16: +0% to
// +27%, even where the pair aliases, which then takes cached stores); rows
// whose dy and x take under 1 KiB in 4s (65536x128: bfloat16 +31% to +40%
// against 8, float32 +14% against 2); otherwise group_rows' choice or 8 for
// bfloat16, float32 and float64 then cut to alias-free rows (float32 from
// beyond the LLC: 4096x768 +24% and 16384x256 +11% in 4s against pairs).
template <typename T>
size_t NarrowGroupRows(size_t h) {
  if (sizeof(T) == 2 && h >= 1024) return 2;
  const size_t row_pair_bytes = 2 * h * sizeof(T);
  constexpr bool kPairs = kInPairs<T>;
  size_t group = 4;
  if (row_pair_bytes >= 1024) group = kPairs ? kGroupRows : group_rows(row_pair_bytes);
  return sizeof(T) == 2 ? group : AliasFreeRows(h * sizeof(T), group);
}

// Rows per group of layer_norm_grad: group_rows, but for two kinds of rows.
template <typename T>
size_t GradGroupRows(size_t h, bool fused, bool beyond_llc, bool narrow) {
  if (narrow) return NarrowGroupRows<T>(h);
  // bfloat16 rows too short to fuse go in 8s. Against 4, 2 threads, same
  // process, caches flushed before every 9 calls: +24% for 16384x256, +8% to
  // +14% for 2048x768 .. 8192x768, +2% for 8192x512; from the LLC -5% to +9%
  // (1024x512 .. 16384x256). float16 rows of 256-512 elements lose 7-9%.
  if (kInPairs<T> && !fused) return kGroupRows;
  const size_t group = group_rows(2 * h * sizeof(T));
  // float32 rows of 256 bytes or more from beyond the LLC go in pairs.
  // Fused, against 4, 2 threads, same process, pd_x streamed: +4% to +9% for
  // 16384x4096 and 2048x4096, level for 8192x1024 and 512x12288. Unfused,
  // against 8 (4 under 1 KiB), 2 threads, same process, the caches flushed
  // before every 9 calls: +13% to +18% for 4096x768, 8192x768, 8192x512 and
  // 6144x640, +11% for 32768x256, +5% to +8% for 65536x128 and 131072x64 (one
  // thread 4096x768 +28%); 128-byte rows lose 9-14% (262144x32). Inside the
  // LLC the larger groups are faster: the column-sum partials, read and
  // written once per group, cost a quarter of the fused loop with pairs
  // (2 threads 1024x1024 +24%, 512x2048 +13%, 256x4096 +9%; one thread in L2
  // +18% to +25%; unfused 2048x768 -7%). (Fused bfloat16 and float16 rows
  // lose 4-10% with pairs.)
  if (sizeof(T) == 4 && beyond_llc && h * sizeof(T) >= 256) return HWY_MIN(size_t{2}, group);
  return group;
}

// kPdX and kAcc (the column sums) select compiled variants; res_for_gamma,
// rarer, is a run-time branch, which keeps the number of instantiations (and
// the build time of this file under the sanitizers) down.
template <class DF, typename T, bool kPdX, bool kAcc>
void GradRowsT(const GradArgs& args, int64_t row_begin, int64_t row_end, const BlockSums* block_sums) {
  using A = hn::TFromD<DF>;
  const DF df;
  const size_t N = hn::Lanes(df);
  const size_t h = static_cast<size_t>(args.h);
  const A* gamma = static_cast<const A*>(args.gamma);
  A* acc_gamma = nullptr;  // the current block's column sums
  A* acc_beta = nullptr;
  const A inv_h = A(1) / static_cast<A>(h);
  const bool narrow = N * sizeof(A) < 64;  // see AliasFreeRows
  const bool fused = GradFused<T>(h, narrow);
  const size_t group = GradGroupRows<T>(h, fused, args.beyond_llc, narrow);
  const bool prefetch_later_group = !fused && args.prefetch_rows && (sizeof(T) != 2 || args.beyond_llc) &&
                                    h * sizeof(T) >= kPrefetchMinRowBytes;
  const size_t groups_ahead = group * h * sizeof(T) < kPrefetchGroupBytes ? 2 : 1;
  const size_t prefetch_l1_bytes = PrefetchBytes<T>(args.beyond_llc);  // fused pass 1
  // Not with narrow vectors: on Zen 3 (AVX2, 2 threads, same process) the L2
  // prefetch cost float32 16384x4096, 2048x4096, 512x12288 and 8192x1024
  // 5% to 12%.
  const bool prefetch_l2 = kPrefetchL2Bytes<T> != 0 && args.prefetch_rows && !narrow;
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
      pair_scratch = PairScratch(2 * h);
      gamma1 = gamma2 = PairOrdered(df, gamma, h, 0, pair_scratch);
    }
  }

  // Streamed pd_x: whole steps from a head of cached stores on.
  size_t head = 0;
  // Streamed stores of half a vector (float16 with narrow vectors) lose, as
  // pass 2 goes through a group's rows in turn and leaves each row's line
  // part-written (the forward's one stream of y gains from them). 2 threads
  // against cached: Zen 3 (AVX2, 16 bytes) float16 65536x128 3.9 GB/s
  // against 7.7; Intel Xeon (AVX-512, then one vector per step) 8192x1024
  // 4.0 against 14.3. In steps of two vectors (kF16LineSteps), streamed,
  // AMD EPYC Zen 5, same process: 16384x4096 +40% to +75%, 65536x4096 +65%
  // to +80%, 2048x4096 and 512x12288 +35%. With narrow vectors so do
  // stores under 32 bytes and those to the aliasing pairs of 16-bit rows.
  const bool may_stream = W * sizeof(T) >= N * sizeof(A) &&
                          (!narrow || sizeof(T) >= 4 ||
                           (AliasFreeRows(h * sizeof(T), group) == group && W * sizeof(T) >= 32));
  const bool stream = StreamRows(kPdX && args.stream_pd_x && may_stream, args.pd_x, h, sizeof(T), W * sizeof(T), &head);
  if constexpr (kPairs) {  // pass 2's pairs then start at the head
    if (pair_scratch != nullptr && head != 0) gamma2 = PairOrdered(df, gamma, h, head, pair_scratch + h);
  }
  const size_t steps = (h - head) / W;

  // Per-row coefficients of pd_x = rstd*((g - S1/H) + c*(xhat - rstd*S3/H)),
  // expanded as g_scale*g + xhat_scale*xhat + offset: two FMAs per vector
  // where the centred form took four operations.
  struct Row {
    A mean, rstd, g_scale, xhat_scale, offset;
  };

  // Pass 1: S1 = sum(g), S2 = sum(g*xm), S3 = sum(xm). Vectors alternate
  // between two accumulator sets (even vectors: a, odd: b, the tail: b) to
  // keep the FMA pipes busy; the partition depends on H alone.
  using V = hn::Vec<DF>;
#if LNGRAD_SUMS_BY_REFERENCE
  struct Sums {
    V &s1a, &s2a, &s3a, &s1b, &s2b, &s3b;
  };
#else
  struct Sums {
    V s1a, s2a, s3a, s1b, s2b, s3b;
  };
#endif
  auto begin_row = [&](int64_t r, Sums& sums) HWY_ATTR __attribute__((always_inline)) {
    Row row{};
    row.mean = static_cast<A>(load_scalar(args.mean, args.stat_dtype, r));
    const A stat = static_cast<A>(load_scalar(args.stat, args.stat_dtype, r));
    row.rstd = args.stat_is_rstd ? stat : A(1) / std::sqrt(stat + static_cast<A>(args.epsilon));
    sums.s1a = sums.s2a = sums.s3a = sums.s1b = sums.s2b = sums.s3b = hn::Zero(df);
    return row;
  };
  // Two whole vectors at j (an even vector index) of the row at dy, x.
  auto stats_pair = [&](const T* dy, const T* x, size_t j, V vmean, Sums& s) HWY_ATTR
      __attribute__((always_inline)) {
    V x0, x1, d0, d1;
    if constexpr (kPairs) {
      LoadPairAs(df, x + j, x0, x1);
      LoadPairAs(df, dy + j, d0, d1);
    } else {
      x0 = LoadAs(df, x + j);
      d0 = LoadAs(df, dy + j);
      x1 = LoadAs(df, x + j + N);
      d1 = LoadAs(df, dy + j + N);
    }
    const auto xm0 = hn::Sub(x0, vmean);
    const auto g0 = hn::Mul(d0, hn::LoadU(df, gamma1 + j));
    const auto xm1 = hn::Sub(x1, vmean);
    const auto g1 = hn::Mul(d1, hn::LoadU(df, gamma1 + j + N));
    s.s1a = hn::Add(s.s1a, g0);
    s.s2a = hn::MulAdd(g0, xm0, s.s2a);
    s.s3a = hn::Add(s.s3a, xm0);
    s.s1b = hn::Add(s.s1b, g1);
    s.s2b = hn::MulAdd(g1, xm1, s.s2b);
    s.s3b = hn::Add(s.s3b, xm1);
  };
  // The rest of the row from j (an even vector index), then its coefficients.
  auto finish_row = [&](Row& row, const T* dy, const T* x, size_t j, Sums& s) HWY_ATTR
      __attribute__((always_inline)) {
    const auto vmean = hn::Set(df, row.mean);
    for (; j + 2 * N <= h; j += 2 * N) stats_pair(dy, x, j, vmean, s);
    if (j + N <= h) {
      const auto xm = hn::Sub(LoadAs(df, x + j), vmean);
      const auto g = hn::Mul(LoadAs(df, dy + j), hn::LoadU(df, gamma1 + j));
      s.s1a = hn::Add(s.s1a, g);
      s.s2a = hn::MulAdd(g, xm, s.s2a);
      s.s3a = hn::Add(s.s3a, xm);
      j += N;
    }
    if (j < h) {
      const size_t n = h - j;
      const auto xm = hn::IfThenElseZero(hn::FirstN(df, n), hn::Sub(LoadTail(df, x + j, n), vmean));
      const auto g = hn::Mul(LoadTail(df, dy + j, n), LoadTail(df, gamma1 + j, n));
      s.s1b = hn::Add(s.s1b, g);
      s.s2b = hn::MulAdd(g, xm, s.s2b);
      s.s3b = hn::Add(s.s3b, xm);
    }
    const A s1 = hn::GetLane(hn::SumOfLanes(df, hn::Add(s.s1a, s.s1b)));
    const A s2 = hn::GetLane(hn::SumOfLanes(df, hn::Add(s.s2a, s.s2b)));
    const A s3 = hn::GetLane(hn::SumOfLanes(df, hn::Add(s.s3a, s.s3b)));
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
#if LNGRAD_SUMS_BY_REFERENCE
    V s1a, s2a, s3a, s1b, s2b, s3b;
    Sums sums{s1a, s2a, s3a, s1b, s2b, s3b};
#else
    Sums sums;
#endif
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
  // block boundaries, the fused loop included: one call per block left a
  // group unfused and a gamma reordering per block (2 threads, alternating
  // builds: 65536x128 +15%, bfloat16 4096x768 +10%, 16384x4096 16-bit +5% to
  // +10%; in one process, calls of 128 rows against 32: bfloat16 8192x1024
  // +13%).
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
  };
  Row coef_store[2][kGroupRows];
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
      const auto gam = LoadPart(df, gamma + j0, n, full);
      ForEachRow(row_count, [&](size_t k) HWY_ATTR __attribute__((always_inline)) {
        const size_t at = offset + k * h + j0;
        const auto d = LoadPart(df, dy_base + at, n, full);
        V res_v;
        const auto out = row_vector(coef[k], d, LoadPart(df, x_base + at, n, full), gam, res_v);
        if constexpr (kPdX) {
          T* pd_x = pd_x_base + at;
          if (!full) {
            StoreTail(df, out, pd_x, n);
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
          if constexpr (kPdX) StorePairAs(df, out_e, out_o, pd_x_base + at, stream_now);
          if (res_out != nullptr) {
            if (res_f32) {
              A* res = static_cast<A*>(res_out) + at;
              if constexpr (kPairs) {
                StorePairNatural(df, res_e, res_o, pair_order, res);
              } else {
                hn::StoreU(res_e, df, res);
                hn::StoreU(res_o, df, res + N);
              }
            } else {
              StorePairAs(df, res_e, res_o, static_cast<T*>(res_out) + at, false);
            }
          }
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
    // The lines `distance` bytes past pass 1's next two vectors at element
    // `from` of dy and x (into the L2 or the L1); prefetches stay inside this
    // call's rows.
    const size_t prefetch_limit = static_cast<size_t>(row_end) * h;
    auto prefetch_ahead = [&](size_t from, size_t distance, bool to_l2) HWY_ATTR __attribute__((always_inline)) {
      if (from + (distance + 2 * N * sizeof(T)) / sizeof(T) > prefetch_limit) return;
      for (size_t b = distance; b < distance + 2 * N * sizeof(T); b += 64) {
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
    // closure, again after each (possibly aliasing) store (4x768 float32 call
    // 0.65 -> 0.92 us).
    auto whole_steps = [&](auto stream_now, auto row_count) HWY_ATTR __attribute__((always_inline)) {
      size_t t = 0;
      for (size_t q = 0; q < next_rows; ++q) {
        const size_t at = static_cast<size_t>(n0) * h + q * h;
        const T* ndy = dy_base + at;
        const T* nx = x_base + at;
#if LNGRAD_SUMS_BY_REFERENCE
        V s1a, s2a, s3a, s1b, s2b, s3b;
        Sums sums{s1a, s2a, s3a, s1b, s2b, s3b};
#else
        Sums sums;
#endif
        coef_next[q] = begin_row(n0 + static_cast<int64_t>(q), sums);
        const auto vmean = hn::Set(df, coef_next[q].mean);
        const size_t segment_end = steps * (q + 1) / next_rows;
        const size_t segment = segment_end - t;
        size_t per_step = segment == 0 ? row_vectors : (row_vectors + segment - 1) / segment;
        per_step = HWY_MAX(size_t{2}, (per_step + 1) & ~size_t{1});
        const size_t fused_steps = HWY_MIN(segment, row_vectors / per_step);
        size_t j1 = 0;
        for (size_t i = 0; i < fused_steps; ++i, ++t) {
          whole_step(t, stream_now, row_count);
          for (size_t p = 0; p < per_step; p += 2, j1 += 2 * N) {
            prefetch_ahead(at + j1, prefetch_l1_bytes, false);
            if (prefetch_l2) prefetch_ahead(at + j1, kPrefetchL2Bytes<T>, true);
            stats_pair(ndy, nx, j1, vmean, sums);
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
    // A group of 4 rows (group_rows' size for most rows) has its row count
    // compiled in: the rows' coefficients then stay in registers across the
    // steps instead of being broadcast from memory per row and step. One
    // thread, hot, with ForEachRow: float32 512x128 +12% to +15%, 4x768
    // +12%, 16x4096 +21% (64x768, groups of 8, +11% from ForEachRow alone);
    // bfloat16 64x768 +4% to +6%, 16x4096 level. Groups of 8 rows have too
    // many coefficients for the registers (float32 64x768 -5% compiled in),
    // and of 2 gained nothing on AVX-512. A single row (AliasFreeRows'
    // groups on AVX2) is compiled in too: as a run-time count of 1 the loop
    // dispatched on it at every step (Zen 3, float32, same process: 2 threads
    // 16384x4096 +16%, 8192x1024 +30%; one thread, hot, 16x4096 +36%); so
    // are pairs, the long 16-bit rows' groups on AVX2 (one thread, hot,
    // 16x4096: bfloat16 +16%, float16 +32%; from memory level). For those the
    // choice of streamed stores is compiled in as well, which takes a branch
    // per row and step out of the loop (Zen 3, 2 threads, float32 16384x4096
    // in groups of 1, against a plain two-loop kernel in the same process:
    // 0.72-0.80 of its rate -> 0.83-0.88).
    // Sanitizer builds keep one compiled copy, the 4-row loop with a run-time
    // store kind: under clang 14's ASan+UBSan this file then takes 6 minutes,
    // over 14 with all six. The copies are one source instantiated with other
    // constants, touching the same addresses; the ordinary build tests them.
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
    if (head + steps * W < h) rest_columns(head + steps * W, h - head - steps * W);
    first_group = false;
    std::swap(coef, coef_next);
  }
  if (row_end > row_begin) finish_block();
  if (stream) hwy::FlushStream();  // order the streamed stores before returning
}

template <class DF, typename T>
void GradRowsFor(const GradArgs& args, int64_t b, int64_t e, const BlockSums* sums) {
  const bool pdx = args.pd_x != nullptr, acc = sums != nullptr;
  if (pdx && acc) return GradRowsT<DF, T, true, true>(args, b, e, sums);
  if (pdx) return GradRowsT<DF, T, true, false>(args, b, e, sums);
  if (acc) return GradRowsT<DF, T, false, true>(args, b, e, sums);
  if (args.res_for_gamma != nullptr) GradRowsT<DF, T, false, false>(args, b, e, sums);
}

void GradRows(const GradArgs& args, int64_t b, int64_t e, const BlockSums* sums) {
  switch (args.dtype) {
    case Dtype::float64: return GradRowsFor<hn::ScalableTag<double>, double>(args, b, e, sums);
    case Dtype::float32: return GradRowsFor<hn::ScalableTag<float>, float>(args, b, e, sums);
    case Dtype::float16: return GradRowsFor<hn::ScalableTag<float>, f16>(args, b, e, sums);
    case Dtype::bfloat16: return GradRowsFor<hn::ScalableTag<float>, bf16>(args, b, e, sums);
  }
}

// ---- layer_norm_grad_beta rows. ----------------------------------------------

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
  const size_t group = group_rows(h * (sizeof(TD) + sizeof(TR)));
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

// ---- layer_norm forward rows. ------------------------------------------------

template <class DF, typename T>
void ForwardRowsT(const ForwardArgs& args, int64_t row_begin, int64_t row_end) {
  using A = hn::TFromD<DF>;
  const DF df;
  const size_t N = hn::Lanes(df);
  const size_t h = static_cast<size_t>(args.h);
  const A* gamma = static_cast<const A*>(args.gamma);
  const A* beta = static_cast<const A*>(args.beta);
  const A inv_h = A(1) / static_cast<A>(h);
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
      A* scratch = PairScratch(2 * h);
      gamma_p = PairOrdered(df, gamma, h, head, scratch);
      beta_p = PairOrdered(df, beta, h, head, scratch + h);
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
    // Two-pass (centred) statistics over the cached row.
    auto sa = hn::Zero(df), sb = hn::Zero(df);
    size_t j = 0;
    for (; j + 2 * N <= h; j += 2 * N) {
      hn::Vec<DF> a, b;
      load2(x + j, a, b);
      sa = hn::Add(sa, a);
      sb = hn::Add(sb, b);
    }
    for (; j + N <= h; j += N) sa = hn::Add(sa, LoadAs(df, x + j));
    if (j < h) sb = hn::Add(sb, LoadTail(df, x + j, h - j));
    const A mean = hn::GetLane(hn::SumOfLanes(df, hn::Add(sa, sb))) * inv_h;
    const auto vmean = hn::Set(df, mean);
    sa = hn::Zero(df);
    sb = hn::Zero(df);
    j = 0;
    if constexpr (kEvenOdd) {
      for (; j + 2 * N <= h; j += 2 * N) {
        hn::Vec<DF> a, b;
        load2(x + j, a, b);
        const auto xm_a = hn::Sub(a, vmean), xm_b = hn::Sub(b, vmean);
        sa = hn::MulAdd(xm_a, xm_a, sa);
        sb = hn::MulAdd(xm_b, xm_b, sb);
      }
    }
    for (; j + N <= h; j += N) {
      const auto xm = hn::Sub(LoadAs(df, x + j), vmean);
      sa = hn::MulAdd(xm, xm, sa);
    }
    if (j < h) {
      const auto xm = hn::IfThenElseZero(hn::FirstN(df, h - j), hn::Sub(LoadTail(df, x + j, h - j), vmean));
      sb = hn::MulAdd(xm, xm, sb);
    }
    const A variance = hn::GetLane(hn::SumOfLanes(df, hn::Add(sa, sb))) * inv_h;
    const A rstd = A(1) / std::sqrt(variance + static_cast<A>(args.epsilon));
    const auto vrstd = hn::Set(df, rstd);
    // y = (x - mean)*rstd*gamma + beta
    auto y_of = [&](hn::Vec<DF> xv, hn::Vec<DF> g, hn::Vec<DF> b) HWY_ATTR __attribute__((always_inline)) {
      return hn::MulAdd(hn::Mul(hn::Sub(xv, vmean), vrstd), g, b);
    };
    j = 0;
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
    case Dtype::float64: return ForwardRowsT<hn::ScalableTag<double>, double>(args, b, e);
    case Dtype::float32: return ForwardRowsT<hn::ScalableTag<float>, float>(args, b, e);
    case Dtype::float16: return ForwardRowsT<hn::ScalableTag<float>, f16>(args, b, e);
    case Dtype::bfloat16: return ForwardRowsT<hn::ScalableTag<float>, bf16>(args, b, e);
  }
}

// ---- Elementwise helpers. ----------------------------------------------------

template <typename A>
void AddT(A* dst, const A* src, int64_t n_signed) {
  const hn::ScalableTag<A> d;
  const size_t N = hn::Lanes(d), n = static_cast<size_t>(n_signed);
  size_t i = 0;
  for (; i + N <= n; i += N) hn::StoreU(hn::Add(hn::LoadU(d, dst + i), hn::LoadU(d, src + i)), d, dst + i);
  for (; i < n; ++i) dst[i] += src[i];
}
void AddF32(float* dst, const float* src, int64_t n) { AddT(dst, src, n); }
void AddF64(double* dst, const double* src, int64_t n) { AddT(dst, src, n); }

template <typename T>
void ToF32T(const void* src_v, float* dst, size_t n) {
  const hn::ScalableTag<float> df;
  const size_t N = hn::Lanes(df);
  const T* src = static_cast<const T*>(src_v);
  size_t i = 0;
  for (; i + N <= n; i += N) hn::StoreU(LoadAs(df, src + i), df, dst + i);
  if (i < n) StoreTail(df, LoadTail(df, src + i, n - i), dst + i, n - i);
}

template <typename T>
void FromF32T(const float* src, void* dst_v, size_t n) {
  const hn::ScalableTag<float> df;
  const size_t N = hn::Lanes(df);
  T* dst = static_cast<T*>(dst_v);
  size_t i = 0;
  for (; i + N <= n; i += N) StoreAs(df, hn::LoadU(df, src + i), dst + i);
  if (i < n) StoreTail(df, LoadTail(df, src + i, n - i), dst + i, n - i);
}

void ToF32(Dtype dtype, const void* src, float* dst, int64_t n) {
  switch (dtype) {
    case Dtype::float16: return ToF32T<f16>(src, dst, static_cast<size_t>(n));
    case Dtype::bfloat16: return ToF32T<bf16>(src, dst, static_cast<size_t>(n));
    case Dtype::float32: return ToF32T<float>(src, dst, static_cast<size_t>(n));
    case Dtype::float64:
      for (int64_t i = 0; i < n; ++i) dst[i] = static_cast<float>(static_cast<const double*>(src)[i]);
      return;
  }
}

void FromF32(Dtype dtype, const float* src, void* dst, int64_t n) {
  switch (dtype) {
    case Dtype::float16: return FromF32T<f16>(src, dst, static_cast<size_t>(n));
    case Dtype::bfloat16: return FromF32T<bf16>(src, dst, static_cast<size_t>(n));
    case Dtype::float32: return FromF32T<float>(src, dst, static_cast<size_t>(n));
    case Dtype::float64:
      for (int64_t i = 0; i < n; ++i) static_cast<double*>(dst)[i] = src[i];
      return;
  }
}

const KernelTable* GetTable() {
  static const KernelTable table = {hwy::TargetName(HWY_TARGET), &GradRows, &BetaRowsInBlocks, &ForwardRows,
                                    &AddF32, &AddF64, &ToF32, &FromF32};
  return &table;
}

#if LNGRAD_NATIVE_BF16
// The AVX3_BF16 table: AVX3 with bfloat16 outputs stored by NativeBf16.
void GradRowsNativeBf16(const GradArgs& args, int64_t b, int64_t e, const BlockSums* sums) {
  if (args.dtype == Dtype::bfloat16) return GradRowsFor<hn::ScalableTag<float>, NativeBf16>(args, b, e, sums);
  GradRows(args, b, e, sums);
}
void ForwardRowsNativeBf16(const ForwardArgs& args, int64_t b, int64_t e) {
  if (args.dtype == Dtype::bfloat16) return ForwardRowsT<hn::ScalableTag<float>, NativeBf16>(args, b, e);
  ForwardRows(args, b, e);
}
void FromF32NativeBf16(Dtype dtype, const float* src, void* dst, int64_t n) {
  if (dtype == Dtype::bfloat16) return FromF32T<NativeBf16>(src, dst, static_cast<size_t>(n));
  FromF32(dtype, src, dst, n);
}
const KernelTable* GetNativeBf16Table() {
  static const KernelTable table = {"AVX3_BF16", &GradRowsNativeBf16, &BetaRowsInBlocks, &ForwardRowsNativeBf16,
                                    &AddF32,     &AddF64,             &ToF32,    &FromF32NativeBf16};
  return &table;
}
#else
const KernelTable* GetNativeBf16Table() { return nullptr; }
#endif

// NOLINTNEXTLINE(google-readability-namespace-comments)
}  // namespace HWY_NAMESPACE
}  // namespace kernels
}  // namespace lngrad
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace lngrad {
namespace kernels {

HWY_EXPORT(GetTable);
HWY_EXPORT(GetNativeBf16Table);

namespace {

// A kernel table to dispatch to: a Highway target, or AVX3_BF16 (the AVX3
// code with AVX512-BF16 stores), which ranks just above AVX3.
struct Target {
  int64_t bit;  // Highway target bit
  bool native_bf16;
};

const KernelTable* table_of(const Target& t) {
  const int64_t chosen = HWY_CHOSEN_TARGET_SHIFT(t.bit) | HWY_CHOSEN_TARGET_MASK_SCALAR;
  const size_t index = hwy::Num0BitsBelowLS1Bit_Nonzero64(
      static_cast<uint64_t>(chosen & HWY_CHOSEN_TARGET_MASK_TARGETS));
  return t.native_bf16 ? HWY_DISPATCH_TABLE(GetNativeBf16Table)[index]()
                       : HWY_DISPATCH_TABLE(GetTable)[index]();
}

bool cpu_has_avx512_bf16() {
#if HWY_ARCH_X86
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  if (__get_cpuid_count(7, 1, &eax, &ebx, &ecx, &edx) == 0) return false;
  return (eax >> 5) & 1u;  // CPUID.(EAX=7,ECX=1):EAX bit 5
#else
  return false;
#endif
}

// Every compiled table, best first (a lower Highway bit is a better target).
const std::vector<Target>& compiled() {
  static const std::vector<Target> list = [] {
    std::vector<Target> out;
    for (int64_t bits = HWY_TARGETS; bits != 0; bits &= bits - 1) {
      const int64_t bit = bits & -bits;
      if (table_of({bit, true}) != nullptr) out.push_back({bit, true});
      out.push_back({bit, false});
    }
    return out;
  }();
  return list;
}

bool supported(const Target& t) {
  if ((hwy::SupportedTargets() & t.bit) == 0) return false;
  static const bool has_bf16 = cpu_has_avx512_bf16();
  return !t.native_bf16 || has_bf16;
}

std::string name_of(const Target& t) { return table_of(t)->target; }

// Index in compiled() of the named table; throws Error naming the choices.
size_t parse_target(std::string_view name) {
  const std::vector<Target>& all = compiled();
  for (size_t i = 0; i < all.size(); ++i) {
    const std::string candidate = name_of(all[i]);
    if (candidate.size() == name.size() &&
        std::equal(name.begin(), name.end(), candidate.begin(),
                   [](char a, char b) { return std::toupper(a) == std::toupper(b); })) {
      return i;
    }
  }
  std::string known;
  for (const Target& t : all) known += (known.empty() ? "" : ", ") + name_of(t);
  throw Error("target: expected one of " + known + "; given '" + std::string(name) + "'");
}

// The best supported table at or below compiled()[cap].
const KernelTable* best_table(size_t cap) {
  const std::vector<Target>& all = compiled();
  for (size_t i = cap; i < all.size(); ++i) {
    if (supported(all[i])) return table_of(all[i]);
  }
  return table_of(all.back());  // unreachable: the fallback target is always supported
}

const KernelTable* initial_table() {
  const char* env = std::getenv("LNGRAD_MAX_TARGET");
  if (env == nullptr || *env == '\0') return best_table(0);
  try {
    return best_table(parse_target(env));
  } catch (const Error& e) {
    throw Error(std::string("LNGRAD_MAX_TARGET: ") + e.what());
  }
}

std::atomic<const KernelTable*>& active_slot() {
  static std::atomic<const KernelTable*> slot{initial_table()};
  return slot;
}

}  // namespace

const KernelTable& active() { return *active_slot().load(std::memory_order_acquire); }

std::vector<std::string> supported_target_names() {
  std::vector<std::string> names;
  for (const Target& t : compiled()) {
    if (supported(t)) names.push_back(name_of(t));
  }
  return names;
}

void set_max_target(std::string_view name) {
  const KernelTable* table = best_table(name.empty() ? 0 : parse_target(name));
  active_slot().store(table, std::memory_order_release);
}

}  // namespace kernels
}  // namespace lngrad
#endif  // HWY_ONCE
