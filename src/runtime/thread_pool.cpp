#include "runtime/thread_pool.hpp"

#include <pthread.h>
#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace lngrad::runtime {

int available_cores() {
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof set, &set) == 0) {
    const int n = CPU_COUNT(&set);
    if (n > 0) return n;
  }
  const unsigned hc = std::thread::hardware_concurrency();
  return hc > 0 ? static_cast<int>(hc) : 1;
}

namespace {

// "32768K" and the like, as sysfs writes cache sizes; 0 when unreadable.
std::int64_t parse_cache_size(const std::string& text) {
  char* end = nullptr;
  const long long v = std::strtoll(text.c_str(), &end, 10);
  if (end == text.c_str() || v <= 0) return 0;
  switch (*end) {
    case 'K': return v << 10;
    case 'M': return v << 20;
    case 'G': return v << 30;
    default: return v;
  }
}

// The size of cpu0's data or unified cache at `level` (0: the highest level
// sysfs lists); 0 if sysfs does not say.
std::int64_t sysfs_cache_bytes(int level) {
  int best_level = 0;
  std::int64_t best = 0;
  for (int i = 0; i < 16; ++i) {
    const std::string dir = "/sys/devices/system/cpu/cpu0/cache/index" + std::to_string(i) + "/";
    std::ifstream level_file(dir + "level"), type_file(dir + "type"), size_file(dir + "size");
    if (!level_file || !size_file) continue;
    int this_level = 0;
    std::string type, size;
    level_file >> this_level;
    type_file >> type;
    size_file >> size;
    const std::int64_t bytes = parse_cache_size(size);
    if (type == "Instruction" || bytes <= 0) continue;
    if (level == 0 ? this_level > best_level : this_level == level) {
      best_level = this_level;
      best = bytes;
    }
  }
  return best;
}

}  // namespace

std::int64_t reported_last_level_cache_bytes() {
  // sysfs first: under a hypervisor glibc's sysconf can report another
  // figure (384 MiB on a VM whose sysfs lists a 32 MiB L3).
  static const std::int64_t bytes = [] {
    if (const std::int64_t b = sysfs_cache_bytes(0); b > 0) return b;
    for (int name : {_SC_LEVEL3_CACHE_SIZE, _SC_LEVEL2_CACHE_SIZE}) {
      const long v = sysconf(name);
      if (v > 0) return static_cast<std::int64_t>(v);
    }
    return std::int64_t{32} << 20;
  }();
  return bytes;
}

std::int64_t last_level_cache_bytes() {
  // No core has more than a few MiB of L3 to itself, but a VM can be shown
  // its host's whole L3 for a couple of vCPUs, most of it other tenants'.
  // Counted at most 16 MiB per available core (docs/TUNING.md, Stores).
  constexpr std::int64_t kMaxPerCore = std::int64_t{16} << 20;
  static const std::int64_t bytes = std::min(reported_last_level_cache_bytes(), kMaxPerCore * available_cores());
  return bytes;
}

std::int64_t core_cache_bytes() {
  static const std::int64_t bytes = [] {
    if (const std::int64_t b = sysfs_cache_bytes(2); b > 0) return b;
    const long v = sysconf(_SC_LEVEL2_CACHE_SIZE);
    return v > 0 ? static_cast<std::int64_t>(v) : std::int64_t{1} << 20;
  }();
  return bytes;
}

namespace {

thread_local bool t_inside_task = false;

// Workers wait for the next call spinning for a while before they block, and
// the caller so waits for the helpers in its call to finish: waking a blocked
// thread costs more than a whole small call (docs/TUNING.md). Back-to-back
// calls, as in a training step's layers, find the workers awake; an idle
// process stops spinning after kSpin. (OpenMP runtimes do the same, for
// longer.) Only as many threads as there are cores spin: asked for more, the
// others block at once, as does the caller, or spinners would take the cores
// the work needs. Tasks are taken from a shared counter, so a helper that
// comes late finds less to do; one that comes after the caller has taken the
// last task stays out of the call (enter). kSpin and spin_until are in
// thread_pool.hpp.

class Pool {
 public:
  Pool() : cores_(available_cores()) {
    live_ = this;
    pthread_atfork(nullptr, nullptr, [] { live_->start_over_in_child(); });
  }

