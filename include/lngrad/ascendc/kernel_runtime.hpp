// What the kernel-side templates (<lngrad/ascendc/kernel.hpp>) call into:
// the running core, unified-buffer bookkeeping and the checks behind every
// data movement. Not an API for kernel code; implemented in src/ascendc.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "lngrad/ascendc/types.hpp"

namespace AscendC::detail {

// ---- The running core --------------------------------------------------------

// Inside a launch: the block this thread runs. Outside: block 0 of 1.
std::uint32_t block_idx();
std::uint32_t block_num();
bool core_is_aic();
std::uint64_t tiling_key();
bool in_kernel();

// ---- Unified buffer ----------------------------------------------------------

// The buffers one TQue, TQueBind or TBuf was given by TPipe::InitBuffer.
struct LocalBuffers {
  enum State : std::uint8_t { kFree, kAllocated, kEnqueued, kDequeued };

  TPosition pos = TPosition::VECCALC;
  bool is_queue = false;
  int depth = 0;
  std::uint32_t id = 0;  // 1, 2, ... in InitBuffer order on its core (0: not initialised)
  unsigned char* base = nullptr;
  std::uint32_t len = 0;  // bytes of one buffer, rounded up to 32
  std::uint32_t num = 0;
  std::vector<State> state;
  std::vector<std::uint32_t> fifo;  // enqueued buffers, oldest first
  std::uint32_t cursor = 0;         // where AllocTensor looks first
  const void* core = nullptr;       // the core that initialised them
};

// A contiguous region and its size in bytes.
struct Region {
  unsigned char* data;
  std::uint64_t bytes;
};

// TPipe's life on the current core (one pipe at a time, as kernels use it).
void pipe_created(const void* pipe);
void pipe_destroyed(const void* pipe);
void pipe_reset(const void* pipe);
void pipe_init(const void* pipe, LocalBuffers& b, TPosition pos, bool is_queue, int depth, std::uint32_t num,
               std::uint32_t len);
const void* current_pipe();

Region queue_alloc(LocalBuffers& b);
void queue_enque(LocalBuffers& b, const void* data);
Region queue_deque(LocalBuffers& b);
void queue_free(LocalBuffers& b, const void* data);
// Records buffers still allocated or enqueued when their queue goes away
// (reported when the kernel returns).
void queue_destroyed(const LocalBuffers& b) noexcept;
std::uint32_t queue_count(const LocalBuffers& b, LocalBuffers::State s);

// Part of a TBuf: bytes from offset, checked against its length.
Region buf_get(const LocalBuffers& b, std::uint64_t offset, std::uint64_t bytes, const char* call);

// The unified buffer after the pipe's buffers (PopStackBuffer).
Region stack_region();

// ---- Checks behind every data movement ---------------------------------------

enum class Side : std::uint8_t { global, local };

// One operand of a call: where it is, how many bytes its tensor holds, and
// how many the call touches.
struct Operand {
  const char* role;  // "src", "dst", "src0", ...
  Side side;
  const void* data;
  std::uint64_t tensor_bytes;
  std::uint64_t used_bytes;
};

// An operand in this core's unified buffer, 32-byte aligned, or a range of
// a GlobalTensor; each touching no more than its tensor holds.
void check_operand(const char* call, const Operand& op);

// DataCopy of `count` elements of `elem` bytes: a multiple of 32 bytes.
void check_copy_length(const char* call, std::uint64_t count, std::uint32_t elem);

// The block-strided DataCopy (DataCopyParams): bytes each side spans.
std::uint64_t strided_span(std::uint64_t blocks, std::uint64_t block_bytes, std::uint64_t gap_bytes);

// GlobalTensor::SetGlobalBuffer: [data, data + bytes) must lie in one block
// of GmAlloc / aclrtMalloc memory; returns the bytes usable from data when
// bytes is unknown (SetGlobalBuffer without a size).
std::uint64_t check_global_buffer(const void* data, std::uint64_t bytes, bool size_given);

// GET_TILING_DATA and friends: copies `bytes` of tiling from GM.
void load_tiling(void* dst, std::size_t bytes, const void* gm, const char* call);

// SetFlag / WaitFlag pairing on the current core.
void set_flag(int event, int id);
void wait_flag(int event, int id);

}  // namespace AscendC::detail
