// The ACL runtime calls of host mains (acl/acl.h): every call's work, and
// every misuse returning CANN's code with a message naming the call and the
// numbers (aclGetRecentErrMsg), never a crash.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "acl/acl.h"
#include "ascendc/acl_stream.hpp"
#include "lngrad/ascendc/launch.hpp"

namespace {

// The calling thread's messages, or "" when none (which clears them).
std::string recent() {
  const char* m = aclGetRecentErrMsg();
  return m == nullptr ? std::string() : std::string(m);
}

std::string hex(const void* p) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%p", p);
  return buf;
}

// Each test starts from an initialized runtime with device 0 set, and ends
// with the runtime finalized and no message left unread.
class Acl : public ::testing::Test {
 protected:
  void SetUp() override {
    recent();
    ASSERT_EQ(aclInit(nullptr), ACL_SUCCESS) << recent();
    ASSERT_EQ(aclrtSetDevice(0), ACL_SUCCESS) << recent();
  }
  void TearDown() override {
    EXPECT_EQ(aclFinalize(), ACL_SUCCESS) << recent();
    EXPECT_EQ(recent(), "") << "a message nobody read";
  }

  // The refusal's code and its message, exactly.
  static void expect_refused(aclError got, aclError code, const std::string& message) {
    EXPECT_EQ(got, code);
    EXPECT_EQ(recent(), message);
  }
};

// ---- Initialization, devices, contexts ---------------------------------------

TEST_F(Acl, InitAndFinalizeOnceEach) {
  expect_refused(aclInit(nullptr), ACL_ERROR_REPEAT_INITIALIZE, "aclInit: called again before aclFinalize");
  ASSERT_EQ(aclFinalize(), ACL_SUCCESS);
  expect_refused(aclFinalize(), ACL_ERROR_REPEAT_FINALIZE, "aclFinalize: called again after aclFinalize");
  expect_refused(aclrtSetDevice(0), ACL_ERROR_UNINITIALIZE, "aclrtSetDevice: called after aclFinalize (aclInit first)");
  void* p = nullptr;
  expect_refused(aclrtMallocHost(&p, 64), ACL_ERROR_UNINITIALIZE,
                 "aclrtMallocHost: called after aclFinalize (aclInit first)");
  expect_refused(aclInit("/nonexistent/acl.json"), ACL_ERROR_INVALID_FILE,
                 "aclInit: configPath: expected nullptr, \"\" or a readable file, given \"/nonexistent/acl.json\" "
                 "(cannot be opened)");
  const std::string config = ::testing::TempDir() + "lngrad_acl_config.json";
  std::FILE* f = std::fopen(config.c_str(), "w");
  ASSERT_NE(f, nullptr);
  std::fputs("{}\n", f);
  std::fclose(f);
  ASSERT_EQ(aclInit(config.c_str()), ACL_SUCCESS) << recent();
  ASSERT_EQ(aclFinalize(), ACL_SUCCESS);
  std::remove(config.c_str());
  ASSERT_EQ(aclInit(""), ACL_SUCCESS) << recent();  // for TearDown
}

TEST_F(Acl, OneDeviceSetAndResetInPairs) {
  uint32_t count = 0;
  ASSERT_EQ(aclrtGetDeviceCount(&count), ACL_SUCCESS);
  EXPECT_EQ(count, 1u);
  expect_refused(aclrtGetDeviceCount(nullptr), ACL_ERROR_INVALID_PARAM,
                 "aclrtGetDeviceCount: count: expected an address, given nullptr");
  int32_t id = -1;
  ASSERT_EQ(aclrtGetDevice(&id), ACL_SUCCESS);
  EXPECT_EQ(id, 0);
  expect_refused(aclrtGetDevice(nullptr), ACL_ERROR_INVALID_PARAM,
                 "aclrtGetDevice: deviceId: expected an address, given nullptr");
  expect_refused(aclrtSetDevice(1), ACL_ERROR_RT_INVALID_DEVICEID,
                 "aclrtSetDevice: deviceId: expected a device in [0, 1), given 1");
  expect_refused(aclrtResetDevice(-1), ACL_ERROR_RT_INVALID_DEVICEID,
                 "aclrtResetDevice: deviceId: expected a device in [0, 1), given -1");
  // Set twice: the device stays until the second reset.
  ASSERT_EQ(aclrtSetDevice(0), ACL_SUCCESS);
  ASSERT_EQ(aclrtResetDevice(0), ACL_SUCCESS);
  ASSERT_EQ(aclrtGetDevice(&id), ACL_SUCCESS);
  ASSERT_EQ(aclrtResetDevice(0), ACL_SUCCESS);
  expect_refused(aclrtGetDevice(&id), ACL_ERROR_RT_CONTEXT_NULL,
                 "aclrtGetDevice: no current context in this thread (call aclrtSetDevice or aclrtSetCurrentContext "
                 "first)");
  expect_refused(aclrtResetDevice(0), ACL_ERROR_INVALID_PARAM,
                 "aclrtResetDevice: deviceId: expected a device set by aclrtSetDevice and not yet reset, given 0 "
                 "(not set)");
  expect_refused(aclrtSynchronizeDevice(), ACL_ERROR_RT_CONTEXT_NULL,
                 "aclrtSynchronizeDevice: no current context in this thread (call aclrtSetDevice or "
                 "aclrtSetCurrentContext first)");
}

