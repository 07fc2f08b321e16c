// The rules behind every plan. Each constant is named and each rule says why
// in a few lines; docs/TUNING.md has one row per rule with its evidence.
#include "kernels/plan.hpp"

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <mutex>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "kernels/kernels.hpp"
#include "runtime/thread_pool.hpp"

namespace lngrad::kernels {
namespace {

// ---- Threads. -----------------------------------------------------------------

// A thread costs a wake-up and a share of the column-sum merges: below this
// many elements per thread one more does not pay for itself.
constexpr std::int64_t kMinElementsPerThread = std::int64_t{1} << 14;

// ---- Groups of rows (layer_norm_grad, layer_norm_grad_beta). ---------------------

// A group's dy and x (its "row pairs") should stay in the L1/L2 between the
// two passes, and the column-sum partials are read and written once per group.
constexpr std::int64_t kShortRowPairBytes = 1024;  // under: the partials dominate, 8 rows
constexpr std::int64_t kL1RowPairBytes = 4096;     // [4, 8) KiB from memory: 8 rows fill about the L1
constexpr std::int64_t kLongRowPairBytes = 8192;   // from here 4 rows
constexpr std::int64_t kDefaultGroupRows = 4;
constexpr std::int64_t kMaxGroupBytes = std::int64_t{256} * 1024;  // very long rows: fewer
// float32 rows from beyond the LLC go in pairs from this row size on: the
// smaller groups keep more lines in flight per row.
constexpr std::int64_t kPairedRowBytes = 256;
constexpr std::int64_t kPairedGroupRows = 2;
// float32 rows of this length go in pairs wherever they come from: groups
// of 4 of them ran slower from the LLC and from the core's own cache alike
// (docs/TUNING.md); shorter and longer rows did not gain, nor did rows under
// 4 KiB in the core's own cache.
constexpr std::int64_t kPairedMidRowBytesMin = 3072;
constexpr std::int64_t kPairedMidRowBytesMax = 8192;
constexpr std::int64_t kPairedHotRowBytesMin = 4096;
// So do float32 rows whose loads and stores split lines, from this size on
// and wherever they come from: rows not whole lines apart, and rows off a
// line (NumPy's) too short for the aligned head (kAlignedRowsMinBytes): each
// step's loads and stores then span two lines a row, and four rows of such
// steps ran slower than two (docs/TUNING.md).
constexpr std::int64_t kPairedSplitRowBytes = 1536;
// float32 rows of 16-32 KiB in a core's cache of at least this size go in
// 8s, past kMaxGroupBytes for 32 KiB rows: they ran faster so than in 4s
// (docs/TUNING.md; measured on a 2 MiB L2 only, so smaller caches, and
// longer rows, keep group_for's count).
constexpr std::int64_t kHotLongRowBytesMin = 16384;
constexpr std::int64_t kHotLongRowBytesMax = 32768;
constexpr std::int64_t kLargeCoreCacheBytes = std::int64_t{2} << 20;
// With narrow vectors (under a cache line) 16-bit rows this long go in pairs.
constexpr std::int64_t kNarrowLong16BitH = 1024;

// ---- Fusing pass 1 of the next group into pass 2 of this one. ---------------------

// From rows whose dy and x take this many bytes (half for 16-bit storage, so
// H >= 1024 either way), and only while the rows come from beyond the LLC:
// shorter rows lose to the fused loop's per-row bookkeeping, and rows from
// the caches gain nothing from reading the next rows early but lose the
// registers the fused loop takes.
constexpr std::int64_t kFuseRowPairBytes = 8192;

// ---- Prefetch. --------------------------------------------------------------------

// The fused pass 1 prefetches ahead of its loads: the hardware prefetcher
// alone leaves them waiting on memory once pass 2's work sits in between.
constexpr std::int64_t kFusedPrefetchNear = 2048;  // float32/float64 inside the LLC
constexpr std::int64_t kFusedPrefetchFar = 4096;   // float32 beyond the LLC (16-bit: kPrefetch16BitBytes)
// float32 rows from beyond the core's cache also prefetch into the L2, where
// more requests can be in flight than the L1 allows.
constexpr std::int64_t kFusedPrefetchL2 = 8192;
// Unfused rows from beyond the core's cache prefetch a later group while pass
// 2 finishes this one (GroupsAhead in plan.hpp), from rows of this size on.
constexpr std::int64_t kMinPrefetchedRowBytes = 512;  // shorter rows lost

// ---- Stores. ----------------------------------------------------------------------

constexpr std::int64_t kCacheLine = 64;
// A pd_x off a cache line (as NumPy's and std::vector's buffers are) streams
// only for rows this long, and y for rows of kMisalignedStreamYRowBytes:
// shorter rows spend too much in the cached head and tail of every row.
constexpr std::int64_t kMisalignedStreamRowBytes = 1536;
constexpr std::int64_t kMisalignedStreamYRowBytes = 4096;
// Cached rows off a line start pass 2 on lines from rows this long.
constexpr std::int64_t kAlignedRowsMinBytes = 3072;
// With narrow vectors, streamed stores narrower than this lose.
constexpr std::int64_t kNarrowMinStreamBytes = 32;
constexpr std::int64_t kPage = 4096;  // L1 set aliasing period of the machines measured
// Parameters off a line: a call of one group of rows stores each column sum
// once, so split stores cost less than summing in scratch and copying out;
// gamma, read rows + 1 times, repays its copy from three rows on.
constexpr std::int64_t kGammaInPlaceMaxRows = 2;

std::int64_t storage_bytes(Dtype d) { return static_cast<std::int64_t>(dtype_size(d)); }
std::int64_t acc_bytes(Dtype d) { return d == Dtype::float64 ? 8 : 4; }
bool narrow(const TargetTraits& t) { return t.vector_bytes < kCacheLine; }
bool in_pairs(const PlanInputs& in) { return in.dtype == Dtype::bfloat16 && in.target.bf16_pairs; }
// Lanes of one accumulator vector (one double on a one-float target).
std::int64_t lanes(const PlanInputs& in) {
  return std::max<std::int64_t>(1, in.target.vector_bytes / acc_bytes(in.dtype));
}
// Elements of a whole column step: two vectors for bfloat16 pairs, and for
// float16 in layer_norm_grad's pass 2 (f16_steps) where the target has them.
std::int64_t step_elements(const PlanInputs& in, bool f16_steps) {
  const std::int64_t n = lanes(in);
  const bool two = in_pairs(in) || (f16_steps && in.dtype == Dtype::float16 && in.target.f16_pair_steps);
  return two ? 2 * n : n;
}

// The group size for rows whose dy and x take row_pair_bytes together, read
// from beyond the cores' own caches (from_memory) or not. Rows in a core's
// cache fill the L1 with 4 rows of [4, 8) KiB already; 8 lost there.
std::int64_t group_for(std::int64_t row_pair_bytes, bool from_memory) {
  const bool eight = row_pair_bytes < kShortRowPairBytes ||
                     (from_memory && row_pair_bytes >= kL1RowPairBytes && row_pair_bytes < kLongRowPairBytes);
  const std::int64_t preferred = eight ? kMaxGroupRows : kDefaultGroupRows;
  return std::max<std::int64_t>(1, std::min(preferred, kMaxGroupBytes / row_pair_bytes));
}

// The most rows, up to `rows`, of a group of rows `stride` bytes apart with no
// two within a cache line of each other modulo a page: with vectors under a
// line, pass 2 returns to each line at the next step, and such rows evict
// one another from an L1 set (and their streamed stores stall in turn).
std::int64_t alias_free_rows(std::int64_t stride, std::int64_t rows) {
  for (std::int64_t g = 2; g <= rows; ++g) {
    const std::int64_t d = (g - 1) * stride % kPage;  // rows g-1 apart; nearer ones were checked
    if (std::min(d, kPage - d) < kCacheLine) return g - 1;
  }
  return rows;
}

bool beyond_llc(const PlanInputs& in, int tensors) {
  return in.rows * in.h * storage_bytes(in.dtype) * tensors > in.caches.llc;
}

// Whether the output (pd_x, y) streams past the caches: asked, or automatic
// when the call's `tensors` row tensors do not fit the LLC (streaming then
// saves reading each destination line and leaves the cache to the inputs),
// an output off a line only for rows of misaligned_min_bytes or more.
bool stream_wanted(const PlanInputs& in, int tensors, std::int64_t misaligned_min_bytes) {
  if (!in.has_output || in.stores == Stores::cached) return false;
  if (in.stores == Stores::streaming) return true;
  const std::int64_t row_bytes = in.h * storage_bytes(in.dtype);
  return beyond_llc(in, tensors) && (in.output_line_offset == 0 || row_bytes >= misaligned_min_bytes);
}

// The kernels stream whole column steps of an output that starts on an
// element boundary: in place when rows are a whole number of steps, else,
// where stage is given (pd_x), through a staging buffer at each row's offset
// within a line (*stage set). Otherwise stores stay cached, and notes say so.
bool streamable(const PlanInputs& in, bool f16_steps, bool* stage, std::string* notes) {
  const std::int64_t es = storage_bytes(in.dtype);
  const std::int64_t step_bytes = step_elements(in, f16_steps) * es;
  if (in.output_line_offset % es != 0) {
    *notes += "stream refused: the output starts " + std::to_string(in.output_line_offset) +
              " bytes past a line, inside an element; ";
    return false;
  }
  if (in.h * es % step_bytes == 0) return true;
  if (stage != nullptr) {
    *stage = true;
    return true;
  }
  *notes += "stream refused: rows of " + std::to_string(in.h * es) + " bytes are not whole " +
            std::to_string(step_bytes) + "-byte steps; ";
  return false;
}

// ---- The override (LNGRAD_PLAN / set_plan_override). ---------------------------

struct Override {
  std::optional<std::int64_t> threads, group, fused, stream, shift, align, prefetch_l1, prefetch_l2, ahead;
  bool any() const { return threads || group || fused || stream || shift || align || prefetch_l1 || prefetch_l2 || ahead; }
};

std::optional<std::int64_t>* field(Override& o, std::string_view key) {
  if (key == "threads") return &o.threads;
  if (key == "group") return &o.group;
  if (key == "fused") return &o.fused;
  if (key == "stream") return &o.stream;
  if (key == "shift") return &o.shift;
  if (key == "align") return &o.align;
  if (key == "prefetch_l1") return &o.prefetch_l1;
  if (key == "prefetch_l2") return &o.prefetch_l2;
  if (key == "ahead") return &o.ahead;
  return nullptr;
}

struct Range {
  std::int64_t lo, hi;
};
Range range_of(std::string_view key) {
  if (key == "group") return {1, kMaxGroupRows};
  if (key == "fused" || key == "stream" || key == "shift" || key == "align") return {0, 1};
  if (key == "threads") return {1, 4096};
  if (key == "ahead") return {0, 1};  // off or on; the distance follows GroupsAhead
  return {0, std::int64_t{1} << 20};  // prefetch distances in bytes
}

Override parse_override(std::string_view spec) {
  Override o;
  while (!spec.empty()) {
    const std::size_t comma = spec.find(',');
    const std::string_view item = spec.substr(0, comma);
    spec = comma == std::string_view::npos ? std::string_view() : spec.substr(comma + 1);
    if (item.empty()) continue;
    const std::size_t eq = item.find('=');
    const std::string_view key = item.substr(0, eq);
    std::optional<std::int64_t>* slot = field(o, key);
    if (slot == nullptr) {
      throw Error("plan: expected keys threads, group, fused, stream, shift, align, prefetch_l1, prefetch_l2, ahead; given '" +
                  std::string(item) + "'");
    }
    const std::string value(eq == std::string_view::npos ? std::string_view() : item.substr(eq + 1));
    char* end = nullptr;
    const long long v = value.empty() ? 0 : std::strtoll(value.c_str(), &end, 10);
    const Range r = range_of(key);
    if (value.empty() || *end != '\0' || v < r.lo || v > r.hi) {
      throw Error("plan: " + std::string(key) + ": expected an integer in [" + std::to_string(r.lo) + ", " +
                  std::to_string(r.hi) + "]; given '" + value + "'");
    }
    *slot = v;
  }
  return o;
}

std::mutex& override_mutex() {
  static std::mutex m;
  return m;
}
// Whether any override is set: calls without one (all but experiments) then
// take no lock on their way to the kernels.
std::atomic<bool>& overridden() {
  static std::atomic<bool> set{false};
  return set;
}
Override& override_slot() {
  static Override o = [] {
    const char* env = std::getenv("LNGRAD_PLAN");
    try {
      Override parsed = env == nullptr ? Override{} : parse_override(env);
      overridden().store(parsed.any(), std::memory_order_release);
      return parsed;
    } catch (const Error& e) {
      throw Error(std::string("LNGRAD_PLAN: ") + e.what());
    }
  }();
  return o;
}
Override current_override() {
  static const bool env_read = (override_slot(), true);  // LNGRAD_PLAN, once
  (void)env_read;
  if (!overridden().load(std::memory_order_acquire)) return {};
  std::lock_guard<std::mutex> lock(override_mutex());
  return override_slot();
}

// The rules' thread count, or the override's.
int threads_for(const PlanInputs& in, const Override& o) {
  return o.threads ? static_cast<int>(*o.threads) : plan_threads(in.threads, in.rows, in.h);
}

// The call's store option, or the override's (stream=1: streaming, 0: cached).
PlanInputs with_asked_stores(PlanInputs in, const Override& o) {
  if (o.stream) in.stores = *o.stream != 0 ? Stores::streaming : Stores::cached;
  return in;
}

template <typename T>
void apply(const std::optional<std::int64_t>& o, T* value) {
  if (o) *value = static_cast<T>(*o);
}

}  // namespace

int plan_threads(int requested, std::int64_t rows, std::int64_t h) {
  const std::int64_t useful = std::max<std::int64_t>(1, rows * h / kMinElementsPerThread);
  return static_cast<int>(std::max<std::int64_t>(1, std::min<std::int64_t>({requested, useful, rows})));
}

GradPlan plan_grad(const PlanInputs& in) {
  GradPlan p;
  const Override o = current_override();
  p.threads = threads_for(in, o);
  const std::int64_t es = storage_bytes(in.dtype);
  const std::int64_t row_bytes = in.h * es;
  const bool is16 = es == 2;
  const bool is_f32 = in.dtype == Dtype::float32;
  const bool far = beyond_llc(in, 3);  // dy, x and pd_x
  // Rows come from beyond what the threads' own caches hold.
  const bool from_memory = in.rows * row_bytes * 2 > p.threads * in.caches.core;
  // Rows whole lines apart and long enough for a head of partial columns to
  // start their steps on lines, wherever the buffer starts (align_rows).
  const bool head_aligns = row_bytes % kCacheLine == 0 && row_bytes >= kAlignedRowsMinBytes;

  // Narrow vectors do not fuse: for 16-bit rows pass 2's pairs and pass 1's
  // six sums do not fit 16 registers together, and float32 rows ran faster
  // unfused (docs/TUNING.md).
  const std::int64_t fuse_bytes = is16 ? kFuseRowPairBytes / 2 : kFuseRowPairBytes;
  p.fused = !narrow(in.target) && 2 * row_bytes >= fuse_bytes && far;
  apply(o.fused, &p.fused);

  if (narrow(in.target)) {
    // Narrow vectors: long 16-bit rows in pairs, the rest in 4s at most, cut
    // to alias-free rows for wider storage. A row takes two or more steps to
    // fill a line, and groups of 8 streamed rows lost (docs/TUNING.md).
    if (is16 && in.h >= kNarrowLong16BitH) {
      p.group_rows = kPairedGroupRows;
    } else {
      const std::int64_t g = std::min(kDefaultGroupRows, group_for(2 * row_bytes, /*from_memory=*/true));
      p.group_rows = is16 ? g : alias_free_rows(row_bytes, g);
    }
  } else {
    p.group_rows = group_for(2 * row_bytes, from_memory);
    const bool hot_long = row_bytes >= kHotLongRowBytesMin && row_bytes <= kHotLongRowBytesMax;
    if (is_f32 && !from_memory && hot_long && in.caches.core >= kLargeCoreCacheBytes) {
      p.group_rows = kMaxGroupRows;
    }
    const std::int64_t mid_min = from_memory ? kPairedMidRowBytesMin : kPairedHotRowBytesMin;
    const bool mid_pairs = row_bytes >= mid_min && row_bytes <= kPairedMidRowBytesMax;
    const bool split_rows = !head_aligns && (row_bytes % kCacheLine != 0 || in.output_line_offset != 0);
    const bool split_pairs = split_rows && row_bytes >= kPairedSplitRowBytes;
    if (is_f32 && ((far && row_bytes >= kPairedRowBytes) || mid_pairs || split_pairs)) {
      p.group_rows = std::min(kPairedGroupRows, p.group_rows);
    }
  }
  apply(o.group, &p.group_rows);

  if (p.fused) {
    p.prefetch_l1_bytes = is16 ? kPrefetch16BitBytes : is_f32 && far ? kFusedPrefetchFar : kFusedPrefetchNear;
    p.prefetch_l2_bytes = is_f32 && from_memory && !narrow(in.target) ? kFusedPrefetchL2 : 0;
  } else if (from_memory && (!is16 || far) && row_bytes >= kMinPrefetchedRowBytes) {
    p.groups_ahead = GroupsAhead(p.group_rows * row_bytes);
  }
  if (o.prefetch_l1 && is16 && p.fused) {
    p.notes += "prefetch_l1 is compiled in for 16-bit rows; ";
  } else {
    apply(o.prefetch_l1, &p.prefetch_l1_bytes);
  }
  if (o.prefetch_l2 && !is_f32) {
    p.notes += "prefetch_l2 is compiled for float32 rows only; ";
  } else {
    apply(o.prefetch_l2, &p.prefetch_l2_bytes);
  }
  if (o.ahead) p.groups_ahead = *o.ahead != 0 ? GroupsAhead(p.group_rows * row_bytes) : 0;

  bool stream = stream_wanted(with_asked_stores(in, o), 3, kMisalignedStreamRowBytes);
  if (stream) {
    // Streamed steps narrower than a float vector, or on narrow vectors under
    // kNarrowMinStreamBytes or to rows that alias in the L1, lost.
    const std::int64_t step_bytes = step_elements(in, true) * es;
    const bool too_narrow =
        step_bytes < lanes(in) * acc_bytes(in.dtype) ||
        (narrow(in.target) && is16 &&
         (alias_free_rows(row_bytes, p.group_rows) != p.group_rows || step_bytes < kNarrowMinStreamBytes));
    if (too_narrow) {
      p.notes += "stream refused: " + std::to_string(step_bytes) + "-byte steps on this target lose; ";
      stream = false;
    }
  }
  p.stream_pd_x = stream && streamable(in, true, &p.stage_pd_x, &p.notes);
  // Staged rows shift their lines into place instead, where the target can:
  // a group's staged copy came out in one burst of stores that did not
  // overlap the next group's work, and joined edges left it no other gain.
  const bool shift_wanted = !o.shift || *o.shift != 0;
  p.shift_pd_x = p.stage_pd_x && in.target.shifts_lines && shift_wanted;
  if (p.shift_pd_x) p.stage_pd_x = false;
  // Cached rows of 3 KiB or more whole lines apart that start off a line
  // begin pass 2 with a head of partial columns, so that its loads and
  // stores start on lines; bfloat16 rows of 2 KiB lost by the head's cost.
  p.align_rows = !p.stream_pd_x && head_aligns;
  apply(o.align, &p.align_rows);
  p.sums_in_place = in.rows <= p.group_rows;
  p.gamma_in_place = in.rows <= std::min(kGammaInPlaceMaxRows, p.group_rows);
  return p;
}

BetaPlan plan_beta(const PlanInputs& in) {
  BetaPlan p;
  const Override o = current_override();
  p.threads = threads_for(in, o);
  p.group_rows = group_for(in.h * (storage_bytes(in.dtype) + storage_bytes(in.res_dtype)), /*from_memory=*/true);
  apply(o.group, &p.group_rows);
  p.sums_in_place = in.rows <= p.group_rows;
  return p;
}

ForwardPlan plan_forward(const PlanInputs& in) {
  ForwardPlan p;
  const Override o = current_override();
  p.threads = threads_for(in, o);
  // x and y. Rows that are not whole steps apart stay cached: staged, they
  // measured level (docs/TUNING.md).
  p.stream_y = stream_wanted(with_asked_stores(in, o), 2, kMisalignedStreamYRowBytes) && streamable(in, false, nullptr, &p.notes);
  return p;
}

std::string describe(const GradPlan& p) {
  std::ostringstream s;
  s << "threads=" << p.threads << " group=" << p.group_rows << " fused=" << p.fused << " stream=" << p.stream_pd_x
    << " prefetch_l1=" << p.prefetch_l1_bytes << " prefetch_l2=" << p.prefetch_l2_bytes
    << " ahead=" << p.groups_ahead;
  if (p.stage_pd_x) s << " staged=1";  // streamed through the staging buffer (not an override key)
  if (p.shift_pd_x) s << " shift=1";
  if (p.align_rows) s << " align=1";
  // Small calls: float32 pd_gamma/pd_beta (and gamma) used where they lie, even off a line.
  if (p.sums_in_place) s << " sums_in_place=1";
  if (p.gamma_in_place) s << " gamma_in_place=1";
  if (!p.notes.empty()) s << " (" << p.notes.substr(0, p.notes.size() - 2) << ")";
  return s.str();
}

std::string describe(const BetaPlan& p) {
  return "threads=" + std::to_string(p.threads) + " group=" + std::to_string(p.group_rows) +
         (p.sums_in_place ? " sums_in_place=1" : "");
}

std::string describe(const ForwardPlan& p) {
  std::string s = "threads=" + std::to_string(p.threads) + " stream=" + std::to_string(p.stream_y ? 1 : 0);
  if (!p.notes.empty()) s += " (" + p.notes.substr(0, p.notes.size() - 2) + ")";
  return s;
}

void set_plan_override(std::string_view spec) {
  Override parsed = parse_override(spec);  // throws before anything changes
  std::lock_guard<std::mutex> lock(override_mutex());
  override_slot() = parsed;
  overridden().store(parsed.any(), std::memory_order_release);
}

PlanInputs machine_inputs(Dtype dtype, std::int64_t rows, std::int64_t h, int threads, Stores stores) {
  PlanInputs in;
  in.dtype = in.res_dtype = dtype;
  in.rows = rows;
  in.h = h;
  in.threads = threads;
  in.stores = stores;
  in.target = active().traits();
  in.caches = {runtime::core_cache_bytes(), runtime::last_level_cache_bytes()};
  return in;
}

void set_output(PlanInputs& in, const void* out) {
  in.has_output = out != nullptr;
  in.output_line_offset = static_cast<std::int64_t>(reinterpret_cast<std::uintptr_t>(out) % kCacheLine);
}

}  // namespace lngrad::kernels
