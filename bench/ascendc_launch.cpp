// lngrad-ascendc-bench: what running an AscendC kernel on the host costs.
// The LayerNormGrad example kernel (examples/ascendc_kernels) over a float
// problem on blockDim cores, against lngrad's op-level layer_norm_grad_x on
// the same data and threads, and an empty kernel's launch; alternating
// rounds, medians and the range.
//
//   lngrad-ascendc-bench [--threads 2] [--rounds 15] [--block-dim 8] [ROWSxH]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include <lngrad/lngrad.hpp>

#include "layer_norm_grad_host.h"
#include "tikicpulib.h"

extern "C" __global__ __aicore__ void layer_norm_grad_custom(GM_ADDR dy, GM_ADDR x, GM_ADDR variance, GM_ADDR mean,
                                                             GM_ADDR gamma, GM_ADDR pdX, GM_ADDR resForGamma,
                                                             GM_ADDR workspace, GM_ADDR tiling);
extern "C" __global__ __aicore__ void empty_kernel(GM_ADDR) {}

namespace {

double now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

struct Stats {
  double median, low, high;
};

Stats stats(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return {v[v.size() / 2], v.front(), v.back()};
}

[[noreturn]] void usage(const char* why) {
  std::fprintf(stderr, "lngrad-ascendc-bench: %s\nusage: lngrad-ascendc-bench [--threads N] [--rounds N] "
                       "[--block-dim N] [ROWSxH]\n", why);
  std::exit(2);
}

}  // namespace

int main(int argc, char** argv) {
  int threads = 2, rounds = 15;
  uint32_t block_dim = 8, rows = 4096, h = 768;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&]() -> int {
      if (i + 1 >= argc) usage(("missing value after " + a).c_str());
      const int v = std::atoi(argv[++i]);
      if (v < 1) usage((a + " needs a positive number").c_str());
      return v;
    };
    if (a == "--threads") {
      threads = value();
    } else if (a == "--rounds") {
      rounds = value();
    } else if (a == "--block-dim") {
      block_dim = static_cast<uint32_t>(value());
    } else if (std::sscanf(a.c_str(), "%ux%u", &rows, &h) != 2 || rows == 0 || h == 0 || h % 8 != 0) {
      usage(("expected ROWSxH with H a multiple of 8, given " + a).c_str());
    }
  }
  lngrad::ascendc::set_threads(threads);

  const GradProblem p = MakeProblem(rows, h, 1);
  LayerNormGradCustomTiling tiling;
  if (!ComputeTiling(rows, h, h, block_dim, 1e-5f, tiling)) usage("no tile of rows fits the unified buffer");
  uint8_t *dy = GmCopy(p.dy), *x = GmCopy(p.x), *variance = GmCopy(p.variance), *mean = GmCopy(p.mean),
          *gamma = GmCopy(p.gamma);
  const size_t bytes = p.dy.size() * sizeof(float);
  auto* pd_x = static_cast<uint8_t*>(AscendC::GmAlloc(bytes));
  auto* res = static_cast<uint8_t*>(AscendC::GmAlloc(bytes));
  auto* workspace = static_cast<uint8_t*>(AscendC::GmAlloc(32));
  auto* tiling_gm = static_cast<uint8_t*>(AscendC::GmAlloc(sizeof tiling));
  std::memcpy(tiling_gm, &tiling, sizeof tiling);
  AscendC::SetKernelMode(KernelMode::AIV_MODE);

  std::vector<float> op_pd_x(p.dy.size()), op_res(p.dy.size());
  lngrad::GradXOptions options;
  options.epsilon = 1e-5f;
  options.num_threads = threads;
  using lngrad::Dtype;
  const auto r = static_cast<int64_t>(rows), hh = static_cast<int64_t>(h);
  std::vector<double> kernel_s, op_s, empty_s;
  for (int round = 0; round < rounds + 1; ++round) {  // round 0 warms up
    const double t0 = now();
    ICPU_RUN_KF(layer_norm_grad_custom, block_dim, dy, x, variance, mean, gamma, pd_x, res, workspace, tiling_gm);
    const double t1 = now();
    lngrad::layer_norm_grad_x({p.dy.data(), Dtype::float32, {r, hh}}, {p.x.data(), Dtype::float32, {r, hh}},
                              {p.variance.data(), Dtype::float32, {r}}, {p.mean.data(), Dtype::float32, {r}},
                              lngrad::ConstTensorView{p.gamma.data(), Dtype::float32, {hh}},
                              {op_pd_x.data(), Dtype::float32, {r, hh}}, {op_res.data(), Dtype::float32, {r, hh}},
                              options);
    const double t2 = now();
    ICPU_RUN_KF(empty_kernel, 8, workspace);
    const double t3 = now();
    if (round == 0) continue;
    kernel_s.push_back(t1 - t0);
    op_s.push_back(t2 - t1);
    empty_s.push_back(t3 - t2);
  }
  const bool same = std::memcmp(pd_x, op_pd_x.data(), bytes) == 0 && std::memcmp(res, op_res.data(), bytes) == 0;

  const Stats k = stats(kernel_s), o = stats(op_s), e = stats(empty_s);
  const double moved = 3.0 * static_cast<double>(bytes);  // dy and x read, pd_x written
  std::printf("lngrad-ascendc-bench: %ux%u float, %d threads, %d rounds, medians (min - max)\n", rows, h, threads,
              rounds);
  std::printf("  LayerNormGrad example kernel, blockDim %u, tiles of %u rows: %8.3f ms (%.3f - %.3f)  %6.1f GB/s\n",
              block_dim, tiling.tileRows, k.median * 1e3, k.low * 1e3, k.high * 1e3, moved / k.median / 1e9);
  std::printf("  layer_norm_grad_x on the same data:                      %8.3f ms (%.3f - %.3f)  %6.1f GB/s\n",
              o.median * 1e3, o.low * 1e3, o.high * 1e3, moved / o.median / 1e9);
  std::printf("  kernel / op-level: %.2fx (target: at most 3x); results %s\n", k.median / o.median,
              same ? "bit-identical" : "DIFFER");
  std::printf("  empty kernel on 8 cores: %.3f ms (%.3f - %.3f) (target: under 1 ms)\n", e.median * 1e3,
              e.low * 1e3, e.high * 1e3);
  for (uint8_t* q : {dy, x, variance, mean, gamma, pd_x, res, workspace, tiling_gm}) AscendC::GmFree(q);
  return same ? 0 : 1;
}