TEST_F(Acl, ContextsAreHandlesOfTheCallingThread) {
  aclrtContext def = nullptr, ctx = nullptr, cur = nullptr;
  ASSERT_EQ(aclrtGetCurrentContext(&def), ACL_SUCCESS);
  ASSERT_NE(def, nullptr);
  ASSERT_EQ(aclrtCreateContext(&ctx, 0), ACL_SUCCESS);
  ASSERT_EQ(aclrtGetCurrentContext(&cur), ACL_SUCCESS);
  EXPECT_EQ(cur, ctx);  // a created context becomes current
  ASSERT_EQ(aclrtSetCurrentContext(def), ACL_SUCCESS);
  ASSERT_EQ(aclrtGetCurrentContext(&cur), ACL_SUCCESS);
  EXPECT_EQ(cur, def);
  expect_refused(aclrtDestroyContext(def), ACL_ERROR_INVALID_PARAM,
                 "aclrtDestroyContext: context: expected a context from aclrtCreateContext, given the default "
                 "context of device 0 (aclrtResetDevice releases it)");
  expect_refused(aclrtCreateContext(nullptr, 0), ACL_ERROR_INVALID_PARAM,
                 "aclrtCreateContext: context: expected an address, given nullptr");
  aclrtContext other = nullptr;
  expect_refused(aclrtCreateContext(&other, 3), ACL_ERROR_RT_INVALID_DEVICEID,
                 "aclrtCreateContext: deviceId: expected a device in [0, 1), given 3");
  expect_refused(aclrtGetCurrentContext(nullptr), ACL_ERROR_INVALID_PARAM,
                 "aclrtGetCurrentContext: context: expected an address, given nullptr");
  ASSERT_EQ(aclrtDestroyContext(ctx), ACL_SUCCESS);
  expect_refused(aclrtDestroyContext(ctx), ACL_ERROR_INVALID_RESOURCE_HANDLE,
                 "aclrtDestroyContext: context: expected a context from aclrtCreateContext not yet destroyed, given " +
                     hex(ctx));
  expect_refused(aclrtSetCurrentContext(ctx), ACL_ERROR_INVALID_RESOURCE_HANDLE,
                 "aclrtSetCurrentContext: context: expected a live context, given " + hex(ctx));

  // Another thread has no context until it sets one; its messages are its own.
  std::string other_thread;
  aclError got = ACL_SUCCESS, after_set = ACL_ERROR_FAILURE;
  std::thread t([&] {
    void* p = nullptr;
    got = aclrtMalloc(&p, 64, ACL_MEM_MALLOC_HUGE_FIRST);
    other_thread = recent();
    after_set = aclrtSetCurrentContext(def);
  });
  t.join();
  EXPECT_EQ(got, ACL_ERROR_RT_CONTEXT_NULL);
  EXPECT_EQ(other_thread,
            "aclrtMalloc: no current context in this thread (call aclrtSetDevice or aclrtSetCurrentContext first)");
  EXPECT_EQ(after_set, ACL_SUCCESS);
  EXPECT_EQ(recent(), "");
}

// ---- Streams and kernel errors ------------------------------------------------

