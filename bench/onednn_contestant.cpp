// oneDNN 2.x layer_normalization_backward with float32 scale and shift (the
// configuration its optimised kernels accept), on the shared buffers. oneDNN
// takes the variance; its threads are OpenMP's, set to the bench's count.
#include <omp.h>

#include <dnnl.hpp>
#include <string>
#include <unordered_map>
#include <vector>

#include "bench.hpp"

namespace lngrad_bench {

namespace {

dnnl::memory::data_type to_dnnl(lngrad::Dtype d) {
  switch (d) {
    case lngrad::Dtype::float32: return dnnl::memory::data_type::f32;
    case lngrad::Dtype::bfloat16: return dnnl::memory::data_type::bf16;
    case lngrad::Dtype::float16: return dnnl::memory::data_type::f16;
    case lngrad::Dtype::float64: break;
  }
  return dnnl::memory::data_type::undef;
}

class OneDnn final : public Contestant {
 public:
  OneDnn() : engine_(dnnl::engine::kind::cpu, 0), stream_(engine_) {}

  const char* name() const override { return "oneDNN"; }

  std::string prepare(const Problem& p) override {
    problem_ = &p;
    impl_.clear();
    if (to_dnnl(p.dtype) == dnnl::memory::data_type::undef) return "dtype not benchmarked";
    omp_set_num_threads(p.threads);
    using tag = dnnl::memory::format_tag;
    using dt = dnnl::memory::data_type;
    const dnnl::memory::desc data_md({p.rows, p.h}, to_dnnl(p.dtype), tag::ab);
    const dnnl::memory::desc stat_md({p.rows}, dt::f32, tag::a);
    const dnnl::memory::desc param_md({p.h}, dt::f32, tag::a);
    const auto flags = dnnl::normalization_flags::use_scale | dnnl::normalization_flags::use_shift;
    const auto eps = static_cast<float>(p.epsilon);
    try {
      const dnnl::layer_normalization_forward::primitive_desc hint(
          dnnl::layer_normalization_forward::desc(dnnl::prop_kind::forward_training, data_md, stat_md, eps, flags),
          engine_);
      const dnnl::layer_normalization_backward::primitive_desc pd(
          dnnl::layer_normalization_backward::desc(dnnl::prop_kind::backward, data_md, data_md, stat_md, eps, flags),
          engine_, hint);
      impl_ = pd.impl_info_str();
      primitive_ = dnnl::layer_normalization_backward(pd);
    } catch (const dnnl::error& e) {
      // oneDNN reports an unsupported configuration as "could not create a
      // primitive descriptor": say which dtype on which CPU.
      return unsupported(e);
    }
    pd_gamma_.assign(static_cast<std::size_t>(p.h), 0.0f);
    pd_beta_.assign(static_cast<std::size_t>(p.h), 0.0f);
    auto wrap = [&](const dnnl::memory::desc& md, const void* ptr) {
      return dnnl::memory(md, engine_, const_cast<void*>(ptr));  // oneDNN's handles are non-const; inputs are only read
    };
    args_ = {
        {DNNL_ARG_SRC, wrap(data_md, p.x)},
        {DNNL_ARG_DIFF_DST, wrap(data_md, p.dy)},
        {DNNL_ARG_MEAN, wrap(stat_md, p.mean)},
        {DNNL_ARG_VARIANCE, wrap(stat_md, p.variance)},
        {DNNL_ARG_SCALE, wrap(param_md, p.gamma)},
        {DNNL_ARG_SHIFT, wrap(param_md, p.beta)},
        {DNNL_ARG_DIFF_SRC, wrap(data_md, p.pd_x)},
        {DNNL_ARG_DIFF_SCALE, wrap(param_md, pd_gamma_.data())},
        {DNNL_ARG_DIFF_SHIFT, wrap(param_md, pd_beta_.data())},
    };
    return {};
  }

  void run() override {
    primitive_.execute(stream_, args_);
    stream_.wait();
  }

  std::string detail() const override { return impl_; }

 private:
  std::string unsupported(const dnnl::error& e) const {
    const dnnl_version_t* v = dnnl_version();
    return "oneDNN " + std::to_string(v->major) + "." + std::to_string(v->minor) + " has no " +
           lngrad::dtype_name(problem_->dtype) + " layer normalization backward for this CPU (" + e.what() + ")";
  }

  dnnl::engine engine_;
  dnnl::stream stream_;
  dnnl::layer_normalization_backward primitive_;
  std::unordered_map<int, dnnl::memory> args_;
  std::vector<float> pd_gamma_, pd_beta_;
  std::string impl_;
};

}  // namespace

std::unique_ptr<Contestant> make_onednn() { return std::make_unique<OneDnn>(); }

}  // namespace lngrad_bench
