// The state of one simulated AI core while it runs a kernel; every kernel
// call made on a thread finds its core through current().
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "lngrad/ascendc/kernel_runtime.hpp"

namespace AscendC::detail {

struct Core {
  const char* kernel = "";
  std::uint32_t index = 0;
  std::uint32_t count = 1;
  bool aic = false;
  unsigned char* ub = nullptr;
  std::uint32_t ub_size = 0;
  const char* soc = "";

  const void* pipe = nullptr;   // the live TPipe
  std::uint32_t pipe_used = 0;  // bytes of UB InitBuffer gave out
  std::uint32_t next_buffer_id = 1;
  std::vector<LocalBuffers*> buffers;                // initialised by the pipe, alive
  std::map<std::pair<int, int>, std::uint32_t> flags;  // (event, id) -> SetFlags not yet waited for
  std::vector<std::string> leaks;                      // buffers in use when their queue went away
};

// What a core's unified buffer holds where the kernel has not written: a
// float NaN, a half NaN, so that a kernel reading what it never wrote sees
// it in its results. Set on the parts InitBuffer and PopStackBuffer hand out.
constexpr unsigned char kUbPoison = 0xFF;

// The core this thread runs, or nullptr outside a launch.
Core* current();

// The core, or an error naming the call that needs one.
Core& require_core(const char* call);

// For a fault at `address` in the guard page after a GM block: a sentence
// naming the block and how far past its end the access was, written to
// text; its length, or 0 for another address.
std::size_t describe_gm_fault(const void* address, char* text, std::size_t capacity);

}  // namespace AscendC::detail
