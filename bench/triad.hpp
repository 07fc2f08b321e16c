// The roofline: a STREAM-style triad a[i] = b[i] + s*c[i] on float32 arrays,
// which moves the same mix as LayerNorm backward (two streams read, one
// written). Split evenly across a persistent set of threads so a call pays no
// thread start-up, like the libraries measured against it.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <thread>
#include <vector>

namespace lngrad_bench {

enum class TriadStores { cached, streaming };

// One thread's share: elements [begin, end) of a = b + s*c. Streaming stores
// bypass the cache (no read-for-ownership of a); where the CPU has no
// streaming store the cached loop runs.
void triad_range(float* a, const float* b, const float* c, float s, std::size_t begin, std::size_t end,
                 TriadStores stores);

// The SIMD instruction set triad_range uses on this CPU.
const char* triad_isa();

class TriadPool {
 public:
  explicit TriadPool(int threads);
  ~TriadPool();
  TriadPool(const TriadPool&) = delete;
  TriadPool& operator=(const TriadPool&) = delete;

  int threads() const { return threads_; }
  void run(float* a, const float* b, const float* c, float s, std::size_t n, TriadStores stores);

 private:
  void share(int worker);
  void worker_loop(int worker);

  int threads_;
  std::vector<std::thread> workers_;
  // The current job, published by bumping generation_.
  float* a_ = nullptr;
  const float* b_ = nullptr;
  const float* c_ = nullptr;
  float s_ = 0.0f;
  std::size_t n_ = 0;
  TriadStores stores_ = TriadStores::cached;
  std::atomic<std::uint64_t> generation_{0};
  std::atomic<int> pending_{0};
  bool stopping_ = false;
};

}  // namespace lngrad_bench
