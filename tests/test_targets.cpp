// The same bits on every target with FMA: AVX-512 (with and without BF16),
// AVX2, NEON, SVE and SVE2 at any vector length give bit-identical pd_x,
// pd_gamma, pd_beta, res_for_gamma and forward outputs, in every dtype and
// for rows with tails; and a digest of them is the same on x86 and on Arm.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "scoped_plan.hpp"
#include "test_support.hpp"

namespace lngrad::test {
namespace {

// Targets without FMA round every product apart: their results differ in
// the last bits (docs/PERFORMANCE.md).
bool has_fma(const std::string& target) {
  for (const char* name : {"SSE2", "SSSE3", "SSE4", "EMU128", "SCALAR", "WASM", "WASM_EMU256"}) {
    if (target == name) return false;
  }
  return true;
}

// Inputs from integer arithmetic alone (no libm), so that x86 and Arm build
// the same bits: dyadic values, exact in float32 and rounded once into
// 16-bit types by lngrad's own conversions. Stored means are off the row
// mean, so the correction term of pd_x is live.
struct Inputs {
  Shape xs, ss, ps;
  Buffer dy, x, mean, variance, gamma, beta;
  Inputs(Dtype d, std::int64_t rows, std::int64_t h)
      : xs{rows, h},
        ss{rows},
        ps{h},
        dy(d, rows * h),
        x(d, rows * h),
        mean(stat_dtype(d), rows),
        variance(stat_dtype(d), rows),
        gamma(param_dtype(d), h),
        beta(param_dtype(d), h) {
    std::uint32_t state = 12345;
    auto next = [&state](int span) {  // an integer in [-span, span]
      state = state * 1664525u + 1013904223u;
      return static_cast<int>((state >> 8) % static_cast<std::uint32_t>(2 * span + 1)) - span;
    };
    for (std::int64_t r = 0; r < rows; ++r) {
      const double offset = next(8) / 4.0;
      mean.set(r, offset + next(16) / 256.0);
      variance.set(r, 1.0 + next(64) / 128.0);
      for (std::int64_t j = 0; j < h; ++j) {
        x.set(r * h + j, offset + next(1024) / 512.0);
        dy.set(r * h + j, next(1024) / 1024.0);
      }
    }
    for (std::int64_t j = 0; j < h; ++j) {
      gamma.set(j, 1.0 + next(128) / 256.0);
      beta.set(j, next(128) / 256.0);
    }
  }
  static Dtype stat_dtype(Dtype d) { return d == Dtype::float64 ? d : Dtype::float32; }
  // 16-bit rows with float32 gamma, as mixed-precision training keeps them.
  static Dtype param_dtype(Dtype d) { return d == Dtype::float16 || d == Dtype::bfloat16 ? Dtype::float32 : d; }
};

// Every output of the four operators on one problem, as named byte strings.
struct Outputs {
  std::vector<std::string> names;
  std::vector<std::vector<unsigned char>> bytes;
  void add(const std::string& name, const Buffer& b) {
    const auto* p = static_cast<const unsigned char*>(b.data());
    names.push_back(name);
    bytes.emplace_back(p, p + b.size() * static_cast<std::int64_t>(dtype_size(b.dtype())));
  }
};

Outputs all_outputs(Dtype d, std::int64_t rows, std::int64_t h) {
  Inputs in(d, rows, h);
  const Dtype pd = Inputs::param_dtype(d), sd = Inputs::stat_dtype(d);
  Outputs out;
  {
    Buffer pd_x(d, rows * h), pd_gamma(pd, h), pd_beta(pd, h);
    GradOptions o;
    o.num_threads = 1;
    layer_norm_grad(in.dy.cview(in.xs), in.x.cview(in.xs), in.variance.cview(in.ss), in.mean.cview(in.ss),
                    in.gamma.cview(in.ps), pd_x.view(in.xs), pd_gamma.view(in.ps), pd_beta.view(in.ps), o);
    out.add("grad pd_x", pd_x);
    out.add("grad pd_gamma", pd_gamma);
    out.add("grad pd_beta", pd_beta);
  }
  for (Dtype res_dtype : {d, Dtype::float32}) {
    if (res_dtype == Dtype::float32 && (d == Dtype::float32 || d == Dtype::float64)) continue;
    Buffer pd_x(d, rows * h), res(res_dtype, rows * h);
    GradXOptions o;
    o.num_threads = 1;
    layer_norm_grad_x(in.dy.cview(in.xs), in.x.cview(in.xs), in.variance.cview(in.ss), in.mean.cview(in.ss),
                      in.gamma.cview(in.ps), pd_x.view(in.xs), res.view(in.xs), o);
    const std::string tag = std::string(" (res ") + dtype_name(res_dtype) + ")";
    out.add("grad_x pd_x" + tag, pd_x);
    out.add("grad_x res_for_gamma" + tag, res);
    if (res_dtype == d) {
      Buffer pd_gamma(d, h), pd_beta(d, h);
      GradBetaOptions ob;
      ob.num_threads = 1;
      layer_norm_grad_beta(res.cview(in.xs), in.dy.cview(in.xs), pd_gamma.view(in.ps), pd_beta.view(in.ps), ob);
      out.add("grad_beta pd_gamma", pd_gamma);
      out.add("grad_beta pd_beta", pd_beta);
    }
  }
  {
    Buffer y(d, rows * h), mean(sd, rows), variance(sd, rows), rstd(sd, rows);
    ForwardOptions o;
    o.num_threads = 1;
    layer_norm(in.x.cview(in.xs), in.gamma.cview(in.ps), in.beta.cview(in.ps), y.view(in.xs), mean.view(in.ss),
               variance.view(in.ss), rstd.view(in.ss), o);
    out.add("forward y", y);
    out.add("forward mean", mean);
    out.add("forward variance", variance);
    out.add("forward rstd", rstd);
  }
  return out;
}

// Rows with every kind of tail: shorter than a vector, than the 32 classes
// of a row sum, a class chunk and a bit, odd lengths, long rows.
const std::vector<Shape>& shapes() {
  static const std::vector<Shape> s = {Shape{1, 1},   Shape{3, 5},   Shape{4, 31},  Shape{2, 32},
                                       Shape{5, 33},  Shape{3, 100}, Shape{6, 257}, Shape{40, 96},
                                       Shape{9, 1000}, Shape{3, 2053}, Shape{2, 4099}};
  return s;
}

// The plans the comparison runs under: the default, and pass 1 fused into
// pass 2 (which splits each row's sums across pass 2's steps).
const std::vector<const char*>& plans() {
  static const std::vector<const char*> p = {"", "fused=1"};
  return p;
}

class TargetGuard {
 public:
  TargetGuard() : initial_(active_target()) {}
  ~TargetGuard() { set_max_target(initial_); }
  TargetGuard(const TargetGuard&) = delete;
  TargetGuard& operator=(const TargetGuard&) = delete;

