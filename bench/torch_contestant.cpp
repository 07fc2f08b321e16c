// PyTorch's ATen CPU kernel, at::native_layer_norm_backward, called from C++
// with all three outputs. It takes mean and rstd (as [rows, 1], in x's dtype
// for bfloat16), a weight in x's dtype and a bias tensor (zeros: absent bias
// fails in 1.13); it allocates its outputs on every call, which is part of
// what a caller pays and is timed.
#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <c10/core/InferenceMode.h>
#include <torch/version.h>

#include <sstream>
#include <string>
#include <tuple>

#include "bench.hpp"

namespace lngrad_bench {

namespace {

std::string first_line(const std::string& s) { return s.substr(0, s.find('\n')); }

class Torch final : public Contestant {
 public:
  const char* name() const override { return "torch"; }

  std::string prepare(const Problem& p) override {
    problem_ = &p;
    last_ = {};
    at::set_num_threads(p.threads);
    at::ScalarType type;
    switch (p.dtype) {
      case lngrad::Dtype::float32: type = at::kFloat; break;
      case lngrad::Dtype::bfloat16: type = at::kBFloat16; break;
      case lngrad::Dtype::float16: type = at::kHalf; break;
      default: return "dtype not benchmarked";
    }
    c10::InferenceMode guard;
    const auto opts = at::TensorOptions().dtype(at::kFloat);
    // Inputs wrap the shared buffers; statistics and parameters are converted
    // to the types the kernel reads (a one-time cost outside the timing).
    dy_ = at::from_blob(const_cast<void*>(p.dy), {p.rows, p.h}, at::TensorOptions().dtype(type));
    x_ = at::from_blob(const_cast<void*>(p.x), {p.rows, p.h}, at::TensorOptions().dtype(type));
    const at::ScalarType stat_type = p.dtype == lngrad::Dtype::float32 ? at::kFloat : type;
    mean_ = at::from_blob(const_cast<float*>(p.mean), {p.rows, 1}, opts).to(stat_type).contiguous();
    rstd_ = at::from_blob(const_cast<float*>(p.rstd), {p.rows, 1}, opts).to(stat_type).contiguous();
    gamma_ = at::from_blob(const_cast<float*>(p.gamma), {p.h}, opts).to(type).contiguous();
    beta_ = at::from_blob(const_cast<float*>(p.beta), {p.h}, opts).to(type).contiguous();
    // A dtype the kernel lacks fails on the first call: try one here.
    try {
      run();
    } catch (const c10::Error& e) {
      last_ = {};
      return "PyTorch " TORCH_VERSION " CPU: " + first_line(e.what_without_backtrace());
    }
    return {};
  }

  void run() override {
    c10::InferenceMode guard;
    last_ = at::native_layer_norm_backward(dy_, x_, {problem_->h}, mean_, rstd_, gamma_, beta_, {true, true, true});
  }

  const void* pd_x() const override { return std::get<0>(last_).data_ptr(); }

  std::string detail() const override {
    std::ostringstream os;
    os << at::get_num_threads() << " threads";
    return os.str();
  }

 private:
  at::Tensor dy_, x_, mean_, rstd_, gamma_, beta_;
  std::tuple<at::Tensor, at::Tensor, at::Tensor> last_;
};

}  // namespace

std::unique_ptr<Contestant> make_torch() { return std::make_unique<Torch>(); }

}  // namespace lngrad_bench
