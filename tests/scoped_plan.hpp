// A plan override for a scope, in LNGRAD_PLAN's syntax.
#pragma once

#include "kernels/plan.hpp"

namespace lngrad::test {

class ScopedPlan {
 public:
  explicit ScopedPlan(const char* spec) { kernels::set_plan_override(spec); }
  ~ScopedPlan() { kernels::set_plan_override(""); }
  ScopedPlan(const ScopedPlan&) = delete;
  ScopedPlan& operator=(const ScopedPlan&) = delete;
};

}  // namespace lngrad::test
