// The unified buffer of a core: TPipe hands out its bytes to queues and
// TBufs; queues follow the device's buffer state machine. Each refusal
// names the queue by its position and InitBuffer order ("TQue<VECIN> #2").
#include <algorithm>
#include <cstring>
#include <exception>
#include <string>

#include "ascendc/core.hpp"
#include "lngrad/ascendc/kernel_runtime.hpp"

namespace AscendC::detail {

namespace {

constexpr std::uint32_t kBlock = 32;

const char* position_name(TPosition p) {
  switch (p) {
    case TPosition::GM: return "GM";
    case TPosition::A1: return "A1";
    case TPosition::A2: return "A2";
    case TPosition::B1: return "B1";
    case TPosition::B2: return "B2";
    case TPosition::C1: return "C1";
    case TPosition::C2: return "C2";
    case TPosition::CO1: return "CO1";
    case TPosition::CO2: return "CO2";
    case TPosition::VECIN: return "VECIN";
    case TPosition::VECOUT: return "VECOUT";
    case TPosition::VECCALC: return "VECCALC";
    case TPosition::SPM: return "SPM";
    case TPosition::TSCM: return "TSCM";
    case TPosition::C2PIPE2GM: return "C2PIPE2GM";
    case TPosition::C2PIPE2LOCAL: return "C2PIPE2LOCAL";
    case TPosition::MAX: break;
  }
  return "MAX";
}

bool in_unified_buffer(TPosition p) {
  return p == TPosition::VECIN || p == TPosition::VECOUT || p == TPosition::VECCALC;
}

const char* state_name(LocalBuffers::State s) {
  switch (s) {
    case LocalBuffers::kFree: return "free";
    case LocalBuffers::kAllocated: return "allocated";
    case LocalBuffers::kEnqueued: return "enqueued";
    case LocalBuffers::kDequeued: break;
  }
  return "dequeued";
}

std::string name(const LocalBuffers& b) {
  return std::string(b.is_queue ? "TQue<" : "TBuf<") + position_name(b.pos) + "> #" + std::to_string(b.id);
}

std::string offset_of(const Core& c, const void* p) {
  return std::to_string(static_cast<const unsigned char*>(p) - c.ub);
}

// The queue's buffer starting at data, or an error saying what data is.
std::uint32_t buffer_at(const LocalBuffers& b, const void* data, const char* call) {
  const auto* p = static_cast<const unsigned char*>(data);
  if (b.id == 0) kernel_fail(call, "the queue was never given buffers by TPipe::InitBuffer");
  if (p >= b.base && p < b.base + std::uint64_t{b.len} * b.num) {
    const auto offset = static_cast<std::uint64_t>(p - b.base);
    if (offset % b.len == 0) return static_cast<std::uint32_t>(offset / b.len);
    kernel_fail(call, "the tensor starts " + std::to_string(offset % b.len) + " bytes into buffer " +
                          std::to_string(offset / b.len) + " of " + name(b) +
                          "; pass the tensor AllocTensor/DeQue returned, not a view into it");
  }
  kernel_fail(call, "the tensor is not one of the " + std::to_string(b.num) + " buffers of " + name(b));
}

void require_initialised(const LocalBuffers& b, const char* call) {
  if (b.id == 0) kernel_fail(call, "the queue was never given buffers by TPipe::InitBuffer");
}

}  // namespace

// ---- TPipe -----------------------------------------------------------------------

void pipe_created(const void* pipe) {
  Core& c = require_core("TPipe");
  if (c.pipe != nullptr) kernel_fail("TPipe", "a second TPipe while the first is alive; a core has one pipe");
  c.pipe = pipe;
  c.pipe_used = 0;
}

void pipe_destroyed(const void* pipe) {
  Core* c = current();
  if (c != nullptr && c->pipe == pipe) {
    c->pipe = nullptr;
    c->pipe_used = 0;
  }
}

const void* current_pipe() {
  const Core* c = current();
  return c != nullptr ? c->pipe : nullptr;
}

void pipe_reset(const void* pipe) {
  Core& c = require_core("TPipe::Reset");
  if (c.pipe != pipe) kernel_fail("TPipe::Reset", "this pipe is not the core's live TPipe");
  for (LocalBuffers* b : c.buffers) {
    b->id = 0;
    b->state.clear();
    b->fifo.clear();
  }
  c.buffers.clear();
  c.pipe_used = 0;
}

void pipe_init(const void* pipe, LocalBuffers& b, TPosition pos, bool is_queue, int depth, std::uint32_t num,
               std::uint32_t len) {
  const char* call = "TPipe::InitBuffer";
  Core& c = require_core(call);
  if (c.pipe != pipe) kernel_fail(call, "this pipe is not the core's live TPipe");
  if (!in_unified_buffer(pos)) {
    kernel_fail(call, std::string("TPosition::") + position_name(pos) +
                          " is not in the unified buffer; only VECIN, VECOUT and VECCALC (vector kernels) are modelled");
  }
  if (b.id != 0) kernel_fail(call, name(b) + " was already given buffers");
  if (num == 0) kernel_fail(call, "num: expected at least 1 buffer, given 0");
  if (len == 0) kernel_fail(call, "len: expected at least 1 byte, given 0");
  const std::uint64_t rounded = (std::uint64_t{len} + kBlock - 1) / kBlock * kBlock;
  const std::uint64_t total = rounded * num;
  if (c.pipe_used + total > c.ub_size) {
    kernel_fail(call, std::to_string(num) + " x " + std::to_string(len) + " bytes (" + std::to_string(total) +
                          " rounded to 32-byte blocks) at UB offset " + std::to_string(c.pipe_used) + " end at " +
                          std::to_string(c.pipe_used + total) + ", past the " + std::to_string(c.ub_size) +
                          "-byte unified buffer of " + c.soc);
  }
  b.pos = pos;
  b.is_queue = is_queue;
  b.depth = depth;
  b.id = c.next_buffer_id++;
  b.base = c.ub + c.pipe_used;
  b.len = static_cast<std::uint32_t>(rounded);
  b.num = num;
  b.state.assign(num, LocalBuffers::kFree);
  b.fifo.clear();
  b.cursor = 0;
  b.core = &c;
  std::memset(b.base, kUbPoison, total);
  c.pipe_used += static_cast<std::uint32_t>(total);
  c.buffers.push_back(&b);
}

// ---- TQue ------------------------------------------------------------------------

Region queue_alloc(LocalBuffers& b) {
  const char* call = "TQue::AllocTensor";
  require_initialised(b, call);
  for (std::uint32_t k = 0; k < b.num; ++k) {
    const std::uint32_t i = (b.cursor + k) % b.num;
    if (b.state[i] != LocalBuffers::kFree) continue;
    b.state[i] = LocalBuffers::kAllocated;
    b.cursor = (i + 1) % b.num;
    return {b.base + std::uint64_t{i} * b.len, b.len};
  }
  std::string states;
  for (std::uint32_t i = 0; i < b.num; ++i) states += (i ? ", " : "") + std::string(state_name(b.state[i]));
  kernel_fail(call, "all " + std::to_string(b.num) + " buffers of " + name(b) + " are in use (" + states +
                        "); the device would wait here forever for one to be freed");
}

void queue_enque(LocalBuffers& b, const void* data) {
  const char* call = "TQue::EnQue";
  const std::uint32_t i = buffer_at(b, data, call);
  if (b.state[i] != LocalBuffers::kAllocated && b.state[i] != LocalBuffers::kDequeued) {
    kernel_fail(call, "buffer " + std::to_string(i) + " of " + name(b) + " is " + state_name(b.state[i]) +
                          "; only a buffer from AllocTensor or DeQue can be enqueued");
  }
  const std::uint32_t capacity = b.depth > 0 ? static_cast<std::uint32_t>(b.depth) : b.num;
  if (b.fifo.size() >= capacity) {
    kernel_fail(call, name(b) + " already holds " + std::to_string(b.fifo.size()) + " tensors, its depth is " +
                          std::to_string(capacity));
  }
  b.state[i] = LocalBuffers::kEnqueued;
  b.fifo.push_back(i);
}

Region queue_deque(LocalBuffers& b) {
  const char* call = "TQue::DeQue";
  require_initialised(b, call);
  if (b.fifo.empty()) {
    kernel_fail(call, name(b) + " is empty; the device would wait here forever for an EnQue");
  }
  const std::uint32_t i = b.fifo.front();
  b.fifo.erase(b.fifo.begin());
  b.state[i] = LocalBuffers::kDequeued;
  return {b.base + std::uint64_t{i} * b.len, b.len};
}

void queue_free(LocalBuffers& b, const void* data) {
  const char* call = "TQue::FreeTensor";
  const std::uint32_t i = buffer_at(b, data, call);
  if (b.state[i] == LocalBuffers::kFree) {
    kernel_fail(call, "buffer " + std::to_string(i) + " of " + name(b) + " is already free (FreeTensor twice)");
  }
  if (b.state[i] == LocalBuffers::kEnqueued) {
    kernel_fail(call, "buffer " + std::to_string(i) + " of " + name(b) + " is still enqueued; DeQue it first");
  }
  b.state[i] = LocalBuffers::kFree;
}

std::uint32_t queue_count(const LocalBuffers& b, LocalBuffers::State s) {
  return static_cast<std::uint32_t>(std::count(b.state.begin(), b.state.end(), s));
}

void queue_destroyed(const LocalBuffers& b) noexcept {
  auto* c = static_cast<Core*>(const_cast<void*>(b.core));
  if (b.id == 0 || c == nullptr || c != current()) return;
  c->buffers.erase(std::remove(c->buffers.begin(), c->buffers.end(), &b), c->buffers.end());
  // While an error unwinds the kernel, that error is the one to report.
  if (!b.is_queue || std::uncaught_exceptions() > 0) return;
  try {
    for (std::uint32_t i = 0; i < b.num; ++i) {
      if (b.state[i] == LocalBuffers::kFree) continue;
      c->leaks.push_back(name(b) + " buffer " + std::to_string(i) + " (" + state_name(b.state[i]) + ", UB offset " +
                         offset_of(*c, b.base + std::uint64_t{i} * b.len) + ")");
    }
  } catch (...) {  // out of memory while reporting: the leak goes unreported
  }
}

// ---- TBuf and the stack buffer ---------------------------------------------------------

Region buf_get(const LocalBuffers& b, std::uint64_t offset, std::uint64_t bytes, const char* call) {
  if (b.id == 0) kernel_fail(call, "the TBuf was never given a buffer by TPipe::InitBuffer");
  if (offset % kBlock != 0) {
    kernel_fail(call, "bufOffset " + std::to_string(offset) + " bytes is not a multiple of 32");
  }
  if (offset > b.len || bytes > b.len - offset) {
    kernel_fail(call, std::to_string(bytes) + " bytes from offset " + std::to_string(offset) + " run past the " +
                          std::to_string(b.len) + " bytes of " + name(b));
  }
  return {b.base + offset, bytes};
}

Region stack_region() {
  Core& c = require_core("PopStackBuffer");
  std::memset(c.ub + c.pipe_used, kUbPoison, c.ub_size - c.pipe_used);
  return {c.ub + c.pipe_used, c.ub_size - c.pipe_used};
}

}  // namespace AscendC::detail
