// Shared helpers of the hardening suite: tensors with guard zones, a
// generator of well-conditioned LayerNormGrad problems, the float64
// reference on exactly the stored values, and the error bound used to compare
// the library with it.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "lngrad/lngrad.hpp"
#include "reference.hpp"

namespace lngrad::hardening {

// A suite of tests run once per SIMD target this CPU supports, as the core
// suite runs (a behaviour of one target says nothing of the others):
//   LNGRAD_TARGET_SUITE(Suite);  TEST_P(Suite, Name) { ... }
// The tests are named Suite.Name/<target>.
class OnEveryTarget : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override { set_max_target(GetParam()); }
  void TearDown() override { set_max_target(""); }
};
std::string target_param_name(const ::testing::TestParamInfo<std::string>& info);
#define LNGRAD_TARGET_SUITE(Suite)                                                                        \
  class Suite : public ::lngrad::hardening::OnEveryTarget {};                                             \
  INSTANTIATE_TEST_SUITE_P(, Suite, ::testing::ValuesIn(::lngrad::available_targets()),                   \
                           ::lngrad::hardening::target_param_name)

// Unit roundoff of the arithmetic lngrad uses for x of this dtype (float32
// for every storage type but float64) and of the storage type itself.
double arithmetic_roundoff(Dtype x_dtype);
double storage_roundoff(Dtype dtype);

// A contiguous tensor with 64 guard bytes on each side. Elements are read and
// written as double (rounded to nearest-even on store, as lngrad rounds).
class Tensor {
 public:
  Tensor() = default;
  Tensor(Dtype dtype, Shape shape);

  Dtype dtype() const { return dtype_; }
  const Shape& shape() const { return shape_; }
  std::int64_t size() const { return size_; }
  void* data() { return bytes_.data() + kGuard; }
  const void* data() const { return bytes_.data() + kGuard; }
  TensorView view() { return {data(), dtype_, shape_}; }
  ConstTensorView cview() const { return {data(), dtype_, shape_}; }

  double at(std::int64_t i) const;
  void set(std::int64_t i, double v);
  void fill(double v);
  // The payload bytes, for bit-exact comparisons.
  std::vector<std::uint8_t> payload() const;
  bool guards_intact() const;

  static constexpr std::size_t kGuard = 64;
  static constexpr std::uint8_t kGuardByte = 0xA5;

 private:
  Dtype dtype_ = Dtype::float32;
  Shape shape_;
  std::int64_t size_ = 0;
  std::vector<std::uint8_t> bytes_;
};

// A LayerNormGrad problem: x of shape [rows, h] (dy alike), statistics of
// shape [rows], gamma of shape [h]. Values are drawn from a fixed seed; mean
// and variance are the stored rows' own statistics, rounded to stat_dtype.
struct GradProblem {
  std::int64_t rows = 0, h = 0;
  Tensor dy, x, mean, variance, gamma;
  double epsilon = 1e-5;
  bool with_gamma = true;

  ConstTensorView dy_v() const { return dy.cview(); }
  std::optional<ConstTensorView> gamma_v() const {
    return with_gamma ? std::optional<ConstTensorView>(gamma.cview()) : std::nullopt;
  }
};

GradProblem make_problem(Dtype dtype, Dtype stat_dtype, std::int64_t rows, std::int64_t h,
                         std::uint64_t seed = 1);

// The outputs of layer_norm_grad and layer_norm_grad_x in fresh tensors.
struct GradOutputs {
  Tensor pd_x, res_for_gamma, pd_gamma, pd_beta;
};

GradOutputs run_grad(const GradProblem& p, int num_threads = 0);     // layer_norm_grad
GradOutputs run_grad_x(const GradProblem& p, int num_threads = 0);   // layer_norm_grad_x

// The reference on exactly the stored inputs (epsilon as the library applies
// it: rounded to the arithmetic type first).
reference::GradInputs reference_inputs(const GradProblem& p);

// Per-element bound on |lngrad - reference| for pd_x, from the magnitudes of
// the terms in the expanded formula
//   pd_x = g*rstd - rstd^3*S2*xm/H - rstd*S1/H + rstd^3*S2*S3/H^2
// (S1 = sum g, S2 = sum g*xm, S3 = sum xm): each is computed with relative
// error at most (H + 16)*u (sums of H terms in lanes, a few products), plus
// the final rounding to the storage type.
std::vector<double> pd_x_bound(const reference::GradInputs& in, Dtype x_dtype);
// Column-sum bound for pd_gamma (sum dy*res) or pd_beta (sum dy): the fixed
// blocked/pairwise order adds at most kBlockRows + log2(rows) + 4 roundings
// per term, on top of the terms' own errors.
std::vector<double> column_bound(const reference::GradInputs& in, Dtype x_dtype, Dtype param_dtype,
                                 bool gamma_column);

// Asserts pd_x, pd_gamma and pd_beta of `out` within the bounds above of the
// reference on p's stored inputs; `what` names the case in failures.
void expect_near_reference(const GradProblem& p, const GradOutputs& out, const std::string& what);

// True when every element is NaN or +-Inf.
bool all_non_finite(const Tensor& t, std::int64_t begin, std::int64_t end);

// The dtypes of x, and the statistics' dtype the suite pairs with each
// (float64 for float64 x, float32 otherwise).
inline constexpr Dtype kAllDtypes[] = {Dtype::float32, Dtype::float64, Dtype::float16, Dtype::bfloat16};
inline Dtype stat_for(Dtype x) { return x == Dtype::float64 ? Dtype::float64 : Dtype::float32; }

}  // namespace lngrad::hardening
