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
// first and last partial lines take masked stores, which JoinedEdges
// collects.
#if LNGRAD_SHIFTED_LINES
template <typename U>  // lanes of the shift: uint16_t (16-bit rows) or uint32_t
class ShiftedLines {
 public:
  using D = hn::Full512<U>;
  using Line = hn::Vec<D>;

  // The row whose first step stores at `row`; that step's partial line goes
  // to head_at (row itself, or where JoinedEdges collects it).
  void Begin(const void* row, void* head_at) {
    head_at_ = static_cast<U*>(head_at);
    shift_ = reinterpret_cast<uintptr_t>(row) % 64;
    k_ = shift_ / sizeof(U);
    index_ = LaneShift<U>(kLanes - k_);
  }
  // The result of the step at `at`; the row's first step when `first`.
  HWY_INLINE void Put(Line v, void* at, bool first) {
    if (first) {
      hn::BlendedStore(v, hn::FirstN(D(), kLanes - k_), D(), head_at_);
    } else {
      hn::Stream(Join(prev_, v), D(), reinterpret_cast<U*>(static_cast<unsigned char*>(at) - shift_));
    }
    prev_ = v;
  }
  // The last step's remaining bytes; `end` is where the next step would go
  // (or where JoinedEdges collects that place's bytes).
  void Finish(void* end) const {
    if (k_ == 0) return;
    hn::BlendedStore(Join(prev_, prev_), hn::FirstN(D(), k_), D(),
                     reinterpret_cast<U*>(static_cast<unsigned char*>(end) - shift_));
  }

 private:
  static constexpr size_t kLanes = 64 / sizeof(U);
  // Lanes [0, k) from lo's last k, the rest from hi's first.
  HWY_INLINE Line Join(Line lo, Line hi) const { return ShiftAcross<U>(lo, hi, index_); }
  // Set by Begin and the first Put (a member initializer would be compiled
  // outside the target's attributes).
  Line index_;  // lane i takes lane i + kLanes - k of (lo, hi)
  Line prev_;
  U* head_at_ = nullptr;
  size_t shift_ = 0, k_ = 0;
};

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

// The lines where streamed rows meet. Rows that stream from a head of
// cached partial columns (whole lines apart, off a line) or by ShiftedLines
// (not whole lines apart) leave the bytes around each row boundary to
// partial stores: the row's last whole step ends on a line, `rest_bytes`
// before the boundary, and the next row's first whole line starts a line
// past the boundary's. Those one or two lines, stored through the cache, cost
// more than the rest of the row's stores (each reads its line from memory
// first; docs/TUNING.md). Their partial stores are collected here, a group of
// rows at a time, and the lines stream whole, the group's last boundary
// carried into the next group. The call's first and last boundaries share
// their lines with rows outside it: those bytes stay cached stores.
template <typename T>
class JoinedEdges {
 public:
  // edges_ stays unset: Finish reads only bytes that At's stores wrote, and
  // zeroing it would cost every call.
  // cppcheck-suppress uninitMemberVar ; see above
  JoinedEdges(size_t row_bytes, size_t rest_bytes) : row_bytes_(row_bytes), rest_bytes_(rest_bytes) {}
  // A group whose first row starts at `first_row`.
  void Begin(T* first_row) { first_ = reinterpret_cast<unsigned char*>(first_row); }
  // Where a partial store meant for p, beside boundary k (row k's start,
  // k = 0 .. the group's rows), goes instead.
  T* At(T* p, size_t k) {
    return static_cast<T*>(static_cast<void*>(edges_[k] + (reinterpret_cast<unsigned char*>(p) - Start(k))));
  }
  // After the group's `rows` rows; `more` when the call's next rows follow.
  void Finish(size_t rows, bool more) {
    for (size_t k = 0; k <= rows; ++k) {
      unsigned char* start = Start(k);
      const size_t bytes = static_cast<size_t>(End(k) - start);
      if (k == 0 && !carried_) {  // the call's first boundary: its own bytes only
        const size_t before = static_cast<size_t>(Boundary(0) - start);
        std::memcpy(start + before, edges_[0] + before, bytes - before);
      } else if (k == rows && more) {
        std::memcpy(edges_[0], edges_[rows], bytes);
      } else if (k == rows) {  // the call's last boundary
        std::memcpy(start, edges_[rows], static_cast<size_t>(Boundary(rows) - start));
      } else {
        StreamLines(start, edges_[k], bytes);
      }
    }
    carried_ = more;
  }

 private:
  unsigned char* Boundary(size_t k) const { return first_ + k * row_bytes_; }
  static unsigned char* LineOf(unsigned char* p) {
    return p - reinterpret_cast<uintptr_t>(p) % kLineBytes;
  }
  unsigned char* Start(size_t k) const { return LineOf(Boundary(k) - rest_bytes_); }
  unsigned char* End(size_t k) const { return LineOf(Boundary(k)) + kLineBytes; }
  alignas(64) unsigned char edges_[kMaxGroupRows + 1][2 * kLineBytes];
  size_t row_bytes_, rest_bytes_;
  unsigned char* first_ = nullptr;
  bool carried_ = false;  // edges_[0] holds the previous group's last boundary
};

// NOLINTNEXTLINE(google-readability-namespace-comments)
}  // namespace HWY_NAMESPACE
}  // namespace kernels
}  // namespace lngrad
HWY_AFTER_NAMESPACE();

#endif  // LNGRAD_KERNELS_LINE_STORES_INL_H_