TEST_F(Acl, StreamsLiveInTheirContext) {
  aclrtStream s = nullptr;
  expect_refused(aclrtCreateStream(nullptr), ACL_ERROR_INVALID_PARAM,
                 "aclrtCreateStream: stream: expected an address, given nullptr");
  ASSERT_EQ(aclrtCreateStream(&s), ACL_SUCCESS);
  EXPECT_EQ(aclrtSynchronizeStream(s), ACL_SUCCESS);
  EXPECT_EQ(aclrtSynchronizeStream(nullptr), ACL_SUCCESS);  // the default stream
  EXPECT_EQ(aclrtSynchronizeDevice(), ACL_SUCCESS);
  expect_refused(aclrtDestroyStream(nullptr), ACL_ERROR_INVALID_PARAM,
                 "aclrtDestroyStream: stream: expected a stream from aclrtCreateStream, given nullptr (the default "
                 "stream)");
  ASSERT_EQ(aclrtDestroyStream(s), ACL_SUCCESS);
  const std::string dead = "a stream from aclrtCreateStream not yet destroyed";
  expect_refused(aclrtDestroyStream(s), ACL_ERROR_INVALID_RESOURCE_HANDLE,
                 "aclrtDestroyStream: stream: expected " + dead + ", given " + hex(s));
  expect_refused(aclrtSynchronizeStream(s), ACL_ERROR_INVALID_RESOURCE_HANDLE,
                 "aclrtSynchronizeStream: stream: expected " + dead + ", or nullptr, given " + hex(s));
  // A handle is never given again: a stale one stays refused.
  aclrtStream next = nullptr;
  ASSERT_EQ(aclrtCreateStream(&next), ACL_SUCCESS);
  EXPECT_NE(next, s);
  EXPECT_EQ(aclrtSynchronizeStream(s), ACL_ERROR_INVALID_RESOURCE_HANDLE);
  recent();
  ASSERT_EQ(aclrtDestroyStream(next), ACL_SUCCESS);

  // A context takes its streams with it; so does the last aclrtResetDevice.
  aclrtContext ctx = nullptr;
  aclrtStream in_ctx = nullptr, in_default = nullptr;
  ASSERT_EQ(aclrtCreateContext(&ctx, 0), ACL_SUCCESS);
  ASSERT_EQ(aclrtCreateStream(&in_ctx), ACL_SUCCESS);
  ASSERT_EQ(aclrtDestroyContext(ctx), ACL_SUCCESS);
  EXPECT_EQ(aclrtSynchronizeStream(in_ctx), ACL_ERROR_INVALID_RESOURCE_HANDLE);
  recent();
  ASSERT_EQ(aclrtSetDevice(0), ACL_SUCCESS);  // the default context again (set count 2)
  ASSERT_EQ(aclrtCreateStream(&in_default), ACL_SUCCESS);
  ASSERT_EQ(aclrtResetDevice(0), ACL_SUCCESS);
  EXPECT_EQ(aclrtSynchronizeStream(in_default), ACL_SUCCESS);  // still set once
  ASSERT_EQ(aclrtResetDevice(0), ACL_SUCCESS);
  EXPECT_EQ(aclrtSynchronizeStream(in_default), ACL_ERROR_INVALID_RESOURCE_HANDLE);
  recent();
  expect_refused(aclrtCreateStream(&s), ACL_ERROR_RT_CONTEXT_NULL,
                 "aclrtCreateStream: no current context in this thread (call aclrtSetDevice or "
                 "aclrtSetCurrentContext first)");
}

