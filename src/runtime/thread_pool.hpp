// A persistent pool of worker threads shared by all calls. Workers are
// started once (grown on demand) and reused, so a call pays no thread
// start-up. A call made from inside a pool task, or while another thread is
// using the pool, runs serially on the calling thread instead of
// oversubscribing the cores; results never depend on which thread runs a task.
// A child process after fork() starts workers of its own.
#pragma once

#include <sched.h>

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

// After this long a polling thread also yields its core between polls: the
// thread it waits for may have been placed on the same core (next to other
// processes' threads), and would otherwise wait for the scheduler's slice.
inline constexpr std::chrono::microseconds kPauseOnly{20};

// Polls ready() for up to kSpin; whether it came true. pause at first, not
// sched_yield: a worker yielding from the start picked up calls later.
template <typename Ready>
bool spin_until(Ready ready) {
  const auto start = std::chrono::steady_clock::now();
  for (;;) {
    for (int i = 0; i < 64; ++i) {
      if (ready()) return true;
#if defined(__x86_64__) || defined(__i386__)
      __builtin_ia32_pause();
#elif defined(__aarch64__)
      asm volatile("yield");
#endif
    }
    const auto waited = std::chrono::steady_clock::now() - start;
    if (waited >= kSpin) return ready();
    if (waited >= kPauseOnly) sched_yield();
  }
}

}  // namespace lngrad::runtime
