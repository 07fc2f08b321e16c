// AscendC::LayerNorm (forward) on LocalTensors: CANN's sample written as the
// sample writes it, random shapes and tmp sizes against the op-level
// lngrad::layer_norm (bit for bit) and the float64 reference (derived
// bounds), the tmp space of the overloads without sharedTmpBuffer (the
// kernel core's stack, or the library's own outside a kernel), and every
// refusal with nothing written.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
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
using lngrad::ascendc_test::uniform;

struct Data {
  std::vector<float> x, gamma, beta;  // in float; converted to T per call
};

Data make_data(std::mt19937& rng, const Dims& d, float lo, float hi) {
  return {uniform<float>(rng, std::size_t{d.rows()} * d.h, lo, hi), uniform<float>(rng, d.h, 0.5f, 1.5f),
          uniform<float>(rng, d.h, -1.0f, 1.0f)};
}

template <typename T>
std::vector<T> as(const std::vector<float>& v) {
  return std::vector<T>(v.begin(), v.end());
}

template <typename T>
struct Expected {
  std::vector<T> y, mean, variance;
};

// The oracle: the op-level API over the whole tensor at once, statistics in
// float32 rounded to T afterwards (the device casts them once at the end).
template <typename T>
Expected<T> op_level(const Data& in, const Dims& d, float epsilon) {
  const auto rows = static_cast<std::int64_t>(d.rows()), h = static_cast<std::int64_t>(d.h);
  const lngrad::Dtype dt = dtype_of<T>();
  const std::vector<T> x = as<T>(in.x), gamma = as<T>(in.gamma), beta = as<T>(in.beta);
  Expected<T> e;
  e.y.resize(x.size());
  std::vector<float> mean(d.rows()), variance(d.rows());
  lngrad::ForwardOptions options;
  options.epsilon = epsilon;
  lngrad::layer_norm({x.data(), dt, {rows, h}}, lngrad::ConstTensorView{gamma.data(), dt, {h}},
                     lngrad::ConstTensorView{beta.data(), dt, {h}}, {e.y.data(), dt, {rows, h}},
                     {mean.data(), lngrad::Dtype::float32, {rows}}, {variance.data(), lngrad::Dtype::float32, {rows}},
                     {}, options);
  e.mean = as<T>(mean);
  e.variance = as<T>(variance);
  return e;
}

template <typename T>
void expect_same_bits(const std::vector<T>& got, const std::vector<T>& want, const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  int differing = 0;
  for (std::size_t i = 0; i < got.size(); ++i) {
    if (bits(got[i]) != bits(want[i]) && differing++ < 5) {
      ADD_FAILURE() << what << "[" << i << "]: " << float(got[i]) << " vs " << float(want[i]);
    }
  }
  EXPECT_EQ(differing, 0) << what;
}

