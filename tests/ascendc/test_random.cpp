// Random [B, S, H] (rows padded and not), with the minimum buffer, the
// maximum and sizes between: LayerNormGrad against the op-level API on the
// same data, LayerNormGradBeta against the device's row-order sums (bit for
// bit) and the float64 reference, with guard regions around every buffer.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "lngrad/ascendc.hpp"
#include "lngrad/lngrad.hpp"
#include "reference.hpp"
#include "support.hpp"

namespace {

using AscendC::half;
using AscendC::LocalTensor;
using lngrad::ascendc_test::bits;
using lngrad::ascendc_test::Dims;
using lngrad::ascendc_test::dtype_of;
using lngrad::ascendc_test::Guarded;
using lngrad::ascendc_test::padded_rows;
using lngrad::ascendc_test::uniform;

// H a multiple of 8 floats / 16 halves (32-byte rows); originH below H pads.
template <typename T>
std::vector<Dims> shapes() {
  if (sizeof(T) == 4) {
    return {{1, 1, 8, 8}, {2, 3, 8, 5}, {3, 7, 16, 16}, {2, 9, 24, 17}, {1, 33, 8, 8}, {4, 5, 40, 33}, {2, 20, 64, 50}};
  }
  return {{1, 1, 16, 16},  {2, 3, 16, 5},  {3, 7, 32, 32},  {2, 9, 32, 17},
          {1, 40, 16, 16}, {2, 5, 48, 40}, {2, 20, 64, 50}};
}

template <typename T>
T pad_value() {  // the padding must be ignored: NaN would poison any sum it entered
  return T(std::numeric_limits<float>::quiet_NaN());
}

// Inputs of LayerNormGrad in T: compact [rows, originH] for the oracle and
// padded [rows, storageH] for the call.
template <typename T>
struct GradInputs {
  std::vector<T> dy, x, mean, variance, gamma;  // compact
  std::vector<T> dy_p, x_p, gamma_p;            // padded
};

template <typename T>
GradInputs<T> make_grad_inputs(std::mt19937& rng, const Dims& d) {
  GradInputs<T> in;
  const std::size_t rows = d.rows();
  in.dy = uniform<T>(rng, rows * d.oh, -1.0f, 1.0f);
  in.x = uniform<T>(rng, rows * d.oh, -1.0f, 3.0f);
  in.gamma = uniform<T>(rng, d.oh, 0.5f, 1.5f);
  std::uniform_real_distribution<float> noise(-0.05f, 0.05f);
  for (std::size_t r = 0; r < rows; ++r) {
    // The row's own statistics, the mean slightly off so that the
    // pd_var * sum(-2 * (x - mean)) term of pd_mean is not zero.
    double sum = 0, sq = 0;
    for (std::uint32_t j = 0; j < d.oh; ++j) sum += float(in.x[r * d.oh + j]);
    const double mean = sum / d.oh;
    for (std::uint32_t j = 0; j < d.oh; ++j) sq += std::pow(float(in.x[r * d.oh + j]) - mean, 2);
    in.mean.push_back(T(static_cast<float>(mean + noise(rng))));
    in.variance.push_back(T(static_cast<float>(sq / d.oh)));
  }
  in.dy_p = padded_rows(in.dy, rows, d.oh, d.h, pad_value<T>());
  in.x_p = padded_rows(in.x, rows, d.oh, d.h, pad_value<T>());
  in.gamma_p = padded_rows(in.gamma, 1, d.oh, d.h, pad_value<T>());
  return in;
}

// The oracle: the op-level API on the compact data, epsilon as the call uses it.
template <typename T>
void op_level_grad(const GradInputs<T>& in, const Dims& d, float epsilon, std::vector<T>& pd_x,
                   std::vector<T>& res) {
  const auto rows = static_cast<std::int64_t>(d.rows()), oh = static_cast<std::int64_t>(d.oh);
  const lngrad::Dtype dt = dtype_of<T>();
  pd_x.assign(d.rows() * d.oh, T(0));
  res.assign(d.rows() * d.oh, T(0));
  lngrad::GradXOptions options;
  options.epsilon = epsilon;
  lngrad::layer_norm_grad_x({in.dy.data(), dt, {rows, oh}}, {in.x.data(), dt, {rows, oh}},
                            {in.variance.data(), dt, {rows}}, {in.mean.data(), dt, {rows}},
                            lngrad::ConstTensorView{in.gamma.data(), dt, {oh}}, {pd_x.data(), dt, {rows, oh}},
                            {res.data(), dt, {rows, oh}}, options);
}

template <typename T, bool kReuse>
void call_grad(Guarded<T>& pd_x, Guarded<T>& res, Guarded<T>& dy, Guarded<T>& x, Guarded<T>& variance,
               Guarded<T>& mean, Guarded<T>& gamma, Guarded<std::uint8_t>* tmp, T epsilon,
               AscendC::tiling::LayerNormGradTiling& tiling) {
  LocalTensor<T> outputPdX = pd_x.tensor(), resForGamma = res.tensor();
  if (tmp != nullptr) {
    LocalTensor<std::uint8_t> sharedTmpBuffer = tmp->tensor();
    AscendC::LayerNormGrad<T, kReuse>(outputPdX, resForGamma, dy.tensor(), x.tensor(), variance.tensor(),
                                      mean.tensor(), gamma.tensor(), sharedTmpBuffer, epsilon, tiling);
  } else {
    AscendC::LayerNormGrad<T, kReuse>(outputPdX, resForGamma, dy.tensor(), x.tensor(), variance.tensor(),
                                      mean.tensor(), gamma.tensor(), epsilon, tiling);
  }
}

// Each row's arithmetic is the op-level kernel's own float32 code whatever
// the pass grouping, and the half conversions are the same round-to-nearest-
// even: the results are expected bit for bit.
template <typename T>
void expect_rows_equal(const std::vector<T>& got_padded, const std::vector<T>& want, const Dims& d,
                       const std::string& what) {
  int reported = 0;
  for (std::uint32_t r = 0; r < d.rows(); ++r) {
    for (std::uint32_t j = 0; j < d.h; ++j) {
      const auto got = bits(got_padded[r * d.h + j]);
      const auto expect = j < d.oh ? bits(want[r * d.oh + j]) : 0u;  // padding: +0
      if (got != expect && reported++ < 5) {
        ADD_FAILURE() << what << "[" << r << "][" << j << "]: " << float(got_padded[r * d.h + j]) << " vs "
                      << (j < d.oh ? float(want[r * d.oh + j]) : 0.0f);
      }
    }
  }
  EXPECT_EQ(reported, 0) << what << ": elements differing";
}

struct Coverage {
  int runs = 0, multi_pass_with_tail = 0, single_partial_pass = 0;
};

template <typename T, bool kReuse>
void grad_sweep(Coverage& cov) {
  std::mt19937 rng(2024 + sizeof(T) + kReuse);
  const float eps_given = 1e-3f;
  const T epsilon = T(eps_given);  // the call's T epsilon; the oracle gets the same value
  for (const Dims& d : shapes<T>()) {
    const GradInputs<T> in = make_grad_inputs<T>(rng, d);
    std::vector<T> want_pd_x, want_res;
    op_level_grad(in, d, float(epsilon), want_pd_x, want_res);

    std::uint32_t max_tmp = 0, min_tmp = 0;
    AscendC::GetLayerNormGradMaxMinTmpSize(d.shape(), sizeof(T), kReuse, max_tmp, min_tmp);
    if (sizeof(T) == 2 && d.rows() == 1) {
      // CANN's half minimum, 9 * B*S*H * 2 bytes, is half a float row per
      // buffer when B*S = 1: its own tiling function refuses it. One float
      // row for each of the 9 buffers is the least that plans.
      AscendC::tiling::LayerNormGradTiling probe;
      EXPECT_THROW(AscendC::GetLayerNormGradNDTilingInfo(d.shape(), min_tmp, 2, false, probe), lngrad::Error);
      min_tmp = 9 * 4 * d.h;
    }
    const std::uint32_t mid = (min_tmp + (max_tmp - min_tmp) / 3) / 4 * 4;
    for (std::uint32_t size : {min_tmp, mid, max_tmp}) {
      const std::string at = "T size " + std::to_string(sizeof(T)) + " reuse " + std::to_string(kReuse) + " shape " +
                             d.str() + " buffer " + std::to_string(size);
      SCOPED_TRACE(at);
      AscendC::tiling::LayerNormGradTiling tiling;
      AscendC::GetLayerNormGradNDTilingInfo(d.shape(), size, sizeof(T), kReuse, tiling);
      ++cov.runs;
      cov.multi_pass_with_tail += tiling.loopNum >= 2 && tiling.tailSize != 0;
      cov.single_partial_pass += tiling.loopNum == 0;

      Guarded<T> dy(in.dy_p), x(in.x_p), variance(in.variance), mean(in.mean), gamma(in.gamma_p);
      Guarded<T> pd_x(d.rows() * d.h), res(d.rows() * d.h);
      Guarded<std::uint8_t> tmp(size);
      call_grad<T, kReuse>(pd_x, res, dy, x, variance, mean, gamma, &tmp, epsilon, tiling);

      expect_rows_equal(pd_x.values(), want_pd_x, d, "outputPdX");
      expect_rows_equal(res.values(), want_res, d, "resForGamma");
      for (auto* g : {&dy, &x, &variance, &mean, &gamma, &pd_x, &res}) EXPECT_TRUE(g->guards_intact());
      EXPECT_TRUE(tmp.guards_intact()) << "written outside sharedTmpBuffer";
      // Inputs are read-only, except inputX with isReuseSource.
      auto same_bits = [](const std::vector<T>& a, const std::vector<T>& b) {
        return std::equal(a.begin(), a.end(), b.begin(), [](T u, T v) { return bits(u) == bits(v); });
      };
      EXPECT_TRUE(same_bits(dy.values(), in.dy_p));
      EXPECT_TRUE(same_bits(variance.values(), in.variance));
      EXPECT_TRUE(same_bits(mean.values(), in.mean));
      EXPECT_TRUE(same_bits(gamma.values(), in.gamma_p));
      if (!kReuse) {
        EXPECT_TRUE(same_bits(x.values(), in.x_p));
      }
    }
  }
}

TEST(AscendCRandom, LayerNormGradMatchesTheOpLevelApi) {
  Coverage cov;
  grad_sweep<float, false>(cov);
  grad_sweep<float, true>(cov);
  grad_sweep<half, false>(cov);
  // The sweep must reach several passes with a tail, and plans whose only
  // pass is a partial one (nohCalSize rounded past the input).
  EXPECT_GT(cov.multi_pass_with_tail, 3);
  EXPECT_GT(cov.single_partial_pass, 3);
  EXPECT_EQ(cov.runs, 3 * 3 * 7);
}

// Outputs over the inputs' own buffers (the seeds allow it), with several
// passes: each pass is staged before its rows are written.
template <typename T, bool kReuse>
void in_place(bool pd_x_over_dy) {
  std::mt19937 rng(99);
  const Dims d = sizeof(T) == 4 ? Dims{3, 11, 8, 5} : Dims{3, 11, 16, 5};  // several passes and a tail
  const GradInputs<T> in = make_grad_inputs<T>(rng, d);
  const T epsilon = T(1e-3f);
  std::vector<T> want_pd_x, want_res;
  op_level_grad(in, d, float(epsilon), want_pd_x, want_res);
  std::uint32_t max_tmp = 0, min_tmp = 0;
  AscendC::GetLayerNormGradMaxMinTmpSize(d.shape(), sizeof(T), kReuse, max_tmp, min_tmp);
  AscendC::tiling::LayerNormGradTiling tiling;
  AscendC::GetLayerNormGradNDTilingInfo(d.shape(), min_tmp, sizeof(T), kReuse, tiling);
  ASSERT_GE(tiling.loopNum, 2u);
  ASSERT_NE(tiling.tailSize, 0u);

  Guarded<T> dy(in.dy_p), x(in.x_p), variance(in.variance), mean(in.mean), gamma(in.gamma_p);
  Guarded<std::uint8_t> tmp(min_tmp);
  Guarded<T>& pd_x = pd_x_over_dy ? dy : x;
  Guarded<T>& res = pd_x_over_dy ? x : dy;
  call_grad<T, kReuse>(pd_x, res, dy, x, variance, mean, gamma, &tmp, epsilon, tiling);
  expect_rows_equal(pd_x.values(), want_pd_x, d, "outputPdX");
  expect_rows_equal(res.values(), want_res, d, "resForGamma");
  EXPECT_TRUE(dy.guards_intact() && x.guards_intact() && tmp.guards_intact());
}

TEST(AscendCRandom, LayerNormGradInPlace) {
  for (bool over_dy : {true, false}) {
    SCOPED_TRACE(over_dy ? "outputPdX = inputDy, resForGamma = inputX" : "outputPdX = inputX, resForGamma = inputDy");
    in_place<float, false>(over_dy);
    in_place<float, true>(over_dy);
    in_place<half, false>(over_dy);
  }
}

TEST(AscendCRandom, LayerNormGradLibraryScratchMatchesSharedTmpBuffer) {
  std::mt19937 rng(7);
  const Dims d{4, 5, 40, 33};
  const GradInputs<float> in = make_grad_inputs<float>(rng, d);
  std::vector<float> want_pd_x, want_res;
  op_level_grad(in, d, 1e-3f, want_pd_x, want_res);
  std::uint32_t max_tmp = 0, min_tmp = 0;
  AscendC::GetLayerNormGradMaxMinTmpSize(d.shape(), 4, false, max_tmp, min_tmp);
  AscendC::tiling::LayerNormGradTiling tiling;
  AscendC::GetLayerNormGradNDTilingInfo(d.shape(), min_tmp, 4, false, tiling);
  Guarded<float> dy(in.dy_p), x(in.x_p), variance(in.variance), mean(in.mean), gamma(in.gamma_p);
  Guarded<float> pd_x(d.rows() * d.h), res(d.rows() * d.h);
  call_grad<float, false>(pd_x, res, dy, x, variance, mean, gamma, nullptr, 1e-3f, tiling);
  expect_rows_equal(pd_x.values(), want_pd_x, d, "outputPdX");
  expect_rows_equal(res.values(), want_res, d, "resForGamma");
  EXPECT_TRUE(pd_x.guards_intact() && res.guards_intact());
}

// ---- LayerNormGradBeta ----------------------------------------------------------

// The device's order, written plainly: rows in order into one float32
// accumulator per column, each product rounded before it is added (the test
// target is built with -ffp-contract=off, as the library), half rounded once
// at the end.
template <typename T>
void row_order_sums(const std::vector<T>& res, const std::vector<T>& dy, std::size_t rows, std::size_t n,
                    std::vector<T>& pd_gamma, std::vector<T>& pd_beta) {
  std::vector<float> g(n, 0.0f), b(n, 0.0f);
  for (std::size_t i = 0; i < rows; ++i) {
    for (std::size_t j = 0; j < n; ++j) {
      const float product = float(dy[i * n + j]) * float(res[i * n + j]);
      g[j] = g[j] + product;
      b[j] = b[j] + float(dy[i * n + j]);
    }
  }
  pd_gamma.assign(g.begin(), g.end());
  pd_beta.assign(b.begin(), b.end());
}

// gamma_n = n*u / (1 - n*u), u = 2^-24: a float32 sum of n terms, in any
// order, each product rounded once, is within gamma_{n+1} * sum|terms| of the
// exact sum (the standard recursive-summation bound). Half outputs add their
// own rounding: 2^-11 relative, 2^-25 absolute below the normal range.
double gamma_n(double n) {
  const double u = std::ldexp(1.0, -24);
  return n * u / (1 - n * u);
}

template <typename T, bool kReuse>
void beta_sweep(int& multi_pass_with_tail) {
  std::mt19937 rng(77 + sizeof(T) + kReuse);
  for (const Dims& d : shapes<T>()) {
    const std::size_t rows = d.rows();
    const std::vector<T> dy = uniform<T>(rng, rows * d.oh, -1.0f, 1.0f);
    const std::vector<T> res = uniform<T>(rng, rows * d.oh, -2.0f, 2.0f);
    const std::vector<T> dy_p = padded_rows(dy, rows, d.oh, d.h, pad_value<T>());
    const std::vector<T> res_p = padded_rows(res, rows, d.oh, d.h, pad_value<T>());

    // Oracles: the op-level API (float32 sums) and the float64 reference.
    const auto rn = static_cast<std::int64_t>(rows), ohn = static_cast<std::int64_t>(d.oh);
    std::vector<float> op_gamma(d.oh), op_beta(d.oh);
    lngrad::layer_norm_grad_beta({res.data(), dtype_of<T>(), {rn, ohn}}, {dy.data(), dtype_of<T>(), {rn, ohn}},
                                 {op_gamma.data(), lngrad::Dtype::float32, {ohn}},
                                 {op_beta.data(), lngrad::Dtype::float32, {ohn}});
    std::vector<double> res64(res.begin(), res.end()), dy64(dy.begin(), dy.end()), ref_gamma, ref_beta;
    lngrad::reference::layer_norm_grad_beta(rn, ohn, res64, dy64, ref_gamma, ref_beta);
    std::vector<double> abs_gamma(d.oh, 0.0), abs_beta(d.oh, 0.0);
    for (std::size_t i = 0; i < rows; ++i) {
      for (std::uint32_t j = 0; j < d.oh; ++j) {
        abs_gamma[j] += std::fabs(dy64[i * d.oh + j] * res64[i * d.oh + j]);
        abs_beta[j] += std::fabs(dy64[i * d.oh + j]);
      }
    }
    const double g = gamma_n(static_cast<double>(rows) + 1);
    std::vector<T> plain_gamma, plain_beta;
    row_order_sums(res, dy, rows, d.oh, plain_gamma, plain_beta);

    std::uint32_t max_tmp = 0, min_tmp = 0;
    AscendC::GetLayerNormGradBetaMaxMinTmpSize(d.shape(), sizeof(T), kReuse, max_tmp, min_tmp);
    const std::uint32_t three_rows = min_tmp + 3 * d.h * static_cast<std::uint32_t>(sizeof(float)) * 2;
    for (std::uint32_t size : {min_tmp, three_rows, (min_tmp + max_tmp) / 2 / 4 * 4, max_tmp}) {
      SCOPED_TRACE("T size " + std::to_string(sizeof(T)) + " reuse " + std::to_string(kReuse) + " shape " + d.str() +
                   " buffer " + std::to_string(size));
      AscendC::tiling::LayerNormGradBetaTiling tiling;
      AscendC::GetLayerNormGradBetaNDTilingInfo(d.shape(), size, sizeof(T), kReuse, tiling);
      multi_pass_with_tail += tiling.loopRound >= 2 && tiling.inputTailSize != 0;
      Guarded<T> dy_g(dy_p), res_g(res_p), pd_gamma(d.h), pd_beta(d.h);
      Guarded<std::uint8_t> tmp(size);
      LocalTensor<T> outputPdGamma = pd_gamma.tensor(), outputPdBeta = pd_beta.tensor();
      LocalTensor<std::uint8_t> sharedTmpBuffer = tmp.tensor();
      AscendC::LayerNormGradBeta<T, kReuse>(outputPdGamma, outputPdBeta, res_g.tensor(), dy_g.tensor(),
                                            sharedTmpBuffer, tiling);

      for (std::uint32_t j = 0; j < d.h; ++j) {
        const float got_g = float(pd_gamma.data()[j]), got_b = float(pd_beta.data()[j]);
        if (j < d.oh) {  // the device's order: the same bits
          EXPECT_EQ(bits(pd_gamma.data()[j]), bits(plain_gamma[j])) << "pd_gamma[" << j << "] vs row order";
          EXPECT_EQ(bits(pd_beta.data()[j]), bits(plain_beta[j])) << "pd_beta[" << j << "] vs row order";
        }
        if (j >= d.oh) {  // padding: +0
          EXPECT_EQ(bits(pd_gamma.data()[j]), 0u) << j;
          EXPECT_EQ(bits(pd_beta.data()[j]), 0u) << j;
          continue;
        }
        auto half_rounding = [&](double exact, double sum_abs) {
          return sizeof(T) == 2 ? std::ldexp(std::fabs(exact) + g * sum_abs, -11) + 0x1p-25 : 0.0;
        };
        const double round_g = half_rounding(ref_gamma[j], abs_gamma[j]);
        const double round_b = half_rounding(ref_beta[j], abs_beta[j]);
        // Against the exact (float64) sums: our float32 sums, then rounding.
        EXPECT_NEAR(got_g, ref_gamma[j], g * abs_gamma[j] + round_g) << "pd_gamma[" << j << "] vs reference";
        EXPECT_NEAR(got_b, ref_beta[j], g * abs_beta[j] + round_b) << "pd_beta[" << j << "] vs reference";
        // Against the op-level sums: both within the float32 bound of the exact sum.
        EXPECT_NEAR(got_g, op_gamma[j], 2 * g * abs_gamma[j] + round_g) << "pd_gamma[" << j << "] vs op-level";
        EXPECT_NEAR(got_b, op_beta[j], 2 * g * abs_beta[j] + round_b) << "pd_beta[" << j << "] vs op-level";
      }
      for (auto* b : {&dy_g, &res_g, &pd_gamma, &pd_beta}) EXPECT_TRUE(b->guards_intact());
      EXPECT_TRUE(tmp.guards_intact()) << "written outside sharedTmpBuffer";
      // inputDy is read-only; resForGamma too, except that with
      // isReuseSource it holds the products, as the device leaves it.
      for (std::size_t i = 0; i < rows; ++i) {
        for (std::uint32_t j = 0; j < d.h; ++j) {
          const std::size_t k = i * d.h + j;
          ASSERT_EQ(bits(dy_g.data()[k]), bits(dy_p[k])) << "inputDy written at " << k;
          const T want = kReuse && j < d.oh ? T(float(dy_p[k]) * float(res_p[k])) : res_p[k];
          ASSERT_EQ(bits(res_g.data()[k]), bits(want)) << "resForGamma at " << k;
        }
      }
    }
  }
}

TEST(AscendCRandom, LayerNormGradBetaIsTheDevicesRowOrderAndNearTheReference) {
  int multi_pass_with_tail = 0;
  beta_sweep<float, false>(multi_pass_with_tail);
  beta_sweep<float, true>(multi_pass_with_tail);
  beta_sweep<half, false>(multi_pass_with_tail);
  EXPECT_GT(multi_pass_with_tail, 3);
}

}  // namespace