TEST_F(Acl, AKernelErrorComesBackFromSynchronizeStream) {
  aclrtStream s = nullptr, s2 = nullptr;
  ASSERT_EQ(aclrtCreateStream(&s), ACL_SUCCESS);
  ASSERT_EQ(aclrtCreateStream(&s2), ACL_SUCCESS);
  AscendC::detail::record_stream_error(s, "kernel add_custom, core 3: DataCopy: ...");
  EXPECT_EQ(recent(), "");  // nothing until the host synchronizes
  EXPECT_EQ(aclrtSynchronizeStream(s2), ACL_SUCCESS);  // another stream's error stays there
  EXPECT_EQ(aclrtSynchronizeStream(s), ACL_ERROR_RT_AICORE_EXCEPTION);
  EXPECT_EQ(recent(), "kernel add_custom, core 3: DataCopy: ...");
  EXPECT_EQ(aclrtSynchronizeStream(s), ACL_SUCCESS);  // reported once

  // Two errors: the first one's code, both messages (latest first).
  AscendC::detail::record_stream_error(s, "first", ACL_ERROR_RT_VECTOR_CORE_EXCEPTION);
  AscendC::detail::record_stream_error(s, "second");
  EXPECT_EQ(aclrtSynchronizeStream(s), ACL_ERROR_RT_VECTOR_CORE_EXCEPTION);
  EXPECT_EQ(recent(), "second\nfirst");

  // The default stream's error, through aclrtSynchronizeDevice; one not
  // synchronized comes back from aclrtDestroyStream.
  AscendC::detail::record_stream_error(nullptr, "on the default stream");
  EXPECT_EQ(aclrtSynchronizeDevice(), ACL_ERROR_RT_AICORE_EXCEPTION);
  EXPECT_EQ(recent(), "on the default stream");
  AscendC::detail::record_stream_error(s2, "never synchronized");
  EXPECT_EQ(aclrtDestroyStream(s2), ACL_ERROR_RT_AICORE_EXCEPTION);
  EXPECT_EQ(recent(), "never synchronized");
  ASSERT_EQ(aclrtDestroyStream(s), ACL_SUCCESS);
  AscendC::detail::record_stream_error(s, "on a destroyed stream");  // nothing to record on
  EXPECT_EQ(recent(), "");
}

TEST_F(Acl, TheLauncherChecksItsStream) {
  aclrtStream s = nullptr;
  ASSERT_EQ(aclrtCreateStream(&s), ACL_SUCCESS);
  std::string why;
  EXPECT_EQ(AscendC::detail::check_launch_stream(s, &why), ACL_SUCCESS);
  EXPECT_EQ(AscendC::detail::check_launch_stream(nullptr, &why), ACL_SUCCESS);
  aclrtContext ctx = nullptr;
  ASSERT_EQ(aclrtCreateContext(&ctx, 0), ACL_SUCCESS);  // now current: s belongs to another context
  EXPECT_EQ(AscendC::detail::check_launch_stream(s, &why), ACL_ERROR_RT_STREAM_CONTEXT);
  EXPECT_EQ(why,
            "ACLRT_LAUNCH_KERNEL: stream: expected a stream of the thread's current context, given one of another "
            "context");
  ASSERT_EQ(aclrtDestroyContext(ctx), ACL_SUCCESS);  // no current context left in this thread
  EXPECT_EQ(AscendC::detail::check_launch_stream(nullptr, &why), ACL_ERROR_RT_CONTEXT_NULL);
  EXPECT_EQ(why, "ACLRT_LAUNCH_KERNEL: no current context in this thread (call aclrtSetDevice or "
                 "aclrtSetCurrentContext first)");
  ASSERT_EQ(aclrtSetDevice(0), ACL_SUCCESS);
  ASSERT_EQ(aclrtDestroyStream(s), ACL_SUCCESS);
  EXPECT_EQ(AscendC::detail::check_launch_stream(s, &why), ACL_ERROR_INVALID_RESOURCE_HANDLE);
  EXPECT_EQ(recent(), "") << "the launcher reports stream errors itself";
  ASSERT_EQ(aclrtResetDevice(0), ACL_SUCCESS);
}

// ---- Memory ---------------------------------------------------------------------