// Against the float64 reference, with u = 2^-24 and gamma_n = n*u/(1-n*u)
// (a float32 sum of n terms is within gamma_n * sum|terms| of the exact one):
//   mean: a sum of H terms and a division: gamma_{H+1} * mean|x|;
//   variance: the squares of x - mean (whose own error e_mean enters as
//     2*|x-m|*e_mean + e_mean^2) summed: gamma_{H+3} * mean((x-m)^2) +
//     2*e_mean*mean|x-m| + e_mean^2;
//   y = (x-m)*rstd*g + b: rstd carries half of variance's relative error
//     (e_var/(var+eps)) plus 3u for the add, sqrt and divide; the products
//     and the add 4u;
// and, stored as half, 2^-11 of the value (2^-25 below the normal range).
template <typename T>
void expect_near_reference(const Data& in, const Dims& d, float epsilon, const std::vector<T>& y,
                           const std::vector<T>& mean, const std::vector<T>& variance) {
  const std::int64_t rows = d.rows(), h = d.h;
  auto wide = [](const std::vector<float>& v) {  // the values the call saw, as T
    std::vector<double> out;
    for (float f : v) out.push_back(float(T(f)));
    return out;
  };
  const std::vector<double> x = wide(in.x), g = wide(in.gamma), b = wide(in.beta);
  const auto ref = lngrad::reference::layer_norm(rows, h, x, g, b, double(epsilon));
  const double u = std::ldexp(1.0, -24);
  auto gamma_n = [&](double n) { return n * u / (1 - n * u); };
  auto stored = [&](double value, double e) {
    return sizeof(T) == 2 ? e + std::ldexp(std::fabs(value) + e, -11) + 0x1p-25 : e;
  };
  for (std::int64_t r = 0; r < rows; ++r) {
    double abs_x = 0, abs_xm = 0, sq = 0;
    for (std::int64_t j = 0; j < h; ++j) {
      abs_x += std::fabs(x[r * h + j]);
      abs_xm += std::fabs(x[r * h + j] - ref.mean[r]);
      sq += std::pow(x[r * h + j] - ref.mean[r], 2);
    }
    const double e_mean = gamma_n(h + 1) * abs_x / h;
    const double e_var = gamma_n(h + 3) * sq / h + 2 * e_mean * abs_xm / h + e_mean * e_mean;
    const double e_rstd = ref.rstd[r] * (0.5 * e_var / (ref.variance[r] + epsilon) + 3 * u);
    ASSERT_LE(std::fabs(float(mean[r]) - ref.mean[r]), stored(ref.mean[r], e_mean)) << "mean " << r;
    ASSERT_LE(std::fabs(float(variance[r]) - ref.variance[r]), stored(ref.variance[r], e_var)) << "variance " << r;
    for (std::int64_t j = 0; j < h; ++j) {
      const double xm = std::fabs(x[r * h + j] - ref.mean[r]);
      const double e = std::fabs(g[j]) * (e_mean * ref.rstd[r] + xm * e_rstd) +
                       4 * u * (xm * ref.rstd[r] * std::fabs(g[j]) + std::fabs(b[j]));
      ASSERT_LE(std::fabs(float(y[r * h + j]) - ref.y[r * h + j]), stored(ref.y[r * h + j], e))
          << "y " << r << "," << j;
    }
  }
}

// CANN's LayerNorm sample ({2, 32, 16, 16} float, epsilon 1e-4, data in
// [-100, 100]), its host tiling and call as the sample writes them.
TEST(AscendCLayerNorm, TheSampleAsWritten) {
  std::mt19937 rng(42);
  const Dims d{2, 32, 16};
  Data in;
  in.x = uniform<float>(rng, 1024, -100.0f, 100.0f);
  in.gamma = uniform<float>(rng, 16, -100.0f, 100.0f);
  in.beta = uniform<float>(rng, 16, -100.0f, 100.0f);
  const uint32_t bLength = 2, sLength = 32, hLength = 16;
  AscendC::TensorShape geShape({bLength, sLength, hLength, hLength});
  bool isReuseSource = false;
  uint32_t maxTmpSize = 0, minTmpSize = 0;
  AscendC::GetLayerNormMaxMinTmpSize(geShape, sizeof(float), isReuseSource, maxTmpSize, minTmpSize);
  optiling::LayerNormTiling tiling;
  AscendC::GetLayerNormNDTilingInfo(geShape, minTmpSize, sizeof(float), isReuseSource, tiling);
  ASSERT_GT(tiling.loopRound, 1u);  // several passes and a tail at the minimum
  ASSERT_NE(tiling.inputTailSize, 0u);

  std::vector<float> x = in.x, gamma = in.gamma, beta = in.beta, y(1024), mean(64), variance(64);
  std::vector<uint8_t> tmp(minTmpSize);
  LocalTensor<float> yLocal(y.data(), 1024), meanLocal(mean.data(), 64), varLocal(variance.data(), 64);
  LocalTensor<float> xLocal(x.data(), 1024), gammaLocal(gamma.data(), 16), betaLocal(beta.data(), 16);
  LocalTensor<uint8_t> sharedTmpBuffer(tmp.data(), minTmpSize);
  float epsilon = 0.0001f;
  AscendC::LayerNorm<float, false>(yLocal, meanLocal, varLocal, xLocal, gammaLocal, betaLocal, sharedTmpBuffer,
                                   epsilon, tiling);

  const Expected<float> want = op_level<float>(in, d, epsilon);
  expect_same_bits(y, want.y, "output");
  expect_same_bits(mean, want.mean, "outputMean");
  expect_same_bits(variance, want.variance, "outputVariance");
  expect_near_reference(in, d, epsilon, y, mean, variance);
  // The sample's golden check: abs and rel error 1e-4 against float64.
  const auto ref = lngrad::reference::layer_norm(
      64, 16, std::vector<double>(in.x.begin(), in.x.end()), std::vector<double>(in.gamma.begin(), in.gamma.end()),
      std::vector<double>(in.beta.begin(), in.beta.end()), 1e-4);
  for (int i = 0; i < 1024; ++i) {
    const double ae = std::fabs(y[i] - ref.y[i]);
    EXPECT_TRUE(ae <= 1e-4 || ae <= 1e-4 * std::fabs(ref.y[i])) << i;
  }
  // As on the device, the call leaves the tail pass's sizes in the tiling.
  EXPECT_EQ(tiling.bshCurLength, tiling.inputTailSize);
  EXPECT_EQ(tiling.bsCurLength, tiling.meanVarTailSize);
}

