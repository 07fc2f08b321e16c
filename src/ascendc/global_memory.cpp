// Global memory: every GmAlloc block is registered, so that kernels can be
// refused an address that is not device memory, or an access past a block.
// As CANN's GmAlloc does, each block ends against an inaccessible guard
// page, so that a raw pointer run past it faults instead of reading or
// writing a neighbour; the fault is then reported with the block it ran
// past (fault_report).
#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <map>
#include <mutex>
#include <new>
#include <shared_mutex>
#include <sstream>

#include "ascendc/core.hpp"
#include "lngrad/ascendc/launch.hpp"
#include "lngrad/lngrad.hpp"

namespace AscendC {

namespace {

constexpr std::size_t kGmAlignment = 32;

struct Mapping {
  void* base;
  std::size_t bytes;
};

struct Registry {
  std::shared_mutex mutex;
  std::map<std::uintptr_t, detail::GmBlock> blocks;  // by start address
  std::map<std::uintptr_t, Mapping> mappings;        // by block start
  unsigned next_id = 1;
};

Registry& registry() {
  static Registry* r = new Registry;  // never destroyed: kernels may free late
  return *r;
}

std::size_t page_bytes() {
  static const std::size_t page = static_cast<std::size_t>(sysconf(_SC_PAGESIZE));
  return page;
}

}  // namespace

void* GmAlloc(std::size_t size) {
  const std::size_t page = page_bytes();
  const std::size_t used = (size + kGmAlignment - 1) / kGmAlignment * kGmAlignment;
  const std::size_t pages = (used + page - 1) / page * page;
  void* base = mmap(nullptr, pages + page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (base == MAP_FAILED) throw std::bad_alloc();
  auto* guard = static_cast<unsigned char*>(base) + pages;
  mprotect(guard, page, PROT_NONE);
  // The block ends within 32 bytes of the guard page.
  unsigned char* p = guard - used;
  Registry& r = registry();
  const std::unique_lock lock(r.mutex);
  const auto key = reinterpret_cast<std::uintptr_t>(p);
  r.blocks[key] = {p, size, r.next_id++};
  r.mappings[key] = {base, pages + page};
  return p;
}

void GmFree(void* ptr) {
  Registry& r = registry();
  Mapping m{};
  {
    const std::unique_lock lock(r.mutex);
    const auto key = reinterpret_cast<std::uintptr_t>(ptr);
    const auto it = r.blocks.find(key);
    if (it == r.blocks.end()) {
      std::ostringstream given;
      given << ptr;
      throw lngrad::Error("AscendC::GmFree: ptr: expected an address GmAlloc returned and not yet freed, given " +
                          given.str());
    }
    m = r.mappings.at(key);
    r.blocks.erase(it);
    r.mappings.erase(key);
  }
  munmap(m.base, m.bytes);
}

namespace detail {

bool find_gm(const void* p, std::size_t bytes, GmBlock* block) {
  Registry& r = registry();
  const std::shared_lock lock(r.mutex);
  const auto at = reinterpret_cast<std::uintptr_t>(p);
  auto it = r.blocks.upper_bound(at);
  if (it == r.blocks.begin()) return false;
  --it;
  const GmBlock& b = it->second;
  const std::uintptr_t begin = it->first;
  if (at - begin > b.size || bytes > b.size - (at - begin)) return false;
  if (block != nullptr) *block = b;
  return true;
}

bool find_gm_start(const void* p, GmBlock* block) { return find_gm(p, 0, block); }

std::size_t describe_gm_fault(const void* address, char* text, std::size_t capacity) {
  Registry& r = registry();
  if (!r.mutex.try_lock_shared()) return 0;  // the faulting thread may hold it
  std::size_t n = 0;
  const auto at = reinterpret_cast<std::uintptr_t>(address);
  auto it = r.blocks.upper_bound(at);
  if (it != r.blocks.begin()) {
    --it;
    const Mapping& m = r.mappings.at(it->first);
    const auto end = reinterpret_cast<std::uintptr_t>(m.base) + m.bytes;
    if (at < end) {
      const int written = std::snprintf(text, capacity, "an access at byte %lu of GM block #%u, which holds %zu",
                                        static_cast<unsigned long>(at - it->first), it->second.id, it->second.size);
      n = written > 0 ? static_cast<std::size_t>(written) : 0;
    }
  }
  r.mutex.unlock_shared();
  return n;
}

}  // namespace detail

}  // namespace AscendC
