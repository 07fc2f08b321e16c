// Data movement between global memory and a core's unified buffer, and the
// checks behind it: where each operand lies, its alignment, its extent,
// and DataCopy's whole 32-byte blocks.
#include <cstdio>
#include <cstring>
#include <string>

#include "ascendc/core.hpp"
#include "lngrad/ascendc/kernel_ops.hpp"
#include "lngrad/ascendc/kernel_runtime.hpp"
#include "lngrad/ascendc/launch.hpp"

namespace AscendC::detail {

namespace {

constexpr std::uint64_t kBlock = 32;

std::string address(const void* p) {
  char text[32];
  std::snprintf(text, sizeof text, "%p", p);
  return text;
}

std::string side_name(const Operand& op) { return op.side == Side::local ? "LocalTensor" : "GlobalTensor"; }

std::uint64_t round_up(std::uint64_t n) { return (n + kBlock - 1) / kBlock * kBlock; }

}  // namespace

void check_operand(const char* call, const Operand& op) {
  const std::string who = std::string(op.role) + " " + side_name(op);
  if (op.data == nullptr) {
    kernel_fail(call, who + " has no memory (" +
                          (op.side == Side::local ? "not from a queue or TBuf" : "SetGlobalBuffer was not called") +
                          ")");
  }
  if (op.side == Side::local) {
    if (const Core* c = current()) {
      const auto* p = static_cast<const unsigned char*>(op.data);
      if (p < c->ub || p >= c->ub + c->ub_size) {
        kernel_fail(call, who + " at " + address(op.data) + " is not in this core's unified buffer");
      }
      const auto offset = static_cast<std::uint64_t>(p - c->ub);
      if (offset % kBlock != 0) {
        kernel_fail(call, who + " starts at UB offset " + std::to_string(offset) +
                              ", not on a 32-byte boundary as the device requires");
      }
      if (op.used_bytes > c->ub_size - offset) {
        kernel_fail(call, who + ": " + std::to_string(op.used_bytes) + " bytes from UB offset " +
                              std::to_string(offset) + " run past the " + std::to_string(c->ub_size) +
                              "-byte unified buffer");
      }
    }
  }
  if (op.used_bytes > op.tensor_bytes) {
    kernel_fail(call, who + ": the call touches " + std::to_string(op.used_bytes) + " bytes, the tensor holds " +
                          std::to_string(op.tensor_bytes) + " (" + std::to_string(op.used_bytes - op.tensor_bytes) +
                          " bytes past its end)");
  }
}

void check_copy_length(const char* call, std::uint64_t count, std::uint32_t elem) {
  const std::uint64_t bytes = count * elem;
  if (bytes % kBlock != 0) {
    kernel_fail(call, "count " + std::to_string(count) + " x " + std::to_string(elem) + " bytes = " +
                          std::to_string(bytes) + " bytes is not a multiple of 32; the device silently rounds it "
                          "down and copies " + std::to_string(bytes / kBlock * kBlock) +
                          " bytes (DataCopyPad copies unaligned lengths)");
  }
}

std::uint64_t strided_span(std::uint64_t blocks, std::uint64_t block_bytes, std::uint64_t gap_bytes) {
  return blocks == 0 ? 0 : blocks * block_bytes + (blocks - 1) * gap_bytes;
}

void copy_contiguous(const char* call, const Operand& dst, const Operand& src, std::uint64_t count,
                     std::uint32_t elem) {
  check_copy_length(call, count, elem);
  check_operand(call, src);
  check_operand(call, dst);
  std::memmove(const_cast<void*>(dst.data), src.data, count * elem);
}

void copy_blocks(const char* call, const Operand& dst, const Operand& src, std::uint64_t blocks,
                 std::uint64_t block_bytes, std::uint64_t src_gap, std::uint64_t dst_gap) {
  check_operand(call, src);
  check_operand(call, dst);
  auto* d = static_cast<unsigned char*>(const_cast<void*>(dst.data));
  const auto* s = static_cast<const unsigned char*>(src.data);
  for (std::uint64_t i = 0; i < blocks; ++i) {
    std::memmove(d + i * (block_bytes + dst_gap), s + i * (block_bytes + src_gap), block_bytes);
  }
}

namespace {

void check_pad(const char* call, const PadLayout& p) {
  if (p.block_bytes % p.elem != 0) {
    kernel_fail(call, "blockLen " + std::to_string(p.block_bytes) + " bytes is not a multiple of the " +
                          std::to_string(p.elem) + "-byte element");
  }
  if (p.left_bytes > kBlock || p.right_bytes > kBlock) {
    kernel_fail(call, "leftPadding and rightPadding may cover at most 32 bytes each, given " +
                          std::to_string(p.left_bytes) + " and " + std::to_string(p.right_bytes));
  }
}

}  // namespace

void copy_pad_to_local(const Operand& dst, const Operand& src, const PadLayout& p) {
  const char* call = "DataCopyPad(GM -> UB)";
  check_pad(call, p);
  // Each block lands in UB as [left pad | data | right pad | dummy], rounded
  // up to 32 bytes, then dst_gap blocks of 32 bytes.
  const std::uint64_t ub_block = round_up(p.left_bytes + p.block_bytes + p.right_bytes);
  const std::uint64_t ub_step = ub_block + p.dst_gap * kBlock;
  Operand d = dst, s = src;
  d.used_bytes = p.blocks == 0 ? 0 : (p.blocks - 1) * ub_step + ub_block;
  s.used_bytes = strided_span(p.blocks, p.block_bytes, p.src_gap);
  if (p.blocks == 0 || p.block_bytes == 0) return;  // a no-op on the device
  check_operand(call, s);
  check_operand(call, d);
  auto* out = static_cast<unsigned char*>(const_cast<void*>(d.data));
  const auto* in = static_cast<const unsigned char*>(s.data);
  for (std::uint64_t i = 0; i < p.blocks; ++i) {
    unsigned char* block = out + i * ub_step;
    const unsigned char* from = in + i * (p.block_bytes + p.src_gap);
    std::memmove(block + p.left_bytes, from, p.block_bytes);
    // Padding takes paddingValue with isPad; without it the device leaves
    // whatever the UB held, except that plain rounding repeats the block's
    // first element.
    const bool plain = p.left_bytes == 0 && p.right_bytes == 0;
    const void* fill = p.is_pad ? p.pad_value : (plain ? static_cast<const void*>(from) : nullptr);
    if (fill == nullptr) continue;
    for (std::uint64_t at = 0; at < p.left_bytes; at += p.elem) std::memcpy(block + at, fill, p.elem);
    for (std::uint64_t at = p.left_bytes + p.block_bytes; at + p.elem <= ub_block; at += p.elem) {
      std::memcpy(block + at, fill, p.elem);
    }
  }
}

void copy_pad_to_global(const Operand& dst, const Operand& src, const PadLayout& p) {
  const char* call = "DataCopyPad(UB -> GM)";
  check_pad(call, p);
  // UB blocks start on 32-byte boundaries, src_gap blocks of 32 bytes apart;
  // GM blocks are block_bytes long, dst_gap bytes apart.
  const std::uint64_t ub_step = round_up(p.block_bytes) + p.src_gap * kBlock;
  Operand d = dst, s = src;
  s.used_bytes = p.blocks == 0 ? 0 : (p.blocks - 1) * ub_step + p.block_bytes;
  d.used_bytes = strided_span(p.blocks, p.block_bytes, p.dst_gap);
  if (p.blocks == 0 || p.block_bytes == 0) return;
  check_operand(call, s);
  check_operand(call, d);
  auto* out = static_cast<unsigned char*>(const_cast<void*>(d.data));
  const auto* in = static_cast<const unsigned char*>(s.data);
  for (std::uint64_t i = 0; i < p.blocks; ++i) {
    std::memmove(out + i * (p.block_bytes + p.dst_gap), in + i * ub_step, p.block_bytes);
  }
}

std::uint64_t check_global_buffer(const void* data, std::uint64_t bytes, bool size_given) {
  const char* call = "GlobalTensor::SetGlobalBuffer";
  GmBlock b;
  if (!find_gm_start(data, &b)) {
    kernel_fail(call, "buffer " + address(data) + " is not memory from AscendC::GmAlloc or aclrtMalloc");
  }
  const auto offset = static_cast<std::uint64_t>(static_cast<const unsigned char*>(data) - b.begin);
  const std::uint64_t room = b.size - offset;
  if (size_given && bytes > room) {
    kernel_fail(call, std::to_string(bytes) + " bytes from offset " + std::to_string(offset) + " of GM block #" +
                          std::to_string(b.id) + " (" + std::to_string(b.size) + " bytes) run " +
                          std::to_string(bytes - room) + " bytes past its end");
  }
  return size_given ? bytes : room;
}

void load_tiling(void* dst, std::size_t bytes, const void* gm, const char* call) {
  GmBlock b;
  if (!find_gm_start(gm, &b)) {
    kernel_fail(call, "tiling " + address(gm) + " is not memory from AscendC::GmAlloc or aclrtMalloc");
  }
  const auto offset = static_cast<std::uint64_t>(static_cast<const unsigned char*>(gm) - b.begin);
  if (bytes > b.size - offset) {
    kernel_fail(call, "the tiling struct has " + std::to_string(bytes) + " bytes, GM block #" +
                          std::to_string(b.id) + " holds " + std::to_string(b.size - offset) + " from the tiling");
  }
  if (dst != nullptr) std::memcpy(dst, gm, bytes);
}

// ---- Flags ------------------------------------------------------------------------

namespace {

// HardEvent's enumerators, in order.
std::string event_name(int event) {
  static const char* const names[] = {
      "MTE2_MTE1", "MTE1_MTE2", "MTE1_M",   "M_MTE1",    "MTE2_V",    "V_MTE2",   "MTE3_V",   "V_MTE3",  "M_V",
      "V_M",       "V_V",       "MTE3_MTE1", "MTE1_MTE3", "MTE1_V",    "MTE2_M",   "M_MTE2",   "V_MTE1",  "M_FIX",
      "FIX_M",     "MTE3_MTE2", "MTE2_MTE3", "S_V",       "V_S",       "S_MTE2",   "MTE2_S",   "S_MTE3",  "MTE3_S",
      "MTE2_FIX",  "FIX_MTE2",  "FIX_S",     "M_S",       "FIX_MTE3",  "MTE1_FIX", "FIX_MTE1", "FIX_FIX",
  };
  if (event >= 0 && event < static_cast<int>(sizeof names / sizeof names[0])) return names[event];
  return std::to_string(event);
}

}  // namespace

void set_flag(int event, int id) {
  Core& c = require_core("SetFlag");
  ++c.flags[{event, id}];
}

void wait_flag(int event, int id) {
  Core& c = require_core("WaitFlag");
  auto it = c.flags.find({event, id});
  if (it == c.flags.end() || it->second == 0) {
    kernel_fail("WaitFlag", "HardEvent::" + event_name(event) + " id " + std::to_string(id) +
                                " has no SetFlag before it; the device would wait here forever");
  }
  --it->second;
}

}  // namespace AscendC::detail
