// demo: the seeds' examples through the public API, beside the values the
// seeds list, then one throughput measurement.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include "args.hpp"
#include "commands.hpp"
#include "lngrad/lngrad.hpp"
#include "seed_data.hpp"

namespace lngrad::cli {

namespace {

const char* const kDemoHelp = R"(usage: lngrad demo [--threads N]

Runs the seeds' examples through the library and prints each output beside
the value the seed lists, with the largest difference:
  seed 002 (LayerNormGrad, x and dy [1, 8, 8], eps = 1e-4): pd_x and
    res_for_gamma; pd_gamma and pd_beta from layer_norm_grad on the same
    inputs (the seed lists none: they are shown beside layer_norm_grad_beta
    of the seed's listed res_for_gamma)
  seed 001 (LayerNormGradBeta, [1, 8, 8]): pd_gamma and pd_beta
Then the throughput of layer_norm_grad on float32 [8192, 1024] (median of 7
runs), in GB/s counting dy and x read and pd_x written.
)";

// Prints `got` beside `listed`, 8 per row; returns the largest difference.
double show(const char* title, const std::vector<float>& got, const std::vector<float>& listed, const char* listed_name) {
  std::printf("%s\n", title);
  double max_diff = 0;
  for (std::size_t row = 0; row * 8 < got.size(); ++row) {
    for (auto [name, v] : {std::pair{"lngrad", &got}, std::pair{listed_name, &listed}}) {
      std::printf("  %-8s", name);
      for (std::size_t j = row * 8; j < std::min(got.size(), row * 8 + 8); ++j) std::printf(" %12.8g", (*v)[j]);
      std::printf("\n");
    }
  }
  for (std::size_t i = 0; i < got.size(); ++i) max_diff = std::max(max_diff, std::fabs(double(got[i]) - listed[i]));
  std::printf("  max |lngrad - %s| = %.3g\n\n", listed_name, max_diff);
  return max_diff;
}

void throughput(int threads) {
  const std::int64_t rows = 8192, h = 1024;
  const std::size_t n = static_cast<std::size_t>(rows * h);
  std::vector<float> x(n), dy(n), gamma(h), y(n), mean(rows), var(rows), rstd(rows), pd_x(n), pd_g(h), pd_b(h);
  std::mt19937 rng(2024);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  for (auto* v : {&x, &dy, &gamma}) {
    for (float& f : *v) f = normal(rng);
  }
  ForwardOptions fo;
  fo.num_threads = threads;
  layer_norm({x.data(), Dtype::float32, {rows, h}}, ConstTensorView{gamma.data(), Dtype::float32, {h}}, std::nullopt,
             {y.data(), Dtype::float32, {rows, h}}, {mean.data(), Dtype::float32, {rows}},
             {var.data(), Dtype::float32, {rows}}, {rstd.data(), Dtype::float32, {rows}}, fo);
  GradOptions go;
  go.num_threads = threads;
  std::vector<double> seconds;
  for (int run = 0; run < 8; ++run) {  // run 0 warms up (first touch of pd_x)
    const auto t0 = std::chrono::steady_clock::now();
    layer_norm_grad({dy.data(), Dtype::float32, {rows, h}}, {x.data(), Dtype::float32, {rows, h}},
                    {var.data(), Dtype::float32, {rows}}, {mean.data(), Dtype::float32, {rows}},
                    ConstTensorView{gamma.data(), Dtype::float32, {h}}, {pd_x.data(), Dtype::float32, {rows, h}},
                    {pd_g.data(), Dtype::float32, {h}}, {pd_b.data(), Dtype::float32, {h}}, go);
    const std::chrono::duration<double> dt = std::chrono::steady_clock::now() - t0;
    if (run > 0) seconds.push_back(dt.count());
  }
  std::sort(seconds.begin(), seconds.end());
  const double median = seconds[seconds.size() / 2];
  const double bytes = 3.0 * static_cast<double>(n) * sizeof(float);
  std::printf("throughput: layer_norm_grad float32 [%lld, %lld], %d threads, target %s: median %.3f ms, %.1f GB/s "
              "(dy + x read, pd_x written)\n",
              static_cast<long long>(rows), static_cast<long long>(h), threads ? threads : default_num_threads(),
              active_target().c_str(), median * 1e3, bytes / median / 1e9);
}

}  // namespace

int cmd_demo(const Argv& args) {
  const Args a("demo", args, {{"threads", true}});
  if (a.help()) {
    std::printf("%s\n%s", kDemoHelp, kExitStatusHelp);
    return kExitOk;
  }
  const int threads = a.integer("threads", 0, 1 << 16).value_or(0);
  std::printf("lngrad %s\n\n", version());

  const auto& s = testdata::seed002();
  const Shape bsh{1, 8, 8}, rows{1, 8}, h{8};
  std::vector<float> pd_x(64), res(64), pd_gamma(8), pd_beta(8), beta_gamma(8), beta_beta(8);
  GradXOptions xo;
  xo.epsilon = 1e-4;
  xo.num_threads = threads;
  layer_norm_grad_x({s.dy.data(), Dtype::float32, bsh}, {s.x.data(), Dtype::float32, bsh},
                    {s.variance.data(), Dtype::float32, rows}, {s.mean.data(), Dtype::float32, rows},
                    ConstTensorView{s.gamma.data(), Dtype::float32, h}, {pd_x.data(), Dtype::float32, bsh},
                    {res.data(), Dtype::float32, bsh}, xo);
  GradOptions go;
  go.epsilon = 1e-4;
  go.num_threads = threads;
  go.compute_pd_x = false;
  layer_norm_grad({s.dy.data(), Dtype::float32, bsh}, {s.x.data(), Dtype::float32, bsh},
                  {s.variance.data(), Dtype::float32, rows}, {s.mean.data(), Dtype::float32, rows},
                  ConstTensorView{s.gamma.data(), Dtype::float32, h}, {}, {pd_gamma.data(), Dtype::float32, h},
                  {pd_beta.data(), Dtype::float32, h}, go);
  GradBetaOptions bo;
  bo.num_threads = threads;
  layer_norm_grad_beta({s.res_for_gamma.data(), Dtype::float32, bsh}, {s.dy.data(), Dtype::float32, bsh},
                       {beta_gamma.data(), Dtype::float32, h}, {beta_beta.data(), Dtype::float32, h}, bo);

  std::printf("seed 002: LayerNormGrad, dy = x = 0..63 as [1, 8, 8], mean and variance per row, gamma = 0..7, "
              "eps = 1e-4\n\n");
  show("pd_x (layer_norm_grad_x)", pd_x, s.pd_x, "listed");
  show("res_for_gamma (layer_norm_grad_x)", res, s.res_for_gamma, "listed");
  show("pd_gamma (layer_norm_grad; the seed lists none: beside layer_norm_grad_beta of the listed res_for_gamma)",
       pd_gamma, beta_gamma, "via-beta");
  show("pd_beta (layer_norm_grad; beside layer_norm_grad_beta of the listed inputs)", pd_beta, beta_beta, "via-beta");
  std::printf("The listed pd_x carries the device's float32 rounding: the row sums cancel terms near 400\n"
              "down to about 3, so agreement to a few 1e-5 is all float32 arithmetic allows.\n\n");

  const auto& b = testdata::seed001();
  std::vector<float> g1(8), b1(8);
  layer_norm_grad_beta({b.res_for_gamma.data(), Dtype::float32, bsh}, {b.dy.data(), Dtype::float32, bsh},
                       {g1.data(), Dtype::float32, h}, {b1.data(), Dtype::float32, h}, bo);
  std::printf("seed 001: LayerNormGradBeta, dy = res_for_gamma = 0..63 as [1, 8, 8]\n\n");
  show("pd_gamma (layer_norm_grad_beta)", g1, b.pd_gamma, "listed");
  show("pd_beta (layer_norm_grad_beta)", b1, b.pd_beta, "listed");

  throughput(threads);
  return kExitOk;
}

}  // namespace lngrad::cli