TEST_F(Acl, DeviceMemoryIsGmAllocMemory) {
  void* p = nullptr;
  ASSERT_EQ(aclrtMalloc(&p, 100, ACL_MEM_MALLOC_HUGE_FIRST), ACL_SUCCESS);
  AscendC::detail::GmBlock block;
  ASSERT_TRUE(AscendC::detail::find_gm(p, 100, &block));  // kernels accept it
  EXPECT_EQ(block.size, 100u);
  EXPECT_EQ(reinterpret_cast<std::uintptr_t>(p) % 32, 0u);
  void* q = nullptr;
  ASSERT_EQ(aclrtMalloc(&q, 64, static_cast<aclrtMemMallocPolicy>(ACL_MEM_MALLOC_NORMAL_ONLY |
                                                                  ACL_MEM_TYPE_HIGH_BAND_WIDTH)),
            ACL_SUCCESS);
  expect_refused(aclrtMalloc(nullptr, 64, ACL_MEM_MALLOC_HUGE_FIRST), ACL_ERROR_INVALID_PARAM,
                 "aclrtMalloc: devPtr: expected an address, given nullptr");
  void* r = nullptr;
  expect_refused(aclrtMalloc(&r, 0, ACL_MEM_MALLOC_HUGE_FIRST), ACL_ERROR_INVALID_PARAM,
                 "aclrtMalloc: size: expected at least 1 byte, given 0");
  expect_refused(aclrtMalloc(&r, 64, static_cast<aclrtMemMallocPolicy>(9)), ACL_ERROR_INVALID_PARAM,
                 "aclrtMalloc: policy: expected an aclrtMemMallocPolicy (ACL_MEM_MALLOC_HUGE_FIRST, ...), given 9");
  EXPECT_EQ(r, nullptr);

  ASSERT_EQ(aclrtFree(p), ACL_SUCCESS);
  EXPECT_FALSE(AscendC::detail::find_gm(p, 1, nullptr));
  const std::string not_ours = "aclrtFree: devPtr: expected an address aclrtMalloc returned and not yet freed, given ";
  expect_refused(aclrtFree(p), ACL_ERROR_INVALID_PARAM, not_ours + hex(p));
  expect_refused(aclrtFree(nullptr), ACL_ERROR_INVALID_PARAM, "aclrtFree: devPtr: expected an address, given nullptr");
  void* gm = AscendC::GmAlloc(64);
  expect_refused(aclrtFree(gm), ACL_ERROR_INVALID_PARAM,
                 not_ours + hex(gm) + " (memory from AscendC::GmAlloc: GmFree frees it)");
  AscendC::GmFree(gm);
  void* host = nullptr;
  ASSERT_EQ(aclrtMallocHost(&host, 10), ACL_SUCCESS);
  expect_refused(aclrtFree(host), ACL_ERROR_INVALID_PARAM,
                 not_ours + hex(host) + " (host memory from aclrtMallocHost: aclrtFreeHost frees it)");
  expect_refused(aclrtFreeHost(q), ACL_ERROR_INVALID_PARAM,
                 "aclrtFreeHost: hostPtr: expected an address aclrtMallocHost returned and not yet freed, given " +
                     hex(q) + " (device memory from aclrtMalloc: aclrtFree frees it)");
  expect_refused(aclrtMallocHost(nullptr, 8), ACL_ERROR_INVALID_PARAM,
                 "aclrtMallocHost: hostPtr: expected an address, given nullptr");
  expect_refused(aclrtMallocHost(&r, 0), ACL_ERROR_INVALID_PARAM, "aclrtMallocHost: size: expected at least 1 byte, given 0");
  expect_refused(aclrtFreeHost(nullptr), ACL_ERROR_INVALID_PARAM,
                 "aclrtFreeHost: hostPtr: expected an address, given nullptr");
  ASSERT_EQ(aclrtFreeHost(host), ACL_SUCCESS);
  EXPECT_EQ(aclrtFreeHost(host), ACL_ERROR_INVALID_PARAM);
  recent();
  ASSERT_EQ(aclrtFree(q), ACL_SUCCESS);
}

