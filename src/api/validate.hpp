// Argument checking for the public functions. Each check throws lngrad::Error
// naming the function and the argument, with what was expected and what was
// given; nothing is written before every check has passed.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "lngrad/lngrad.hpp"

namespace lngrad::api {

class Checker {
 public:
  explicit Checker(const char* function) : function_(function) {}

  [[noreturn]] void fail(const std::string& argument, const std::string& expected,
                         const std::string& given) const;

  // A present tensor: non-null data, rank within kMaxRank, every extent >= 1,
  // and a byte size that fits in 64 bits. Returns the element count.
  std::int64_t tensor(const char* name, const ConstTensorView& view) const;

  // `why` is a literal explaining the rule; strings are built only on failure.
  void dtype_in(const char* name, Dtype given, std::initializer_list<Dtype> allowed, const char* why) const;
  void shape_equals(const char* name, const Shape& given, const Shape& expected, const char* why) const;
  std::int64_t threads(int requested) const;  // 0 -> default; negative refused
  double epsilon(std::optional<double> given, Dtype x_dtype) const;

  // Memory-overlap rules. Inputs are registered first, then outputs; an output
  // may coincide exactly with an input it is computed elementwise from (named
  // in `in_place_ok`), or with any input when it is written only at the end.
  void input(const char* name, const ConstTensorView& view);
  void output(const char* name, const TensorView& view, std::initializer_list<const char*> in_place_ok,
              bool written_at_end);

 private:
  struct Region {
    const char* name;
    std::uintptr_t begin, end;
    Dtype dtype;
  };
  const char* function_;
  // At most 5 inputs and 4 outputs per operator: fixed storage, no allocation.
  Region inputs_[8] = {}, outputs_[8] = {};
  int n_inputs_ = 0, n_outputs_ = 0;
};

std::string dtype_list(std::initializer_list<Dtype> dtypes);

// Shape of the trailing `ndim` axes, and of the leading ones.
Shape trailing(const Shape& s, int ndim);
Shape leading(const Shape& s, int ndim);
std::int64_t numel(const Shape& s);

}  // namespace lngrad::api
