// Every refusal of the AscendC layer: a clear lngrad::Error naming the
// argument, and nothing written (outputs keep their sentinel values).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "lngrad/ascendc.hpp"
#include "support.hpp"

namespace {

using AscendC::DataFormat;
using AscendC::half;
using AscendC::LocalTensor;
using lngrad::ascendc_test::Guarded;

void expect_error(const std::function<void()>& call, const std::string& expected_text) {
  try {
    call();
    ADD_FAILURE() << "no error; expected one containing: " << expected_text;
  } catch (const lngrad::Error& e) {
    EXPECT_NE(std::string(e.what()).find(expected_text), std::string::npos)
        << "message: " << e.what() << "\nexpected to contain: " << expected_text;
  }
}

// LayerNormGrad on {b, s, h, oh} with every buffer guarded and its outputs
// (and inputX) holding a sentinel, so a refusal can be shown to write nothing.
template <typename T>
struct GradCall {
  std::uint32_t b, s, h, oh;
  Guarded<T> pd_x, res, dy, x, variance, mean, gamma;
  Guarded<std::uint8_t> tmp;
  AscendC::tiling::LayerNormGradTiling tiling;
  std::uint32_t min_tmp = 0, max_tmp = 0;

  GradCall(std::uint32_t b_, std::uint32_t s_, std::uint32_t h_, std::uint32_t oh_, bool reuse = false)
      : b(b_), s(s_), h(h_), oh(oh_), pd_x(n()), res(n()), dy(std::vector<T>(n(), T(0.5f))),
        x(std::vector<T>(n(), T(1.5f))), variance(std::vector<T>(b * s, T(1.0f))),
        mean(std::vector<T>(b * s, T(1.0f))), gamma(std::vector<T>(h, T(1.0f))), tmp(0) {
    const ge::Shape shape({b, s, h, oh});
    AscendC::GetLayerNormGradMaxMinTmpSize(shape, sizeof(T), reuse, max_tmp, min_tmp);
    AscendC::GetLayerNormGradNDTilingInfo(shape, min_tmp, sizeof(T), reuse, tiling);
    tmp = Guarded<std::uint8_t>(min_tmp);
  }
  std::size_t n() const { return std::size_t{b} * s * h; }

  template <bool kReuse = false>
  void run(LocalTensor<std::uint8_t> buffer, float eps = 1e-5f, DataFormat format = DataFormat::ND) {
    AscendC::LayerNormGrad<T, kReuse>(pd_x.tensor(), res.tensor(), dy.tensor(), x.tensor(), variance.tensor(),
                                      mean.tensor(), gamma.tensor(), buffer, T(eps), tiling, {format});
  }
  template <bool kReuse = false>
  void run() {
    run<kReuse>(tmp.tensor());
  }