TEST_F(Acl, MemcpyEachKind) {
  std::vector<std::uint8_t> a(64), b(64, 0);
  for (int i = 0; i < 64; ++i) a[i] = static_cast<std::uint8_t>(i * 3 + 1);
  void *d1 = nullptr, *d2 = nullptr, *h = nullptr;
  ASSERT_EQ(aclrtMalloc(&d1, 64, ACL_MEM_MALLOC_HUGE_FIRST), ACL_SUCCESS);
  ASSERT_EQ(aclrtMalloc(&d2, 64, ACL_MEM_MALLOC_HUGE_FIRST), ACL_SUCCESS);
  ASSERT_EQ(aclrtMallocHost(&h, 64), ACL_SUCCESS);
  ASSERT_EQ(aclrtMemcpy(d1, 64, a.data(), 64, ACL_MEMCPY_HOST_TO_DEVICE), ACL_SUCCESS);
  ASSERT_EQ(aclrtMemcpy(d2, 64, d1, 64, ACL_MEMCPY_DEVICE_TO_DEVICE), ACL_SUCCESS);
  ASSERT_EQ(aclrtMemcpy(h, 64, d2, 64, ACL_MEMCPY_DEVICE_TO_HOST), ACL_SUCCESS);
  ASSERT_EQ(aclrtMemcpy(b.data(), 64, h, 64, ACL_MEMCPY_HOST_TO_HOST), ACL_SUCCESS);
  EXPECT_EQ(a, b);
  // ACL_MEMCPY_DEFAULT takes each side's kind from its address.
  std::vector<std::uint8_t> c(64, 0);
  ASSERT_EQ(aclrtMemset(d1, 64, 0x5A, 32), ACL_SUCCESS);
  ASSERT_EQ(aclrtMemcpy(c.data(), 64, d1, 64, ACL_MEMCPY_DEFAULT), ACL_SUCCESS);
  for (int i = 0; i < 64; ++i) ASSERT_EQ(c[i], i < 32 ? 0x5A : a[i]) << i;
  // Asynchronous forms run at once on a live stream.
  aclrtStream s = nullptr;
  ASSERT_EQ(aclrtCreateStream(&s), ACL_SUCCESS);
  ASSERT_EQ(aclrtMemsetAsync(h, 64, 0x107, 64, s), ACL_SUCCESS);  // the low byte
  ASSERT_EQ(aclrtMemcpyAsync(d2, 64, h, 16, ACL_MEMCPY_HOST_TO_DEVICE, s), ACL_SUCCESS);
  ASSERT_EQ(aclrtSynchronizeStream(s), ACL_SUCCESS);
  ASSERT_EQ(aclrtMemcpyAsync(c.data(), 64, d2, 64, ACL_MEMCPY_DEVICE_TO_HOST, nullptr), ACL_SUCCESS);
  for (int i = 0; i < 64; ++i) ASSERT_EQ(c[i], i < 16 ? 0x07 : a[i]) << i;
  EXPECT_EQ(aclrtMemcpy(d1, 64, a.data(), 0, ACL_MEMCPY_HOST_TO_DEVICE), ACL_SUCCESS);  // nothing to copy
  ASSERT_EQ(aclrtDestroyStream(s), ACL_SUCCESS);
  for (void* d : {d1, d2}) ASSERT_EQ(aclrtFree(d), ACL_SUCCESS);
  ASSERT_EQ(aclrtFreeHost(h), ACL_SUCCESS);
}

