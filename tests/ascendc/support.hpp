// Test support for the AscendC layer: buffers with guard regions, data in T,
// and the op-level calls used as the oracle.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "lngrad/ascendc.hpp"

namespace lngrad::ascendc_test {

using AscendC::half;

// A call's {B, S, storageH, originH}; three values for unpadded rows.
struct Dims {
  std::uint32_t b, s, h, oh;
  Dims(std::uint32_t b_, std::uint32_t s_, std::uint32_t h_, std::uint32_t oh_) : b(b_), s(s_), h(h_), oh(oh_) {}
  Dims(std::uint32_t b_, std::uint32_t s_, std::uint32_t h_) : Dims(b_, s_, h_, h_) {}
  std::uint32_t rows() const { return b * s; }
  ge::Shape shape() const { return ge::Shape({b, s, h, oh}); }
  std::string str() const {
    std::ostringstream os;
    os << '{' << b << ", " << s << ", " << h << ", " << oh << '}';
    return os.str();
  }
};

template <typename T>
constexpr lngrad::Dtype dtype_of() {
  return sizeof(T) == 2 ? lngrad::Dtype::float16 : lngrad::Dtype::float32;
}

// `n` elements between two guard regions of a fixed byte pattern; the view
// is what the call gets, the guards show whether anything outside it was
// written.
template <typename T>
class Guarded {
 public:
  static constexpr std::size_t kGuard = 64;  // elements each side

  explicit Guarded(std::size_t n) : n_(n), storage_(n + 2 * kGuard) {
    std::memset(static_cast<void*>(storage_.data()), kPattern, storage_.size() * sizeof(T));
  }
  Guarded(const std::vector<T>& values) : Guarded(values.size()) {  // NOLINT(google-explicit-constructor)
    std::memcpy(static_cast<void*>(data()), values.data(), values.size() * sizeof(T));
  }

  T* data() { return storage_.data() + kGuard; }
  const T* data() const { return storage_.data() + kGuard; }
  std::size_t size() const { return n_; }
  AscendC::LocalTensor<T> tensor() { return AscendC::LocalTensor<T>(data(), static_cast<std::uint32_t>(n_)); }
  std::vector<T> values() const { return std::vector<T>(data(), data() + n_); }

  bool guards_intact() const {
    const auto* bytes = reinterpret_cast<const unsigned char*>(storage_.data());
    const std::size_t guard_bytes = kGuard * sizeof(T), total = storage_.size() * sizeof(T);
    for (std::size_t i = 0; i < guard_bytes; ++i) {
      if (bytes[i] != kPattern || bytes[total - 1 - i] != kPattern) return false;
    }
    return true;
  }

 private:
  static constexpr unsigned char kPattern = 0x5A;  // finite as float (1.5e16) and as half (203.25)
  std::size_t n_;
  std::vector<T> storage_;
};

// Bit patterns, to compare results exactly (and NaN-safely).
inline std::uint32_t bits(float v) {
  std::uint32_t u;
  std::memcpy(&u, &v, sizeof u);
  return u;
}
inline std::uint32_t bits(half v) { return v.Bits(); }

// Rows of `stride` elements holding `n` values each; the padding is filled
// with `pad`, which the calls must ignore.
template <typename T>
std::vector<T> padded_rows(const std::vector<T>& compact, std::size_t rows, std::size_t n, std::size_t stride,
                           T pad) {
  std::vector<T> out(rows * stride, pad);
  for (std::size_t i = 0; i < rows; ++i) {
    for (std::size_t j = 0; j < n; ++j) out[i * stride + j] = compact[i * n + j];
  }
  return out;
}

template <typename T>
std::vector<T> uniform(std::mt19937& rng, std::size_t n, float lo, float hi) {
  std::uniform_real_distribution<float> dist(lo, hi);
  std::vector<T> v(n);
  for (auto& e : v) e = T(dist(rng));
  return v;
}

}  // namespace lngrad::ascendc_test
