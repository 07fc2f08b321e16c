// lngrad itself: all three outputs, the statistic given as the float32
// variance (the form the Ascend op and oneDNN take; rstd is derived once per
// row, which costs nothing measurable).
#include <vector>

#include "bench.hpp"

namespace lngrad_bench {

namespace {

class Lngrad final : public Contestant {
 public:
  explicit Lngrad(lngrad::Stores stores) : stores_(stores) {}
  const char* name() const override { return "lngrad"; }

  std::string prepare(const Problem& p) override {
    problem_ = &p;
    pd_gamma_.assign(static_cast<std::size_t>(p.h), 0.0f);
    pd_beta_.assign(static_cast<std::size_t>(p.h), 0.0f);
    options_ = {};
    options_.epsilon = p.epsilon;
    options_.statistic = lngrad::Statistic::variance;
    options_.num_threads = p.threads;
    options_.pd_x_stores = stores_;
    return {};
  }

  void run() override {
    const Problem& p = *problem_;
    const lngrad::Shape data{p.rows, p.h}, stat{p.rows}, param{p.h};
    lngrad::layer_norm_grad({p.dy, p.dtype, data}, {p.x, p.dtype, data}, {p.variance, lngrad::Dtype::float32, stat},
                            {p.mean, lngrad::Dtype::float32, stat},
                            lngrad::ConstTensorView{p.gamma, lngrad::Dtype::float32, param}, {p.pd_x, p.dtype, data},
                            {pd_gamma_.data(), lngrad::Dtype::float32, param},
                            {pd_beta_.data(), lngrad::Dtype::float32, param}, options_);
  }

  std::string detail() const override { return lngrad::active_target(); }

 private:
  std::vector<float> pd_gamma_, pd_beta_;
  lngrad::GradOptions options_;
  lngrad::Stores stores_;
};

}  // namespace

std::unique_ptr<Contestant> make_lngrad(lngrad::Stores stores) { return std::make_unique<Lngrad>(stores); }

}  // namespace lngrad_bench
