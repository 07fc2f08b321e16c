// Stores of output rows by whole cache lines: which rows can stream, the
// staging buffer for rows that are not whole lines apart, shifted lines
// (AVX-512), and the joined edge lines of rows whole lines apart but off one.
// Per-target code: included by dispatch.cc once per Highway target.
#if defined(LNGRAD_KERNELS_LINE_STORES_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef LNGRAD_KERNELS_LINE_STORES_INL_H_
#undef LNGRAD_KERNELS_LINE_STORES_INL_H_
#else
#define LNGRAD_KERNELS_LINE_STORES_INL_H_
#endif

#include <cstring>
#include <type_traits>

#include "common/aligned.hpp"
#include "kernels/convert-inl.h"
#include "kernels/kernels.hpp"

#include <hwy/cache_control.h>
#include <hwy/highway.h>

HWY_BEFORE_NAMESPACE();
namespace lngrad {
namespace kernels {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// Whether rows of h elements of elem_bytes at `rows` are all aligned alike
// (whole steps of step_bytes apart, starting on an element boundary), and in
// *head the elements each row takes to reach a step boundary (0 otherwise).
inline bool RowsAlignedAlike(const void* rows, size_t h, size_t elem_bytes, size_t step_bytes, size_t* head) {
  *head = 0;
  const size_t misalign = reinterpret_cast<uintptr_t>(rows) % step_bytes;
  if ((h * elem_bytes) % step_bytes != 0 || misalign % elem_bytes != 0) return false;
  if (misalign != 0) *head = HWY_MIN(h, (step_bytes - misalign) / elem_bytes);
  return true;
}

// Whether rows of h elements of elem_bytes at out take non-temporal stores of
// store_bytes each (wanted, and every row aligned alike), and in *head the
// elements each row first stores through the cache to reach a store boundary.
inline bool StreamRows(bool wanted, const void* out, size_t h, size_t elem_bytes, size_t store_bytes, size_t* head) {
  *head = 0;
  return wanted && RowsAlignedAlike(out, h, elem_bytes, store_bytes, head);
}

// Rows of an output that are not whole lines apart cannot all start their
// column steps on a line, so their stores could not stream. Instead a group's
// rows are written, through the cache, to a staging buffer at the same
// offsets within a line as their destinations, and then stream out a whole
// line at a time (StreamLines).
// The calling thread's staging buffer, on a line, for `bytes` at any line
// offset; grows, never shrinks (part of grad_workspace_bytes).
inline unsigned char* StagingBuffer(size_t bytes) {
  static thread_local LineVector<unsigned char> buffer;
  const size_t room = bytes + kLineBytes;  // a line to shift by
  if (buffer.size() < room) buffer.resize(room);
  return buffer.data();
}

// Where rows that go to `dst` are staged in `buffer`: at dst's line offset.
template <typename T>
T* StagedAt(unsigned char* buffer, const T* dst) {
  return reinterpret_cast<T*>(buffer + reinterpret_cast<uintptr_t>(dst) % kLineBytes);
}

// Copies n bytes from src to dst at the same offset within a line: the whole
// lines with non-temporal stores, the partial ones at either end through the
// cache (they share their line with other bytes).
inline void StreamLines(void* dst, const void* src, size_t n) {
  const hn::CappedTag<uint8_t, 64> d8;
  const size_t N = hn::Lanes(d8);
  auto* d = static_cast<uint8_t*>(dst);
  const auto* s = static_cast<const uint8_t*>(src);
  const size_t head = HWY_MIN(n, (64 - reinterpret_cast<uintptr_t>(d) % 64) % 64);
  std::memcpy(d, s, head);
  d += head, s += head, n -= head;
  for (; n >= 64; n -= 64, d += 64, s += 64) {
    for (size_t i = 0; i < 64; i += N) hn::Stream(hn::Load(d8, s + i), d8, d + i);
  }
  std::memcpy(d, s, n);
}

// The alternative on AVX-512 (the plan's shift_pd_x), with no copy: a row
// `shift` bytes past a line streams every whole line it covers, the line
// after step t-1's 64-byte result holding that result's last `shift` bytes
// and step t's first 64 - shift, joined by one two-vector permute. The row's
// first and last partial lines take masked cached stores. (Highway 1.0.3
// has no run-time shift of two vectors, hence the intrinsics.)
#undef LNGRAD_SHIFTED_LINES
#if HWY_ARCH_X86 && HWY_TARGET <= HWY_AVX3
#define LNGRAD_SHIFTED_LINES 1
template <typename U>  // lanes of the shift: uint16_t (16-bit rows) or uint32_t
class ShiftedLines {
 public:
  using D = hn::Full512<U>;
  using Line = hn::Vec<D>;

