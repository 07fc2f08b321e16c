// The baseline a straightforward port would give: seed 002's chain rule as
// two plain loops per row in float32, one thread, no SIMD intrinsics (the
// compiler may vectorise what it can at the build's -O level).
#include <cmath>
#include <cstdint>
#include <vector>

#include "bench.hpp"
#include "lngrad/half.hpp"

namespace lngrad_bench {

namespace {

struct F32 {
  static float load(const void* p, std::int64_t i) { return static_cast<const float*>(p)[i]; }
  static void store(void* p, std::int64_t i, float v) { static_cast<float*>(p)[i] = v; }
};
struct BF16 {
  static float load(const void* p, std::int64_t i) {
    return lngrad::bfloat16_to_float(static_cast<const std::uint16_t*>(p)[i]);
  }
  static void store(void* p, std::int64_t i, float v) {
    static_cast<std::uint16_t*>(p)[i] = lngrad::float_to_bfloat16(v);
  }
};
struct F16 {
  static float load(const void* p, std::int64_t i) {
    return lngrad::float16_to_float(static_cast<const std::uint16_t*>(p)[i]);
  }
  static void store(void* p, std::int64_t i, float v) {
    static_cast<std::uint16_t*>(p)[i] = lngrad::float_to_float16(v);
  }
};

template <typename T>
void naive_grad(const Problem& p, float* pd_gamma, float* pd_beta) {
  const std::int64_t h = p.h;
  const float inv_h = 1.0f / static_cast<float>(h);
  for (std::int64_t j = 0; j < h; ++j) pd_gamma[j] = pd_beta[j] = 0.0f;
  for (std::int64_t r = 0; r < p.rows; ++r) {
    const std::int64_t base = r * h;
    const float mean = p.mean[r];
    const float rstd = 1.0f / std::sqrt(p.variance[r] + static_cast<float>(p.epsilon));
    // Loop 1: the row sums, and the parameter gradients.
    float sum_g_xm = 0.0f, sum_g = 0.0f, sum_xm = 0.0f;
    for (std::int64_t j = 0; j < h; ++j) {
      const float dy = T::load(p.dy, base + j);
      const float xm = T::load(p.x, base + j) - mean;
      const float g = dy * p.gamma[j];
      sum_g_xm += g * xm;
      sum_g += g;
      sum_xm += xm;
      pd_gamma[j] += dy * xm * rstd;
      pd_beta[j] += dy;
    }
    const float pd_var = -0.5f * sum_g_xm * rstd * rstd * rstd;
    const float pd_mean = -sum_g * rstd + pd_var * inv_h * (-2.0f * sum_xm);
    // Loop 2: pd_x.
    for (std::int64_t j = 0; j < h; ++j) {
      const float xm = T::load(p.x, base + j) - mean;
      const float g = T::load(p.dy, base + j) * p.gamma[j];
      T::store(p.pd_x, base + j, g * rstd + pd_var * 2.0f * inv_h * xm + pd_mean * inv_h);
    }
  }
}

class Naive final : public Contestant {
 public:
  const char* name() const override { return "naive"; }

  std::string prepare(const Problem& p) override {
    problem_ = &p;
    if (p.dtype == lngrad::Dtype::float64) return "float64 is not benchmarked";
    pd_gamma_.assign(static_cast<std::size_t>(p.h), 0.0f);
    pd_beta_.assign(static_cast<std::size_t>(p.h), 0.0f);
    return {};
  }

  void run() override {
    switch (problem_->dtype) {
      case lngrad::Dtype::float32: return naive_grad<F32>(*problem_, pd_gamma_.data(), pd_beta_.data());
      case lngrad::Dtype::bfloat16: return naive_grad<BF16>(*problem_, pd_gamma_.data(), pd_beta_.data());
      case lngrad::Dtype::float16: return naive_grad<F16>(*problem_, pd_gamma_.data(), pd_beta_.data());
      case lngrad::Dtype::float64: break;
    }
  }

  std::string detail() const override { return "1 thread"; }

 private:
  std::vector<float> pd_gamma_, pd_beta_;
};

}  // namespace

std::unique_ptr<Contestant> make_naive() { return std::make_unique<Naive>(); }

}  // namespace lngrad_bench