struct Coverage {
  int runs = 0, multi_pass_with_tail = 0, single_pass = 0;
};

template <typename T, bool kReuse>
void sweep(Coverage& cov) {
  std::mt19937 rng(300 + sizeof(T) + kReuse);
  const std::vector<Dims> shapes =
      sizeof(T) == 4 ? std::vector<Dims>{{1, 1, 8}, {2, 3, 8}, {3, 7, 16}, {2, 9, 24}, {1, 33, 8}, {4, 5, 40}, {2, 20, 64}}
                     : std::vector<Dims>{{1, 1, 16}, {2, 3, 16}, {3, 7, 32}, {2, 9, 48}, {1, 40, 16}, {2, 20, 64}};
  const T epsilon = T(1e-3f);
  for (const Dims& d : shapes) {
    const Data in = make_data(rng, d, -1.0f, 3.0f);
    const Expected<T> want = op_level<T>(in, d, float(epsilon));
    std::uint32_t max_tmp = 0, min_tmp = 0;
    AscendC::GetLayerNormMaxMinTmpSize(d.shape(), sizeof(T), kReuse, max_tmp, min_tmp);
    for (std::uint32_t size : {min_tmp, (min_tmp + (max_tmp - min_tmp) / 3) / 4 * 4, max_tmp}) {
      SCOPED_TRACE("T size " + std::to_string(sizeof(T)) + " reuse " + std::to_string(kReuse) + " shape " + d.str() +
                   " buffer " + std::to_string(size));
      AscendC::tiling::LayerNormTiling tiling;
      AscendC::GetLayerNormNDTilingInfo(d.shape(), size, sizeof(T), kReuse, tiling);
      const AscendC::tiling::LayerNormTiling plan = tiling;
      ++cov.runs;
      cov.multi_pass_with_tail += tiling.loopRound >= 2 && tiling.inputTailSize != 0;
      cov.single_pass += tiling.loopRound == 1 && tiling.inputTailSize == 0;

      Guarded<T> x(as<T>(in.x)), gamma(as<T>(in.gamma)), beta(as<T>(in.beta));
      Guarded<T> y(std::size_t{d.rows()} * d.h), mean(d.rows()), variance(d.rows());
      Guarded<std::uint8_t> tmp(size);
      LocalTensor<std::uint8_t> sharedTmpBuffer = tmp.tensor();
      AscendC::LayerNorm<T, kReuse>(y.tensor(), mean.tensor(), variance.tensor(), x.tensor(), gamma.tensor(),
                                    beta.tensor(), sharedTmpBuffer, epsilon, tiling);

      expect_same_bits(y.values(), want.y, "output");
      expect_same_bits(mean.values(), want.mean, "outputMean");
      expect_same_bits(variance.values(), want.variance, "outputVariance");
      expect_near_reference<T>(in, d, float(epsilon), y.values(), mean.values(), variance.values());
      for (auto* g : {&x, &gamma, &beta, &y, &mean, &variance}) EXPECT_TRUE(g->guards_intact());
      EXPECT_TRUE(tmp.guards_intact()) << "written outside sharedTmpBuffer";
      expect_same_bits(gamma.values(), as<T>(in.gamma), "gamma (read-only)");
      expect_same_bits(beta.values(), as<T>(in.beta), "beta (read-only)");
      // inputX is intact, except that with isReuseSource its first
      // oneTmpSize elements (the device's scratch) are NaN.
      const std::vector<T> x_after = x.values(), x_given = as<T>(in.x);
      for (std::size_t i = 0; i < x_after.size(); ++i) {
        if (kReuse && i < plan.oneTmpSize) {
          ASSERT_TRUE(std::isnan(float(x_after[i]))) << "inputX[" << i << "]";
        } else {
          ASSERT_EQ(bits(x_after[i]), bits(x_given[i])) << "inputX[" << i << "]";
        }
      }
      EXPECT_EQ(tiling.bshCurLength, plan.inputTailSize != 0 ? plan.inputTailSize : plan.bshCurLength);
      EXPECT_EQ(tiling.bsCurLength, plan.inputTailSize != 0 ? plan.meanVarTailSize : plan.bsCurLength);
    }
  }
}

