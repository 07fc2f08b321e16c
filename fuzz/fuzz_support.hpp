// Helpers shared by the lngrad fuzz targets: a reader that decodes choices
// from the fuzz input (zeros once it runs out, so every input is valid), a
// check that aborts with a message (libFuzzer records the input as a crash;
// the ctest replay fails), and exactly-sized heap buffers.
#pragma once

#include <sys/mman.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <utility>

#if defined(__SANITIZE_ADDRESS__)
#define LNGRAD_FUZZ_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define LNGRAD_FUZZ_ASAN 1
#endif
#endif
#ifndef LNGRAD_FUZZ_ASAN
#define LNGRAD_FUZZ_ASAN 0
#endif

namespace lngrad::fuzz {

[[noreturn]] inline void fail(const std::string& what) {
  std::fprintf(stderr, "lngrad fuzz: contract violated: %s\n", what.c_str());
  std::abort();
}

#define LNGRAD_FUZZ_CHECK(cond, what)          \
  do {                                          \
    if (!(cond)) ::lngrad::fuzz::fail(what);    \
  } while (0)

class Reader {
 public:
  Reader(const std::uint8_t* data, std::size_t size) : p_(data), n_(size) {}
  std::uint8_t u8() { return i_ < n_ ? p_[i_++] : 0; }
  std::uint16_t u16() { return static_cast<std::uint16_t>(u8() | (u8() << 8)); }
  std::uint64_t u64() {
    std::uint64_t v = 0;
    for (int b = 0; b < 8; ++b) v |= static_cast<std::uint64_t>(u8()) << (8 * b);
    return v;
  }
  // One of `n` choices (n <= 256).
  unsigned pick(unsigned n) { return n == 0 ? 0 : u8() % n; }
  bool one_in(unsigned n) { return pick(n) == 0; }
  std::size_t left() const { return i_ < n_ ? n_ - i_ : 0; }

 private:
  const std::uint8_t* p_;
  std::size_t n_, i_ = 0;
};

// A region no access may touch: the stand-in for a tensor whose claimed size
// cannot be backed. Any read or write faults (a crash the fuzzer reports).
inline void* no_access_region() {
  static void* region = [] {
    void* p = mmap(nullptr, 1 << 16, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) fail("mmap of the no-access region");
    return p;
  }();
  return region;
}

// Heap memory of exactly `bytes` bytes. Under AddressSanitizer the heap
// redzones catch any access outside it; without it, 64 guard bytes on each
// side are checked by guards_intact() (writes only).
class Block {
 public:
  static constexpr std::size_t kGuard = LNGRAD_FUZZ_ASAN ? 0 : 64;
  static constexpr std::uint8_t kGuardByte = 0x5A;

  Block() = default;
  explicit Block(std::size_t bytes) : bytes_(bytes) {
    base_ = static_cast<std::uint8_t*>(std::malloc(bytes + 2 * kGuard + 1));  // +1: malloc(0) may return null
    if (base_ == nullptr) fail("malloc");
    std::memset(base_, kGuardByte, bytes + 2 * kGuard);
  }
  Block(const Block&) = delete;
  Block& operator=(const Block&) = delete;
  Block(Block&& o) noexcept { *this = std::move(o); }
  Block& operator=(Block&& o) noexcept {
    std::swap(base_, o.base_);
    std::swap(bytes_, o.bytes_);
    return *this;
  }
  ~Block() { std::free(base_); }

  std::uint8_t* data() const { return base_ == nullptr ? nullptr : base_ + kGuard; }
  std::size_t size() const { return bytes_; }
  bool guards_intact() const {
    if (base_ == nullptr) return true;
    for (std::size_t i = 0; i < kGuard; ++i) {
      if (base_[i] != kGuardByte || base_[kGuard + bytes_ + i] != kGuardByte) return false;
    }
    return true;
  }

 private:
  std::uint8_t* base_ = nullptr;
  std::size_t bytes_ = 0;
};

}  // namespace lngrad::fuzz
