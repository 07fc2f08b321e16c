// Test support for AscendC kernels run on the host: launches that throw
// instead of exiting, and global memory that frees itself.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "kernel_operator.h"
#include "tikicpulib.h"

namespace lngrad::ascendc_kernel_test {

// Launch failures as exceptions, cores on every thread, the default chip.
class KernelTest : public ::testing::Test {
 protected:
  void SetUp() override {
    lngrad::ascendc::set_on_error(lngrad::ascendc::OnError::throw_error);
    lngrad::ascendc::set_serial(false);
    lngrad::ascendc::set_threads(0);
    lngrad::ascendc::set_soc("Ascend910B1");
    AscendC::SetKernelMode(KernelMode::AIV_MODE);
  }
};

// The report of a launch that must fail ("" when it did not).
template <typename F, typename... Args>
std::string launch_error(F&& kernel, std::uint32_t block_dim, Args... args) {
  try {
    AscendC::detail::run_kernel("test_kernel", kernel, block_dim, args...);
  } catch (const lngrad::ascendc::KernelError& e) {
    return e.what();
  }
  return "";
}

// Asserts that `message` contains every one of `parts`.
inline void expect_contains(const std::string& message, const std::vector<std::string>& parts) {
  ASSERT_FALSE(message.empty()) << "the launch did not fail";
  for (const std::string& p : parts) {
    EXPECT_NE(message.find(p), std::string::npos) << "message: " << message << "\nmissing: " << p;
  }
}

// GmAlloc'd memory of n elements of T, freed with GmFree.
template <typename T>
class Gm {
 public:
  explicit Gm(std::size_t n) : n_(n), p_(static_cast<T*>(AscendC::GmAlloc(n * sizeof(T)))) {}
  Gm(const std::vector<T>& v) : Gm(v.size()) {  // NOLINT(google-explicit-constructor)
    std::memcpy(static_cast<void*>(p_), v.data(), v.size() * sizeof(T));
  }
  ~Gm() { AscendC::GmFree(p_); }
  Gm(const Gm&) = delete;
  Gm& operator=(const Gm&) = delete;

  T* data() const { return p_; }
  GM_ADDR addr() const { return reinterpret_cast<GM_ADDR>(p_); }
  std::vector<T> values() const { return std::vector<T>(p_, p_ + n_); }
  T& operator[](std::size_t i) { return p_[i]; }

 private:
  std::size_t n_;
  T* p_;
};

}  // namespace lngrad::ascendc_kernel_test
