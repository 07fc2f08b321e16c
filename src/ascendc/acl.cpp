// The ACL runtime calls of host mains, on host memory (see acl/acl.h): one
// device, contexts and streams as handles checked against a registry, device
// memory from GmAlloc, work on streams run at once. Refusals return CANN's
// codes and leave a message for aclGetRecentErrMsg; nothing here throws.
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <memory>
#include <mutex>
#include <new>
#include <sstream>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "ascendc/acl_stream.hpp"
#include "lngrad/ascendc/launch.hpp"
#include "lngrad/lngrad.hpp"

namespace {

constexpr std::int32_t kDeviceCount = 1;

using Pending = std::vector<std::pair<aclError, std::string>>;  // kernel errors not yet reported

struct Context {
  void* handle = nullptr;
  std::int32_t device = 0;
  bool is_default = false;
  Pending default_stream;
};

struct Stream {
  Context* context = nullptr;
  // cppcheck-suppress unusedStructMember ; read through the registry's unique_ptr, which cppcheck does not follow
  Pending pending;
};

struct Runtime {
  std::mutex mutex;
  bool initialized = false;
  bool finalized_once = false;
  int set_count[kDeviceCount] = {};
  Context* default_context[kDeviceCount] = {};
  std::map<const void*, std::unique_ptr<Context>> contexts;
  std::map<const void*, std::unique_ptr<Stream>> streams;
  std::map<const void*, std::size_t> device_blocks;  // aclrtMalloc: start -> size
  std::map<std::uintptr_t, std::size_t> host_blocks;  // aclrtMallocHost: start -> size
  std::uintptr_t last_handle = 0x10000;

  // Context and stream handles are never reused (not addresses that a new
  // object could take), so a stale handle held by some thread stays stale.
  void* new_handle() { return reinterpret_cast<void*>(last_handle += 0x10); }  // NOLINT(performance-no-int-to-ptr)

  Context* add_context(std::int32_t device, bool is_default) {
    auto owned = std::make_unique<Context>();
    owned->handle = new_handle();
    owned->device = device;
    owned->is_default = is_default;
    Context* ctx = owned.get();
    contexts[ctx->handle] = std::move(owned);
    return ctx;
  }
};

Runtime& runtime() {
  static auto* r = new Runtime;  // never destroyed: handles may be used until exit
  return *r;
}

thread_local const void* t_current = nullptr;  // the thread's context handle, validated on use
thread_local std::vector<std::string> t_messages;
thread_local std::string t_recent;

std::string address(const void* p) {
  std::ostringstream os;
  os << p;
  return os.str();
}

const char* kind_name(int kind) {
  switch (kind) {
    case ACL_MEMCPY_HOST_TO_HOST: return "ACL_MEMCPY_HOST_TO_HOST";
    case ACL_MEMCPY_HOST_TO_DEVICE: return "ACL_MEMCPY_HOST_TO_DEVICE";
    case ACL_MEMCPY_DEVICE_TO_HOST: return "ACL_MEMCPY_DEVICE_TO_HOST";
    case ACL_MEMCPY_DEVICE_TO_DEVICE: return "ACL_MEMCPY_DEVICE_TO_DEVICE";
    default: return "ACL_MEMCPY_DEFAULT";
  }
}

// One call: the runtime locked, refusals recorded for aclGetRecentErrMsg.
class Call {
 public:
  Call(const char* api, Runtime& r) : api_(api), r_(r), lock_(r_.mutex) {}

  // "<api>: <argument>: expected <...>, given <...>"
  aclError fail(aclError code, const std::string& argument, const std::string& expected,
                const std::string& given) const {
    return say(code, argument + ": expected " + expected + ", given " + given);
  }
  aclError say(aclError code, const std::string& what) const {
    t_messages.push_back(std::string(api_) + ": " + what);
    return code;
  }

  bool uninitialized(aclError* code) const {
    if (r_.initialized) return false;
    *code = say(ACL_ERROR_UNINITIALIZE, r_.finalized_once ? "called after aclFinalize (aclInit first)"
                                                         : "called before aclInit");
    return true;
  }

  // The calling thread's current context, or nullptr.
  Context* current() const {
    const auto it = r_.contexts.find(t_current);
    return it == r_.contexts.end() ? nullptr : it->second.get();
  }
  bool no_context(aclError* code) const {
    if (current() != nullptr) return false;
    *code = say(ACL_ERROR_RT_CONTEXT_NULL,
                "no current context in this thread (call aclrtSetDevice or aclrtSetCurrentContext first)");
    return true;
  }

