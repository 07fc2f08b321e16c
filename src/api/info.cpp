// Names, sizes, version and target control: the small public helpers.
#include <sstream>
#include <string>

#include "common/aligned.hpp"
#include "kernels/kernels.hpp"
#include "lngrad/lngrad.hpp"
#include "runtime/row_reduce.hpp"
#include "runtime/thread_pool.hpp"

namespace lngrad {

const char* dtype_name(Dtype dtype) {
  switch (dtype) {
    case Dtype::float64: return "float64";
    case Dtype::float32: return "float32";
    case Dtype::float16: return "float16";
    case Dtype::bfloat16: return "bfloat16";
  }
  return "unknown";
}

std::size_t dtype_size(Dtype dtype) {
  switch (dtype) {
    case Dtype::float64: return 8;
    case Dtype::float32: return 4;
    case Dtype::float16:
    case Dtype::bfloat16: return 2;
  }
  return 1;
}

std::vector<std::int64_t> Shape::dims() const {
  const int n = rank_ < kMaxRank ? rank_ : kMaxRank;
  return std::vector<std::int64_t>(dims_, dims_ + n);
}

std::string Shape::str() const {
  std::ostringstream os;
  os << '[';
  for (int i = 0; i < rank_ && i < kMaxRank; ++i) os << (i ? ", " : "") << dims_[i];
  if (rank_ > kMaxRank) os << ", ... (" << rank_ << " axes)";
  os << ']';
  return os.str();
}

std::vector<std::string> available_targets() { return kernels::supported_target_names(); }
std::string active_target() { return kernels::active().target; }
void set_max_target(std::string_view name) { kernels::set_max_target(name); }
int default_num_threads() { return runtime::available_cores(); }

std::int64_t grad_workspace_bytes(std::int64_t rows, std::int64_t h, Dtype x_dtype, int num_threads) {
  if (rows < 1 || h < 1) return 0;
  const int threads = kernels::plan_threads(num_threads > 0 ? num_threads : runtime::available_cores(), rows, h);
  const std::int64_t acc = x_dtype == Dtype::float64 ? 8 : 4;
  const auto line = static_cast<std::int64_t>(kLineBytes);
  // + for bfloat16, gamma in the kernels' pair order (two copies per thread,
  // the second up to a line late).
  const std::int64_t pair_gamma =
      x_dtype == Dtype::bfloat16 ? std::int64_t{threads} * (2 * line_padded<float>(h) * 4 + line) : 0;
  // + where cached rows start off a line (align_rows), gamma and a block's
  // column sums placed after the rows' head, per thread.
  const std::int64_t head_copies = std::int64_t{threads} * 3 * line_padded(h + line / acc, acc) * acc;
  // + where pd_x rows that are not whole steps apart stream (as they may when
  // asked, or beyond the LLC), one staged group of rows per thread.
  const kernels::GradPlan streamed =
      kernels::plan_grad(kernels::machine_inputs(x_dtype, rows, h, threads, Stores::streaming));
  std::int64_t staging = 0;
  if (streamed.stage_pd_x) {
    staging = std::int64_t{threads} * (streamed.group_rows * h * static_cast<std::int64_t>(dtype_size(x_dtype)) + line);
  }
  // + the final sums and gamma, each on its own lines, where the caller's are
  // not (or not of the accumulator type).
  return runtime::reduce_workspace_bytes(rows, h, threads, acc) + 3 * line_padded(h, acc) * acc + pair_gamma +
         head_copies + staging;
}
std::string describe_plan(Op op, std::int64_t rows, std::int64_t h, Dtype dtype, int num_threads, Stores stores) {
  if (rows < 1 || h < 1) {
    throw Error("describe_plan: rows and h: expected >= 1; given " + std::to_string(rows) + " and " + std::to_string(h));
  }
  if (num_threads < 0) throw Error("describe_plan: num_threads: expected >= 0; given " + std::to_string(num_threads));
  const kernels::PlanInputs in =
      kernels::machine_inputs(dtype, rows, h, num_threads > 0 ? num_threads : runtime::available_cores(), stores);
  switch (op) {
    case Op::layer_norm_grad:
    case Op::layer_norm_grad_x: return kernels::describe(kernels::plan_grad(in));
    case Op::layer_norm_grad_beta: return kernels::describe(kernels::plan_beta(in));
    case Op::layer_norm: return kernels::describe(kernels::plan_forward(in));
  }
  throw Error("describe_plan: op: expected one of lngrad::Op; given " + std::to_string(static_cast<int>(op)));
}

const char* version() { return LNGRAD_VERSION_STRING; }

}  // namespace lngrad