  // The row whose first step stores at `row`.
  void Begin(const void* row) {
    shift_ = reinterpret_cast<uintptr_t>(row) % 64;
    k_ = shift_ / sizeof(U);
    index_ = hn::Add(hn::Iota(D(), 0), hn::Set(D(), static_cast<U>(kLanes - k_)));
  }
  // The result of the step at `at`; the row's first step when `first`.
  HWY_INLINE void Put(Line v, void* at, bool first) {
    if (first) {
      hn::BlendedStore(v, hn::FirstN(D(), kLanes - k_), D(), static_cast<U*>(at));
    } else {
      hn::Stream(Join(prev_, v), D(), reinterpret_cast<U*>(static_cast<unsigned char*>(at) - shift_));
    }
    prev_ = v;
  }
  // The last step's remaining bytes; `end` is where the next step would go.
  void Finish(void* end) const {
    if (k_ == 0) return;
    hn::BlendedStore(Join(prev_, prev_), hn::FirstN(D(), k_), D(),
                     reinterpret_cast<U*>(static_cast<unsigned char*>(end) - shift_));
  }

 private:
  static constexpr size_t kLanes = 64 / sizeof(U);
  // Lanes [0, k) from lo's last k, the rest from hi's first.
  HWY_INLINE Line Join(Line lo, Line hi) const {
    if constexpr (sizeof(U) == 2) {
      return Line{_mm512_permutex2var_epi16(lo.raw, index_.raw, hi.raw)};
    } else {
      return Line{_mm512_permutex2var_epi32(lo.raw, index_.raw, hi.raw)};
    }
  }
  // Set by Begin and the first Put (a member initializer would be compiled
  // outside the target's attributes).
  Line index_;  // lane i takes lane i + kLanes - k of (lo, hi)
  Line prev_;
  size_t shift_ = 0, k_ = 0;
};
#else
#define LNGRAD_SHIFTED_LINES 0
#endif

// The store kind of whole steps of rows streamed by ShiftedLines, one per
// row of the group (beside std::true_type, streamed, and std::false_type,
// cached).
template <class Lines>
struct ShiftedStores : std::true_type {
  Lines* lines;
};
template <class S>
struct IsShiftedStores : std::false_type {};
template <class Lines>
struct IsShiftedStores<ShiftedStores<Lines>> : std::true_type {};
template <class S>
constexpr bool kShiftedStores = IsShiftedStores<S>::value;

// Lanes of ShiftedLines for rows of T.
template <typename T>
using ShiftLane = std::conditional_t<sizeof(T) == 2, uint16_t, uint32_t>;

// Rows streamed whole lines apart but off a line: a row's tail and the next
// row's head share a line. Stored through the cache, once per row among the
// streamed stores, those lines cost more than the rest of the row's stores
// (docs/TUNING.md); they are collected here, a group of rows at a time, and
// stream whole, the group's last tail carried into the next group's first
// line. The call's first head and last tail share their lines with rows
// outside it: those stay cached stores.
template <typename T>
class JoinedEdges {
 public:
  // lines_ stays unset: Finish reads only bytes that At's stores wrote, and
  // zeroing it would cost every call.
  // cppcheck-suppress uninitMemberVar ; see above
  JoinedEdges(const void* out, size_t row_bytes)
      : offset_(reinterpret_cast<uintptr_t>(out) % kLineBytes), row_bytes_(row_bytes) {}
  // A group whose first row starts at `first_row`.
  void Begin(T* first_row) { line0_ = reinterpret_cast<unsigned char*>(first_row) - offset_; }
  // Where the partial store meant for p (a head or tail of the group's rows)
  // goes: line k's head, or line k + 1's tail.
  T* At(T* p) {
    const size_t at = static_cast<size_t>(reinterpret_cast<unsigned char*>(p) - line0_);
    return lines_[at / row_bytes_] + at % row_bytes_ / sizeof(T);
  }
  // After the group's `rows` rows; `more` when the call's next rows follow.
  void Finish(size_t rows, bool more) {
    // Line 0: the call's first head alone, or joined to the carried tail;
    // lines 1 to rows - 1 whole; line `rows` carried or, the call's last
    // tail, stored alone.
    if (carried_) {
      StreamLines(line0_, bytes_of(0), kLineBytes);
    } else {
      std::memcpy(line0_ + offset_, bytes_of(0) + offset_, kLineBytes - offset_);
    }
    for (size_t k = 1; k < rows; ++k) StreamLines(line0_ + k * row_bytes_, bytes_of(k), kLineBytes);
    carried_ = more;
    std::memcpy(more ? bytes_of(0) : line0_ + rows * row_bytes_, bytes_of(rows), offset_);
  }

 private:
  unsigned char* bytes_of(size_t k) { return reinterpret_cast<unsigned char*>(lines_[k]); }
  alignas(64) T lines_[kMaxGroupRows + 1][kLineBytes / sizeof(T)];
  size_t offset_, row_bytes_;
  unsigned char* line0_ = nullptr;
  bool carried_ = false;  // lines_[0] holds the previous group's last tail
};

// NOLINTNEXTLINE(google-readability-namespace-comments)
}  // namespace HWY_NAMESPACE
}  // namespace kernels
}  // namespace lngrad
HWY_AFTER_NAMESPACE();

#endif  // LNGRAD_KERNELS_LINE_STORES_INL_H_
