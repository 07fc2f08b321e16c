// Global memory: every GmAlloc block is registered, so that kernels can be
// refused an address that is not device memory, or an access past a block.
#include <cstdint>
#include <cstdlib>
#include <map>
#include <mutex>
#include <new>
#include <shared_mutex>
#include <sstream>

#include "lngrad/ascendc/launch.hpp"
#include "lngrad/lngrad.hpp"

namespace AscendC {

namespace {

constexpr std::size_t kGmAlignment = 32;

struct Registry {
  std::shared_mutex mutex;
  std::map<std::uintptr_t, detail::GmBlock> blocks;  // by start address
  unsigned next_id = 1;
};

Registry& registry() {
  static Registry* r = new Registry;  // never destroyed: kernels may free late
  return *r;
}

}  // namespace

void* GmAlloc(std::size_t size) {
  const std::size_t bytes = size == 0 ? kGmAlignment : (size + kGmAlignment - 1) / kGmAlignment * kGmAlignment;
  void* p = std::aligned_alloc(kGmAlignment, bytes);
  if (p == nullptr) throw std::bad_alloc();
  Registry& r = registry();
  const std::unique_lock lock(r.mutex);
  r.blocks[reinterpret_cast<std::uintptr_t>(p)] = {static_cast<const unsigned char*>(p), size, r.next_id++};
  return p;
}

void GmFree(void* ptr) {
  Registry& r = registry();
  {
    const std::unique_lock lock(r.mutex);
    const auto it = r.blocks.find(reinterpret_cast<std::uintptr_t>(ptr));
    if (it == r.blocks.end()) {
      std::ostringstream given;
      given << ptr;
      throw lngrad::Error("AscendC::GmFree: ptr: expected an address GmAlloc returned and not yet freed, given " +
                          given.str());
    }
    r.blocks.erase(it);
  }
  std::free(ptr);
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

}  // namespace detail

}  // namespace AscendC
