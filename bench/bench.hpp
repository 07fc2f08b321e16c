// lngrad-bench: the contestants share one interface so the driver can time
// them in alternating rounds on the same inputs. C++17 on purpose: the
// PyTorch contestant is compiled against libtorch's headers in C++17.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "lngrad/lngrad.hpp"

namespace lngrad_bench {

// 2 MiB-aligned memory, advised for transparent huge pages, so that every
// large buffer the bench owns (inputs, outputs, the triad's arrays) is backed
// the same way; pages are not touched here.
class Buffer {
 public:
  Buffer() = default;
  explicit Buffer(std::size_t bytes);
  Buffer(Buffer&& other) noexcept;
  Buffer& operator=(Buffer&& other) noexcept;
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;
  ~Buffer();

  void* data() const { return data_; }
  template <typename T>
  T* as() const {
    return static_cast<T*>(data_);
  }
  std::size_t bytes() const { return bytes_; }

 private:
  void* data_ = nullptr;
  std::size_t bytes_ = 0;
};

// One benchmark problem: rows x h LayerNorm backward with float32 statistics
// and float32 gamma, all produced once by lngrad::layer_norm (forward), so
// every contestant sees consistent inputs.
struct Problem {
  std::int64_t rows = 0, h = 0;
  lngrad::Dtype dtype = lngrad::Dtype::float32;  // dy, x, pd_x
  double epsilon = 1e-5;
  int threads = 1;
  const void* dy = nullptr;
  const void* x = nullptr;
  const float* mean = nullptr;      // rows
  const float* variance = nullptr;  // rows, biased
  const float* rstd = nullptr;      // rows, 1/sqrt(variance + epsilon)
  const float* gamma = nullptr;     // h
  const float* beta = nullptr;      // h, zeros (PyTorch's kernel wants a bias tensor)
  void* pd_x = nullptr;             // dtype, rows*h: the shared preallocated output

  std::size_t elements() const { return static_cast<std::size_t>(rows) * static_cast<std::size_t>(h); }
  std::size_t element_bytes() const { return dtype == lngrad::Dtype::float32 ? 4 : 2; }
  // The least traffic of any implementation: read dy, read x, write pd_x.
  std::size_t traffic_bytes() const { return 3 * elements() * element_bytes(); }
};

// A LayerNorm-backward implementation under test. prepare() does all the
// set-up the implementation allows outside the timed call (descriptors,
// converted inputs); run() is the timed call and computes pd_x, pd_gamma and
// pd_beta.
class Contestant {
 public:
  virtual ~Contestant() = default;
  virtual const char* name() const = 0;
  // Empty when ready, else why this problem cannot run (reported as n/a).
  virtual std::string prepare(const Problem& p) = 0;
  virtual void run() = 0;
  // pd_x of the latest run(), p.dtype, rows*h. Defaults to the shared buffer.
  virtual const void* pd_x() const { return problem_ ? problem_->pd_x : nullptr; }
  // The implementation that was chosen, when the library names it.
  virtual std::string detail() const { return {}; }

 protected:
  const Problem* problem_ = nullptr;
};

std::unique_ptr<Contestant> make_lngrad(lngrad::Stores stores);
std::unique_ptr<Contestant> make_onednn();
std::unique_ptr<Contestant> make_naive();
#ifdef LNGRAD_BENCH_HAVE_TORCH
std::unique_ptr<Contestant> make_torch();
#endif

}  // namespace lngrad_bench
