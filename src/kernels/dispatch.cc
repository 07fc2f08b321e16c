// The SIMD kernels, written once with Highway and compiled for every target in
// HWY_TARGETS (foreach_target re-includes this file, and with it the -inl.h
// files, once per target), their per-target tables, and the choice of table.
#include <algorithm>
#include <atomic>
#include <cctype>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif

#include "common/scalar.hpp"
#include "kernels/kernels.hpp"
#include "lngrad/half.hpp"

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "kernels/dispatch.cc"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/highway.h>

// In this order, as one translation unit: the row kernels share the conversions.
#include "kernels/convert-inl.h"      // NOLINT(build/include_order)
#include "kernels/grad_rows-inl.h"    // NOLINT(build/include_order)
#include "kernels/beta_rows-inl.h"    // NOLINT(build/include_order)
#include "kernels/forward_rows-inl.h" // NOLINT(build/include_order)

HWY_BEFORE_NAMESPACE();
namespace lngrad {
namespace kernels {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

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

// What the plan's rules need to know of this target (see TargetTraits).
TargetTraits Traits() {
  TargetTraits t;
  t.vector_bytes = static_cast<int64_t>(hn::Lanes(RowTag<float>()) * sizeof(float));
  t.bf16_pairs = kInPairs<bf16>;
  t.f16_pair_steps = kF16LineSteps<f16>;
  t.shifts_lines = LNGRAD_SHIFTED_LINES != 0;
  return t;
}

const KernelTable* GetTable() {
  static const KernelTable table = {hwy::TargetName(HWY_TARGET), &Traits, &GradRows, &BetaRowsInBlocks,
                                    &ForwardRows, &AddF32, &AddF64, &ToF32, &FromF32};
  return &table;
}

#if LNGRAD_NATIVE_BF16
// The AVX3_BF16 table: AVX3 with bfloat16 outputs stored by NativeBf16.
void GradRowsNativeBf16(const GradArgs& args, int64_t b, int64_t e, const BlockSums* sums) {
  if (args.dtype == Dtype::bfloat16) return GradRowsFor<RowTag<float>, NativeBf16>(args, b, e, sums);
  GradRows(args, b, e, sums);
}
void ForwardRowsNativeBf16(const ForwardArgs& args, int64_t b, int64_t e) {
  if (args.dtype == Dtype::bfloat16) return ForwardRowsT<RowTag<float>, NativeBf16>(args, b, e);
  ForwardRows(args, b, e);
}
void FromF32NativeBf16(Dtype dtype, const float* src, void* dst, int64_t n) {
  if (dtype == Dtype::bfloat16) return FromF32T<NativeBf16>(src, dst, static_cast<size_t>(n));
  FromF32(dtype, src, dst, n);
}
const KernelTable* GetNativeBf16Table() {
  static const KernelTable table = {"AVX3_BF16", &Traits,  &GradRowsNativeBf16, &BetaRowsInBlocks, &ForwardRowsNativeBf16,
                                    &AddF32,     &AddF64,  &ToF32,              &FromF32NativeBf16};
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