  bool bad_device(std::int32_t id, aclError* code) const {
    if (id >= 0 && id < kDeviceCount) return false;
    *code = fail(ACL_ERROR_RT_INVALID_DEVICEID, "deviceId",
                 "a device in [0, " + std::to_string(kDeviceCount) + ")", std::to_string(id));
    return true;
  }

  // The pending errors of `stream`: nullptr is the current context's default
  // stream. Sets *code and returns nullptr when the stream is not usable.
  Pending* stream(aclrtStream stream, bool same_context, aclError* code) const {
    Context* ctx = current();
    if (stream == nullptr) {
      if (no_context(code)) return nullptr;
      return &ctx->default_stream;
    }
    const auto it = r_.streams.find(stream);
    if (it == r_.streams.end()) {
      *code = fail(ACL_ERROR_INVALID_RESOURCE_HANDLE, "stream",
                   "a stream from aclrtCreateStream not yet destroyed, or nullptr", address(stream));
      return nullptr;
    }
    if (same_context && it->second->context != ctx) {
      *code = say(ACL_ERROR_RT_STREAM_CONTEXT,
                  "stream: expected a stream of the thread's current context, given one of another context" +
                      std::string(ctx == nullptr ? " (this thread has none)" : ""));
      return nullptr;
    }
    return &it->second->pending;
  }

  // Reports the first pending error (all messages go to the thread's list).
  aclError report(Pending* pending) const {
    if (pending->empty()) return ACL_SUCCESS;
    const aclError code = pending->front().first;
    for (auto& [c, message] : *pending) t_messages.push_back(std::move(message));
    pending->clear();
    return code;
  }

  void destroy_streams_of(const Context* ctx) const {
    for (auto it = r_.streams.begin(); it != r_.streams.end();) {
      it = it->second->context == ctx ? r_.streams.erase(it) : std::next(it);
    }
  }

  // [p, p + bytes) as the side of a copy or memset: device memory (a GmAlloc
  // block) when `device`, host memory otherwise; inside its block when it
  // lies in one. `role` names the argument, `why` what asked for the side.
  bool bad_side(const void* p, std::size_t bytes, bool device, const char* role, const std::string& why,
                aclError* code) const {
    AscendC::detail::GmBlock block;
    const bool in_device = AscendC::detail::find_gm(p, 1, &block);
    if (device != in_device) {
      *code = fail(ACL_ERROR_INVALID_PARAM, role, std::string(device ? "device memory" : "host memory") + " (" + why + ")",
                   in_device ? "device memory from aclrtMalloc or GmAlloc" : "host memory " + address(p));
      return true;
    }
    std::size_t offset = 0, size = 0;
    if (in_device) {
      offset = static_cast<std::size_t>(static_cast<const unsigned char*>(p) - block.begin);
      size = block.size;
    } else {
      const auto at = reinterpret_cast<std::uintptr_t>(p);
      auto it = r_.host_blocks.upper_bound(at);
      if (it == r_.host_blocks.begin()) return false;  // host memory lngrad does not know: unchecked
      --it;
      if (at - it->first >= it->second) return false;
      offset = at - it->first;
      size = it->second;
    }
    if (bytes > size - offset) {
      *code = fail(ACL_ERROR_INVALID_PARAM, role,
                   std::to_string(bytes) + " bytes of " + (in_device ? "device" : "aclrtMallocHost") + " memory",
                   "an address " + std::to_string(offset) + " bytes into a block of " + std::to_string(size) +
                       " bytes (" + std::to_string(size - offset) + " left)");
      return true;
    }
    return false;
  }