  ~Pool() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stopping_.store(true, std::memory_order_relaxed);
      generation_.store(next_call(0), std::memory_order_release);
    }
    wake_.notify_all();
    for (auto& t : workers_) t.join();
  }

  // Caller holds run_mutex_.
  void run(std::int64_t tasks, int threads, FunctionRef<void(std::int64_t, int)> task) {
    grow(threads - 1);
    task_ = &task;
    tasks_ = tasks;
    next_.store(0, std::memory_order_relaxed);
    const std::uint64_t generation = next_call(threads - 1);
    entry_.store(generation & kCallBits, std::memory_order_relaxed);  // open, no helper in
    int sleeping;
    {  // under the mutex, so that a worker going to sleep sees the new generation or is counted
      std::lock_guard<std::mutex> lock(mutex_);
      generation_.store(generation, std::memory_order_release);
      sleeping = sleepers_;
    }
    if (sleeping > 0) wake_.notify_all();
    work(0);
    // Close the call: a helper not in by now has no task left to take, and
    // waiting for it would tie the call to when its core is free (another
    // process's threads, or this one's, may hold it for a scheduler slice).
    // Wait for those in: spin (tasks end together), then block.
    const std::uint64_t in = entry_.fetch_or(kClosed, std::memory_order_acq_rel) & kInside;
    auto helpers_done = [&] { return (entry_.load(std::memory_order_acquire) & kInside) == 0; };
    if (in != 0 && (threads > cores_ || !spin_until(helpers_done))) {
      std::unique_lock<std::mutex> lock(mutex_);
      done_.wait(lock, helpers_done);
    }
    task_ = nullptr;
  }

  std::mutex run_mutex_;

 private:
  // After fork() only the forking thread exists in the child: the workers are
  // gone, and a lock may have been held by one of them. Their std::thread
  // objects can neither be joined nor destroyed (a joinable std::thread ends
  // the program when destroyed), so they are left behind on purpose; the locks
  // and condition variables are made anew and the next call starts new
  // workers. Without this a child's first parallel call waited forever.
  void start_over_in_child() {
    new (&mutex_) std::mutex();
    new (&run_mutex_) std::mutex();
    new (&wake_) std::condition_variable();
    new (&done_) std::condition_variable();
    static auto* const left_behind = new std::vector<std::thread>();  // never destroyed, see above
    for (std::thread& t : workers_) left_behind->push_back(std::move(t));
    workers_.clear();
    sleepers_ = 0;
    task_ = nullptr;
    tasks_ = 0;
    next_.store(0, std::memory_order_relaxed);
    entry_.store(0, std::memory_order_relaxed);
  }

  static inline Pool* live_ = nullptr;

  // A call's generation: a count of calls above, its number of helpers
  // below, so that a worker reads both in one load. (Read apart, a worker
  // that sat out one call could read the next call's helper count with the
  // old generation, help the new call, then help it again on seeing its
  // generation: one helper counted twice.)
  std::uint64_t next_call(int helpers) const {
    const std::uint64_t calls = (generation_.load(std::memory_order_relaxed) >> 32) + 1;
    return calls << 32 | static_cast<std::uint32_t>(helpers);
  }
  static int helpers_of(std::uint64_t generation) { return static_cast<int>(generation & 0xFFFFFFFFu); }

  void grow(int helpers) {
    while (static_cast<int>(workers_.size()) < helpers) {
      const int id = static_cast<int>(workers_.size()) + 1;
      const std::uint64_t seen = generation_.load(std::memory_order_acquire);
      workers_.emplace_back([this, id, seen] { loop(id, seen); });
    }
  }

  void work(int worker) {
    t_inside_task = true;
    for (;;) {
      const std::int64_t i = next_.fetch_add(1, std::memory_order_relaxed);
      if (i >= tasks_) break;
      (*task_)(i, worker);
    }
    t_inside_task = false;
  }

  // The generation after `seen`: spinning for up to kSpin if asked, then blocked.
  std::uint64_t next_generation(std::uint64_t seen, bool spin) {
    if (spin && spin_until([&] { return generation_.load(std::memory_order_acquire) != seen; })) {
      return generation_.load(std::memory_order_acquire);
    }
    std::unique_lock<std::mutex> lock(mutex_);
    ++sleepers_;
    wake_.wait(lock, [&] { return generation_.load(std::memory_order_acquire) != seen; });
    --sleepers_;
    return generation_.load(std::memory_order_acquire);
  }

  void loop(int id, std::uint64_t seen) {
    for (;;) {
      seen = next_generation(seen, id < cores_);
      if (stopping_.load(std::memory_order_relaxed)) return;
      if (id > helpers_of(seen) || !enter(seen)) continue;
      work(id);
      const std::uint64_t before = entry_.fetch_sub(1, std::memory_order_acq_rel);
      if ((before & kInside) == 1 && (before & kClosed) != 0) {  // the last one out of a closed call
        std::lock_guard<std::mutex> lock(mutex_);
        done_.notify_one();
      }
    }
  }

  // Joins the call of `generation` while it is still open; false once the
  // caller has closed it or moved on to another call.
  bool enter(std::uint64_t generation) {
    std::uint64_t e = entry_.load(std::memory_order_acquire);
    do {
      if ((e & kCallBits) != (generation & kCallBits) || (e & kClosed) != 0) return false;
    } while (!entry_.compare_exchange_weak(e, e + 1, std::memory_order_acq_rel, std::memory_order_acquire));
    return true;
  }

  const int cores_;  // available to the process when the pool started
  std::mutex mutex_;
  std::condition_variable wake_, done_;
  std::vector<std::thread> workers_;
  std::atomic<std::uint64_t> generation_{0};  // see next_call
  int sleepers_ = 0;  // workers blocked on wake_ (guarded by mutex_)
  // Set before a generation is published (release) and read after it is seen
  // (acquire). stopping_ is also read by workers that take no part in a call,
  // which the next call does not wait for: an atomic.
  std::atomic<bool> stopping_{false};
  const FunctionRef<void(std::int64_t, int)>* task_ = nullptr;
  std::int64_t tasks_ = 0;
  std::atomic<std::int64_t> next_{0};
  // The current call's entry: its count of calls (as in generation_), whether
  // the caller has closed it, and how many helpers are inside.
  static constexpr std::uint64_t kCallBits = ~std::uint64_t{0xFFFFFFFFu};
  static constexpr std::uint64_t kClosed = std::uint64_t{1} << 31;
  static constexpr std::uint64_t kInside = kClosed - 1;
  std::atomic<std::uint64_t> entry_{0};
};

Pool& pool() {
  static Pool instance;
  return instance;
}

void run_serial(std::int64_t tasks, FunctionRef<void(std::int64_t, int)> task) {
  for (std::int64_t i = 0; i < tasks; ++i) task(i, 0);
}

}  // namespace

void parallel_for(std::int64_t tasks, int threads, FunctionRef<void(std::int64_t, int)> task) {
  if (threads > tasks) threads = static_cast<int>(tasks);
  if (threads <= 1 || t_inside_task) return run_serial(tasks, task);
  Pool& p = pool();
  std::unique_lock<std::mutex> lock(p.run_mutex_, std::try_to_lock);
  if (!lock.owns_lock()) return run_serial(tasks, task);  // another caller has the pool
  p.run(tasks, threads, task);
}

}  // namespace lngrad::runtime