TEST_F(Acl, MemcpyRefusalsWriteNothing) {
  std::vector<std::uint8_t> host(128, 7);
  void *d = nullptr, *h = nullptr;
  ASSERT_EQ(aclrtMalloc(&d, 100, ACL_MEM_MALLOC_HUGE_FIRST), ACL_SUCCESS);
  ASSERT_EQ(aclrtMallocHost(&h, 48), ACL_SUCCESS);
  ASSERT_EQ(aclrtMemset(d, 100, 0, 100), ACL_SUCCESS);
  auto* dev = static_cast<std::uint8_t*>(d);
  expect_refused(aclrtMemcpy(d, 16, host.data(), 32, ACL_MEMCPY_HOST_TO_DEVICE), ACL_ERROR_INVALID_PARAM,
                 "aclrtMemcpy: count: expected at most destMax = 16 bytes, given 32");
  expect_refused(aclrtMemcpy(nullptr, 16, host.data(), 16, ACL_MEMCPY_HOST_TO_DEVICE), ACL_ERROR_INVALID_PARAM,
                 "aclrtMemcpy: dst: expected an address, given nullptr");
  expect_refused(aclrtMemcpy(d, 16, nullptr, 16, ACL_MEMCPY_HOST_TO_DEVICE), ACL_ERROR_INVALID_PARAM,
                 "aclrtMemcpy: src: expected an address, given nullptr");
  expect_refused(aclrtMemcpy(d, 16, host.data(), 16, static_cast<aclrtMemcpyKind>(5)), ACL_ERROR_INVALID_PARAM,
                 "aclrtMemcpy: kind: expected ACL_MEMCPY_HOST_TO_HOST, _HOST_TO_DEVICE, _DEVICE_TO_HOST, "
                 "_DEVICE_TO_DEVICE or _DEFAULT, given 5");
  // Each side must be the memory its kind says.
  expect_refused(aclrtMemcpy(host.data(), 128, d, 16, ACL_MEMCPY_HOST_TO_DEVICE), ACL_ERROR_INVALID_PARAM,
                 "aclrtMemcpy: dst: expected device memory (ACL_MEMCPY_HOST_TO_DEVICE), given host memory " +
                     hex(host.data()));
  expect_refused(aclrtMemcpy(d, 100, d, 16, ACL_MEMCPY_HOST_TO_DEVICE), ACL_ERROR_INVALID_PARAM,
                 "aclrtMemcpy: src: expected host memory (ACL_MEMCPY_HOST_TO_DEVICE), given device memory from "
                 "aclrtMalloc or GmAlloc");
  // And hold count: 64 bytes into a 100-byte block leaves 36.
  expect_refused(aclrtMemcpy(dev + 64, 40, host.data(), 40, ACL_MEMCPY_HOST_TO_DEVICE), ACL_ERROR_INVALID_PARAM,
                 "aclrtMemcpy: dst: expected 40 bytes of device memory, given an address 64 bytes into a block of "
                 "100 bytes (36 left)");
  expect_refused(aclrtMemcpy(host.data(), 128, d, 101, ACL_MEMCPY_DEVICE_TO_HOST), ACL_ERROR_INVALID_PARAM,
                 "aclrtMemcpy: src: expected 101 bytes of device memory, given an address 0 bytes into a block of "
                 "100 bytes (100 left)");
  expect_refused(aclrtMemcpy(h, 64, d, 64, ACL_MEMCPY_DEVICE_TO_HOST), ACL_ERROR_INVALID_PARAM,
                 "aclrtMemcpy: dst: expected 64 bytes of aclrtMallocHost memory, given an address 0 bytes into a "
                 "block of 48 bytes (48 left)");
  for (int i = 0; i < 100; ++i) ASSERT_EQ(dev[i], 0) << "device memory written at " << i;
  for (std::uint8_t v : host) ASSERT_EQ(v, 7) << "host memory written";

  // Device memory needs a context in the calling thread; host copies do not.
  std::vector<std::uint8_t> other(16, 1);
  ASSERT_EQ(aclrtResetDevice(0), ACL_SUCCESS);
  expect_refused(aclrtMemcpy(d, 16, host.data(), 16, ACL_MEMCPY_HOST_TO_DEVICE), ACL_ERROR_RT_CONTEXT_NULL,
                 "aclrtMemcpy: no current context in this thread (call aclrtSetDevice or aclrtSetCurrentContext "
                 "first)");
  EXPECT_EQ(aclrtMemcpy(other.data(), 16, host.data(), 16, ACL_MEMCPY_HOST_TO_HOST), ACL_SUCCESS);
  EXPECT_EQ(other[0], 7);
  ASSERT_EQ(aclrtSetDevice(0), ACL_SUCCESS);

  // A dead stream: refused before anything is copied.
  aclrtStream s = nullptr;
  ASSERT_EQ(aclrtCreateStream(&s), ACL_SUCCESS);
  ASSERT_EQ(aclrtDestroyStream(s), ACL_SUCCESS);
  expect_refused(aclrtMemcpyAsync(d, 16, host.data(), 16, ACL_MEMCPY_HOST_TO_DEVICE, s),
                 ACL_ERROR_INVALID_RESOURCE_HANDLE,
                 "aclrtMemcpyAsync: stream: expected a stream from aclrtCreateStream not yet destroyed, or nullptr, "
                 "given " + hex(s));
  expect_refused(aclrtMemsetAsync(d, 16, 1, 16, s), ACL_ERROR_INVALID_RESOURCE_HANDLE,
                 "aclrtMemsetAsync: stream: expected a stream from aclrtCreateStream not yet destroyed, or nullptr, "
                 "given " + hex(s));
  for (int i = 0; i < 100; ++i) ASSERT_EQ(dev[i], 0) << "device memory written at " << i;
  ASSERT_EQ(aclrtFree(d), ACL_SUCCESS);
  ASSERT_EQ(aclrtFreeHost(h), ACL_SUCCESS);
}

