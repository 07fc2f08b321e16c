// Launching a kernel: blockDim cores on lngrad's threads, each with its own
// unified buffer (an mmap'ed arena with a guard page after it), then one
// report naming the kernel and the lowest-numbered failing core.
#include "ascendc/core.hpp"

#include <signal.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <mutex>
#include <new>
#include <string>
#include <vector>

#include "ascendc/acl_stream.hpp"
#include "lngrad/ascendc/launch.hpp"
#include "lngrad/ascendc/types.hpp"
#include "runtime/thread_pool.hpp"

namespace AscendC::detail {

namespace {

thread_local Core* t_core = nullptr;

// ---- Settings ------------------------------------------------------------------

using lngrad::ascendc::OnError;
using lngrad::ascendc::Soc;

// Core counts as the chips' platform descriptions list them (ai_core_cnt /
// vector_core_cnt); UB sizes as CANN documents them.
const std::vector<Soc>& socs() {
  static const std::vector<Soc> table = {
      {"Ascend910B1", 192 * 1024, 24, 48}, {"Ascend910B2", 192 * 1024, 24, 48}, {"Ascend910B3", 192 * 1024, 20, 40},
      {"Ascend910B4", 192 * 1024, 20, 40}, {"Ascend910_93", 192 * 1024, 24, 48}, {"Ascend910A", 256 * 1024, 32, 32},
      {"Ascend310P3", 256 * 1024, 8, 8},
  };
  return table;
}

const Soc* find_soc(const std::string& name) {
  for (const Soc& s : socs()) {
    if (s.name == name) return &s;
  }
  return nullptr;
}

struct Settings {
  std::mutex mutex;
  Soc soc;
  bool serial = false;
  int threads = 0;
  OnError on_error = OnError::exit;
  std::uint64_t tiling_key = 0;
  KernelMode mode = KernelMode::MIX_MODE;

  Settings() : soc(socs().front()) {
    if (const char* v = std::getenv("LNGRAD_ASCENDC_SOC"); v != nullptr && *v != '\0') {
      const Soc* s = find_soc(v);
      if (s == nullptr) {
        std::fprintf(stderr, "lngrad: LNGRAD_ASCENDC_SOC=%s names no chip lngrad knows; using %s\n", v,
                     soc.name.c_str());
      } else {
        soc = *s;
      }
    }
    if (const char* v = std::getenv("LNGRAD_ASCENDC_SERIAL")) serial = std::strcmp(v, "1") == 0;
    if (const char* v = std::getenv("LNGRAD_ASCENDC_THREADS")) threads = std::max(0, std::atoi(v));
    if (const char* v = std::getenv("LNGRAD_ASCENDC_ON_ERROR")) {
      on_error = std::strcmp(v, "throw") == 0 ? OnError::throw_error : OnError::exit;
    }
  }
};

Settings& settings() {
  static Settings s;
  return s;
}

// ---- Unified-buffer arenas, reused across launches ---------------------------------

struct Arena {
  unsigned char* data = nullptr;
  std::size_t bytes = 0;  // usable, before the guard page
};

std::size_t page_bytes() {
  static const std::size_t page = static_cast<std::size_t>(sysconf(_SC_PAGESIZE));
  return page;
}

class ArenaPool {
 public:
  Arena take(std::size_t bytes) {
    {
      const std::lock_guard lock(mutex_);
      for (auto it = free_.begin(); it != free_.end(); ++it) {
        if (it->bytes == bytes) {
          const Arena a = *it;
          free_.erase(it);
          return a;
        }
      }
    }
    const std::size_t page = page_bytes();
    const std::size_t rounded = (bytes + page - 1) / page * page;
    void* p = mmap(nullptr, rounded + page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) throw std::bad_alloc();
    // The guard page right after the UB: a raw pointer run past it faults
    // instead of writing another core's buffer.
    mprotect(static_cast<unsigned char*>(p) + rounded, page, PROT_NONE);
    return {static_cast<unsigned char*>(p) + (rounded - bytes), bytes};
  }
  void give_back(const Arena& a) {
    const std::lock_guard lock(mutex_);
    free_.push_back(a);
  }

