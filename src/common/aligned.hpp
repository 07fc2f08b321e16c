// Scratch whose vectors start on a cache line: a row kernel reads gamma and
// its column sums at every column step, and a load or store that straddles
// two lines costs two (docs/TUNING.md, "Parameters on whole lines").
#pragma once

#include <cstddef>
#include <cstdint>
#include <new>
#include <vector>

namespace lngrad {

inline constexpr std::size_t kLineBytes = 64;

template <typename T>
struct LineAllocator {
  using value_type = T;
  LineAllocator() = default;
  template <typename U>
  explicit LineAllocator(const LineAllocator<U>& /* other */) {}
  T* allocate(std::size_t n) { return static_cast<T*>(::operator new(n * sizeof(T), std::align_val_t{kLineBytes})); }
  void deallocate(T* p, std::size_t /* n */) { ::operator delete(p, std::align_val_t{kLineBytes}); }
  template <typename U>
  bool operator==(const LineAllocator<U>& /* other */) const {
    return true;
  }
  template <typename U>
  bool operator!=(const LineAllocator<U>& /* other */) const {
    return false;
  }
};

template <typename T>
using LineVector = std::vector<T, LineAllocator<T>>;

inline bool on_line(const void* p) { return reinterpret_cast<std::uintptr_t>(p) % kLineBytes == 0; }

// n elements of elem_bytes each rounded up to whole lines, so that a second
// array placed after them starts on a line too.
constexpr std::int64_t line_padded(std::int64_t n, std::int64_t elem_bytes) {
  const std::int64_t per_line = static_cast<std::int64_t>(kLineBytes) / elem_bytes;
  return (n + per_line - 1) / per_line * per_line;
}
template <typename T>
constexpr std::int64_t line_padded(std::int64_t n) {
  return line_padded(n, static_cast<std::int64_t>(sizeof(T)));
}

}  // namespace lngrad
