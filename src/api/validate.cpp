#include "api/validate.hpp"

#include <cmath>
#include <sstream>

#include "runtime/thread_pool.hpp"

namespace lngrad::api {

void Checker::fail(const std::string& argument, const std::string& expected, const std::string& given) const {
  throw Error(std::string(function_) + ": " + argument + ": expected " + expected + ", given " + given);
}

std::int64_t Checker::tensor(const char* name, const ConstTensorView& view) const {
  const auto code = static_cast<unsigned>(view.dtype);
  if (code > static_cast<unsigned>(Dtype::bfloat16)) {
    fail(name, "dtype float64, float32, float16 or bfloat16", "Dtype value " + std::to_string(code));
  }
  const Shape& s = view.shape;
  if (s.rank() > kMaxRank || s.rank() < 0) {
    fail(name, "rank at most " + std::to_string(kMaxRank), "rank " + std::to_string(s.rank()));
  }
  if (view.data == nullptr) fail(name, "a non-null data pointer", "null");
  // Overflow-checked products rather than divisions: this runs for every
  // tensor of every call, and small calls are timed in microseconds.
  std::int64_t count = 1;
  std::int64_t bytes = 0;
  for (int i = 0; i < s.rank(); ++i) {
    if (s[i] < 1) fail(name, "a non-empty tensor (every extent >= 1)", "shape " + s.str());
    if (__builtin_mul_overflow(count, s[i], &count)) fail(name, "a byte size that fits in 64 bits", "shape " + s.str());
  }
  if (__builtin_mul_overflow(count, static_cast<std::int64_t>(dtype_size(view.dtype)), &bytes)) {
    fail(name, "a byte size that fits in 64 bits", "shape " + s.str());
  }
  return count;
}

std::string dtype_list(std::initializer_list<Dtype> dtypes) {
  std::string out;
  for (Dtype d : dtypes) {
    if (!out.empty()) out += " or ";
    out += dtype_name(d);
  }
  return out;
}

void Checker::dtype_in(const char* name, Dtype given, std::initializer_list<Dtype> allowed, const char* why) const {
  for (Dtype d : allowed) {
    if (d == given) return;
  }
  fail(name, "dtype " + dtype_list(allowed) + " (" + why + ")", dtype_name(given));
}

void Checker::shape_equals(const char* name, const Shape& given, const Shape& expected, const char* why) const {
  bool same = given.rank() == expected.rank();
  for (int i = 0; same && i < given.rank(); ++i) same = given[i] == expected[i];
  if (!same) fail(name, "shape " + expected.str() + " (" + why + ")", given.str());
}

std::int64_t Checker::threads(int requested) const {
  if (requested < 0) fail("num_threads", ">= 0 (0 = all cores)", std::to_string(requested));
  return requested == 0 ? runtime::available_cores() : requested;
}

double Checker::epsilon(std::optional<double> given, Dtype x_dtype) const {
  const double eps = given ? *given : default_epsilon(x_dtype);
  if (!std::isfinite(eps) || eps < 0) {
    std::ostringstream os;
    os << eps;
    fail("epsilon", "a finite value >= 0", os.str());
  }
  return eps;
}

namespace {
std::uintptr_t address(const void* p) { return reinterpret_cast<std::uintptr_t>(p); }
}  // namespace

void Checker::input(const char* name, const ConstTensorView& view) {
  const std::uintptr_t b = address(view.data);
  inputs_[n_inputs_++] = {name, b, b + static_cast<std::uintptr_t>(numel(view.shape)) * dtype_size(view.dtype),
                          view.dtype};
}

void Checker::output(const char* name, const TensorView& view, std::initializer_list<const char*> in_place_ok,
                     bool written_at_end) {
  const std::uintptr_t b = address(view.data);
  const Region me{name, b, b + static_cast<std::uintptr_t>(numel(view.shape)) * dtype_size(view.dtype), view.dtype};
  for (int i = 0; i < n_outputs_; ++i) {
    const Region& other = outputs_[i];
    if (me.begin < other.end && other.begin < me.end) {
      fail(name, "memory disjoint from the other outputs", "a buffer overlapping " + std::string(other.name));
    }
  }
  for (int i = 0; i < n_inputs_; ++i) {
    const Region& in = inputs_[i];
    if (!(me.begin < in.end && in.begin < me.end)) continue;
    const bool identical = me.begin == in.begin && me.end == in.end && me.dtype == in.dtype;
    bool allowed = identical && written_at_end;
    for (const char* ok : in_place_ok) allowed = allowed || (identical && std::string(ok) == in.name);
    if (!allowed) {
      std::string rule = "memory disjoint from " + std::string(in.name);
      if (in_place_ok.size() > 0) {
        rule += " (in place only exactly over";
        for (const char* ok : in_place_ok) rule += std::string(" ") + ok;
        rule += ")";
      }
      fail(name, rule, "a buffer overlapping " + std::string(in.name));
    }
  }
  outputs_[n_outputs_++] = me;
}

Shape trailing(const Shape& s, int ndim) {
  std::int64_t dims[kMaxRank] = {};
  for (int i = 0; i < ndim; ++i) dims[i] = s[s.rank() - ndim + i];
  return Shape(dims, static_cast<std::size_t>(ndim));
}

Shape leading(const Shape& s, int ndim) {
  std::int64_t dims[kMaxRank] = {};
  const int n = s.rank() - ndim;
  for (int i = 0; i < n; ++i) dims[i] = s[i];
  return Shape(dims, static_cast<std::size_t>(n));
}

std::int64_t numel(const Shape& s) {
  std::int64_t n = 1;
  for (int i = 0; i < s.rank() && i < kMaxRank; ++i) n *= s[i];
  return n;
}

}  // namespace lngrad::api
