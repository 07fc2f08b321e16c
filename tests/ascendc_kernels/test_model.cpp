// The kernel programming model run on the host: cores and their block
// indices, each core's own unified buffer, queues, DataCopy and DataCopyPad,
// the vector calls against a scalar oracle, and the tiling macros.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <set>
#include <string>
#include <vector>

#include "acl/acl.h"
#include "support.hpp"

namespace {

using AscendC::GlobalTensor;
using AscendC::half;
using AscendC::LocalTensor;
using AscendC::TPipe;
using AscendC::TPosition;
using AscendC::TQue;
using lngrad::ascendc_kernel_test::Gm;
using lngrad::ascendc_kernel_test::KernelTest;
using lngrad::ascendc_kernel_test::launch_error;

using Model = KernelTest;

// Sizes the kernels below use (namespace scope: the vector calls take counts
// by reference).
constexpr std::int32_t kN = 64;
constexpr std::uint32_t kTotal = 8 * 1024, kCores = 8, kTile = 128;

// Every block runs once with its own index, and sees blockDim.
TEST_F(Model, EveryBlockRunsOnceWithItsIndex) {
  constexpr std::uint32_t kBlocks = 40;
  Gm<std::int32_t> seen(2 * kBlocks);
  for (std::uint32_t i = 0; i < 2 * kBlocks; ++i) seen[i] = 0;
  ASSERT_EQ(launch_error(
                [](GM_ADDR gm) {
                  GlobalTensor<std::int32_t> g;
                  g.SetGlobalBuffer(reinterpret_cast<std::int32_t*>(gm), 2 * kBlocks);
                  const auto i = AscendC::GetBlockIdx();
                  g.SetValue(2 * i, g.GetValue(2 * i) + 1);
                  g.SetValue(2 * i + 1, static_cast<std::int32_t>(AscendC::GetBlockNum()));
                },
                kBlocks, seen.addr()),
            "");
  for (std::uint32_t i = 0; i < kBlocks; ++i) {
    EXPECT_EQ(seen[2 * i], 1) << "block " << i;
    EXPECT_EQ(seen[2 * i + 1], static_cast<std::int32_t>(kBlocks));
  }
}

// Serial mode: one block after another, in block order.
TEST_F(Model, SerialRunsBlocksInOrder) {
  lngrad::ascendc::set_serial(true);
  std::vector<std::int64_t> order;
  ASSERT_EQ(launch_error([&order]() { order.push_back(AscendC::GetBlockIdx()); }, 6), "");
  EXPECT_EQ(order, (std::vector<std::int64_t>{0, 1, 2, 3, 4, 5}));
}

// The buffers InitBuffer hands a core are filled with 0xFF bytes (NaN as
// float and half), whatever the core before it left in that unified buffer.
TEST_F(Model, EachCoreStartsWithAPoisonedUnifiedBuffer) {
  Gm<std::uint32_t> first_word(16);
  ASSERT_EQ(launch_error(
                [](GM_ADDR gm) {
                  TPipe pipe;
                  AscendC::TBuf<TPosition::VECCALC> b;
                  pipe.InitBuffer(b, 196608);
                  LocalTensor<std::uint32_t> t = b.Get<std::uint32_t>();
                  GlobalTensor<std::uint32_t> g;
                  g.SetGlobalBuffer(reinterpret_cast<std::uint32_t*>(gm), 16);
                  g.SetValue(AscendC::GetBlockIdx(), t.GetValue(t.GetSize() - 1));
                  AscendC::Duplicate(t, 7u, static_cast<std::int32_t>(t.GetSize()));  // left for the next core
                },
                16, first_word.addr()),
            "");
  for (int i = 0; i < 16; ++i) EXPECT_EQ(first_word[i], 0xFFFFFFFFu) << "core " << i;
}

// PopStackBuffer gives the unified buffer past the pipe's buffers.
TEST_F(Model, PopStackBufferIsTheRestOfTheUnifiedBuffer) {
  Gm<std::uint32_t> out(8);
  ASSERT_EQ(launch_error(
                [](GM_ADDR gm) {
                  TPipe pipe;
                  TQue<TPosition::VECIN, 2> q;
                  pipe.InitBuffer(q, 2, 1000);  // rounded to 1024 each
                  LocalTensor<std::uint8_t> stack;
                  AscendC::PopStackBuffer<std::uint8_t, TPosition::LCM>(stack);
                  LocalTensor<float> a = q.AllocTensor<float>();
                  GlobalTensor<std::uint32_t> g;
                  g.SetGlobalBuffer(reinterpret_cast<std::uint32_t*>(gm), 8);
                  g.SetValue(0, stack.GetSize());
                  g.SetValue(1, static_cast<std::uint32_t>(stack.GetPhyAddr() -
                                                           reinterpret_cast<std::uint8_t*>(a.GetPhyAddr())));
                  q.FreeTensor(a);
                },
                1, out.addr()),
            "");
  EXPECT_EQ(out[0], 196608u - 2048u);
  EXPECT_EQ(out[1], 2048u);
}

// A double-buffered copy kernel over tiles, as CANN's samples write one,
// moves every element once; TBuf scratch and GetWithOffset on the way.
TEST_F(Model, DoubleBufferedTilesMoveEveryElement) {
  std::vector<float> in(kTotal);
  for (std::uint32_t i = 0; i < kTotal; ++i) in[i] = static_cast<float>(i) * 0.25f - 3.0f;
  Gm<float> x(in), y(kTotal);
  ASSERT_EQ(launch_error(
                [](GM_ADDR xg, GM_ADDR yg) {
                  constexpr std::uint32_t per_core = kTotal / kCores;
                  GlobalTensor<float> xs, ys;
                  xs.SetGlobalBuffer(reinterpret_cast<float*>(xg) + per_core * AscendC::GetBlockIdx(), per_core);
                  ys.SetGlobalBuffer(reinterpret_cast<float*>(yg) + per_core * AscendC::GetBlockIdx(), per_core);
                  TPipe pipe;
                  TQue<TPosition::VECIN, 2> qin;
                  TQue<TPosition::VECOUT, 2> qout;
                  AscendC::TBuf<TPosition::VECCALC> scratch;
                  pipe.InitBuffer(qin, 2, kTile * sizeof(float));
                  pipe.InitBuffer(qout, 2, kTile * sizeof(float));
                  pipe.InitBuffer(scratch, 2 * kTile * sizeof(float));
                  LocalTensor<float> twos = scratch.GetWithOffset<float>(kTile, kTile * sizeof(float));
                  AscendC::Duplicate(twos, 2.0f, static_cast<std::int32_t>(kTile));
                  for (std::uint32_t t = 0; t < per_core / kTile; ++t) {
                    LocalTensor<float> a = qin.AllocTensor<float>();
                    AscendC::DataCopy(a, xs[t * kTile], kTile);
                    qin.EnQue(a);
                    LocalTensor<float> b = qin.DeQue<float>();
                    LocalTensor<float> c = qout.AllocTensor<float>();
                    AscendC::Mul(c, b, twos, static_cast<std::int32_t>(kTile));
                    AscendC::Adds(c, c, 1.0f, static_cast<std::int32_t>(kTile));
                    qout.EnQue<float>(c);
                    qin.FreeTensor(b);
                    LocalTensor<float> d = qout.DeQue<float>();
                    AscendC::DataCopy(ys[t * kTile], d, kTile);
                    qout.FreeTensor(d);
                  }
                },
                kCores, x.addr(), y.addr()),
            "");
  // Exact: x*2 + 1 on quarter-integers below 2^11 is exact in float.
  for (std::uint32_t i = 0; i < kTotal; ++i) ASSERT_EQ(y[i], in[i] * 2.0f + 1.0f) << i;
}

// Block-strided DataCopy: blockLen and gaps in 32-byte blocks.
TEST_F(Model, DataCopyWithParamsGathersBlocks) {
  std::vector<float> in(64);
  for (int i = 0; i < 64; ++i) in[i] = static_cast<float>(i);
  Gm<float> x(in), y(32);
  ASSERT_EQ(launch_error(
                [](GM_ADDR xg, GM_ADDR yg) {
                  GlobalTensor<float> xs, ys;
                  xs.SetGlobalBuffer(reinterpret_cast<float*>(xg), 64);
                  ys.SetGlobalBuffer(reinterpret_cast<float*>(yg), 32);
                  TPipe pipe;
                  AscendC::TBuf<TPosition::VECCALC> b;
                  pipe.InitBuffer(b, 32 * sizeof(float));
                  LocalTensor<float> t = b.Get<float>();
                  // 4 blocks of 8 floats, skipping 8 floats after each in GM.
                  AscendC::DataCopy(t, xs, AscendC::DataCopyParams(4, 1, 1, 0));
                  AscendC::DataCopy(ys, t, 32);
                },
                1, x.addr(), y.addr()),
            "");
  for (int i = 0; i < 32; ++i) EXPECT_EQ(y[i], static_cast<float>((i / 8) * 16 + i % 8)) << i;
}

// DataCopyPad: a 5-float row lands on a 32-byte block padded with
// paddingValue; back to GM only the 5 floats are written.
TEST_F(Model, DataCopyPadPadsRowsToBlocks) {
  std::vector<float> in(15);
  for (int i = 0; i < 15; ++i) in[i] = static_cast<float>(i + 1);
  Gm<float> x(in), padded(24), back(15);
  for (int i = 0; i < 15; ++i) back[i] = -1.0f;
  ASSERT_EQ(launch_error(
                [](GM_ADDR xg, GM_ADDR pg, GM_ADDR bg) {
                  GlobalTensor<float> xs, ps, bs;
                  xs.SetGlobalBuffer(reinterpret_cast<float*>(xg), 15);
                  ps.SetGlobalBuffer(reinterpret_cast<float*>(pg), 24);
                  bs.SetGlobalBuffer(reinterpret_cast<float*>(bg), 15);
                  TPipe pipe;
                  AscendC::TBuf<TPosition::VECCALC> b;
                  pipe.InitBuffer(b, 24 * sizeof(float));
                  LocalTensor<float> t = b.Get<float>();
                  AscendC::DataCopyPad(t, xs, AscendC::DataCopyExtParams(3, 5 * sizeof(float), 0, 0, 0),
                                       AscendC::DataCopyPadExtParams<float>(true, 0, 3, 9.5f));
                  AscendC::DataCopy(ps, t, 24);
                  AscendC::DataCopyPad(bs, t, AscendC::DataCopyExtParams(3, 5 * sizeof(float), 0, 0, 0));
                },
                1, x.addr(), padded.addr(), back.addr()),
            "");
  for (int row = 0; row < 3; ++row) {
    for (int j = 0; j < 8; ++j) {
      EXPECT_EQ(padded[row * 8 + j], j < 5 ? static_cast<float>(row * 5 + j + 1) : 9.5f) << row << "," << j;
    }
  }
  for (int i = 0; i < 15; ++i) EXPECT_EQ(back[i], static_cast<float>(i + 1)) << i;
}

// Vector calls on half compute in float and round once to nearest-even:
// compared with lngrad's own conversion of the float result.
TEST_F(Model, HalfArithmeticRoundsOnce) {
  std::vector<half> a(kN), b(kN);
  for (int i = 0; i < kN; ++i) {
    a[i] = half(1.0f + static_cast<float>(i) / 1024.0f);
    b[i] = half(3.0f - static_cast<float>(i) / 512.0f);
  }
  Gm<half> ga(a), gb(b), sum(kN), prod(kN), quot(kN);
  Gm<float> widened(kN);
  ASSERT_EQ(launch_error(
                [](GM_ADDR pa, GM_ADDR pb, GM_ADDR ps, GM_ADDR pp, GM_ADDR pq, GM_ADDR pw) {
                  GlobalTensor<half> A, B, S, P, Q;
                  GlobalTensor<float> W;
                  A.SetGlobalBuffer(reinterpret_cast<half*>(pa), kN);
                  B.SetGlobalBuffer(reinterpret_cast<half*>(pb), kN);
                  S.SetGlobalBuffer(reinterpret_cast<half*>(ps), kN);
                  P.SetGlobalBuffer(reinterpret_cast<half*>(pp), kN);
                  Q.SetGlobalBuffer(reinterpret_cast<half*>(pq), kN);
                  W.SetGlobalBuffer(reinterpret_cast<float*>(pw), kN);
                  TPipe pipe;
                  AscendC::TBuf<TPosition::VECCALC> buf;
                  pipe.InitBuffer(buf, 5 * kN * sizeof(half) + kN * sizeof(float));
                  LocalTensor<half> all = buf.Get<half>();
                  LocalTensor<half> x = all, y = all[kN], s = all[2 * kN], p = all[3 * kN], q = all[4 * kN];
                  LocalTensor<float> w = all[5 * kN].ReinterpretCast<float>();
                  AscendC::DataCopy(x, A, kN);
                  AscendC::DataCopy(y, B, kN);
                  AscendC::Add(s, x, y, kN);
                  AscendC::Mul(p, x, y, kN);
                  AscendC::Div(q, x, y, kN);
                  AscendC::Cast(w, p, AscendC::RoundMode::CAST_NONE, kN);
                  AscendC::DataCopy(S, s, kN);
                  AscendC::DataCopy(P, p, kN);
                  AscendC::DataCopy(Q, q, kN);
                  AscendC::DataCopy(W, w, kN);
                },
                1, ga.addr(), gb.addr(), sum.addr(), prod.addr(), quot.addr(), widened.addr()),
            "");
  for (int i = 0; i < kN; ++i) {
    const float fa = a[i], fb = b[i];
    EXPECT_EQ(sum[i].Bits(), half(fa + fb).Bits()) << i;
    EXPECT_EQ(prod[i].Bits(), half(fa * fb).Bits()) << i;
    EXPECT_EQ(quot[i].Bits(), half(fa / fb).Bits()) << i;
    EXPECT_EQ(widened[i], static_cast<float>(prod[i])) << i;
  }
}

// ICPU_SET_TILING_KEY selects the TILING_KEY_IS branch.
TEST_F(Model, TilingKeySelectsTheBranch) {
  Gm<std::int32_t> out(1);
  auto kernel = [](GM_ADDR gm) {
    GlobalTensor<std::int32_t> g;
    g.SetGlobalBuffer(reinterpret_cast<std::int32_t*>(gm), 1);
    if (TILING_KEY_IS(1)) {
      g.SetValue(0, 10);
    } else if (TILING_KEY_IS(2)) {
      g.SetValue(0, 20);
    }
  };
  ICPU_SET_TILING_KEY(2);
  ASSERT_EQ(launch_error(kernel, 1, out.addr()), "");
  EXPECT_EQ(out[0], 20);
  ICPU_SET_TILING_KEY(1);
  ASSERT_EQ(launch_error(kernel, 1, out.addr()), "");
  EXPECT_EQ(out[0], 10);
}

// ASCEND_IS_AIC / ASCEND_IS_AIV follow the kernel mode.
TEST_F(Model, CoreKindFollowsTheKernelMode) {
  Gm<std::int32_t> out(2);
  auto kernel = [](GM_ADDR gm) {
    GlobalTensor<std::int32_t> g;
    g.SetGlobalBuffer(reinterpret_cast<std::int32_t*>(gm), 2);
    if ASCEND_IS_AIC {
      g.SetValue(0, 1);
      return;
    }
    if ASCEND_IS_AIV { g.SetValue(1, 1); }
  };
  out[0] = out[1] = 0;
  ASSERT_EQ(launch_error(kernel, 1, out.addr()), "");
  EXPECT_EQ(out[0], 0);
  EXPECT_EQ(out[1], 1);
  AscendC::SetKernelMode(KernelMode::AIC_MODE);
  out[0] = out[1] = 0;
  ASSERT_EQ(launch_error(kernel, 1, out.addr()), "");
  EXPECT_EQ(out[0], 1);
  EXPECT_EQ(out[1], 0);
}

// ACLRT_LAUNCH_KERNEL(kernel)(blockDim, stream, args...) runs the kernel.
extern "C" __global__ __aicore__ void fill_block_index(GM_ADDR out) {
  GlobalTensor<std::int32_t> g;
  g.SetGlobalBuffer(reinterpret_cast<__gm__ std::int32_t*>(out), 4);
  g.SetValue(AscendC::GetBlockIdx(), static_cast<std::int32_t>(AscendC::GetBlockIdx()) + 100);
}

// As an ACL host main launches: on a stream of the current context, errors
// in return codes.
TEST_F(Model, AclLaunchRunsTheKernel) {
  ASSERT_EQ(aclInit(nullptr), ACL_SUCCESS);
  ASSERT_EQ(aclrtSetDevice(0), ACL_SUCCESS);
  aclrtStream stream = nullptr;
  ASSERT_EQ(aclrtCreateStream(&stream), ACL_SUCCESS);
  void* out = nullptr;
  ASSERT_EQ(aclrtMalloc(&out, 4 * sizeof(std::int32_t), ACL_MEM_MALLOC_HUGE_FIRST), ACL_SUCCESS);
  EXPECT_EQ(ACLRT_LAUNCH_KERNEL(fill_block_index)(4, stream, static_cast<GM_ADDR>(out)), 0u);
  EXPECT_EQ(aclrtSynchronizeStream(stream), ACL_SUCCESS);
  std::int32_t host[4] = {};
  ASSERT_EQ(aclrtMemcpy(host, sizeof host, out, sizeof host, ACL_MEMCPY_DEVICE_TO_HOST), ACL_SUCCESS);
  for (int i = 0; i < 4; ++i) EXPECT_EQ(host[i], 100 + i);
  // A failed launch (here: thrown) leaves its error on the stream as well.
  EXPECT_THROW(ACLRT_LAUNCH_KERNEL(fill_block_index)(8, stream, static_cast<GM_ADDR>(out)),
               lngrad::ascendc::KernelError);  // 8 blocks write past 4 elements
  EXPECT_EQ(aclrtSynchronizeStream(stream), ACL_ERROR_RT_AICORE_EXCEPTION);
  EXPECT_NE(std::string(aclGetRecentErrMsg()).find("GlobalTensor::SetValue: index 4"), std::string::npos);
  EXPECT_EQ(aclrtSynchronizeStream(stream), ACL_SUCCESS);  // reported once
  // A destroyed stream takes no launch.
  ASSERT_EQ(aclrtDestroyStream(stream), ACL_SUCCESS);
  EXPECT_EQ(ACLRT_LAUNCH_KERNEL(fill_block_index)(4, stream, static_cast<GM_ADDR>(out)),
            static_cast<std::uint32_t>(ACL_ERROR_INVALID_RESOURCE_HANDLE));
  EXPECT_EQ(aclrtFree(out), ACL_SUCCESS);
  EXPECT_EQ(aclrtResetDevice(0), ACL_SUCCESS);
  EXPECT_EQ(aclFinalize(), ACL_SUCCESS);
  // ICPU_RUN_KF needs no ACL runtime.
  Gm<std::int32_t> gm(4);
  ICPU_RUN_KF(fill_block_index, 2, gm.addr());
  EXPECT_EQ(gm[1], 101);
}

}  // namespace