  // Nothing written: outputs still all sentinel bytes, inputX as given.
  void expect_untouched() const {
    const std::vector<T> fresh = Guarded<T>(n()).values();
    EXPECT_EQ(std::memcmp(pd_x.data(), fresh.data(), n() * sizeof(T)), 0) << "outputPdX written";
    EXPECT_EQ(std::memcmp(res.data(), fresh.data(), n() * sizeof(T)), 0) << "resForGamma written";
    for (std::size_t i = 0; i < n(); ++i) ASSERT_EQ(float(x.data()[i]), 1.5f) << "inputX written";
    EXPECT_TRUE(tmp.guards_intact());
  }
};

TEST(AscendCRefusals, BufferBelowTheMinimum) {
  GradCall<float> c(1, 8, 8, 8);
  ASSERT_EQ(c.min_tmp, 1536u);
  Guarded<std::uint8_t> small(1532);
  expect_error([&] { c.run(small.tensor()); },
               "LayerNormGrad: sharedTmpBuffer: expected at least 1536 bytes (GetLayerNormGradMaxMinTmpSize minimum "
               "for {1, 8, 8, 8}), given 1532");
  c.expect_untouched();
}

TEST(AscendCRefusals, BufferBelowTheTilingsStackBufferSize) {
  GradCall<float> c(2, 32, 16, 16);  // min 6144 < max 24576
  AscendC::GetLayerNormGradNDTilingInfo(ge::Shape({2, 32, 16, 16}), c.max_tmp, 4, false, c.tiling);
  expect_error([&] { c.run(); }, "sharedTmpBuffer: expected at least tiling.stackBufferSize = 24576 bytes, given 6144");
  c.expect_untouched();
}

TEST(AscendCRefusals, RowNotAlignedTo32Bytes) {
  GradCall<float> f(1, 4, 10, 10);  // 40-byte rows: the tiling function plans them, the kernel refuses
  expect_error([&] { f.run(); }, "LayerNormGrad: tiling.hLength: expected a row length that is 32-byte aligned");
  f.expect_untouched();
  GradCall<half> h(1, 4, 8, 8);  // 16-byte rows
  expect_error([&] { h.run(); }, "(a multiple of 16 halves; pad H with zeros), given 8 (16 bytes)");
  h.expect_untouched();
}

TEST(AscendCRefusals, ReuseSourceWithHalf) {
  GradCall<half> c(1, 8, 16, 8);
  expect_error([&] { c.run<true>(); }, "LayerNormGrad: isReuseSource: expected false for half");
  c.expect_untouched();
}

TEST(AscendCRefusals, TilingForLargerTensors) {
  GradCall<float> c(2, 8, 8, 8);
  AscendC::GetLayerNormGradNDTilingInfo(ge::Shape({4, 8, 8, 8}), c.min_tmp, 4, false, c.tiling);
  expect_error([&] { c.run(); },
               "outputPdX: expected at least 256 elements (B*S*H from the tiling's {4, 8, 8, 8}), given 128");
  c.expect_untouched();
}

TEST(AscendCRefusals, TilingEditedOrForAnotherFlag) {
  GradCall<float> c(1, 33, 8, 8);
  c.tiling.loopNum += 1;
  expect_error([&] { c.run(); }, "LayerNormGrad: tiling.loopNum: expected 4 (GetLayerNormGradNDTilingInfo for "
                                 "{1, 33, 8, 8}, stackBufferSize 1536, typeSize 4, isReuseSource false), given 5");
  c.expect_untouched();
  // A plan made without isReuseSource puts x1/x2 in the scratch; the call
  // with isReuseSource expects the reuse plan (and vice versa).
  AscendC::GetLayerNormGradNDTilingInfo(ge::Shape({1, 33, 8, 8}), c.min_tmp, 4, false, c.tiling);
  expect_error([&] { c.run<true>(); }, "isReuseSource true");
  c.expect_untouched();
  c.tiling = {};
  expect_error([&] { c.run(); }, "tiling.bLength: expected >= 1");
  AscendC::GetLayerNormGradNDTilingInfo(ge::Shape({1, 33, 8, 9}), c.min_tmp, 4, false, c.tiling);
  expect_error([&] { c.run(); }, "tiling.originalHLength: expected at most tiling.hLength = 8");
  c.expect_untouched();
}

TEST(AscendCRefusals, RowStatisticsSizes) {
  GradCall<half> c(1, 3, 16, 16);
  // A kernel's buffers may hold more than the tiling's rows (a 32-byte
  // block for 3 halves, a tail tile in a full tile's buffer), never fewer.
  c.mean = Guarded<half>(std::vector<half>(16, half(1.0f)));
  c.variance = Guarded<half>(std::vector<half>(17, half(1.0f)));
  EXPECT_NO_THROW(c.run());
  c.mean = Guarded<half>(std::vector<half>(2, half(1.0f)));
  expect_error([&] { c.run(); }, "inputMean: expected at least 3 elements (B*S from the tiling's {1, 3, 16, 16}), given 2");
}

TEST(AscendCRefusals, NonNdFormat) {
  GradCall<float> c(1, 8, 8, 8);
  expect_error([&] { c.run(c.tmp.tensor(), 1e-5f, DataFormat::NZ); },
               "LayerNormGrad: shapeInfo.dataFormat: expected DataFormat::ND (the only layout LayerNormGrad supports), "
               "given DataFormat::NZ");
  c.expect_untouched();
}

TEST(AscendCRefusals, Epsilon) {
  GradCall<float> c(1, 8, 8, 8);
  expect_error([&] { c.run(c.tmp.tensor(), NAN); }, "epsilon: expected a finite value >= 0, given nan");
  expect_error([&] { c.run(c.tmp.tensor(), -1.0f); }, "epsilon: expected a finite value >= 0, given -1");
  c.expect_untouched();
}

TEST(AscendCRefusals, NullTensor) {
  GradCall<float> c(1, 8, 8, 8);
  LocalTensor<std::uint8_t> tmp = c.tmp.tensor();
  expect_error(
      [&] {
        AscendC::LayerNormGrad<float>(c.pd_x.tensor(), c.res.tensor(), LocalTensor<float>(nullptr, 64), c.x.tensor(),
                                      c.variance.tensor(), c.mean.tensor(), c.gamma.tensor(), tmp, 1e-5f, c.tiling);
      },
      "inputDy: expected a tensor with data, given a null address");
  c.expect_untouched();
}

TEST(AscendCRefusals, MisalignedScratch) {
  GradCall<float> c(1, 8, 8, 8);
  Guarded<std::uint8_t> big(c.min_tmp + 8);
  LocalTensor<std::uint8_t> shifted(big.data() + 1, c.min_tmp + 1);
  expect_error([&] { c.run(shifted); }, "sharedTmpBuffer: expected an address aligned to 4 bytes");
  c.expect_untouched();
}

TEST(AscendCRefusals, OverlappingBuffers) {
  GradCall<float> c(1, 8, 8, 8);
  LocalTensor<std::uint8_t> tmp = c.tmp.tensor();
  // One row off: staging a pass would read rows the previous pass wrote.
  std::vector<float> big(72, 0.5f);
  LocalTensor<float> dy(big.data() + 8, 64), shifted(big.data(), 64);
  expect_error(
      [&] {
        AscendC::LayerNormGrad<float>(shifted, c.res.tensor(), dy, c.x.tensor(), c.variance.tensor(), c.mean.tensor(),
                                      c.gamma.tensor(), tmp, 1e-5f, c.tiling);
      },
      "outputPdX: expected memory disjoint from inputDy (or exactly the buffer of inputDy or inputX), given a buffer "
      "overlapping inputDy");
  expect_error(
      [&] {
        AscendC::LayerNormGrad<float>(c.pd_x.tensor(), c.pd_x.tensor(), c.dy.tensor(), c.x.tensor(),
                                      c.variance.tensor(), c.mean.tensor(), c.gamma.tensor(), tmp, 1e-5f, c.tiling);
      },
      "resForGamma: expected memory disjoint from outputPdX");
  std::vector<float> roomy(c.min_tmp, 1.5f);  // scratch over inputX's memory
  LocalTensor<float> x_in_roomy(roomy.data(), 64);
  LocalTensor<std::uint8_t> scratch_over_x(reinterpret_cast<std::uint8_t*>(roomy.data()), c.min_tmp);
  expect_error(
      [&] {
        AscendC::LayerNormGrad<float>(c.pd_x.tensor(), c.res.tensor(), c.dy.tensor(), x_in_roomy, c.variance.tensor(),
                                      c.mean.tensor(), c.gamma.tensor(), scratch_over_x, 1e-5f, c.tiling);
      },
      "sharedTmpBuffer: expected memory disjoint from every tensor of the call, given a buffer overlapping inputX");
  c.expect_untouched();
  // With isReuseSource inputX is written: it may not share memory with gamma.
  GradCall<float> r(1, 8, 8, 8, true);
  LocalTensor<float> gamma_in_x(r.x.data(), 8);
  LocalTensor<std::uint8_t> rtmp = r.tmp.tensor();
  expect_error(
      [&] {
        AscendC::LayerNormGrad<float, true>(r.pd_x.tensor(), r.res.tensor(), r.dy.tensor(), r.x.tensor(),
                                            r.variance.tensor(), r.mean.tensor(), gamma_in_x, rtmp, 1e-5f, r.tiling);
      },
      "inputX: expected memory disjoint from inputGamma");
  r.expect_untouched();
}

// ---- LayerNormGradBeta ----------------------------------------------------------

template <typename T>
struct BetaCall {
  std::uint32_t b, s, h, oh;
  Guarded<T> pd_gamma, pd_beta, res, dy;
  Guarded<std::uint8_t> tmp;
  AscendC::tiling::LayerNormGradBetaTiling tiling;
  std::uint32_t min_tmp = 0, max_tmp = 0;

