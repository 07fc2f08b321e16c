// Shared test helpers: typed buffers in any storage dtype, random problems,
// and the rounding-error bounds the tests assert.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "lngrad/half.hpp"
#include "lngrad/lngrad.hpp"
#include "reference.hpp"
#include "runtime/row_reduce.hpp"

namespace lngrad::test {

// A buffer of n elements of `dtype`, with guard words on both sides so that a
// write outside the view is detected.
class Buffer {
 public:
  static constexpr std::size_t kGuardBytes = 64;
  static constexpr unsigned char kGuard = 0xA5;

  Buffer() = default;
  Buffer(Dtype dtype, std::int64_t n) : dtype_(dtype), n_(n) {
    bytes_.assign(2 * kGuardBytes + static_cast<std::size_t>(n) * dtype_size(dtype), kGuard);
  }
  // From double values, rounded to nearest in `dtype`.
  Buffer(Dtype dtype, const std::vector<double>& values) : Buffer(dtype, static_cast<std::int64_t>(values.size())) {
    for (std::size_t i = 0; i < values.size(); ++i) set(static_cast<std::int64_t>(i), values[i]);
  }

  void* data() { return bytes_.data() + kGuardBytes; }
  const void* data() const { return bytes_.data() + kGuardBytes; }
  Dtype dtype() const { return dtype_; }
  std::int64_t size() const { return n_; }

  TensorView view(Shape shape) { return {data(), dtype_, shape}; }
  ConstTensorView cview(Shape shape) const { return {data(), dtype_, shape}; }

  double get(std::int64_t i) const {
    const unsigned char* p = static_cast<const unsigned char*>(data());
    switch (dtype_) {
      case Dtype::float64: { double v; std::memcpy(&v, p + 8 * i, 8); return v; }
      case Dtype::float32: { float v; std::memcpy(&v, p + 4 * i, 4); return v; }
      case Dtype::float16: { std::uint16_t v; std::memcpy(&v, p + 2 * i, 2); return float16_to_float(v); }
      case Dtype::bfloat16: { std::uint16_t v; std::memcpy(&v, p + 2 * i, 2); return bfloat16_to_float(v); }
    }
    return 0;
  }

  void set(std::int64_t i, double value) {
    unsigned char* p = static_cast<unsigned char*>(data());
    switch (dtype_) {
      case Dtype::float64: std::memcpy(p + 8 * i, &value, 8); return;
      case Dtype::float32: { const float v = static_cast<float>(value); std::memcpy(p + 4 * i, &v, 4); return; }
      // Through float: the 16-bit values tests make are float-exact or
      // rounded once more, either way a value of the storage type.
      case Dtype::float16: { const auto v = float_to_float16(static_cast<float>(value)); std::memcpy(p + 2 * i, &v, 2); return; }
      case Dtype::bfloat16: { const auto v = float_to_bfloat16(static_cast<float>(value)); std::memcpy(p + 2 * i, &v, 2); return; }
    }
  }

  std::vector<double> values() const {
    std::vector<double> out(static_cast<std::size_t>(n_));
    for (std::int64_t i = 0; i < n_; ++i) out[i] = get(i);
    return out;
  }

  bool guards_intact() const {
    for (std::size_t i = 0; i < kGuardBytes; ++i) {
      if (bytes_[i] != kGuard || bytes_[bytes_.size() - 1 - i] != kGuard) return false;
    }
    return true;
  }

  bool bytes_equal(const Buffer& other) const { return bytes_ == other.bytes_; }

 private:
  Dtype dtype_ = Dtype::float32;
  std::int64_t n_ = 0;
  std::vector<unsigned char> bytes_;
};

// An output of n elements of `dtype` that starts line_offset bytes past a
// 64-byte line (line_offset < 0: where a Buffer starts), inside a guarded
// Buffer with up to 64 bytes of slack around it that must stay untouched.
class PlacedOutput {
 public:
  PlacedOutput(Dtype dtype, std::int64_t n, int line_offset)
      : n_(n),
        esize_(static_cast<std::int64_t>(dtype_size(dtype))),
        buffer_(dtype, n + (line_offset < 0 ? 0 : 64 / esize_)) {
    if (line_offset >= 0) {
      const auto addr = reinterpret_cast<std::uintptr_t>(buffer_.data());
      at_ = static_cast<std::int64_t>((64 + static_cast<std::uintptr_t>(line_offset) - addr % 64) % 64) / esize_;
    }
  }

  void* data() { return static_cast<unsigned char*>(buffer_.data()) + at_ * esize_; }
  TensorView view(Shape shape) { return {data(), buffer_.dtype(), shape}; }
  double get(std::int64_t i) const { return buffer_.get(at_ + i); }
  bool guards_intact() const { return buffer_.guards_intact(); }