 private:
  std::mutex mutex_;
  std::vector<Arena> free_;
};

ArenaPool& arenas() {
  static auto* pool = new ArenaPool;  // never destroyed: launches may run at exit
  return *pool;
}

std::string describe_launch(const KernelCall& call, const Soc& soc) {
  return std::string("kernel ") + call.name + " (blockDim " + std::to_string(call.block_dim) + " on " + soc.name +
         ")";
}

bool report(const KernelCall& call, const Soc& soc, const std::string& what, OnError on_error) {
  const std::string message = describe_launch(call, soc) + ": " + what;
  if (on_error == OnError::throw_error) throw lngrad::ascendc::KernelError(message);
  std::fprintf(stderr, "lngrad: %s\n", message.c_str());
  std::fflush(stderr);
  std::exit(EXIT_FAILURE);
}

std::uint32_t core_limit(const Soc& soc, KernelMode mode) {
  return mode == KernelMode::AIV_MODE ? soc.vector_cores : soc.cube_cores;
}

const char* mode_name(KernelMode mode) {
  switch (mode) {
    case KernelMode::AIV_MODE: return "AIV_MODE (vector cores)";
    case KernelMode::AIC_MODE: return "AIC_MODE (cube cores)";
    case KernelMode::MIX_MODE: break;
  }
  return "MIX_MODE (cube/vector groups)";
}

// Why the launch cannot start, or "".
std::string refuse(const KernelCall& call, const Soc& soc, KernelMode mode) {
  if (t_core != nullptr) {
    return std::string("launched from inside kernel ") + t_core->kernel + " (core " + std::to_string(t_core->index) +
           "): kernels do not launch kernels";
  }
  const std::uint32_t limit = core_limit(soc, mode);
  if (call.block_dim < 1 || call.block_dim > limit) {
    return "blockDim: expected 1 to " + std::to_string(limit) + " (the " + mode_name(mode) + " of " + soc.name +
           "), given " + std::to_string(call.block_dim);
  }
  for (const KernelArgument& a : call.pointers) {
    if (a.pointer == nullptr) continue;
    GmBlock b;
    if (!find_gm_start(a.pointer, &b)) {
      char address[32];
      std::snprintf(address, sizeof address, "%p", a.pointer);
      return "argument " + std::to_string(a.index) + ": expected memory from AscendC::GmAlloc or aclrtMalloc, given " +
             address + " (host memory a kernel cannot reach)";
    }
  }
  return "";
}

// ---- Memory faults inside kernels ----------------------------------------------------
// A raw pointer run past a GM block or a core's UB hits a guard page. While
// a kernel runs, the fault is reported with the kernel, the core and the
// memory it ran past, and the program ends (exit status 1): nothing can
// unwind out of a signal handler. Other faults go to the previous handler.

struct sigaction g_previous_segv;

void on_fault(int sig, siginfo_t* info, void* context) {
  const Core* c = t_core;
  if (c != nullptr) {
    char what[256];
    std::size_t n = describe_gm_fault(info->si_addr, what, sizeof what);
    const auto* at = static_cast<const unsigned char*>(info->si_addr);
    if (n == 0 && at >= c->ub + c->ub_size && at < c->ub + c->ub_size + page_bytes()) {
      n = static_cast<std::size_t>(std::snprintf(what, sizeof what, "an access at byte %lu of its %u-byte unified buffer",
                                                 static_cast<unsigned long>(at - c->ub), c->ub_size));
    }
    if (n == 0) std::snprintf(what, sizeof what, "a memory fault at %p", info->si_addr);
    char text[512];
    const int len = std::snprintf(text, sizeof text,
                                  "lngrad: kernel %s, core %u: %s, through a raw pointer (the device faults or "
                                  "overwrites another buffer there)\n",
                                  c->kernel, c->index, what);
    if (len > 0) static_cast<void>(write(STDERR_FILENO, text, static_cast<std::size_t>(len)));
    _exit(EXIT_FAILURE);
  }
  if (g_previous_segv.sa_flags & SA_SIGINFO) {
    g_previous_segv.sa_sigaction(sig, info, context);
  } else if (g_previous_segv.sa_handler != SIG_IGN && g_previous_segv.sa_handler != SIG_DFL) {
    g_previous_segv.sa_handler(sig);
  } else {
    signal(sig, SIG_DFL);  // returning re-runs the access, which now ends the program as usual
  }
}

void install_fault_report() {
  static std::once_flag once;
  std::call_once(once, [] {
    struct sigaction action {};
    action.sa_sigaction = on_fault;
    action.sa_flags = SA_SIGINFO;
    sigemptyset(&action.sa_mask);
    sigaction(SIGSEGV, &action, &g_previous_segv);
  });
}

std::string leaks_message(const std::vector<std::string>& leaks) {
  std::string m = "buffers still in use when the kernel returned (the device's npuchk reports them): ";
  for (std::size_t i = 0; i < leaks.size(); ++i) m += (i ? "; " : "") + leaks[i];
  return m;
}

}  // namespace

Core* current() { return t_core; }

Core& require_core(const char* call) {
  if (t_core == nullptr) {
    kernel_fail(call, "called outside a kernel; launch the kernel with ICPU_RUN_KF or ACLRT_LAUNCH_KERNEL");
  }
  return *t_core;
}

void kernel_fail(const char* call, const std::string& what) { throw lngrad::Error(std::string(call) + ": " + what); }

void index_fail(const char* call, std::uint64_t index, std::uint64_t size) {
  kernel_fail(call, "index " + std::to_string(index) + " is past the tensor's " + std::to_string(size) + " elements");
}

std::uint32_t block_idx() { return t_core != nullptr ? t_core->index : 0; }
std::uint32_t block_num() { return t_core != nullptr ? t_core->count : 1; }
bool core_is_aic() { return t_core != nullptr && t_core->aic; }
bool in_kernel() { return t_core != nullptr; }

std::uint64_t tiling_key() {
  Settings& s = settings();
  const std::lock_guard lock(s.mutex);
  return s.tiling_key;
}

void set_tiling_key(std::uint64_t key) {
  Settings& s = settings();
  const std::lock_guard lock(s.mutex);
  s.tiling_key = key;
}

Buffer kernel_stack_buffer() {
  if (t_core == nullptr) return {nullptr, 0};
  return {t_core->ub + t_core->pipe_used, t_core->ub_size - t_core->pipe_used};
}

bool launch(const KernelCall& call) {
  Settings& s = settings();
  Soc soc;
  KernelMode mode;
  OnError on_error;
  bool serial;
  int threads;
  {
    const std::lock_guard lock(s.mutex);
    soc = s.soc;
    mode = s.mode;
    on_error = s.on_error;
    serial = s.serial;
    threads = s.threads;
  }
  if (const std::string why = refuse(call, soc, mode); !why.empty()) return report(call, soc, why, on_error);
  install_fault_report();

  const auto cores = static_cast<std::uint32_t>(call.block_dim);
  int workers = serial ? 1 : (threads > 0 ? threads : lngrad::runtime::available_cores());
  workers = std::min<int>(workers, static_cast<int>(cores));
  std::vector<Arena> ub(static_cast<std::size_t>(workers));
  for (Arena& a : ub) a = arenas().take(soc.ub_bytes);

  std::vector<std::string> errors(cores);
  auto run_core = [&](std::int64_t i, int worker) {
    Core core;
    core.kernel = call.name;
    core.index = static_cast<std::uint32_t>(i);
    core.count = cores;
    core.aic = mode == KernelMode::AIC_MODE;
    core.ub = ub[static_cast<std::size_t>(worker)].data;
    core.ub_size = soc.ub_bytes;
    core.soc = soc.name.c_str();
    t_core = &core;
    std::string& error = errors[static_cast<std::size_t>(i)];
    try {
      call.body(call.context);
      if (!core.leaks.empty()) error = leaks_message(core.leaks);
    } catch (const std::exception& e) {
      error = e.what();
    } catch (...) {
      error = "an exception that is not a std::exception";
    }
    t_core = nullptr;
  };
  if (serial) {
    for (std::uint32_t i = 0; i < cores; ++i) run_core(i, 0);
  } else {
    lngrad::runtime::parallel_for(cores, workers, run_core);
  }
  for (const Arena& a : ub) arenas().give_back(a);

  std::uint32_t failed = 0, first = cores;
  for (std::uint32_t i = 0; i < cores; ++i) {
    if (errors[i].empty()) continue;
    ++failed;
    if (first == cores) first = i;
  }
  if (failed == 0) return true;
  std::string what = "core " + std::to_string(first) + ": " + errors[first];
  if (failed > 1) what += " (" + std::to_string(failed - 1) + " more cores failed)";
  return report(call, soc, what, on_error);
}

std::uint32_t acl_launch(const KernelCall& call, void* stream) {
  std::string why;
  const aclError code = check_launch_stream(static_cast<aclrtStream>(stream), &why);
  if (code != ACL_SUCCESS) {
    std::fprintf(stderr, "lngrad: ACLRT_LAUNCH_KERNEL(%s): %s\n", call.name, why.c_str());
    return static_cast<std::uint32_t>(code);
  }
  try {
    launch(call);
  } catch (const lngrad::ascendc::KernelError& e) {  // OnError::throw_error: the stream keeps it too
    record_stream_error(static_cast<aclrtStream>(stream), e.what());
    throw;
  }
  return 0;
}

}  // namespace AscendC::detail