  BetaCall(std::uint32_t b_, std::uint32_t s_, std::uint32_t h_, std::uint32_t oh_)
      : b(b_), s(s_), h(h_), oh(oh_), pd_gamma(h), pd_beta(h), res(std::vector<T>(n(), T(0.5f))),
        dy(std::vector<T>(n(), T(0.25f))), tmp(0) {
    const ge::Shape shape({b, s, h, oh});
    AscendC::GetLayerNormGradBetaMaxMinTmpSize(shape, sizeof(T), false, max_tmp, min_tmp);
    AscendC::GetLayerNormGradBetaNDTilingInfo(shape, min_tmp, sizeof(T), false, tiling);
    tmp = Guarded<std::uint8_t>(min_tmp);
  }
  std::size_t n() const { return std::size_t{b} * s * h; }
  template <bool kReuse = false>
  void run(LocalTensor<std::uint8_t> buffer) {
    AscendC::LayerNormGradBeta<T, kReuse>(pd_gamma.tensor(), pd_beta.tensor(), res.tensor(), dy.tensor(), buffer,
                                          tiling);
  }
  template <bool kReuse = false>
  void run() {
    run<kReuse>(tmp.tensor());
  }
  void expect_untouched() const {
    const std::vector<T> fresh = Guarded<T>(h).values();
    EXPECT_EQ(std::memcmp(pd_gamma.data(), fresh.data(), h * sizeof(T)), 0) << "outputPdGamma written";
    EXPECT_EQ(std::memcmp(pd_beta.data(), fresh.data(), h * sizeof(T)), 0) << "outputPdBeta written";
  }
};

TEST(AscendCRefusals, BetaBufferBelowTheMinimum) {
  BetaCall<half> c(1, 8, 16, 8);
  ASSERT_EQ(c.min_tmp, 256u);  // 4 float rows of 16
  Guarded<std::uint8_t> small(252);
  expect_error([&] { c.run(small.tensor()); },
               "LayerNormGradBeta: sharedTmpBuffer: expected at least 256 bytes (GetLayerNormGradBetaMaxMinTmpSize "
               "minimum for {1, 8, 16, 8}), given 252");
  c.expect_untouched();
}

TEST(AscendCRefusals, BetaReuseWithHalfAlignmentAndTiling) {
  BetaCall<half> c(1, 8, 16, 8);
  expect_error([&] { c.run<true>(); }, "LayerNormGradBeta: isReuseSource: expected false for half");
  c.expect_untouched();
  BetaCall<float> u(1, 8, 12, 12);  // 48-byte rows
  expect_error([&] { u.run(); }, "LayerNormGradBeta: tiling.hLength: expected a row length that is 32-byte aligned");
  u.expect_untouched();
  BetaCall<float> t(2, 8, 8, 8);
  AscendC::GetLayerNormGradBetaNDTilingInfo(ge::Shape({4, 8, 8, 8}), t.min_tmp * 2, 4, false, t.tiling);
  expect_error([&] { t.run(); },
               "resForGamma: expected at least 256 elements (B*S*H from the tiling's {4, 8, 8, 8}), given 128");
  t.expect_untouched();
  BetaCall<float> e(2, 8, 8, 8);
  e.tiling.bsCurLength += 1;
  expect_error([&] { e.run(); }, "LayerNormGradBeta: tiling.bsCurLength: expected 2 (GetLayerNormGradBetaNDTilingInfo");
  e.expect_untouched();
}

TEST(AscendCRefusals, BetaOverlaps) {
  BetaCall<float> c(1, 8, 8, 8);
  LocalTensor<std::uint8_t> tmp = c.tmp.tensor();
  LocalTensor<float> in_dy(c.dy.data(), 8);
  expect_error(
      [&] {
        AscendC::LayerNormGradBeta<float>(in_dy, c.pd_beta.tensor(), c.res.tensor(), c.dy.tensor(), tmp, c.tiling);
      },
      "outputPdGamma: expected memory disjoint from inputDy, given a buffer overlapping inputDy");
  expect_error(
      [&] {
        AscendC::LayerNormGradBeta<float>(c.pd_gamma.tensor(), c.pd_gamma.tensor(), c.res.tensor(), c.dy.tensor(), tmp,
                                          c.tiling);
      },
      "outputPdBeta: expected memory disjoint from outputPdGamma");
  c.expect_untouched();
}

// ---- Host tiling --------------------------------------------------------------

TEST(AscendCRefusals, TilingFunctions) {
  std::uint32_t mx = 0, mn = 0;
  AscendC::tiling::LayerNormGradTiling t;
  AscendC::tiling::LayerNormGradBetaTiling bt;
  expect_error([&] { AscendC::GetLayerNormGradMaxMinTmpSize(ge::Shape({8, 8, 8}), 4, false, mx, mn); },
               "GetLayerNormGradMaxMinTmpSize: srcShape: expected 4 dims {B, S, storageH, originH}, given 3 dims");
  expect_error([&] { AscendC::GetLayerNormGradMaxMinTmpSize(ge::Shape({1, 8, 8, 8}), 8, false, mx, mn); },
               "typeSize: expected 2 (half) or 4 (float), given 8");
  expect_error([&] { AscendC::GetLayerNormGradNDTilingInfo(ge::Shape({1, 0, 8, 8}), 4096, 4, false, t); },
               "srcShape[1]: expected a value in [1, 4294967295], given 0");
  // One float row of 8 for each of 6 buffers is 192 bytes.
  expect_error([&] { AscendC::GetLayerNormGradNDTilingInfo(ge::Shape({1, 8, 8, 8}), 191, 4, false, t); },
               "GetLayerNormGradNDTilingInfo: stackBufferSize: expected at least 192 bytes");
  expect_error([&] { AscendC::GetLayerNormGradBetaNDTilingInfo(ge::Shape({1, 8, 16, 16}), 127, 4, false, bt); },
               "GetLayerNormGradBetaNDTilingInfo: stackBufferSize: expected at least 128 bytes");
  expect_error([&] { AscendC::GetLayerNormGradBetaNDTilingInfo(ge::Shape({1, 8, 16, 16}), 128 + 64, 2, false, bt); },
               "(room for one row)");
  // CANN keeps sizes in 32 bits: a plan past them is refused, not wrapped.
  expect_error([&] { AscendC::GetLayerNormGradMaxMinTmpSize(ge::Shape({1024, 1024, 1024, 1024}), 4, false, mx, mn); },
               "expected a value that fits the tiling's 32-bit fields");
  // LayerNorm's functions share the shape checks; its max of 3 float copies
  // of a 2^30-element input is past 32 bits although the input is not.
  AscendC::tiling::LayerNormTiling lt;
  expect_error([&] { AscendC::GetLayerNormMaxMinTmpSize(ge::Shape({2, 8, 8}), 4, false, mx, mn); },
               "GetLayerNormMaxMinTmpSize: srcShape: expected 4 dims {B, S, storageH, originH}, given 3 dims");
  expect_error([&] { AscendC::GetLayerNormNDTilingInfo(ge::Shape({1, 8, 8, 8}), 4096, 3, false, lt); },
               "GetLayerNormNDTilingInfo: typeSize: expected 2 (half) or 4 (float), given 3");
  expect_error([&] { AscendC::GetLayerNormMaxMinTmpSize(ge::Shape({1024, 1024, 1024, 1024}), 4, false, mx, mn); },
               "GetLayerNormMaxMinTmpSize: maxValue for srcShape: expected a value that fits the tiling's 32-bit "
               "fields (at most 4294967295), given 12893290496");  // 3 * 2^32 + 2 * 2^22
}

}  // namespace
