#include "ascendc/check.hpp"

#include <cmath>
#include <cstring>
#include <sstream>
#include <utility>

namespace AscendC::detail {

void Refuser::fail(const std::string& argument, const std::string& expected, const std::string& given) const {
  throw lngrad::Error(std::string(api_) + ": " + argument + ": expected " + expected + ", given " + given);
}

std::uint32_t Refuser::fits_u32(const std::string& what, std::uint64_t value) const {
  if (value > UINT32_MAX) {
    fail(what, "a value that fits the tiling's 32-bit fields (at most 4294967295)", std::to_string(value));
  }
  return static_cast<std::uint32_t>(value);
}

void Refuser::scratch_at_least(const Scratch& s, std::uint64_t bytes, const std::string& expected) const {
  if (s.buffer.count < bytes) fail(scratch_name(s), expected, std::to_string(s.buffer.count));
}

void Refuser::tensor(const char* name, const Buffer& b, std::uint64_t expected, const std::string& why) const {
  if (b.data == nullptr) fail(name, "a tensor with data", "a null address");
  if (b.count < expected) fail(name, "at least " + std::to_string(expected) + " elements (" + why + ")",
                               std::to_string(b.count));
}

namespace {
bool overlap(std::uintptr_t b0, std::uintptr_t e0, std::uintptr_t b1, std::uintptr_t e1) { return b0 < e1 && b1 < e0; }
std::uintptr_t addr(const void* p) { return reinterpret_cast<std::uintptr_t>(p); }
}  // namespace

void Regions::input(const char* name, const void* data, std::uint64_t bytes) {
  inputs_.push_back({name, addr(data), addr(data) + static_cast<std::uintptr_t>(bytes)});
}

void Regions::check_inputs(const Region& me, const std::vector<const char*>& same_ok) const {
  for (const Region& in : inputs_) {
    if (!overlap(me.begin, me.end, in.begin, in.end)) continue;
    bool ok = false;
    for (const char* n : same_ok) ok = ok || (std::strcmp(n, in.name) == 0 && me.begin == in.begin && me.end == in.end);
    if (!ok) {
      std::string rule = "memory disjoint from " + std::string(in.name);
      if (!same_ok.empty()) {
        rule += " (or exactly the buffer of";
        for (std::size_t i = 0; i < same_ok.size(); ++i) rule += std::string(i ? " or " : " ") + same_ok[i];
        rule += ")";
      }
      r_.fail(me.name, rule, "a buffer overlapping " + std::string(in.name));
    }
  }
}

void Regions::output(const char* name, const void* data, std::uint64_t bytes, const std::vector<const char*>& same_ok) {
  const Region me{name, addr(data), addr(data) + static_cast<std::uintptr_t>(bytes)};
  for (const Region& o : outputs_) {
    if (overlap(me.begin, me.end, o.begin, o.end)) {
      r_.fail(name, "memory disjoint from " + std::string(o.name), "a buffer overlapping it");
    }
  }
  check_inputs(me, same_ok);
  outputs_.push_back(me);
}

void Regions::written_input(const char* name, const void* data, std::uint64_t bytes,
                            const std::vector<const char*>& same_ok) {
  const Region me{name, addr(data), addr(data) + static_cast<std::uintptr_t>(bytes)};
  check_inputs(me, same_ok);
  inputs_.push_back(me);
}

void Regions::scratch(const char* name, const void* data, std::uint64_t bytes) {
  const std::uintptr_t b = addr(data), e = b + static_cast<std::uintptr_t>(bytes);
  for (const auto* list : {&inputs_, &outputs_}) {
    for (const Region& o : *list) {
      if (overlap(b, e, o.begin, o.end)) {
        r_.fail(name, "memory disjoint from every tensor of the call", "a buffer overlapping " + std::string(o.name));
      }
    }
  }
}

void check_reuse(const Refuser& r, bool reuse, std::uint32_t type_size) {
  if (reuse && type_size == 2) r.fail("isReuseSource", "false for half (only a float source can be reused)", "true");
}

void check_epsilon(const Refuser& r, float epsilon) {
  if (!std::isfinite(epsilon) || epsilon < 0) {
    std::ostringstream os;
    os << epsilon;
    r.fail("epsilon", "a finite value >= 0", os.str());
  }
}

void check_rows(const Refuser& r, std::uint32_t b, std::uint32_t s, std::uint32_t h, std::uint32_t origin_h,
                std::uint32_t type_size) {
  const std::pair<const char*, std::uint32_t> lengths[] = {
      {"tiling.bLength", b}, {"tiling.sLength", s}, {"tiling.hLength", h}, {"tiling.originalHLength", origin_h}};
  for (const auto& [name, v] : lengths) {
    if (v == 0) r.fail(name, ">= 1 (a tiling from the host tiling function)", "0");
  }
  if (origin_h > h) {
    r.fail("tiling.originalHLength", "at most tiling.hLength = " + std::to_string(h) + " (the padded row)",
           std::to_string(origin_h));
  }
  const std::uint32_t per_block = 32 / type_size;
  if (h % per_block != 0) {
    r.fail("tiling.hLength", "a row length that is 32-byte aligned (a multiple of " + std::to_string(per_block) +
                                 (type_size == 2 ? " halves" : " floats") + "; pad H with zeros)",
           std::to_string(h) + " (" + std::to_string(std::uint64_t{h} * type_size) + " bytes)");
  }
}

const char* scratch_name(const Scratch& s) {
  return s.kernel_stack ? "the unified buffer left after InitBuffer (the tmp space of a call without sharedTmpBuffer)"
                        : "sharedTmpBuffer";
}

void check_scratch(const Refuser& r, const Scratch& s, std::uint64_t min_tmp, const std::string& min_origin,
                   std::uint64_t stack_bytes, const char* stack_field) {
  r.scratch_at_least(s, min_tmp, "at least " + std::to_string(min_tmp) + " bytes (" + min_origin + ")");
  r.scratch_at_least(s, stack_bytes,
                     "at least " + std::string(stack_field) + " = " + std::to_string(stack_bytes) + " bytes");
  if (reinterpret_cast<std::uintptr_t>(s.buffer.data) % alignof(float) != 0) {
    r.fail(scratch_name(s), "an address aligned to 4 bytes (it holds float32 work rows)", "a misaligned address");
  }
}

std::string shape4(std::uint32_t b, std::uint32_t s, std::uint32_t h, std::uint32_t origin_h) {
  std::ostringstream os;
  os << '{' << b << ", " << s << ", " << h << ", " << origin_h << '}';
  return os.str();
}

const char* format_name(DataFormat f) {
  switch (f) {
    case DataFormat::ND: return "DataFormat::ND";
    case DataFormat::NZ: return "DataFormat::NZ";
    case DataFormat::NCHW: return "DataFormat::NCHW";
    case DataFormat::NC1HWC0: return "DataFormat::NC1HWC0";
    case DataFormat::NHWC: return "DataFormat::NHWC";
  }
  return "an unknown DataFormat";
}

}  // namespace AscendC::detail