TEST_F(Acl, MemsetRefusals) {
  void* d = nullptr;
  ASSERT_EQ(aclrtMalloc(&d, 32, ACL_MEM_MALLOC_HUGE_FIRST), ACL_SUCCESS);
  expect_refused(aclrtMemset(nullptr, 8, 0, 8), ACL_ERROR_INVALID_PARAM,
                 "aclrtMemset: devPtr: expected an address, given nullptr");
  expect_refused(aclrtMemset(d, 16, 0, 32), ACL_ERROR_INVALID_PARAM,
                 "aclrtMemset: count: expected at most maxCount = 16 bytes, given 32");
  expect_refused(aclrtMemset(static_cast<char*>(d) + 8, 64, 0, 32), ACL_ERROR_INVALID_PARAM,
                 "aclrtMemset: devPtr: expected 32 bytes of device memory, given an address 8 bytes into a block of "
                 "32 bytes (24 left)");
  ASSERT_EQ(aclrtFree(d), ACL_SUCCESS);
}

TEST_F(Acl, MessagesAreStackedLatestFirstAndCleared) {
  EXPECT_EQ(aclGetRecentErrMsg(), nullptr);
  EXPECT_EQ(aclrtFree(nullptr), ACL_ERROR_INVALID_PARAM);
  EXPECT_EQ(aclrtGetDevice(nullptr), ACL_ERROR_INVALID_PARAM);
  EXPECT_STREQ(aclGetRecentErrMsg(),
               "aclrtGetDevice: deviceId: expected an address, given nullptr\n"
               "aclrtFree: devPtr: expected an address, given nullptr");
  EXPECT_EQ(aclGetRecentErrMsg(), nullptr);
}

// A host main's calls in the order CANN's samples make them.
TEST_F(Acl, AHostMainsSequence) {
  ASSERT_EQ(aclrtResetDevice(0), ACL_SUCCESS);  // start over as a main does
  ASSERT_EQ(aclFinalize(), ACL_SUCCESS);

  const size_t inputSize = 2 * 32 * 16 * sizeof(float);
  ASSERT_EQ(aclInit(nullptr), ACL_SUCCESS);
  int32_t deviceId = 0;
  ASSERT_EQ(aclrtSetDevice(deviceId), ACL_SUCCESS);
  aclrtStream stream = nullptr;
  ASSERT_EQ(aclrtCreateStream(&stream), ACL_SUCCESS);
  uint8_t *xHost = nullptr, *yHost = nullptr, *xDevice = nullptr;
  ASSERT_EQ(aclrtMallocHost((void**)(&xHost), inputSize), ACL_SUCCESS);  // NOLINT: written as the samples do
  ASSERT_EQ(aclrtMallocHost((void**)(&yHost), inputSize), ACL_SUCCESS);  // NOLINT
  ASSERT_EQ(aclrtMalloc((void**)&xDevice, inputSize, ACL_MEM_MALLOC_HUGE_FIRST), ACL_SUCCESS);  // NOLINT
  for (size_t i = 0; i < inputSize; ++i) xHost[i] = static_cast<uint8_t>(i);
  ASSERT_EQ(aclrtMemcpy(xDevice, inputSize, xHost, inputSize, ACL_MEMCPY_HOST_TO_DEVICE), ACL_SUCCESS);
  ASSERT_EQ(aclrtSynchronizeStream(stream), ACL_SUCCESS);
  ASSERT_EQ(aclrtMemcpy(yHost, inputSize, xDevice, inputSize, ACL_MEMCPY_DEVICE_TO_HOST), ACL_SUCCESS);
  EXPECT_EQ(std::memcmp(xHost, yHost, inputSize), 0);
  ASSERT_EQ(aclrtFree(xDevice), ACL_SUCCESS);
  ASSERT_EQ(aclrtFreeHost(xHost), ACL_SUCCESS);
  ASSERT_EQ(aclrtFreeHost(yHost), ACL_SUCCESS);
  ASSERT_EQ(aclrtDestroyStream(stream), ACL_SUCCESS);
  ASSERT_EQ(aclrtResetDevice(deviceId), ACL_SUCCESS);
  // TearDown's aclFinalize ends it.
}

}  // namespace