TEST(AscendCLayerNorm, MatchesTheOpLevelApiAndTheReference) {
  Coverage cov;
  sweep<float, false>(cov);
  sweep<float, true>(cov);
  sweep<half, false>(cov);
  EXPECT_EQ(cov.runs, 3 * (7 + 7 + 6));
  EXPECT_GT(cov.multi_pass_with_tail, 5);
  EXPECT_GT(cov.single_pass, 5);
}

// A large row mean: the variance comes from centred sums, not E[x^2]-E[x]^2.
TEST(AscendCLayerNorm, LargeMeanKeepsTheVariance) {
  std::mt19937 rng(5);
  const Dims d{2, 4, 64};
  const Data in = make_data(rng, d, 1000.0f, 1001.0f);
  std::uint32_t max_tmp = 0, min_tmp = 0;
  AscendC::GetLayerNormMaxMinTmpSize(d.shape(), 4, false, max_tmp, min_tmp);
  AscendC::tiling::LayerNormTiling tiling;
  AscendC::GetLayerNormNDTilingInfo(d.shape(), min_tmp, 4, false, tiling);
  std::vector<float> x = in.x, gamma = in.gamma, beta = in.beta, y(x.size()), mean(8), variance(8);
  std::vector<std::uint8_t> tmp(min_tmp);
  LocalTensor<std::uint8_t> sharedTmpBuffer(tmp.data(), min_tmp);
  AscendC::LayerNorm<float>(LocalTensor<float>(y.data(), 512), LocalTensor<float>(mean.data(), 8),
                            LocalTensor<float>(variance.data(), 8), LocalTensor<float>(x.data(), 512),
                            LocalTensor<float>(gamma.data(), 64), LocalTensor<float>(beta.data(), 64),
                            sharedTmpBuffer, 1e-5f, tiling);
  expect_near_reference<float>(in, d, 1e-5f, y, mean, variance);
}

// The overload without sharedTmpBuffer, called outside a kernel: the
// library's own scratch, the same plan, the same bits.
TEST(AscendCLayerNorm, LibraryScratchOutsideAKernel) {
  std::mt19937 rng(8);
  for (bool half_type : {false, true}) {
    const Dims d = half_type ? Dims{3, 7, 32} : Dims{3, 7, 24};
    const Data in = make_data(rng, d, -1.0f, 1.0f);
    auto run = [&](auto tag) {
      using T = decltype(tag);
      std::uint32_t max_tmp = 0, min_tmp = 0;
      AscendC::GetLayerNormMaxMinTmpSize(d.shape(), sizeof(T), false, max_tmp, min_tmp);
      AscendC::tiling::LayerNormTiling tiling;
      AscendC::GetLayerNormNDTilingInfo(d.shape(), min_tmp, sizeof(T), false, tiling);
      Guarded<T> x(as<T>(in.x)), gamma(as<T>(in.gamma)), beta(as<T>(in.beta));
      Guarded<T> y(std::size_t{d.rows()} * d.h), mean(d.rows()), variance(d.rows());
      AscendC::LayerNorm<T>(y.tensor(), mean.tensor(), variance.tensor(), x.tensor(), gamma.tensor(), beta.tensor(),
                            T(1e-3f), tiling);
      const Expected<T> want = op_level<T>(in, d, float(T(1e-3f)));
      expect_same_bits(y.values(), want.y, "output");
      expect_same_bits(mean.values(), want.mean, "outputMean");
      expect_same_bits(variance.values(), want.variance, "outputVariance");
      EXPECT_TRUE(y.guards_intact() && mean.guards_intact() && variance.guards_intact());
    };
    if (half_type) {
      run(half());
    } else {
      run(float());
    }
  }
}

