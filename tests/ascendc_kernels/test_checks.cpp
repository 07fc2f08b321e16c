// Every misuse the device punishes, provoked in a kernel: the launch fails
// with a report naming the kernel, the core, the call and the numbers, and
// returns (no hang, no crash).
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "support.hpp"

namespace {

using AscendC::GlobalTensor;
using AscendC::LocalTensor;
using AscendC::TPipe;
using AscendC::TPosition;
using AscendC::TQue;
using lngrad::ascendc_kernel_test::expect_contains;
using lngrad::ascendc_kernel_test::Gm;
using lngrad::ascendc_kernel_test::KernelTest;
using lngrad::ascendc_kernel_test::launch_error;

using Checks = KernelTest;

TEST_F(Checks, DataCopyLengthNotWholeBlocks) {
  Gm<float> x(1024);
  const std::string e = launch_error(
      [](GM_ADDR gm) {
        TPipe pipe;
        TQue<TPosition::VECIN, 1> q;
        pipe.InitBuffer(q, 1, 1024 * sizeof(float));
        GlobalTensor<float> g;
        g.SetGlobalBuffer(reinterpret_cast<float*>(gm), 1024);
        LocalTensor<float> t = q.AllocTensor<float>();
        AscendC::DataCopy(t, g, 100);  // 400 bytes
        q.FreeTensor(t);
      },
      4, x.addr());
  expect_contains(e, {"kernel test_kernel (blockDim 4 on Ascend910B1)", "core 0: DataCopy(GM -> UB)",
                      "400 bytes is not a multiple of 32", "silently rounds it down and copies 384 bytes",
                      "(3 more cores failed)"});
}

TEST_F(Checks, DataCopyPastTheLocalTensor) {
  Gm<float> x(1024);
  const std::string e = launch_error(
      [](GM_ADDR gm) {
        TPipe pipe;
        TQue<TPosition::VECIN, 1> q;
        pipe.InitBuffer(q, 1, 256 * sizeof(float));
        GlobalTensor<float> g;
        g.SetGlobalBuffer(reinterpret_cast<float*>(gm), 1024);
        LocalTensor<float> t = q.AllocTensor<float>();
        AscendC::DataCopy(t, g, 512);
        q.FreeTensor(t);
      },
      1, x.addr());
  expect_contains(e, {"core 0: DataCopy(GM -> UB): dst LocalTensor", "touches 2048 bytes, the tensor holds 1024",
                      "1024 bytes past its end"});
}

TEST_F(Checks, DataCopyPastTheGlobalTensor) {
  Gm<float> x(1024);
  const std::string e = launch_error(
      [](GM_ADDR gm) {
        TPipe pipe;
        TQue<TPosition::VECOUT, 1> q;
        pipe.InitBuffer(q, 1, 256 * sizeof(float));
        GlobalTensor<float> g;
        // Each core owns 256 elements; the copy from element 128 runs past them.
        g.SetGlobalBuffer(reinterpret_cast<float*>(gm) + 256 * AscendC::GetBlockIdx(), 256);
        LocalTensor<float> t = q.AllocTensor<float>();
        AscendC::Duplicate(t, 1.0f, 256);
        AscendC::DataCopy(g[128], t, 256);
        q.FreeTensor(t);
      },
      4, x.addr());
  expect_contains(e, {"core 0: DataCopy(UB -> GM): dst GlobalTensor", "touches 1024 bytes, the tensor holds 512"});
}

TEST_F(Checks, InitBufferBeyondTheUnifiedBuffer) {
  const std::string e = launch_error(
      []() {
        TPipe pipe;
        TQue<TPosition::VECIN, 2> in;
        TQue<TPosition::VECOUT, 2> out;
        pipe.InitBuffer(in, 2, 64 * 1024);
        pipe.InitBuffer(out, 2, 40 * 1024);  // 128 KiB + 80 KiB > 192 KiB
      },
      1);
  expect_contains(e, {"TPipe::InitBuffer: 2 x 40960 bytes (81920 rounded to 32-byte blocks) at UB offset 131072",
                      "end at 212992, past the 196608-byte unified buffer of Ascend910B1"});
}

TEST_F(Checks, UnifiedBufferSizeFollowsTheChip) {
  auto kernel = []() {
    TPipe pipe;
    AscendC::TBuf<TPosition::VECCALC> big;
    pipe.InitBuffer(big, 200 * 1024);
  };
  lngrad::ascendc::set_soc("Ascend910A");  // 256 KiB
  EXPECT_EQ(launch_error(kernel, 1), "");
  lngrad::ascendc::set_soc("Ascend910B3");  // 192 KiB
  expect_contains(launch_error(kernel, 1), {"past the 196608-byte unified buffer of Ascend910B3"});
}

TEST_F(Checks, LocalTensorNotOn32Bytes) {
  Gm<float> x(64);
  const std::string e = launch_error(
      [](GM_ADDR gm) {
        TPipe pipe;
        TQue<TPosition::VECIN, 1> q;
        pipe.InitBuffer(q, 1, 64 * sizeof(float));
        GlobalTensor<float> g;
        g.SetGlobalBuffer(reinterpret_cast<float*>(gm), 64);
        LocalTensor<float> t = q.AllocTensor<float>();
        AscendC::DataCopy(t[3], g, 8);
        q.FreeTensor(t);
      },
      1, x.addr());
  expect_contains(e, {"DataCopy(GM -> UB): dst LocalTensor starts at UB offset 12, not on a 32-byte boundary"});
}

TEST_F(Checks, VectorOperandNotOn32Bytes) {
  const std::string e = launch_error(
      []() {
        TPipe pipe;
        AscendC::TBuf<TPosition::VECCALC> b;
        pipe.InitBuffer(b, 1024);
        LocalTensor<float> t = b.Get<float>();
        AscendC::Add(t, t[1], t, 8);
      },
      1);
  expect_contains(e, {"Add: src0 LocalTensor starts at UB offset 4, not on a 32-byte boundary"});
}

TEST_F(Checks, EnQueBeyondDepth) {
  const std::string e = launch_error(
      []() {
        TPipe pipe;
        TQue<TPosition::VECIN, 1> q;
        pipe.InitBuffer(q, 2, 256);
        LocalTensor<float> a = q.AllocTensor<float>();
        LocalTensor<float> b = q.AllocTensor<float>();
        q.EnQue(a);
        q.EnQue(b);
      },
      1);
  expect_contains(e, {"TQue::EnQue: TQue<VECIN> #1 already holds 1 tensors, its depth is 1"});
}

TEST_F(Checks, DeQueOfAnEmptyQueue) {
  const std::string e = launch_error(
      []() {
        TPipe pipe;
        TQue<TPosition::VECOUT, 2> q;
        pipe.InitBuffer(q, 2, 256);
        LocalTensor<float> t = q.DeQue<float>();
        q.FreeTensor(t);
      },
      1);
  expect_contains(e, {"TQue::DeQue: TQue<VECOUT> #1 is empty; the device would wait here forever"});
}

TEST_F(Checks, FreeTensorTwice) {
  const std::string e = launch_error(
      []() {
        TPipe pipe;
        TQue<TPosition::VECIN, 2> q;
        pipe.InitBuffer(q, 2, 256);
        LocalTensor<float> t = q.AllocTensor<float>();
        q.FreeTensor(t);
        q.FreeTensor(t);
      },
      1);
  expect_contains(e, {"TQue::FreeTensor: buffer 0 of TQue<VECIN> #1 is already free (FreeTensor twice)"});
}

TEST_F(Checks, AllocTensorWithNoFreeBuffer) {
  const std::string e = launch_error(
      []() {
        TPipe pipe;
        TQue<TPosition::VECIN, 2> q;
        pipe.InitBuffer(q, 2, 256);
        q.AllocTensor<float>();
        LocalTensor<float> b = q.AllocTensor<float>();
        q.EnQue(b);
        q.AllocTensor<float>();
      },
      1);
  expect_contains(e, {"TQue::AllocTensor: all 2 buffers of TQue<VECIN> #1 are in use (allocated, enqueued)",
                      "the device would wait here forever"});
}

TEST_F(Checks, BuffersStillAllocatedWhenTheKernelReturns) {
  const std::string e = launch_error(
      []() {
        TPipe pipe;
        TQue<TPosition::VECIN, 2> in;
        TQue<TPosition::VECOUT, 2> out;
        pipe.InitBuffer(in, 2, 256);
        pipe.InitBuffer(out, 2, 256);
        LocalTensor<float> a = in.AllocTensor<float>();
        in.EnQue(a);
        LocalTensor<float> b = out.AllocTensor<float>();
        out.FreeTensor(b);
      },
      2);
  expect_contains(e, {"core 0: buffers still in use when the kernel returned",
                      "TQue<VECIN> #1 buffer 0 (enqueued, UB offset 0)", "(1 more cores failed)"});
}

TEST_F(Checks, FreeTensorOfAnotherQueue) {
  const std::string e = launch_error(
      []() {
        TPipe pipe;
        TQue<TPosition::VECIN, 1> in;
        TQue<TPosition::VECOUT, 1> out;
        pipe.InitBuffer(in, 1, 256);
        pipe.InitBuffer(out, 1, 256);
        LocalTensor<float> a = in.AllocTensor<float>();
        out.FreeTensor(a);
      },
      1);
  expect_contains(e, {"TQue::FreeTensor: the tensor is not one of the 1 buffers of TQue<VECOUT> #2"});
}

TEST_F(Checks, GlobalTensorAccessPastItsCount) {
  Gm<float> x(64);
  const std::string e = launch_error(
      [](GM_ADDR gm) {
        GlobalTensor<float> g;
        g.SetGlobalBuffer(reinterpret_cast<float*>(gm), 16);
        g.SetValue(15, 1.0f);
        static_cast<void>(g.GetValue(16));
      },
      1, x.addr());
  expect_contains(e, {"GlobalTensor::GetValue: index 16 is past the tensor's 16 elements"});
}

TEST_F(Checks, SetGlobalBufferPastItsBlock) {
  Gm<float> x(64);
  const std::string e = launch_error(
      [](GM_ADDR gm) {
        GlobalTensor<float> g;
        g.SetGlobalBuffer(reinterpret_cast<float*>(gm) + 32, 64);
      },
      1, x.addr());
  expect_contains(e, {"GlobalTensor::SetGlobalBuffer: 256 bytes from offset 128 of GM block #",
                      "(256 bytes) run 128 bytes past its end"});
}

TEST_F(Checks, HostMemoryIsNotGlobalMemory) {
  std::vector<float> host(64);
  const std::string as_argument = launch_error([](GM_ADDR) {}, 1, reinterpret_cast<GM_ADDR>(host.data()));
  expect_contains(as_argument, {"argument 1: expected memory from AscendC::GmAlloc or aclrtMalloc"});

  float* p = host.data();
  const std::string as_buffer = launch_error(
      [p]() {
        GlobalTensor<float> g;
        g.SetGlobalBuffer(p, 64);
      },
      1);
  expect_contains(as_buffer, {"GlobalTensor::SetGlobalBuffer: buffer", "is not memory from AscendC::GmAlloc"});
}

TEST_F(Checks, GmFreeOfForeignMemory) {
  int local = 0;
  EXPECT_THROW(AscendC::GmFree(&local), lngrad::Error);
}

TEST_F(Checks, BlockDimBeyondTheChip) {
  auto kernel = []() {};
  EXPECT_EQ(launch_error(kernel, 48), "");  // Ascend910B1: 48 vector cores
  expect_contains(launch_error(kernel, 49), {"blockDim: expected 1 to 48 (the AIV_MODE (vector cores) of Ascend910B1)",
                                             "given 49"});
  expect_contains(launch_error(kernel, 0), {"blockDim: expected 1 to 48", "given 0"});
  AscendC::SetKernelMode(KernelMode::AIC_MODE);
  expect_contains(launch_error(kernel, 25), {"expected 1 to 24 (the AIC_MODE (cube cores) of Ascend910B1)"});
}

TEST_F(Checks, WaitFlagWithoutSetFlag) {
  const std::string e = launch_error(
      []() {
        AscendC::SetFlag<AscendC::HardEvent::MTE2_V>(0);
        AscendC::WaitFlag<AscendC::HardEvent::MTE2_V>(0);
        AscendC::WaitFlag<AscendC::HardEvent::V_MTE3>(1);
      },
      1);
  expect_contains(e, {"WaitFlag: HardEvent::V_MTE3 id 1 has no SetFlag before it"});
}

TEST_F(Checks, LaunchInsideAKernel) {
  const std::string e = launch_error(
      []() { AscendC::detail::run_kernel("inner", []() {}, 1); }, 1);
  expect_contains(e, {"kernel inner (blockDim 1", "launched from inside kernel test_kernel (core 0)"});
}

TEST_F(Checks, LocalTensorElementPastItsEnd) {
  const std::string e = launch_error(
      []() {
        TPipe pipe;
        AscendC::TBuf<TPosition::VECCALC> b;
        pipe.InitBuffer(b, 64);
        LocalTensor<float> t = b.Get<float>();
        t.SetValue(16, 1.0f);
      },
      1);
  expect_contains(e, {"LocalTensor::SetValue: index 16 is past the tensor's 16 elements"});
}

TEST_F(Checks, TilingLargerThanItsBlock) {
  Gm<std::uint32_t> tiling(4);
  struct Big {
    std::uint32_t words[8];
  };
  const std::string e = launch_error(
      [](GM_ADDR t) {
        GET_TILING_DATA_WITH_STRUCT(Big, data, t);
        static_cast<void>(data);
      },
      1, tiling.addr());
  expect_contains(e, {"GET_TILING_DATA_WITH_STRUCT: the tiling struct has 32 bytes", "holds 16 from the tiling"});
}

TEST_F(Checks, OneFailingCoreDoesNotStopTheOthers) {
  Gm<std::int32_t> done(8);
  for (int i = 0; i < 8; ++i) done[i] = 0;
  const std::string e = launch_error(
      [](GM_ADDR gm) {
        GlobalTensor<std::int32_t> g;
        g.SetGlobalBuffer(reinterpret_cast<std::int32_t*>(gm), 8);
        if (AscendC::GetBlockIdx() == 5) AscendC::WaitFlag<AscendC::HardEvent::S_V>(0);
        g.SetValue(AscendC::GetBlockIdx(), 1);
      },
      8, done.addr());
  expect_contains(e, {"core 5: WaitFlag"});
  for (int i = 0; i < 8; ++i) EXPECT_EQ(done[i], i == 5 ? 0 : 1) << "core " << i;
}

// The default error mode is CANN CPU mode's: the report on stderr, exit 1.
TEST(ChecksExit, AFailedLaunchExitsWithTheReport) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");  // the thread pool may be running
  EXPECT_EXIT(
      {
        lngrad::ascendc::set_on_error(lngrad::ascendc::OnError::exit);
        AscendC::detail::run_kernel("exits", []() { AscendC::WaitFlag<AscendC::HardEvent::V_V>(0); }, 2);
      },
      ::testing::ExitedWithCode(1), "lngrad: kernel exits \\(blockDim 2 on .*\\): core 0: WaitFlag");
}

// Raw pointers run past a GM block or the UB hit a guard page: the fault is
// reported with the kernel, the core and the memory, and the program ends.
TEST(ChecksFault, RawPointerPastAGmBlock) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(
      {
        auto* p = static_cast<float*>(AscendC::GmAlloc(64 * sizeof(float)));
        AscendC::detail::run_kernel("overrun", [p]() {
          volatile float* q = p;
          q[64] = 1.0f;
        }, 1);
      },
      ::testing::ExitedWithCode(1), "kernel overrun, core 0: an access at byte 256 of GM block #[0-9]+, which holds 256");
}

TEST(ChecksFault, RawPointerPastTheUnifiedBuffer) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(
      {
        lngrad::ascendc::set_soc("Ascend910B1");
        AscendC::detail::run_kernel("ub_overrun", []() {
          TPipe pipe;
          AscendC::TBuf<TPosition::VECCALC> all;
          pipe.InitBuffer(all, 196608);
          volatile float* q = all.Get<float>().GetPhyAddr();
          q[196608 / 4 + 3] = 1.0f;
        }, 1);
      },
      ::testing::ExitedWithCode(1), "kernel ub_overrun, core 0: an access at byte 196620 of its 196608-byte unified");
}

}  // namespace
