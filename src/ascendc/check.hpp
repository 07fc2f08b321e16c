// Argument checks shared by the AscendC entry points: every refusal is an
// lngrad::Error "<API>: <argument>: expected <...>, given <...>".
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "lngrad/ascendc.hpp"

namespace AscendC::detail {

class Refuser {
 public:
  explicit Refuser(const char* api) : api_(api) {}

  [[noreturn]] void fail(const std::string& argument, const std::string& expected, const std::string& given) const;

  // A 64-bit size that CANN keeps in a uint32_t field.
  std::uint32_t fits_u32(const std::string& what, std::uint64_t value) const;

  // A given tmp space (sharedTmpBuffer or the kernel core's stack) of at
  // least `bytes`; `expected` says how much and why.
  void scratch_at_least(const Scratch& s, std::uint64_t bytes, const std::string& expected) const;

  // data non-null and at least `expected` elements: a kernel passes its
  // whole queue buffer for a tail tile of fewer rows, as the device allows.
  void tensor(const char* name, const Buffer& b, std::uint64_t expected, const std::string& why) const;

  const char* api() const { return api_; }

 private:
  const char* api_;
};

// Memory regions of one call and the rules between them.
class Regions {
 public:
  explicit Regions(const Refuser& r) : r_(r) {}
  void input(const char* name, const void* data, std::uint64_t bytes);
  // An output must be disjoint from the other outputs and from every input,
  // except that it may coincide exactly with an input named in `same_ok`.
  void output(const char* name, const void* data, std::uint64_t bytes, const std::vector<const char*>& same_ok);
  // An input the call also writes (isReuseSource): disjoint from the other
  // inputs, except that it may coincide exactly with one named in `same_ok`.
  void written_input(const char* name, const void* data, std::uint64_t bytes, const std::vector<const char*>& same_ok);
  // The scratch must be disjoint from everything.
  void scratch(const char* name, const void* data, std::uint64_t bytes);

 private:
  struct Region {
    const char* name;
    std::uintptr_t begin, end;
  };
  void check_inputs(const Region& me, const std::vector<const char*>& same_ok) const;
  const Refuser& r_;
  std::vector<Region> inputs_, outputs_;
};

// isReuseSource only with a float source; epsilon finite and >= 0.
void check_reuse(const Refuser& r, bool reuse, std::uint32_t type_size);
void check_epsilon(const Refuser& r, float epsilon);

// Element `element` of a buffer of `type_size`-byte elements.
inline std::byte* element_at(const Buffer& b, std::uint32_t type_size, std::uint64_t element) {
  return static_cast<std::byte*>(b.data) + element * type_size;
}

// The tiling's row geometry: every length >= 1, originH <= storageH, and a
// storage row of whole 32-byte blocks.
void check_rows(const Refuser& r, std::uint32_t b, std::uint32_t s, std::uint32_t h, std::uint32_t origin_h,
                std::uint32_t type_size);

// The argument name of a tmp space in messages.
const char* scratch_name(const Scratch& s);

// What every given tmp space must be: at least the host function's minimum
// for the shape (`min_origin` names it) and the tiling's stack (`stack_field`
// names the field), aligned to 4 bytes for its float32 work rows.
void check_scratch(const Refuser& r, const Scratch& s, std::uint64_t min_tmp, const std::string& min_origin,
                   std::uint64_t stack_bytes, const char* stack_field);

std::string shape4(std::uint32_t b, std::uint32_t s, std::uint32_t h, std::uint32_t origin_h);
const char* format_name(DataFormat f);

}  // namespace AscendC::detail

namespace AscendC::detail {

template <typename Tiling>
struct TilingField {
  const char* name;
  std::uint32_t Tiling::*member;
};

// Refuses a tiling that differs from the one the host function computes for
// the same shape, stack size, type and reuse flag (`origin` says which).
template <typename Tiling, std::size_t N>
void require_same_tiling(const Refuser& r, const Tiling& given, const Tiling& expected,
                         const TilingField<Tiling> (&fields)[N], const std::string& origin) {
  for (const auto& f : fields) {
    if (given.*f.member != expected.*f.member) {
      r.fail(std::string("tiling.") + f.name, std::to_string(expected.*f.member) + " (" + origin + ")",
             std::to_string(given.*f.member));
    }
  }
}

}  // namespace AscendC::detail