// Output over inputX (CANN allows it), with and without isReuseSource in
// one pass, and without it over several passes.
TEST(AscendCLayerNorm, OutputOverInputX) {
  std::mt19937 rng(9);
  const Dims d{2, 9, 24};
  const Data in = make_data(rng, d, -2.0f, 2.0f);
  const Expected<float> want = op_level<float>(in, d, 1e-3f);
  auto run = [&](auto reuse, std::uint32_t size_pick) {
    constexpr bool kReuse = decltype(reuse)::value;
    std::uint32_t max_tmp = 0, min_tmp = 0;
    AscendC::GetLayerNormMaxMinTmpSize(d.shape(), 4, kReuse, max_tmp, min_tmp);
    const std::uint32_t size = size_pick == 0 ? min_tmp : max_tmp;
    AscendC::tiling::LayerNormTiling tiling;
    AscendC::GetLayerNormNDTilingInfo(d.shape(), size, 4, kReuse, tiling);
    Guarded<float> x(in.x), gamma(in.gamma), beta(in.beta), mean(d.rows()), variance(d.rows());
    Guarded<std::uint8_t> tmp(size);
    LocalTensor<std::uint8_t> sharedTmpBuffer = tmp.tensor();
    AscendC::LayerNorm<float, kReuse>(x.tensor(), mean.tensor(), variance.tensor(), x.tensor(), gamma.tensor(),
                                      beta.tensor(), sharedTmpBuffer, 1e-3f, tiling);
    expect_same_bits(x.values(), want.y, "output over inputX");
    expect_same_bits(mean.values(), want.mean, "outputMean");
    EXPECT_TRUE(x.guards_intact() && tmp.guards_intact());
    return tiling.loopRound + (tiling.inputTailSize != 0);
  };
  EXPECT_GT(run(std::false_type(), 0), 1u);  // several passes
  EXPECT_EQ(run(std::true_type(), 1), 1u);   // one pass with isReuseSource
}

// ---- The kernel core's stack as the tmp space -----------------------------------

// Inside a kernel core the overloads without sharedTmpBuffer use the unified
// buffer left after InitBuffer. Until a kernel runs here it is handed to the
// entry points directly: the same checks, named for what the kernel did.
TEST(AscendCLayerNorm, KernelStackIsCheckedAndUsed) {
  std::mt19937 rng(10);
  const Dims d{2, 9, 24};
  const Data in = make_data(rng, d, -1.0f, 1.0f);
  std::uint32_t max_tmp = 0, min_tmp = 0;
  AscendC::GetLayerNormMaxMinTmpSize(d.shape(), 4, false, max_tmp, min_tmp);
  AscendC::tiling::LayerNormTiling tiling;
  AscendC::GetLayerNormNDTilingInfo(d.shape(), min_tmp, 4, false, tiling);
  std::vector<float> x = in.x, gamma = in.gamma, beta = in.beta, y(x.size(), -7.0f), mean(18), variance(18);
  auto call = [&](Guarded<std::uint8_t>& ub) {
    AscendC::tiling::LayerNormTiling fresh = tiling;
    AscendC::detail::LayerNorm({y.data(), 432}, {mean.data(), 18}, {variance.data(), 18}, {x.data(), 432},
                               {gamma.data(), 24}, {beta.data(), 24}, {{ub.data(), std::uint32_t(ub.size())}, true},
                               1e-3f, fresh, 4, false);
  };
  Guarded<std::uint8_t> small(min_tmp - 32);
  try {
    call(small);
    ADD_FAILURE() << "no error";
  } catch (const lngrad::Error& e) {
    EXPECT_EQ(std::string(e.what()),
              "LayerNorm: the unified buffer left after InitBuffer (the tmp space of a call without sharedTmpBuffer): "
              "expected at least " + std::to_string(min_tmp) + " bytes (GetLayerNormMaxMinTmpSize minimum for "
              "{2, 9, 24, 24}), given " + std::to_string(min_tmp - 32));
  }
  for (float v : y) ASSERT_EQ(v, -7.0f) << "output written although refused";
  Guarded<std::uint8_t> ub(min_tmp + 1000);
  call(ub);
  expect_same_bits(y, op_level<float>(in, d, 1e-3f).y, "output");
  EXPECT_TRUE(ub.guards_intact());
}

