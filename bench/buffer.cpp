#include <sys/mman.h>

#include <cstdlib>
#include <new>
#include <utility>

#include "bench.hpp"

namespace lngrad_bench {

namespace {
constexpr std::size_t kHugePage = std::size_t{2} << 20;
}

Buffer::Buffer(std::size_t bytes) : bytes_(bytes) {
  if (bytes == 0) return;
  const std::size_t rounded = (bytes + kHugePage - 1) / kHugePage * kHugePage;
  data_ = std::aligned_alloc(kHugePage, rounded);
  if (!data_) throw std::bad_alloc();
  // Advice only: where THP is off the buffer keeps 4 KiB pages, for every
  // contestant alike.
  madvise(data_, rounded, MADV_HUGEPAGE);
}

Buffer::Buffer(Buffer&& other) noexcept
    : data_(std::exchange(other.data_, nullptr)), bytes_(std::exchange(other.bytes_, 0)) {}

Buffer& Buffer::operator=(Buffer&& other) noexcept {
  if (this != &other) {
    std::free(data_);
    data_ = std::exchange(other.data_, nullptr);
    bytes_ = std::exchange(other.bytes_, 0);
  }
  return *this;
}

Buffer::~Buffer() { std::free(data_); }

}  // namespace lngrad_bench