  aclError memcpy_checked(void* dst, std::size_t destMax, const void* src, std::size_t count,
                          aclrtMemcpyKind kind) const {
    if (dst == nullptr) return fail(ACL_ERROR_INVALID_PARAM, "dst", "an address", "nullptr");
    if (src == nullptr) return fail(ACL_ERROR_INVALID_PARAM, "src", "an address", "nullptr");
    if (count > destMax) {
      return fail(ACL_ERROR_INVALID_PARAM, "count", "at most destMax = " + std::to_string(destMax) + " bytes",
                  std::to_string(count));
    }
    if (kind < ACL_MEMCPY_HOST_TO_HOST || kind > ACL_MEMCPY_DEFAULT) {
      return fail(ACL_ERROR_INVALID_PARAM, "kind",
                  "ACL_MEMCPY_HOST_TO_HOST, _HOST_TO_DEVICE, _DEVICE_TO_HOST, _DEVICE_TO_DEVICE or _DEFAULT",
                  std::to_string(static_cast<int>(kind)));
    }
    bool dst_device = kind == ACL_MEMCPY_HOST_TO_DEVICE || kind == ACL_MEMCPY_DEVICE_TO_DEVICE;
    bool src_device = kind == ACL_MEMCPY_DEVICE_TO_HOST || kind == ACL_MEMCPY_DEVICE_TO_DEVICE;
    if (kind == ACL_MEMCPY_DEFAULT) {
      dst_device = AscendC::detail::find_gm(dst, 1, nullptr);
      src_device = AscendC::detail::find_gm(src, 1, nullptr);
    }
    aclError code = ACL_SUCCESS;
    if ((dst_device || src_device) && no_context(&code)) return code;
    if (count == 0) return ACL_SUCCESS;
    const std::string why = kind_name(kind);
    if (bad_side(dst, count, dst_device, "dst", why, &code) || bad_side(src, count, src_device, "src", why, &code)) {
      return code;
    }
    std::memmove(dst, src, count);
    return ACL_SUCCESS;
  }

  aclError memset_checked(void* devPtr, std::size_t maxCount, std::int32_t value, std::size_t count) const {
    if (devPtr == nullptr) return fail(ACL_ERROR_INVALID_PARAM, "devPtr", "an address", "nullptr");
    if (count > maxCount) {
      return fail(ACL_ERROR_INVALID_PARAM, "count", "at most maxCount = " + std::to_string(maxCount) + " bytes",
                  std::to_string(count));
    }
    const bool device = AscendC::detail::find_gm(devPtr, 1, nullptr);
    aclError code = ACL_SUCCESS;
    if (device && no_context(&code)) return code;
    if (bad_side(devPtr, count, device, "devPtr", "by its address", &code)) return code;
    std::memset(devPtr, value & 0xFF, count);
    return ACL_SUCCESS;
  }

 private:
  const char* api_;
  Runtime& r_;
  std::unique_lock<std::mutex> lock_;
};

// Runs one ACL call: the runtime locked, ACL_ERROR_UNINITIALIZE unless
// aclInit has run.
template <typename Body>
aclError run(const char* api, Body body) {
  Runtime& r = runtime();
  const Call c(api, r);
  aclError code = ACL_SUCCESS;
  if (c.uninitialized(&code)) return code;
  if constexpr (std::is_invocable_v<Body, const Call&, Runtime&>) {
    return body(c, r);
  } else {
    return body(c);
  }
}

}  // namespace