 private:
  std::string initial_;
};

TEST(SameBits, EveryTargetWithFmaMatchesTheBest) {
  const TargetGuard guard;
  std::vector<std::string> targets;
  for (const std::string& t : available_targets()) {
    if (has_fma(t)) targets.push_back(t);
  }
  if (targets.size() < 2) GTEST_SKIP() << "fewer than two targets with FMA run on this CPU";
  for (const char* plan : plans()) {
    const ScopedPlan scoped(plan);
    for (Dtype d : {Dtype::float32, Dtype::bfloat16, Dtype::float16, Dtype::float64}) {
      for (const Shape& s : shapes()) {
        set_max_target(targets[0]);
        const Outputs ref = all_outputs(d, s[0], s[1]);
        for (std::size_t t = 1; t < targets.size(); ++t) {
          set_max_target(targets[t]);
          const Outputs got = all_outputs(d, s[0], s[1]);
          for (std::size_t k = 0; k < ref.bytes.size(); ++k) {
            EXPECT_EQ(got.bytes[k], ref.bytes[k]) << ref.names[k] << ": " << targets[t] << " differs from "
                                                  << targets[0] << ", " << dtype_name(d) << " " << s.str()
                                                  << ", plan '" << plan << "'";
          }
        }
      }
    }
  }
}

// FNV-1a over every output of every shape.
std::uint64_t digest(Dtype d) {
  std::uint64_t hash = 14695981039346656037ull;
  for (const Shape& s : shapes()) {
    for (const auto& bytes : all_outputs(d, s[0], s[1]).bytes) {
      for (unsigned char c : bytes) hash = (hash ^ c) * 1099511628211ull;
    }
  }
  return hash;
}

// The digests were taken on x86 (AVX3_BF16); the Arm job checks them under
// qemu on NEON and SVE at 128 to 2048 bits. A change that moves a bit of any
// output changes them: say where in the commit, and take the new values
// from this test's failure message.
TEST(SameBits, DigestIsTheSameOnX86AndArm) {
  const std::string target = active_target();
  if (!has_fma(target)) GTEST_SKIP() << target << " has no FMA: its results differ in the last bits";
  const struct {
    Dtype dtype;
    std::uint64_t expected;
  } cases[] = {
      {Dtype::float32, 0x46c51eb9c2eedcf4ull},
      {Dtype::bfloat16, 0x6cd6e7b132f137e9ull},
      {Dtype::float16, 0x292090a537d0f66eull},
      {Dtype::float64, 0xb32de92081fbfd8bull},
  };
  for (const auto& c : cases) {
    EXPECT_EQ(digest(c.dtype), c.expected) << dtype_name(c.dtype) << " on " << target << ": 0x" << std::hex
                                           << digest(c.dtype);
  }
}

}  // namespace
}  // namespace lngrad::test
