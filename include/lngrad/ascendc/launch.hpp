// Running AscendC kernels on the host, in CANN's CPU-debug names: global
// memory (AscendC::GmAlloc / GmFree) and the launch of a kernel over
// blockDim cores.
#pragma once

#include <cstddef>

namespace AscendC {

// Global memory for a kernel's GM_ADDR arguments: size bytes, 32-byte
// aligned. Kernels accept only memory from GmAlloc (or aclrtMalloc), as on
// the device. GmFree of anything else throws lngrad::Error.
void* GmAlloc(std::size_t size);
void GmFree(void* ptr);

namespace detail {

// The GmAlloc block holding [p, p + bytes): whether there is one, and its
// start and size.
struct GmBlock {
  const unsigned char* begin = nullptr;
  std::size_t size = 0;
  unsigned id = 0;  // 1, 2, ... in allocation order, for messages
};
bool find_gm(const void* p, std::size_t bytes, GmBlock* block);

}  // namespace detail

}  // namespace AscendC