TEST(AscendCLayerNorm, KernelStackForLayerNormGradAndBeta) {
  const std::uint32_t rows = 8, h = 8;
  const ge::Shape shape({1, 8, 8, 8});
  std::vector<float> dy(64, 0.5f), x(64), var(8, 1.0f), mean(8, 0.0f), gamma(8, 1.0f), pd_x(64), res(64);
  for (int i = 0; i < 64; ++i) x[i] = float(i % 8) - 3.5f;
  std::uint32_t max_tmp = 0, min_tmp = 0;
  AscendC::GetLayerNormGradMaxMinTmpSize(shape, 4, false, max_tmp, min_tmp);
  AscendC::tiling::LayerNormGradTiling grad_tiling;
  AscendC::GetLayerNormGradNDTilingInfo(shape, min_tmp, 4, false, grad_tiling);
  Guarded<std::uint8_t> small(min_tmp - 4);
  try {
    AscendC::detail::LayerNormGrad({pd_x.data(), 64}, {res.data(), 64}, {dy.data(), 64}, {x.data(), 64},
                                   {var.data(), rows}, {mean.data(), rows}, {gamma.data(), h},
                                   {{small.data(), min_tmp - 4}, true}, 1e-5f, grad_tiling,
                                   AscendC::DataFormat::ND, 4, false);
    ADD_FAILURE() << "no error";
  } catch (const lngrad::Error& e) {
    EXPECT_NE(std::string(e.what()).find("LayerNormGrad: the unified buffer left after InitBuffer (the tmp space of "
                                         "a call without sharedTmpBuffer): expected at least " +
                                         std::to_string(min_tmp) + " bytes"),
              std::string::npos)
        << e.what();
  }
  AscendC::GetLayerNormGradBetaMaxMinTmpSize(shape, 4, false, max_tmp, min_tmp);
  AscendC::tiling::LayerNormGradBetaTiling beta_tiling;
  AscendC::GetLayerNormGradBetaNDTilingInfo(shape, min_tmp, 4, false, beta_tiling);
  std::vector<float> pd_gamma(8, -1.0f), pd_beta(8, -1.0f);
  Guarded<std::uint8_t> beta_small(min_tmp - 4), beta_ub(min_tmp);
  try {
    AscendC::detail::LayerNormGradBeta({pd_gamma.data(), h}, {pd_beta.data(), h}, {x.data(), 64}, {dy.data(), 64},
                                       {{beta_small.data(), min_tmp - 4}, true}, beta_tiling, 4, false);
    ADD_FAILURE() << "no error";
  } catch (const lngrad::Error& e) {
    EXPECT_NE(std::string(e.what()).find("LayerNormGradBeta: the unified buffer left after InitBuffer"),
              std::string::npos)
        << e.what();
  }
  EXPECT_EQ(pd_beta[0], -1.0f) << "written although refused";
  AscendC::detail::LayerNormGradBeta({pd_gamma.data(), h}, {pd_beta.data(), h}, {x.data(), 64}, {dy.data(), 64},
                                     {{beta_ub.data(), min_tmp}, true}, beta_tiling, 4, false);
  for (std::uint32_t j = 0; j < h; ++j) {
    EXPECT_EQ(pd_beta[j], 4.0f) << j;                          // 8 rows of 0.5
    EXPECT_EQ(pd_gamma[j], 4.0f * (float(j) - 3.5f)) << j;     // exact in float32
  }
  EXPECT_TRUE(beta_ub.guards_intact());
}

// ---- Refusals: a clear error, nothing written -------------------------------------

