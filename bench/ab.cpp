// lngrad-ab: two builds of lngrad timed against each other in one process.
// Each build's static library is linked into a shared object (bench/ab.sh
// does that) and loaded with dlopen; batches of calls alternate between the
// two on the same buffers, so both see the same memory placement, page state
// and machine load. On the shared VMs lngrad is tuned on, alternating whole
// processes swung 10-40% where this put a build against itself within 1%.
//
//   lngrad-ab [--cold] [--offset BYTES] [--plan-a SPEC] [--plan-b SPEC] A.so B.so ROUNDS ROWSxH:DTYPE:THREADS[:forward]...
//
// prints, per shape, A's and B's median call time and the median of B/A, of
// layer_norm_grad, or with ":forward" of layer_norm.
// --plan-a/--plan-b set one side's plan override (LNGRAD_PLAN's syntax), so
// one build can be timed against itself under two plans: a tuning rule's test.
// --cold evicts the caches before every timed call (by writing a buffer of
// kColdBytes), as lngrad-bench's alternating tail pairs do, instead of
// calling on buffers that partly stay in the last-level cache.
// --offset BYTES starts dy, x and pd_x that many bytes past a 4 KiB page, as
// NumPy's and std::vector's buffers start 16-48 bytes past a line.
#include <dlfcn.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <string>
#include <string_view>
#include <vector>

#include "lngrad/lngrad.hpp"

namespace {

using GradFn = void (*)(lngrad::ConstTensorView, lngrad::ConstTensorView, lngrad::ConstTensorView,
                        lngrad::ConstTensorView, std::optional<lngrad::ConstTensorView>, lngrad::TensorView,
                        lngrad::TensorView, lngrad::TensorView, const lngrad::GradOptions&);

// lngrad::layer_norm_grad's name under the Itanium C++ ABI (GCC and clang).
constexpr const char* kGradSymbol =
    "_ZN6lngrad15layer_norm_gradENS_15ConstTensorViewES0_S0_S0_St8optionalIS0_ENS_10TensorViewES3_S3_RKNS_11GradOptionsE";

using ForwardFn = void (*)(lngrad::ConstTensorView, std::optional<lngrad::ConstTensorView>,
                           std::optional<lngrad::ConstTensorView>, lngrad::TensorView, lngrad::TensorView,
                           lngrad::TensorView, lngrad::TensorView, const lngrad::ForwardOptions&);

// lngrad::layer_norm's name.
constexpr const char* kForwardSymbol =
    "_ZN6lngrad10layer_normENS_15ConstTensorViewESt8optionalIS0_ES2_NS_10TensorViewES3_S3_S3_RKNS_14ForwardOptionsE";

// The library's internal override of the plan (kernels::set_plan_override).
constexpr const char* kPlanSymbol = "_ZN6lngrad7kernels17set_plan_overrideESt17basic_string_viewIcSt11char_traitsIcEE";
using PlanFn = void (*)(std::string_view);

struct Build {
  GradFn grad = nullptr;
  ForwardFn forward = nullptr;
};

void* symbol(void* handle, const char* path, const char* name) {
  void* fn = dlsym(handle, name);
  if (fn == nullptr) {
    std::fprintf(stderr, "lngrad-ab: %s has no %s (the signature changed? update the symbol)\n", path, name);
    std::exit(1);
  }
  return fn;
}

Build load(const char* path, const char* plan) {
  // RTLD_DEEPBIND: each object's calls stay inside it, so the two builds never mix.
  void* handle = dlopen(path, RTLD_NOW | RTLD_LOCAL | RTLD_DEEPBIND);
  if (handle == nullptr) {
    std::fprintf(stderr, "lngrad-ab: %s\n", dlerror());
    std::exit(1);
  }
  if (plan != nullptr) {
    void* set_plan = dlsym(handle, kPlanSymbol);
    if (set_plan == nullptr) {
      std::fprintf(stderr, "lngrad-ab: %s has no plan override (%s)\n", path, kPlanSymbol);
      std::exit(1);
    }
    try {
      reinterpret_cast<PlanFn>(set_plan)(plan);
    } catch (const std::exception& e) {
      std::fprintf(stderr, "lngrad-ab: %s\n", e.what());
      std::exit(1);
    }
  }
  return {reinterpret_cast<GradFn>(symbol(handle, path, kGradSymbol)),
          reinterpret_cast<ForwardFn>(symbol(handle, path, kForwardSymbol))};
}

// Larger than any last-level cache of the machines measured (32 MiB).
constexpr std::size_t kColdBytes = std::size_t{128} << 20;

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

struct Shape {
  std::int64_t rows = 0, h = 0;
  lngrad::Dtype dtype = lngrad::Dtype::float32;
  int threads = 1;
  bool forward = false;
};

bool parse(const char* arg, Shape* s) {
  char dtype[16] = {};
  int used = 0;
  if (std::sscanf(arg, "%ldx%ld:%15[a-z0-9]:%d%n", &s->rows, &s->h, dtype, &s->threads, &used) != 4) return false;
  const std::string_view op = arg + used;
  if (op != "" && op != ":forward") return false;
  s->forward = op == ":forward";
  const std::string d = dtype;
  if (d == "float32") {
    s->dtype = lngrad::Dtype::float32;
  } else if (d == "bfloat16") {
    s->dtype = lngrad::Dtype::bfloat16;
  } else if (d == "float16") {
    s->dtype = lngrad::Dtype::float16;
  } else {
    return false;
  }
  return s->rows > 0 && s->h > 0 && s->threads > 0;
}

// 16-bit words of v: bfloat16 (upper half) or an IEEE half for small |v|.
std::uint16_t half_bits(float v, lngrad::Dtype d) {
  std::uint32_t u = 0;
  std::memcpy(&u, &v, 4);
  if (d == lngrad::Dtype::bfloat16) return static_cast<std::uint16_t>(u >> 16);
  const std::uint32_t sign = (u >> 16) & 0x8000u;
  const int exp = static_cast<int>((u >> 23) & 0xff) - 127 + 15;
  if (exp <= 0) return static_cast<std::uint16_t>(sign);
  return static_cast<std::uint16_t>(sign | (static_cast<std::uint32_t>(exp) << 10) | ((u >> 13) & 0x3ffu));
}

}  // namespace

