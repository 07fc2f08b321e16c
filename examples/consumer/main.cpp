// LayerNorm forward then backward through the installed lngrad package.
#include <lngrad/lngrad.hpp>

#include <cmath>
#include <cstdio>
#include <vector>

int main() {
  const std::int64_t rows = 2, h = 4;
  std::vector<float> x = {1, 2, 3, 4, -1, 0, 1, 5};
  std::vector<float> dy = {0.1f, -0.2f, 0.3f, 0.4f, 1, 1, 1, 1};
  std::vector<float> gamma = {1, 0.5f, 2, 1}, beta = {0, 0, 0, 0};
  std::vector<float> y(8), mean(2), variance(2), pd_x(8), pd_gamma(4), pd_beta(4);
  using lngrad::Dtype;
  lngrad::layer_norm({x.data(), Dtype::float32, {rows, h}}, lngrad::ConstTensorView{gamma.data(), Dtype::float32, {h}},
                     lngrad::ConstTensorView{beta.data(), Dtype::float32, {h}}, {y.data(), Dtype::float32, {rows, h}},
                     {mean.data(), Dtype::float32, {rows}}, {variance.data(), Dtype::float32, {rows}}, {});
  lngrad::layer_norm_grad({dy.data(), Dtype::float32, {rows, h}}, {x.data(), Dtype::float32, {rows, h}},
                          {variance.data(), Dtype::float32, {rows}}, {mean.data(), Dtype::float32, {rows}},
                          lngrad::ConstTensorView{gamma.data(), Dtype::float32, {h}},
                          {pd_x.data(), Dtype::float32, {rows, h}}, {pd_gamma.data(), Dtype::float32, {h}},
                          {pd_beta.data(), Dtype::float32, {h}});
  // Row 1 has dy constant: with gamma applied, pd_x must still sum to 0 per row.
  double row_sum = 0;
  for (int j = 0; j < h; ++j) row_sum += pd_x[j];
  std::printf("lngrad %s on %s: pd_x row 0 sums to %.2e, pd_beta = [%g %g %g %g]\n", lngrad::version(),
              lngrad::active_target().c_str(), row_sum, pd_beta[0], pd_beta[1], pd_beta[2], pd_beta[3]);
  return std::fabs(row_sum) < 1e-5 && pd_beta[0] == 1.1f ? 0 : 1;
}