struct Call {
  Dims d{2, 9, 24};
  std::vector<float> x, gamma, beta, y, mean, variance;
  std::vector<std::uint8_t> tmp;
  AscendC::tiling::LayerNormTiling tiling;
  std::uint32_t min_tmp = 0, max_tmp = 0;

  explicit Call(bool reuse = false, std::uint32_t size = 0)
      : x(432, 0.25f), gamma(24, 1.0f), beta(24, 0.0f), y(432, -7.0f), mean(18, -7.0f), variance(18, -7.0f) {
    for (std::size_t i = 0; i < x.size(); ++i) x[i] = float(i % 5);
    AscendC::GetLayerNormMaxMinTmpSize(d.shape(), 4, reuse, max_tmp, min_tmp);
    if (size == 0) size = min_tmp;
    AscendC::GetLayerNormNDTilingInfo(d.shape(), size, 4, reuse, tiling);
    tmp.assign(size, 0xEE);
  }
  template <bool kReuse = false>
  void run(float* out = nullptr, float eps = 1e-5f) {
    LocalTensor<std::uint8_t> sharedTmpBuffer(tmp.data(), static_cast<std::uint32_t>(tmp.size()));
    AscendC::LayerNorm<float, kReuse>(LocalTensor<float>(out != nullptr ? out : y.data(), 432),
                                      LocalTensor<float>(mean.data(), static_cast<std::uint32_t>(mean.size())),
                                      LocalTensor<float>(variance.data(), 18), LocalTensor<float>(x.data(), 432),
                                      LocalTensor<float>(gamma.data(), 24), LocalTensor<float>(beta.data(), 24),
                                      sharedTmpBuffer, eps, tiling);
  }
  void expect_untouched() const {
    for (float v : y) ASSERT_EQ(v, -7.0f) << "output written";
    for (float v : mean) ASSERT_EQ(v, -7.0f) << "outputMean written";
    for (std::size_t i = 0; i < x.size(); ++i) ASSERT_EQ(x[i], float(i % 5)) << "inputX written";
  }
};

void expect_error(const std::function<void()>& call, const std::string& text) {
  try {
    call();
    ADD_FAILURE() << "no error; expected one containing: " << text;
  } catch (const lngrad::Error& e) {
    EXPECT_NE(std::string(e.what()).find(text), std::string::npos) << "message: " << e.what()
                                                                    << "\nexpected to contain: " << text;
  }
}

TEST(AscendCLayerNorm, RefusesSizesAndBuffers) {
  {
    Call c;
    c.tmp.resize(c.min_tmp - 4);
    expect_error([&] { c.run(); }, "LayerNorm: sharedTmpBuffer: expected at least " + std::to_string(c.min_tmp) +
                                       " bytes (GetLayerNormMaxMinTmpSize minimum for {2, 9, 24, 24}), given " +
                                       std::to_string(c.min_tmp - 4));
    c.expect_untouched();
  }
  {
    Call c(false, 4000);  // tiling planned for 4000 bytes, given the minimum
    c.tmp.resize(c.min_tmp);
    expect_error([&] { c.run(); }, "LayerNorm: sharedTmpBuffer: expected at least tiling.tmpBufSize * 4 = 4000 "
                                   "bytes, given " + std::to_string(c.min_tmp));
    c.expect_untouched();
  }
  {
    Call c;
    c.mean.resize(17);
    expect_error([&] { c.run(); },
                 "LayerNorm: outputMean: expected at least 18 elements (B*S from the tiling's {2, 9, 24, 24}), "
                 "given 17");
    c.expect_untouched();
  }
  {
    Call c;
    expect_error([&] { c.run(c.x.data() + 8); }, "LayerNorm: output: expected memory disjoint from inputX");
    c.expect_untouched();
  }
  {
    Call c;
    expect_error([&] { c.run(nullptr, -1.0f); }, "LayerNorm: epsilon: expected a finite value >= 0, given -1");
    c.expect_untouched();
  }
  {
    Call c;
    c.tmp.resize(c.min_tmp + 8);
    expect_error(
        [&] {
          LocalTensor<std::uint8_t> sharedTmpBuffer(c.tmp.data() + 2, c.min_tmp);
          AscendC::LayerNorm<float>(LocalTensor<float>(c.y.data(), 432), LocalTensor<float>(c.mean.data(), 18),
                                    LocalTensor<float>(c.variance.data(), 18), LocalTensor<float>(c.x.data(), 432),
                                    LocalTensor<float>(c.gamma.data(), 24), LocalTensor<float>(c.beta.data(), 24),
                                    sharedTmpBuffer, 1e-5f, c.tiling);
        },
        "LayerNorm: sharedTmpBuffer: expected an address aligned to 4 bytes");
    c.expect_untouched();
  }
}