namespace AscendC {

void SetKernelMode(KernelMode mode) {
  detail::Settings& s = detail::settings();
  const std::lock_guard lock(s.mutex);
  s.mode = mode;
}

}  // namespace AscendC

namespace lngrad::ascendc {

std::vector<Soc> known_socs() { return AscendC::detail::socs(); }

Soc current_soc() {
  auto& s = AscendC::detail::settings();
  const std::lock_guard lock(s.mutex);
  return s.soc;
}

void set_soc(const std::string& name) {
  const Soc* soc = AscendC::detail::find_soc(name);
  if (soc == nullptr) {
    std::string names;
    for (const Soc& k : AscendC::detail::socs()) names += (names.empty() ? "" : ", ") + k.name;
    throw lngrad::Error("lngrad::ascendc::set_soc: name: expected one of " + names + ", given \"" + name + "\"");
  }
  auto& s = AscendC::detail::settings();
  const std::lock_guard lock(s.mutex);
  s.soc = *soc;
}

void set_serial(bool serial) {
  auto& s = AscendC::detail::settings();
  const std::lock_guard lock(s.mutex);
  s.serial = serial;
}

void set_threads(int threads) {
  auto& s = AscendC::detail::settings();
  const std::lock_guard lock(s.mutex);
  s.threads = std::max(0, threads);
}

void set_on_error(OnError mode) {
  auto& s = AscendC::detail::settings();
  const std::lock_guard lock(s.mutex);
  s.on_error = mode;
}

}  // namespace lngrad::ascendc
