// Helpers of the grad rows' group loops: the sanitizer switch of GradRowsT's
// compiled copies, the L2 prefetch and the loop over a group's rows.
// Per-target code: included by dispatch.cc once per Highway target.
#if defined(LNGRAD_KERNELS_GROUP_LOOPS_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef LNGRAD_KERNELS_GROUP_LOOPS_INL_H_
#undef LNGRAD_KERNELS_GROUP_LOOPS_INL_H_
#else
#define LNGRAD_KERNELS_GROUP_LOOPS_INL_H_
#endif

#include <cstddef>
#include <type_traits>

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

HWY_BEFORE_NAMESPACE();
namespace lngrad {
namespace kernels {
namespace HWY_NAMESPACE {

// A prefetch into the L2 only (Highway 1.0.3 has the L1 one alone).
inline void PrefetchToL2(const void* p) {
#if defined(__GNUC__) || defined(__clang__)
  __builtin_prefetch(p, 0, 2);
#else
  (void)p;
#endif
}

// body(k) for the rows k of a group, `rows` of them: a size_t, or a
// std::integral_constant for a group size compiled in. Unrolled over the
// rows, GCC keeps every row's coefficients at fixed places (docs/TUNING.md).
// Not asked of clang, for which it doubled the sanitizer build time of
// grad_rows-inl.h and often failed.
template <class Rows, class Body>
HWY_INLINE void ForEachRow(Rows rows, const Body& body) {
  if constexpr (std::is_integral_v<Rows>) {
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC unroll 8
#endif
    for (std::size_t k = 0; k < rows; ++k) body(k);
  } else {
    for (std::size_t k = 0; k < Rows::value; ++k) body(k);
  }
}

// NOLINTNEXTLINE(google-readability-namespace-comments)
}  // namespace HWY_NAMESPACE
}  // namespace kernels
}  // namespace lngrad
HWY_AFTER_NAMESPACE();

#endif  // LNGRAD_KERNELS_GROUP_LOOPS_INL_H_