int main(int argc, char** argv) {
  const char* plan[2] = {nullptr, nullptr};
  int first = 1;
  bool cold = false;
  long offset = 0;
  for (;;) {
    if (first < argc && std::strcmp(argv[first], "--cold") == 0) {
      cold = true;
      first += 1;
    } else if (first + 1 < argc && std::strcmp(argv[first], "--offset") == 0) {
      offset = std::atol(argv[first + 1]);
      if (offset < 0 || offset >= 4096) {
        std::fprintf(stderr, "lngrad-ab: --offset: expected 0 to 4095 bytes, given '%s'\n", argv[first + 1]);
        return 1;
      }
      first += 2;
    } else if (first + 1 < argc &&
               (std::strcmp(argv[first], "--plan-a") == 0 || std::strcmp(argv[first], "--plan-b") == 0)) {
      plan[argv[first][7] == 'a' ? 0 : 1] = argv[first + 1];
      first += 2;
    } else {
      break;
    }
  }
  std::vector<char> evict(cold ? kColdBytes : 0);
  if (argc - first < 4) {
    std::fprintf(stderr,
                 "usage: lngrad-ab [--cold] [--offset BYTES] [--plan-a SPEC] [--plan-b SPEC] A.so B.so ROUNDS ROWSxH:DTYPE:THREADS[:forward]...\n");
    return 1;
  }
  const Build a = load(argv[first], plan[0]), b = load(argv[first + 1], plan[1]);
  const int rounds = std::atoi(argv[first + 2]);
  if (rounds < 1) {
    std::fprintf(stderr, "lngrad-ab: ROUNDS: expected >= 1, given '%s'\n", argv[first + 2]);
    return 1;
  }
  for (int i = first + 3; i < argc; ++i) {
    Shape s;
    if (!parse(argv[i], &s)) {
      std::fprintf(stderr, "lngrad-ab: expected ROWSxH:float32|bfloat16|float16:THREADS[:forward], given '%s'\n",
                   argv[i]);
      return 1;
    }
    const std::size_t n = static_cast<std::size_t>(s.rows * s.h), es = lngrad::dtype_size(s.dtype);
    // 4 KiB-aligned tensors, as large allocations are, or `offset` bytes past.
    const std::size_t bytes = (n * es + static_cast<std::size_t>(offset) + 4095) / 4096 * 4096;
    char* blocks[3] = {static_cast<char*>(std::aligned_alloc(4096, bytes)),
                       static_cast<char*>(std::aligned_alloc(4096, bytes)),
                       static_cast<char*>(std::aligned_alloc(4096, bytes))};
    char *dy = blocks[0] + offset, *x = blocks[1] + offset, *pd_x = blocks[2] + offset;
    for (std::size_t k = 0; k < n; ++k) {
      const float d = static_cast<float>((k * 2654435761u) % 1000) / 500.f - 1.f;
      const float v = static_cast<float>((k * 40503u) % 777) / 300.f;
      if (es == 4) {
        std::memcpy(dy + 4 * k, &d, 4);
        std::memcpy(x + 4 * k, &v, 4);
      } else {
        const std::uint16_t dh = half_bits(d, s.dtype), vh = half_bits(v, s.dtype);
        std::memcpy(dy + 2 * k, &dh, 2);
        std::memcpy(x + 2 * k, &vh, 2);
      }
    }
    std::vector<float> mean(static_cast<std::size_t>(s.rows), 1.2f), var(mean.size(), 0.5f);
    std::vector<float> gamma(static_cast<std::size_t>(s.h), 1.1f), pd_gamma(gamma.size()), pd_beta(gamma.size());
    const lngrad::Shape xs{s.rows, s.h}, rs{s.rows}, hs{s.h};
    lngrad::GradOptions options;
    options.num_threads = s.threads;
    lngrad::ForwardOptions forward_options;
    forward_options.num_threads = s.threads;
    auto call = [&](const Build& f) {
      if (s.forward) {  // y into pd_x, the statistics into mean and var; beta is pd_beta's zeros
        f.forward({x, s.dtype, xs}, lngrad::ConstTensorView{gamma.data(), lngrad::Dtype::float32, hs},
                  lngrad::ConstTensorView{pd_beta.data(), lngrad::Dtype::float32, hs}, {pd_x, s.dtype, xs},
                  {mean.data(), lngrad::Dtype::float32, rs}, {var.data(), lngrad::Dtype::float32, rs}, {},
                  forward_options);
        return;
      }
      f.grad({dy, s.dtype, xs}, {x, s.dtype, xs}, {var.data(), lngrad::Dtype::float32, rs},
             {mean.data(), lngrad::Dtype::float32, rs}, lngrad::ConstTensorView{gamma.data(), lngrad::Dtype::float32, hs},
             {pd_x, s.dtype, xs}, {pd_gamma.data(), lngrad::Dtype::float32, hs},
             {pd_beta.data(), lngrad::Dtype::float32, hs}, options);
    };
    // A batch: 2 warm-up calls, then the median of 5 samples of `inner` calls
    // (about 4 M elements each; cold, one call each after the eviction).
    const long inner = cold ? 1L : std::max(1L, 4000000L / static_cast<long>(n));
    char fill = 0;
    auto batch = [&](const Build& f) {
      call(f);
      call(f);
      std::vector<double> t;
      for (int r = 0; r < 5; ++r) {
        if (cold) std::memset(evict.data(), ++fill, evict.size());
        const auto t0 = std::chrono::steady_clock::now();
        for (long k = 0; k < inner; ++k) call(f);
        t.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() / inner);
      }
      return median(t);
    };
    std::vector<double> ta, tb, ratio;
    for (int r = 0; r < rounds; ++r) {
      ta.push_back(batch(a));
      tb.push_back(batch(b));
      ratio.push_back(tb.back() / ta.back());
    }
    std::printf("%-24s A %10.2f us  B %10.2f us  B/A %.3f (rounds %.3f .. %.3f)\n", argv[i], median(ta) * 1e6,
                median(tb) * 1e6, median(ratio), *std::min_element(ratio.begin(), ratio.end()),
                *std::max_element(ratio.begin(), ratio.end()));
    for (char* b : blocks) std::free(b);
  }
  return 0;
}