TEST(AscendCLayerNorm, RefusesTilingsItDidNotPlan) {
  {
    Call c;
    c.tiling.oneTmpSize += 24;
    expect_error([&] { c.run(); }, "LayerNorm: tiling.oneTmpSize: expected ");
    c.expect_untouched();
  }
  {
    Call c;
    c.tiling.lastDimValueBack = 0.5f;
    expect_error([&] { c.run(); }, "LayerNorm: tiling.lastDimValueBack: expected 0.0416666679 (1/originH), given 0.5");
    c.expect_untouched();
  }
  {
    // originH below storageH: the device's variance would count the padding.
    Call c;
    AscendC::GetLayerNormNDTilingInfo(ge::Shape({2, 9, 24, 20}), c.min_tmp, 4, false, c.tiling);
    expect_error([&] { c.run(); },
                 "LayerNorm: tiling.originalHLength: expected tiling.hLength = 24 (LayerNorm takes unpadded rows: the "
                 "device's variance would count the padding), given 20");
    c.expect_untouched();
  }
  {
    // A second call with the tiling the first one left (it had a tail pass:
    // 1440 bytes = 360 floats, 3 buffers of 120 = 5 rows, 18 rows = 3 passes + 3).
    Call c(false, 1440);
    ASSERT_NE(c.tiling.inputTailSize, 0u);
    c.run();
    std::fill(c.y.begin(), c.y.end(), -7.0f);
    std::fill(c.mean.begin(), c.mean.end(), -7.0f);
    expect_error([&] { c.run(); },
                 "LayerNorm: tiling.bshCurLength: expected " + std::to_string(c.tiling.inputRoundSize) +
                     " (tiling.inputRoundSize; a LayerNorm call with a tail pass leaves the tail's size in "
                     "bshCurLength and bsCurLength, as on the device: pass each call a fresh copy of the host "
                     "tiling), given " + std::to_string(c.tiling.inputTailSize));
    c.expect_untouched();
  }
}

TEST(AscendCLayerNorm, RefusesReuseWhereTheDeviceWouldFail) {
  {
    // Several passes with output over inputX.
    Call c(true);
    ASSERT_GT(c.tiling.loopRound, 1u);
    expect_error([&] { c.run<true>(c.x.data()); },
                 "LayerNorm: isReuseSource: expected false when output is inputX and the plan has several passes");
    c.expect_untouched();
  }
  {
    // half cannot reuse its source.
    const Dims d{1, 2, 16};
    std::vector<half> x(32, half(1.0f)), gamma(16, half(1.0f)), beta(16, half(0.0f)), y(32), mean(2), variance(2);
    std::uint32_t max_tmp = 0, min_tmp = 0;
    AscendC::GetLayerNormMaxMinTmpSize(d.shape(), 2, true, max_tmp, min_tmp);
    AscendC::tiling::LayerNormTiling tiling;
    AscendC::GetLayerNormNDTilingInfo(d.shape(), min_tmp, 2, true, tiling);
    std::vector<std::uint8_t> tmp(min_tmp);
    expect_error(
        [&] {
          LocalTensor<std::uint8_t> sharedTmpBuffer(tmp.data(), min_tmp);
          AscendC::LayerNorm<half, true>(LocalTensor<half>(y.data(), 32), LocalTensor<half>(mean.data(), 2),
                                         LocalTensor<half>(variance.data(), 2), LocalTensor<half>(x.data(), 32),
                                         LocalTensor<half>(gamma.data(), 16), LocalTensor<half>(beta.data(), 16),
                                         sharedTmpBuffer, half(1e-5f), tiling);
        },
        "LayerNorm: isReuseSource: expected false for half (only a float source can be reused), given true");
  }
}

}  // namespace
