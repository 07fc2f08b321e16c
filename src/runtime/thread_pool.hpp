// A persistent pool of worker threads shared by all calls. Workers are
// started once (grown on demand) and reused, so a call pays no thread
// start-up. A call made from inside a pool task, or while another thread is
// using the pool, runs serially on the calling thread instead of
// oversubscribing the cores; results never depend on which thread runs a task.
// A child process after fork() starts workers of its own.
#pragma once

#include <chrono>
#include <cstdint>

#include "runtime/function_ref.hpp"

namespace lngrad::runtime {

// Cores available to this process (affinity mask), at least 1.
int available_cores();

// Size of the last-level cache in bytes as the OS reports it (32 MiB when it
// does not say).
std::int64_t reported_last_level_cache_bytes();

// The part of it this process counts on when it decides whether tensors
// stay in cache: the reported size, at most 16 MiB per available core.
std::int64_t last_level_cache_bytes();

// Size of one core's level-2 cache in bytes (1 MiB when the OS does not say).
std::int64_t core_cache_bytes();

// Runs task(index, worker) for every index in [0, tasks) on up to `threads`
// threads, the caller included; worker is in [0, threads). Returns when all
// tasks are done.
void parallel_for(std::int64_t tasks, int threads, FunctionRef<void(std::int64_t, int)> task);

// How long a thread waiting for a pool's next call, or for its helpers,
// polls before it blocks (see thread_pool.cpp).
inline constexpr std::chrono::microseconds kSpin{200};

// Polls ready() for up to kSpin; whether it came true. pause, not
// sched_yield: a yielding worker picked up calls later.
template <typename Ready>
bool spin_until(Ready ready) {
  const auto deadline = std::chrono::steady_clock::now() + kSpin;
  for (;;) {
    for (int i = 0; i < 64; ++i) {
      if (ready()) return true;
#if defined(__x86_64__) || defined(__i386__)
      __builtin_ia32_pause();
#elif defined(__aarch64__)
      asm volatile("yield");
#endif
    }
    if (std::chrono::steady_clock::now() >= deadline) return ready();
  }
}

}  // namespace lngrad::runtime