  // The first byte of the slack around the output that was written, or -1.
  std::int64_t written_slack_byte() const {
    const auto* b = static_cast<const unsigned char*>(buffer_.data());
    const std::int64_t total = buffer_.size() * esize_;
    for (std::int64_t i = 0; i < total; ++i) {
      if (i == at_ * esize_) i = (at_ + n_) * esize_;
      if (i < total && b[i] != Buffer::kGuard) return i;
    }
    return -1;
  }

  std::vector<unsigned char> output_bytes() const {
    const auto* first = static_cast<const unsigned char*>(buffer_.data()) + at_ * esize_;
    return {first, first + n_ * esize_};
  }

 private:
  std::int64_t n_, esize_;
  Buffer buffer_;
  std::int64_t at_ = 0;  // elements into buffer_
};

// Unit roundoff of the arithmetic used for x of this dtype.
inline double arithmetic_u(Dtype x) { return x == Dtype::float64 ? 0x1p-53 : 0x1p-24; }

// Unit roundoff of storing into dtype, and the absolute half-spacing of its
// subnormals (float16 results near zero round to multiples of 2^-24).
inline double storage_u(Dtype d) {
  switch (d) {
    case Dtype::float64: return 0x1p-53;
    case Dtype::float32: return 0x1p-24;
    case Dtype::float16: return 0x1p-11;
    case Dtype::bfloat16: return 0x1p-8;
  }
  return 0;
}
inline double storage_abs(Dtype d) { return d == Dtype::float16 ? 0x1p-25 : 0.0; }

// Bound for a computed value rounded into `dtype`: |out - exact| <= e + u_T*(|exact| + e) + abs_T.
inline double stored_bound(Dtype dtype, double exact, double arithmetic_bound) {
  return arithmetic_bound + storage_u(dtype) * (std::fabs(exact) + arithmetic_bound) + storage_abs(dtype);
}

// Multiplier of u for a float sum of n terms, relative to the sum of their
// magnitudes. The row sums run in SIMD lanes; their rounding errors behave as
// random-signed (Higham, Accuracy and Stability, sec. 4.2), growing like
// sqrt(n); 4 sqrt(n) + 16 leaves a wide margin over what random data shows,
// while an uncentred formula (error ~ |mean|/std times larger) fails it.
inline double sum_factor(std::int64_t n) { return 4.0 * std::sqrt(static_cast<double>(n)) + 16.0; }

// Column sums (pd_gamma, pd_beta) add rows in order within blocks of
// kBlockRows and combine the blocks pairwise: a deterministic worst case of
// (kBlockRows + log2(rows) + 2) roundings per term, plus 4 for forming each
// term dy*(x-mean)*rstd.
inline double column_factor(std::int64_t rows) {
  return static_cast<double>(runtime::kBlockRows) + std::ceil(std::log2(static_cast<double>(rows) + 1)) + 6.0;
}

struct Problem {
  std::int64_t rows = 0, h = 0;
  Dtype dtype = Dtype::float32, stat_dtype = Dtype::float32, param_dtype = Dtype::float32;
  Shape x_shape, stat_shape, param_shape;
  Buffer dy, x, mean, variance, gamma;
  bool has_gamma = true;
  double epsilon = 1e-5;
  reference::GradInputs ref;  // the stored values, widened
};

struct ProblemSpec {
  Shape x_shape;
  int normalized_ndim = 1;
  Dtype dtype = Dtype::float32;
  Dtype stat_dtype = Dtype::float32;
  Dtype param_dtype = Dtype::float32;
  double x_mean = 0.0, x_std = 1.0;  // per-row mean offset and spread of x
  double mean_shift = 0.0;           // stored mean = exact row mean + shift*std (0: exact)
  bool has_gamma = true;
  bool keepdim_stats = false;  // statistics shaped [A.., 1..1]
  unsigned seed = 1;
};

inline Problem make_problem(const ProblemSpec& spec) {
  Problem p;
  p.dtype = spec.dtype;
  p.stat_dtype = spec.stat_dtype;
  p.param_dtype = spec.param_dtype;
  p.has_gamma = spec.has_gamma;
  p.x_shape = spec.x_shape;
  const int rank = spec.x_shape.rank();
  const int k = spec.normalized_ndim;
  std::vector<std::int64_t> lead, trail;
  for (int i = 0; i < rank - k; ++i) lead.push_back(spec.x_shape[i]);
  for (int i = rank - k; i < rank; ++i) trail.push_back(spec.x_shape[i]);
  p.param_shape = Shape(trail);
  std::vector<std::int64_t> stat = lead;
  if (spec.keepdim_stats) stat.insert(stat.end(), static_cast<std::size_t>(k), 1);
  p.stat_shape = Shape(stat);
  p.h = 1;
  for (auto d : trail) p.h *= d;
  p.rows = 1;
  for (auto d : lead) p.rows *= d;

  std::mt19937_64 rng(spec.seed);
  std::normal_distribution<double> normal(0.0, 1.0);
  std::vector<double> dy(static_cast<std::size_t>(p.rows * p.h)), x(dy.size()), gamma(static_cast<std::size_t>(p.h));
  for (auto& v : dy) v = normal(rng);
  for (std::int64_t r = 0; r < p.rows; ++r) {
    const double offset = spec.x_mean * (1.0 + 0.1 * normal(rng));
    const double spread = spec.x_std * (0.5 + std::fabs(normal(rng)));
    for (std::int64_t j = 0; j < p.h; ++j) x[r * p.h + j] = offset + spread * normal(rng);
  }
  for (auto& v : gamma) v = 1.0 + 0.5 * normal(rng);
  p.dy = Buffer(spec.dtype, dy);
  p.x = Buffer(spec.dtype, x);
  p.gamma = Buffer(spec.param_dtype, gamma);

  // Statistics of the stored x, themselves stored in stat_dtype (a 16-bit
  // mean is not the exact row mean: the correction term then matters).
  const std::vector<double> xs = p.x.values();
  const auto fwd = reference::layer_norm(p.rows, p.h, xs, {}, {}, 0.0);
  std::vector<double> mean = fwd.mean, var = fwd.variance;
  for (std::int64_t r = 0; r < p.rows; ++r) mean[r] += spec.mean_shift * std::sqrt(var[r]);
  p.mean = Buffer(spec.stat_dtype, mean);
  p.variance = Buffer(spec.stat_dtype, var);

  p.ref.rows = p.rows;
  p.ref.h = p.h;
  p.ref.dy = p.dy.values();
  p.ref.x = xs;
  p.ref.mean = p.mean.values();
  p.ref.variance = p.variance.values();
  if (spec.has_gamma) p.ref.gamma = p.gamma.values();
  return p;
}

// The bound on pd_x[r][j] computed in arithmetic_u(x dtype) and stored in x's
// dtype, from the magnitudes of the terms of pd_x = rstd*g + a*xm + b.

inline std::vector<double> pd_x_bounds(const reference::GradInputs& in, const reference::GradOutputs& ref, Dtype dtype) {
  const double u = arithmetic_u(dtype);
  const std::int64_t h = in.h;
  std::vector<double> bound(static_cast<std::size_t>(in.rows * h));
  for (std::int64_t r = 0; r < in.rows; ++r) {
    const double rstd = in.stat_is_rstd ? in.variance[r] : 1.0 / std::sqrt(in.variance[r] + in.epsilon);
    const double rstd3 = rstd * rstd * rstd;
    double s1 = 0, s2 = 0, abs_g = 0, abs_gxm = 0, abs_xm = 0;
    for (std::int64_t j = 0; j < h; ++j) {
      const double g = in.dy[r * h + j] * (in.gamma.empty() ? 1.0 : in.gamma[j]);
      const double xm = in.x[r * h + j] - in.mean[r];
      s1 += g;
      s2 += g * xm;
      abs_g += std::fabs(g);
      abs_gxm += std::fabs(g * xm);
      abs_xm += std::fabs(xm);
    }
    const double hd = static_cast<double>(h);
    // pd_x = rstd*g + a*xm + b, a = -rstd^3*S2*2/H, b = -rstd*S1/H + 2*rstd^3*S2*S3/H^2.
    const double b = std::fabs(rstd * s1 / hd) + 2 * rstd3 * std::fabs(s2) * abs_xm / (hd * hd);
    // Rounding of S1, S2, S3 (each ~ sum_factor*u relative to its magnitude
    // sum) carried into b, and into a (which multiplies |xm_j|).
    const double sums_b = rstd * abs_g / hd + 2 * rstd3 * (abs_gxm * abs_xm + std::fabs(s2) * abs_xm) / (hd * hd);
    const double sums_a = 2 * rstd3 * abs_gxm / hd;
    for (std::int64_t j = 0; j < h; ++j) {
      const double g = in.dy[r * h + j] * (in.gamma.empty() ? 1.0 : in.gamma[j]);
      const double xm = std::fabs(in.x[r * h + j] - in.mean[r]);
      // A dozen roundings in forming the terms (x-mean, g, rstd^3, the FMAs).
      const double elem = rstd * std::fabs(g) + 2 * rstd3 * std::fabs(s2) * xm / hd + b;
      const double e = u * (12.0 * elem + sum_factor(h) * (sums_b + sums_a * xm));
      bound[r * h + j] = stored_bound(dtype, ref.pd_x[r * h + j], e);
    }
  }
  return bound;
}

}  // namespace lngrad::test
