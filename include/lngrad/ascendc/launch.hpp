// Running AscendC kernels on the host, in CANN's CPU-debug names: global
// memory (AscendC::GmAlloc / GmFree), the kernel mode, and the launch of a
// kernel over blockDim cores (ICPU_RUN_KF, ACLRT_LAUNCH_KERNEL).
//
// A launch runs blockDim cores on lngrad's threads, each with a unified
// buffer of the chip's size and its own GetBlockIdx(). When a core raises
// an error (a misuse the device punishes, see <lngrad/ascendc/kernel.hpp>),
// the other cores still run to their end or their own error; then the
// lowest-numbered failing core is reported with the kernel's name, either
// on stderr with exit status 1 (as CANN's CPU mode stops the program) or as
// a thrown lngrad::ascendc::KernelError (set_on_error).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <type_traits>
#include <vector>

#include "lngrad/lngrad.hpp"

// CANN's kernel modes; a main calls AscendC::SetKernelMode(KernelMode::AIV_MODE).
enum class KernelMode { MIX_MODE = 0, AIC_MODE, AIV_MODE };

namespace AscendC {

using ::KernelMode;

// Global memory for a kernel's GM_ADDR arguments: size bytes, 32-byte
// aligned. Kernels accept only memory from GmAlloc (or aclrtMalloc), as on
// the device. GmFree of anything else throws lngrad::Error.
void* GmAlloc(std::size_t size);
void GmFree(void* ptr);

// AIV_MODE (vector cores), AIC_MODE (cube cores) or MIX_MODE (the default,
// as CANN's; its blocks run as vector cores here, and blockDim counts
// cube/vector groups, at most the chip's cube cores).
void SetKernelMode(KernelMode mode);

namespace detail {

// The GmAlloc block holding [p, p + bytes): whether there is one, and its
// start and size.
struct GmBlock {
  const unsigned char* begin = nullptr;
  std::size_t size = 0;
  unsigned id = 0;  // 1, 2, ... in allocation order, for messages
};
bool find_gm(const void* p, std::size_t bytes, GmBlock* block);
// The block p points into (or one past), whatever the length.
bool find_gm_start(const void* p, GmBlock* block);

struct KernelArgument {
  int index;  // 1-based, as written after blockDim
  const void* pointer;
};

struct KernelCall {
  const char* name;
  std::uint64_t block_dim;
  void (*body)(void*);
  void* context;
  std::vector<KernelArgument> pointers;
};

// Runs the cores and reports a failure as the error mode says; returns
// whether every core succeeded.
bool launch(const KernelCall& call);

// An ACLRT_LAUNCH_KERNEL launch: refused with CANN's error code (and a
// message on stderr) when the stream is not live in the calling thread's
// context; otherwise as launch(). Returns 0 on success.
std::uint32_t acl_launch(const KernelCall& call, void* stream);

void set_tiling_key(std::uint64_t key);

// Runs `body` with a KernelCall for kernel(args...) on block_dim cores.
template <typename F, typename Run, typename... Args>
auto with_call(const char* name, F&& kernel, std::uint64_t block_dim, Run&& run, Args... args) {
  KernelCall call{name, block_dim, nullptr, nullptr, {}};
  int index = 0;
  auto note = [&](const auto& a) {
    ++index;
    if constexpr (std::is_pointer_v<std::decay_t<decltype(a)>>) {
      call.pointers.push_back({index, static_cast<const void*>(a)});
    }
  };
  (note(args), ...);
  static_cast<void>(note);
  auto body = [&]() { kernel(args...); };
  call.body = [](void* c) { (*static_cast<decltype(body)*>(c))(); };
  call.context = &body;
  return run(call);
}

template <typename F, typename... Args>
bool run_kernel(const char* name, F&& kernel, std::uint64_t block_dim, Args... args) {
  return with_call(name, kernel, block_dim, [](const KernelCall& c) { return launch(c); }, args...);
}

// What ACLRT_LAUNCH_KERNEL(kernel) returns: a call (blockDim, stream, args).
template <typename F>
struct AclLauncher {
  const char* name;
  F kernel;
  template <typename... Args>
  std::uint32_t operator()(std::uint64_t block_dim, void* stream, Args... args) const {
    return with_call(name, kernel, block_dim, [stream](const KernelCall& c) { return acl_launch(c, stream); },
                     args...);
  }
};
template <typename F>
AclLauncher<F> acl_launcher(const char* name, F kernel) {
  return {name, kernel};
}

}  // namespace detail

}  // namespace AscendC

// ICPU_RUN_KF(kernel, blockDim, args...): runs kernel(args...) on blockDim
// cores. Pointer arguments must come from AscendC::GmAlloc.
#define ICPU_RUN_KF(func, blockdim, ...) \
  static_cast<void>(::AscendC::detail::run_kernel(#func, func, (blockdim), ##__VA_ARGS__))
// The tiling key TILING_KEY_IS(key) compares with in the next launches.
#define ICPU_SET_TILING_KEY(tilingKey) ::AscendC::detail::set_tiling_key(static_cast<std::uint64_t>(tilingKey))
// ACLRT_LAUNCH_KERNEL(kernel)(blockDim, stream, args...): the launch a host
// main makes through the ACL runtime; runs at once, returns 0 on success.
#define ACLRT_LAUNCH_KERNEL(kernel) ::AscendC::detail::acl_launcher(#kernel, kernel)

namespace lngrad::ascendc {

// What a launch raises when set_on_error(OnError::throw_error).
class KernelError : public lngrad::Error {
 public:
  using lngrad::Error::Error;
};

// The chip a launch models: its unified-buffer size and core counts.
struct Soc {
  std::string name;
  std::uint32_t ub_bytes;
  std::uint32_t cube_cores;    // AIC (AI cores on chips without separate vector cores)
  std::uint32_t vector_cores;  // AIV
};
// The chips lngrad knows, and the one launches use: Ascend910B1 unless
// set_soc or the environment variable LNGRAD_ASCENDC_SOC names another.
std::vector<Soc> known_socs();
Soc current_soc();
void set_soc(const std::string& name);  // throws lngrad::Error for an unknown name

// Cores one after another on the calling thread, in block order, for
// debugging (LNGRAD_ASCENDC_SERIAL=1); otherwise on up to `threads` threads
// (0: every core available to the process; LNGRAD_ASCENDC_THREADS).
void set_serial(bool serial);
void set_threads(int threads);

// A failed launch prints its report and exits with status 1, as CANN's CPU
// mode stops the program, or throws KernelError (LNGRAD_ASCENDC_ON_ERROR=
// exit | throw).
enum class OnError { exit, throw_error };
void set_on_error(OnError mode);

}  // namespace lngrad::ascendc
