// Element counts past 2^31 (docs/HARDENING.md, "Large tensors"): a bfloat16
// problem of 2^31 + 8 elements (ctest label `large`; about 8.3 GiB of memory).
//
// x is [15790321, 136] (136 * 15790321 = 2^31 + 8): the last row straddles
// element 2^31 (byte 2^32), where a 32-bit element or byte index would wrap.
// dy is zero except on a few rows, so pd_gamma/pd_beta are sums over those
// rows only (a zero dy row adds exactly nothing) and the reference needs only
// their copies. pd_x is computed in place over dy (allowed), which keeps the
// footprint to two 4 GiB tensors.
#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>

#include "lngrad/half.hpp"
#include "support.hpp"

namespace lngrad::hardening {
namespace {

struct FreeDeleter {
  void operator()(void* p) const { std::free(p); }
};

TEST(LargeTensor, TwoToThe31PlusEightBfloat16Elements) {
  constexpr std::int64_t kH = 136, kRows = 15790321, kN = kRows * kH;
  static_assert(kN == (std::int64_t{1} << 31) + 8);
  // The row holding element 2^31 is the last one.
  static_assert((std::int64_t{1} << 31) / kH == kRows - 1);
  const std::int64_t selected[] = {0, 1, kRows / 2, kRows - 3, kRows - 2, kRows - 1};
  constexpr std::int64_t kSel = 6;

  // Row 0 of `data` is the pattern of every unselected row; rows 1..kSel
  // belong to the selected rows, each different, so a row mix-up shows.
  const GradProblem data = make_problem(Dtype::bfloat16, Dtype::float32, kSel + 1, kH, 211);

  // calloc: dy's zero pages cost no memory until pd_x is written over them.
  std::unique_ptr<std::uint16_t, FreeDeleter> dy(
      static_cast<std::uint16_t*>(std::calloc(static_cast<std::size_t>(kN), sizeof(std::uint16_t))));
  std::unique_ptr<std::uint16_t, FreeDeleter> x(
      static_cast<std::uint16_t*>(std::malloc(static_cast<std::size_t>(kN) * sizeof(std::uint16_t))));
  ASSERT_TRUE(dy && x) << "needs about 8.3 GiB of memory";
  std::vector<float> mean(static_cast<std::size_t>(kRows)), variance(static_cast<std::size_t>(kRows));
  const auto* pattern = static_cast<const std::uint16_t*>(data.x.data());
  for (std::int64_t r = 0; r < kRows; ++r) std::memcpy(x.get() + r * kH, pattern, kH * sizeof(std::uint16_t));
  std::fill(mean.begin(), mean.end(), static_cast<float>(data.mean.at(0)));
  std::fill(variance.begin(), variance.end(), static_cast<float>(data.variance.at(0)));
  for (std::int64_t s = 0; s < kSel; ++s) {
    const std::int64_t r = selected[s];
    std::memcpy(x.get() + r * kH, static_cast<const std::uint16_t*>(data.x.data()) + (s + 1) * kH, kH * 2);
    std::memcpy(dy.get() + r * kH, static_cast<const std::uint16_t*>(data.dy.data()) + (s + 1) * kH, kH * 2);
    mean[r] = static_cast<float>(data.mean.at(s + 1));
    variance[r] = static_cast<float>(data.variance.at(s + 1));
  }
  std::vector<float> gamma(kH);
  for (std::int64_t j = 0; j < kH; ++j) gamma[j] = static_cast<float>(data.gamma.at(j));

  // The reference on the selected rows alone.
  reference::GradInputs in;
  in.rows = kSel;
  in.h = kH;
  for (std::int64_t s = 0; s < kSel; ++s) {
    for (std::int64_t j = 0; j < kH; ++j) {
      in.dy.push_back(bfloat16_to_float(dy.get()[selected[s] * kH + j]));
      in.x.push_back(bfloat16_to_float(x.get()[selected[s] * kH + j]));
    }
    in.mean.push_back(mean[selected[s]]);
    in.variance.push_back(variance[selected[s]]);
  }
  in.gamma.assign(gamma.begin(), gamma.end());
  in.epsilon = static_cast<double>(static_cast<float>(1e-5));
  const reference::GradOutputs ref = reference::layer_norm_grad(in);
  const std::vector<double> bound = pd_x_bound(in, Dtype::bfloat16);
  // Zero rows add exact zeros, so the column sums round only where the
  // selected rows' partials meet: the bound for kSel rows applies.
  const std::vector<double> gamma_bound = column_bound(in, Dtype::bfloat16, Dtype::float32, true);
  const std::vector<double> beta_bound = column_bound(in, Dtype::bfloat16, Dtype::float32, false);

  std::vector<float> pd_gamma(kH, -1.0f), pd_beta(kH, -1.0f);
  GradOptions opt;
  opt.epsilon = 1e-5;
  layer_norm_grad({dy.get(), Dtype::bfloat16, {kRows, kH}}, {x.get(), Dtype::bfloat16, {kRows, kH}},
                  {variance.data(), Dtype::float32, {kRows}}, {mean.data(), Dtype::float32, {kRows}},
                  ConstTensorView{gamma.data(), Dtype::float32, {kH}}, {dy.get(), Dtype::bfloat16, {kRows, kH}},
                  {pd_gamma.data(), Dtype::float32, {kH}}, {pd_beta.data(), Dtype::float32, {kH}}, opt);

  for (std::int64_t s = 0; s < kSel; ++s) {
    for (std::int64_t j = 0; j < kH; ++j) {
      const double got = bfloat16_to_float(dy.get()[selected[s] * kH + j]);
      ASSERT_NEAR(got, ref.pd_x[s * kH + j], bound[s * kH + j]) << "row " << selected[s] << " column " << j;
    }
  }
  // Rows with dy = 0 have pd_x = 0: check the neighbours of every selected row.
  for (std::int64_t r : {std::int64_t{2}, kRows / 2 - 1, kRows / 2 + 1, kRows - 4}) {
    for (std::int64_t j = 0; j < kH; ++j) ASSERT_EQ(bfloat16_to_float(dy.get()[r * kH + j]), 0.0f) << r;
  }
  for (std::int64_t j = 0; j < kH; ++j) {
    EXPECT_NEAR(pd_gamma[j], ref.pd_gamma[j], gamma_bound[j]) << "pd_gamma[" << j << "]";
    EXPECT_NEAR(pd_beta[j], ref.pd_beta[j], beta_bound[j]) << "pd_beta[" << j << "]";
  }
}

}  // namespace
}  // namespace lngrad::hardening