extern "C" {

aclError aclInit(const char* configPath) {
  Runtime& r = runtime();
  const Call c("aclInit", r);
  if (r.initialized) return c.say(ACL_ERROR_REPEAT_INITIALIZE, "called again before aclFinalize");
  if (configPath != nullptr && configPath[0] != '\0' && !std::ifstream(configPath).good()) {
    std::string given = "\"";  // built by appends: GCC 12 warns falsely on a + chain here
    given += configPath;
    given += "\" (cannot be opened)";
    return c.fail(ACL_ERROR_INVALID_FILE, "configPath", "nullptr, \"\" or a readable file", given);
  }
  r.initialized = true;
  return ACL_SUCCESS;
}

aclError aclFinalize() {
  Runtime& r = runtime();
  const Call c("aclFinalize", r);
  if (!r.initialized) {
    return r.finalized_once ? c.say(ACL_ERROR_REPEAT_FINALIZE, "called again after aclFinalize")
                            : c.say(ACL_ERROR_UNINITIALIZE, "called before aclInit");
  }
  r.streams.clear();
  r.contexts.clear();
  for (std::int32_t d = 0; d < kDeviceCount; ++d) {
    r.set_count[d] = 0;
    r.default_context[d] = nullptr;
  }
  r.initialized = false;
  r.finalized_once = true;
  return ACL_SUCCESS;
}

const char* aclGetRecentErrMsg() {
  if (t_messages.empty()) return nullptr;
  t_recent.clear();
  for (auto it = t_messages.rbegin(); it != t_messages.rend(); ++it) {
    if (!t_recent.empty()) t_recent += '\n';
    t_recent += *it;
  }
  t_messages.clear();
  return t_recent.c_str();
}

aclError aclrtSetDevice(std::int32_t deviceId) {
  return run("aclrtSetDevice", [&](const Call& c, Runtime& r) {
    aclError code = ACL_SUCCESS;
    if (c.bad_device(deviceId, &code)) return code;
    Context*& ctx = r.default_context[deviceId];
    if (ctx == nullptr) ctx = r.add_context(deviceId, true);
    ++r.set_count[deviceId];
    t_current = ctx->handle;
    return ACL_SUCCESS;
  });
}

aclError aclrtResetDevice(std::int32_t deviceId) {
  return run("aclrtResetDevice", [&](const Call& c, Runtime& r) {
    aclError code = ACL_SUCCESS;
    if (c.bad_device(deviceId, &code)) return code;
    if (r.set_count[deviceId] == 0) {
      return c.fail(ACL_ERROR_INVALID_PARAM, "deviceId", "a device set by aclrtSetDevice and not yet reset",
                    std::to_string(deviceId) + " (not set)");
    }
    if (--r.set_count[deviceId] == 0) {  // releases the default context and its streams
      Context* ctx = r.default_context[deviceId];
      c.destroy_streams_of(ctx);
      r.contexts.erase(ctx->handle);
      r.default_context[deviceId] = nullptr;
    }
    return ACL_SUCCESS;
  });
}

aclError aclrtGetDevice(std::int32_t* deviceId) {
  return run("aclrtGetDevice", [&](const Call& c) {
    aclError code = ACL_SUCCESS;
    if (deviceId == nullptr) return c.fail(ACL_ERROR_INVALID_PARAM, "deviceId", "an address", "nullptr");
    if (c.no_context(&code)) return code;
    *deviceId = c.current()->device;
    return ACL_SUCCESS;
  });
}

aclError aclrtGetDeviceCount(std::uint32_t* count) {
  return run("aclrtGetDeviceCount", [&](const Call& c) {
    if (count == nullptr) return c.fail(ACL_ERROR_INVALID_PARAM, "count", "an address", "nullptr");
    *count = kDeviceCount;
    return ACL_SUCCESS;
  });
}

aclError aclrtSynchronizeDevice() {
  return run("aclrtSynchronizeDevice", [&](const Call& c, Runtime& r) {
    aclError code = ACL_SUCCESS;
    if (c.no_context(&code)) return code;
    const std::int32_t device = c.current()->device;
    Pending all;
    for (auto& [handle, ctx] : r.contexts) {
      if (ctx->device != device) continue;
      for (auto& e : ctx->default_stream) all.push_back(std::move(e));
      ctx->default_stream.clear();
    }
    for (auto& [handle, stream] : r.streams) {
      if (stream->context->device != device) continue;
      for (auto& e : stream->pending) all.push_back(std::move(e));
      stream->pending.clear();
    }
    return c.report(&all);
  });
}

aclError aclrtCreateContext(aclrtContext* context, std::int32_t deviceId) {
  return run("aclrtCreateContext", [&](const Call& c, Runtime& r) {
    aclError code = ACL_SUCCESS;
    if (context == nullptr) return c.fail(ACL_ERROR_INVALID_PARAM, "context", "an address", "nullptr");
    if (c.bad_device(deviceId, &code)) return code;
    const Context* ctx = r.add_context(deviceId, false);
    t_current = ctx->handle;
    *context = ctx->handle;
    return ACL_SUCCESS;
  });
}

aclError aclrtDestroyContext(aclrtContext context) {
  return run("aclrtDestroyContext", [&](const Call& c, Runtime& r) {
    const auto it = r.contexts.find(context);
    if (it == r.contexts.end()) {
      return c.fail(ACL_ERROR_INVALID_RESOURCE_HANDLE, "context",
                    "a context from aclrtCreateContext not yet destroyed", address(context));
    }
    if (it->second->is_default) {
      return c.fail(ACL_ERROR_INVALID_PARAM, "context", "a context from aclrtCreateContext",
                    "the default context of device " + std::to_string(it->second->device) +
                        " (aclrtResetDevice releases it)");
    }
    c.destroy_streams_of(it->second.get());
    r.contexts.erase(it);
    return ACL_SUCCESS;
  });
}

aclError aclrtSetCurrentContext(aclrtContext context) {
  return run("aclrtSetCurrentContext", [&](const Call& c, Runtime& r) {
    if (r.contexts.count(context) == 0) {
      return c.fail(ACL_ERROR_INVALID_RESOURCE_HANDLE, "context", "a live context", address(context));
    }
    t_current = context;
    return ACL_SUCCESS;
  });
}

aclError aclrtGetCurrentContext(aclrtContext* context) {
  return run("aclrtGetCurrentContext", [&](const Call& c) {
    aclError code = ACL_SUCCESS;
    if (context == nullptr) return c.fail(ACL_ERROR_INVALID_PARAM, "context", "an address", "nullptr");
    if (c.no_context(&code)) return code;
    *context = c.current()->handle;
    return ACL_SUCCESS;
  });
}

aclError aclrtCreateStream(aclrtStream* stream) {
  return run("aclrtCreateStream", [&](const Call& c, Runtime& r) {
    aclError code = ACL_SUCCESS;
    if (stream == nullptr) return c.fail(ACL_ERROR_INVALID_PARAM, "stream", "an address", "nullptr");
    if (c.no_context(&code)) return code;
    auto owned = std::make_unique<Stream>();
    owned->context = c.current();
    *stream = r.new_handle();
    r.streams[*stream] = std::move(owned);
    return ACL_SUCCESS;
  });
}

aclError aclrtDestroyStream(aclrtStream stream) {
  return run("aclrtDestroyStream", [&](const Call& c, Runtime& r) {
    aclError code = ACL_SUCCESS;
    if (stream == nullptr) {
      return c.fail(ACL_ERROR_INVALID_PARAM, "stream", "a stream from aclrtCreateStream",
                    "nullptr (the default stream)");
    }
    const auto it = r.streams.find(stream);
    if (it == r.streams.end()) {
      return c.fail(ACL_ERROR_INVALID_RESOURCE_HANDLE, "stream", "a stream from aclrtCreateStream not yet destroyed",
                    address(stream));
    }
    code = c.report(&it->second->pending);  // an unreported kernel error is not lost
    r.streams.erase(it);
    return code;
  });
}

aclError aclrtSynchronizeStream(aclrtStream stream) {
  return run("aclrtSynchronizeStream", [&](const Call& c) {
    aclError code = ACL_SUCCESS;
    Pending* pending = c.stream(stream, false, &code);
    return pending == nullptr ? code : c.report(pending);
  });
}

aclError aclrtMalloc(void** devPtr, std::size_t size, aclrtMemMallocPolicy policy) {
  return run("aclrtMalloc", [&](const Call& c, Runtime& r) {
    aclError code = ACL_SUCCESS;
    if (devPtr == nullptr) return c.fail(ACL_ERROR_INVALID_PARAM, "devPtr", "an address", "nullptr");
    if (size == 0) return c.fail(ACL_ERROR_INVALID_PARAM, "size", "at least 1 byte", "0");
    const auto p = static_cast<unsigned>(policy);
    const unsigned flags = ACL_MEM_TYPE_LOW_BAND_WIDTH | ACL_MEM_TYPE_HIGH_BAND_WIDTH |
                           ACL_MEM_ACCESS_USER_SPACE_READONLY;
    if ((p & ~flags) > ACL_MEM_MALLOC_HUGE1G_ONLY_P2P) {
      return c.fail(ACL_ERROR_INVALID_PARAM, "policy", "an aclrtMemMallocPolicy (ACL_MEM_MALLOC_HUGE_FIRST, ...)",
                    std::to_string(p));
    }
    if (c.no_context(&code)) return code;
    try {
      *devPtr = AscendC::GmAlloc(size);
    } catch (const std::bad_alloc&) {
      return c.fail(ACL_ERROR_BAD_ALLOC, "size", "memory the host can allocate", std::to_string(size) + " bytes");
    }
    r.device_blocks[*devPtr] = size;
    return ACL_SUCCESS;
  });
}

aclError aclrtFree(void* devPtr) {
  return run("aclrtFree", [&](const Call& c, Runtime& r) {
    if (devPtr == nullptr) return c.fail(ACL_ERROR_INVALID_PARAM, "devPtr", "an address", "nullptr");
    const auto it = r.device_blocks.find(devPtr);
    if (it == r.device_blocks.end()) {
      std::string given = address(devPtr);
      AscendC::detail::GmBlock block;
      if (r.host_blocks.count(reinterpret_cast<std::uintptr_t>(devPtr)) != 0) {
        given += " (host memory from aclrtMallocHost: aclrtFreeHost frees it)";
      } else if (AscendC::detail::find_gm(devPtr, 1, &block) && block.begin == devPtr) {
        given += " (memory from AscendC::GmAlloc: GmFree frees it)";
      }
      return c.fail(ACL_ERROR_INVALID_PARAM, "devPtr", "an address aclrtMalloc returned and not yet freed", given);
    }
    r.device_blocks.erase(it);
    AscendC::GmFree(devPtr);  // registered by GmAlloc: cannot throw
    return ACL_SUCCESS;
  });
}

aclError aclrtMallocHost(void** hostPtr, std::size_t size) {
  return run("aclrtMallocHost", [&](const Call& c, Runtime& r) {
    if (hostPtr == nullptr) return c.fail(ACL_ERROR_INVALID_PARAM, "hostPtr", "an address", "nullptr");
    if (size == 0) return c.fail(ACL_ERROR_INVALID_PARAM, "size", "at least 1 byte", "0");
    constexpr std::size_t kAlign = 64;
    void* p = size > SIZE_MAX - kAlign ? nullptr : std::aligned_alloc(kAlign, (size + kAlign - 1) / kAlign * kAlign);
    if (p == nullptr) {
      return c.fail(ACL_ERROR_BAD_ALLOC, "size", "memory the host can allocate", std::to_string(size) + " bytes");
    }
    r.host_blocks[reinterpret_cast<std::uintptr_t>(p)] = size;
    *hostPtr = p;
    return ACL_SUCCESS;
  });
}

aclError aclrtFreeHost(void* hostPtr) {
  return run("aclrtFreeHost", [&](const Call& c, Runtime& r) {
    if (hostPtr == nullptr) return c.fail(ACL_ERROR_INVALID_PARAM, "hostPtr", "an address", "nullptr");
    const auto it = r.host_blocks.find(reinterpret_cast<std::uintptr_t>(hostPtr));
    if (it == r.host_blocks.end()) {
      std::string given = address(hostPtr);
      if (r.device_blocks.count(hostPtr) != 0) given += " (device memory from aclrtMalloc: aclrtFree frees it)";
      return c.fail(ACL_ERROR_INVALID_PARAM, "hostPtr", "an address aclrtMallocHost returned and not yet freed", given);
    }
    r.host_blocks.erase(it);
    std::free(hostPtr);
    return ACL_SUCCESS;
  });
}

aclError aclrtMemcpy(void* dst, std::size_t destMax, const void* src, std::size_t count, aclrtMemcpyKind kind) {
  return run("aclrtMemcpy", [&](const Call& c) {
    return c.memcpy_checked(dst, destMax, src, count, kind);
  });
}

aclError aclrtMemcpyAsync(void* dst, std::size_t destMax, const void* src, std::size_t count, aclrtMemcpyKind kind,
                          aclrtStream stream) {
  return run("aclrtMemcpyAsync", [&](const Call& c) {
    aclError code = ACL_SUCCESS;
    if (c.stream(stream, true, &code) == nullptr) return code;
    return c.memcpy_checked(dst, destMax, src, count, kind);
  });
}

aclError aclrtMemset(void* devPtr, std::size_t maxCount, std::int32_t value, std::size_t count) {
  return run("aclrtMemset", [&](const Call& c) {
    return c.memset_checked(devPtr, maxCount, value, count);
  });
}

aclError aclrtMemsetAsync(void* devPtr, std::size_t maxCount, std::int32_t value, std::size_t count,
                          aclrtStream stream) {
  return run("aclrtMemsetAsync", [&](const Call& c) {
    aclError code = ACL_SUCCESS;
    if (c.stream(stream, true, &code) == nullptr) return code;
    return c.memset_checked(devPtr, maxCount, value, count);
  });
}

}  // extern "C"

namespace AscendC::detail {

aclError check_launch_stream(aclrtStream stream, std::string* why) {
  Runtime& r = runtime();
  const Call c("ACLRT_LAUNCH_KERNEL", r);
  aclError code = ACL_SUCCESS;
  const std::size_t before = t_messages.size();
  if (!c.uninitialized(&code)) c.stream(stream, true, &code);
  if (code != ACL_SUCCESS && why != nullptr) *why = t_messages.back();
  t_messages.resize(before);  // the launcher reports it its own way
  return code;
}

void record_stream_error(aclrtStream stream, const std::string& message, aclError code) {
  Runtime& r = runtime();
  const Call c("record_stream_error", r);
  Pending* pending = nullptr;
  if (stream == nullptr) {
    Context* ctx = c.current();
    if (ctx != nullptr) pending = &ctx->default_stream;
  } else if (const auto it = r.streams.find(stream); it != r.streams.end()) {
    pending = &it->second->pending;
  }
  if (pending != nullptr) pending->emplace_back(code, message);
}

}  // namespace AscendC::detail
