#include "triad.hpp"

#include <algorithm>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

#include "runtime/thread_pool.hpp"

namespace lngrad_bench {

namespace {

void triad_scalar(float* a, const float* b, const float* c, float s, std::size_t begin, std::size_t end) {
  for (std::size_t i = begin; i < end; ++i) a[i] = b[i] + s * c[i];
}

#if defined(__x86_64__)
// Explicit intrinsics rather than compiler flags: the roofline must not depend
// on how the rest of the bench was compiled.
__attribute__((target("avx512f"))) void triad_avx512(float* a, const float* b, const float* c, float s,
                                                     std::size_t begin, std::size_t end, bool streaming) {
  const __m512 vs = _mm512_set1_ps(s);
  std::size_t i = begin;
  if (streaming) {  // streaming stores need 64-byte aligned addresses
    for (; i < end && (reinterpret_cast<std::uintptr_t>(a + i) & 63) != 0; ++i) a[i] = b[i] + s * c[i];
    for (; i + 16 <= end; i += 16) {
      _mm512_stream_ps(a + i, _mm512_fmadd_ps(vs, _mm512_loadu_ps(c + i), _mm512_loadu_ps(b + i)));
    }
    _mm_sfence();
  } else {
    for (; i + 16 <= end; i += 16) {
      _mm512_storeu_ps(a + i, _mm512_fmadd_ps(vs, _mm512_loadu_ps(c + i), _mm512_loadu_ps(b + i)));
    }
  }
  triad_scalar(a, b, c, s, i, end);
}

__attribute__((target("avx2,fma"))) void triad_avx2(float* a, const float* b, const float* c, float s,
                                                    std::size_t begin, std::size_t end, bool streaming) {
  const __m256 vs = _mm256_set1_ps(s);
  std::size_t i = begin;
  if (streaming) {
    for (; i < end && (reinterpret_cast<std::uintptr_t>(a + i) & 31) != 0; ++i) a[i] = b[i] + s * c[i];
    for (; i + 8 <= end; i += 8) {
      _mm256_stream_ps(a + i, _mm256_fmadd_ps(vs, _mm256_loadu_ps(c + i), _mm256_loadu_ps(b + i)));
    }
    _mm_sfence();
  } else {
    for (; i + 8 <= end; i += 8) {
      _mm256_storeu_ps(a + i, _mm256_fmadd_ps(vs, _mm256_loadu_ps(c + i), _mm256_loadu_ps(b + i)));
    }
  }
  triad_scalar(a, b, c, s, i, end);
}

void triad_sse2(float* a, const float* b, const float* c, float s, std::size_t begin, std::size_t end, bool streaming) {
  const __m128 vs = _mm_set1_ps(s);
  std::size_t i = begin;
  if (streaming) {
    for (; i < end && (reinterpret_cast<std::uintptr_t>(a + i) & 15) != 0; ++i) a[i] = b[i] + s * c[i];
    for (; i + 4 <= end; i += 4) {
      _mm_stream_ps(a + i, _mm_add_ps(_mm_loadu_ps(b + i), _mm_mul_ps(vs, _mm_loadu_ps(c + i))));
    }
    _mm_sfence();
  } else {
    for (; i + 4 <= end; i += 4) {
      _mm_storeu_ps(a + i, _mm_add_ps(_mm_loadu_ps(b + i), _mm_mul_ps(vs, _mm_loadu_ps(c + i))));
    }
  }
  triad_scalar(a, b, c, s, i, end);
}

enum class Isa { avx512, avx2, sse2 };

Isa detect() {
  if (__builtin_cpu_supports("avx512f")) return Isa::avx512;
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) return Isa::avx2;
  return Isa::sse2;
}

const Isa kIsa = detect();
#endif

}  // namespace

void triad_range(float* a, const float* b, const float* c, float s, std::size_t begin, std::size_t end,
                 TriadStores stores) {
#if defined(__x86_64__)
  const bool streaming = stores == TriadStores::streaming;
  switch (kIsa) {
    case Isa::avx512: return triad_avx512(a, b, c, s, begin, end, streaming);
    case Isa::avx2: return triad_avx2(a, b, c, s, begin, end, streaming);
    case Isa::sse2: return triad_sse2(a, b, c, s, begin, end, streaming);
  }
#else
  (void)stores;
  triad_scalar(a, b, c, s, begin, end);
#endif
}

const char* triad_isa() {
#if defined(__x86_64__)
  switch (kIsa) {
    case Isa::avx512: return "AVX-512";
    case Isa::avx2: return "AVX2";
    case Isa::sse2: return "SSE2";
  }
#endif
  return "scalar";
}

TriadPool::TriadPool(int threads) : threads_(threads < 1 ? 1 : threads) {
  for (int w = 1; w < threads_; ++w) workers_.emplace_back([this, w] { worker_loop(w); });
}

TriadPool::~TriadPool() {
  stopping_ = true;
  generation_.fetch_add(1, std::memory_order_release);
  generation_.notify_all();
  for (auto& t : workers_) t.join();
}

void TriadPool::share(int worker) {
  // Contiguous shares rounded to 64 bytes, so each thread streams whole lines.
  const std::size_t per = (n_ / threads_ + 15) / 16 * 16;
  const std::size_t begin = std::min(n_, per * static_cast<std::size_t>(worker));
  const std::size_t end = worker == threads_ - 1 ? n_ : std::min(n_, begin + per);
  triad_range(a_, b_, c_, s_, begin, end, stores_);
}

void TriadPool::worker_loop(int worker) {
  std::uint64_t seen = 0;
  for (;;) {
    // Polls first, as lngrad's pool does: waking a blocked thread takes 16 us
    // or more on the VM the benchmark runs on, which would charge the roofline
    // for a cost the contestants avoid.
    if (!lngrad::runtime::spin_until([&] { return generation_.load(std::memory_order_acquire) != seen; })) {
      generation_.wait(seen, std::memory_order_acquire);  // futex sleep: idle workers take no CPU
    }
    seen = generation_.load(std::memory_order_acquire);
    if (stopping_) return;
    share(worker);
    if (pending_.fetch_sub(1, std::memory_order_acq_rel) == 1) pending_.notify_one();
  }
}

void TriadPool::run(float* a, const float* b, const float* c, float s, std::size_t n, TriadStores stores) {
  if (threads_ == 1) return triad_range(a, b, c, s, 0, n, stores);
  a_ = a;
  b_ = b;
  c_ = c;
  s_ = s;
  n_ = n;
  stores_ = stores;
  pending_.store(threads_ - 1, std::memory_order_relaxed);
  generation_.fetch_add(1, std::memory_order_release);
  generation_.notify_all();
  share(0);
  lngrad::runtime::spin_until([&] { return pending_.load(std::memory_order_acquire) == 0; });
  for (int left = pending_.load(std::memory_order_acquire); left != 0;
       left = pending_.load(std::memory_order_acquire)) {
    pending_.wait(left, std::memory_order_acquire);
  }
}

}  // namespace lngrad_bench
