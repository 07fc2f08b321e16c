#include "support.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>

#include "lngrad/half.hpp"
#include "runtime/row_reduce.hpp"

namespace lngrad::hardening {

std::string target_param_name(const ::testing::TestParamInfo<std::string>& info) { return info.param; }

double arithmetic_roundoff(Dtype x_dtype) { return x_dtype == Dtype::float64 ? 0x1p-53 : 0x1p-24; }

double storage_roundoff(Dtype dtype) {
  switch (dtype) {
    case Dtype::float64: return 0x1p-53;
    case Dtype::float32: return 0x1p-24;
    case Dtype::float16: return 0x1p-11;
    case Dtype::bfloat16: return 0x1p-8;
  }
  return 1.0;
}

namespace {
std::int64_t count(const Shape& s) {
  std::int64_t n = 1;
  for (int i = 0; i < s.rank(); ++i) n *= s[i];
  return n;
}
}  // namespace

Tensor::Tensor(Dtype dtype, Shape shape) : dtype_(dtype), shape_(shape), size_(count(shape)) {
  bytes_.assign(static_cast<std::size_t>(size_) * dtype_size(dtype) + 2 * kGuard, kGuardByte);
  fill(0.0);
}

double Tensor::at(std::int64_t i) const {
  const void* p = data();
  switch (dtype_) {
    case Dtype::float64: return static_cast<const double*>(p)[i];
    case Dtype::float32: return static_cast<const float*>(p)[i];
    case Dtype::float16: return float16_to_float(static_cast<const std::uint16_t*>(p)[i]);
    case Dtype::bfloat16: return bfloat16_to_float(static_cast<const std::uint16_t*>(p)[i]);
  }
  return NAN;
}

void Tensor::set(std::int64_t i, double v) {
  void* p = data();
  switch (dtype_) {
    case Dtype::float64: static_cast<double*>(p)[i] = v; return;
    case Dtype::float32: static_cast<float*>(p)[i] = static_cast<float>(v); return;
    case Dtype::float16:
      static_cast<std::uint16_t*>(p)[i] = float_to_float16(static_cast<float>(v));
      return;
    case Dtype::bfloat16:
      static_cast<std::uint16_t*>(p)[i] = float_to_bfloat16(static_cast<float>(v));
      return;
  }
}

void Tensor::fill(double v) {
  for (std::int64_t i = 0; i < size_; ++i) set(i, v);
}

std::vector<std::uint8_t> Tensor::payload() const {
  return {bytes_.begin() + kGuard, bytes_.end() - kGuard};
}

bool Tensor::guards_intact() const {
  for (std::size_t i = 0; i < kGuard; ++i) {
    if (bytes_[i] != kGuardByte || bytes_[bytes_.size() - 1 - i] != kGuardByte) return false;
  }
  return true;
}

GradProblem make_problem(Dtype dtype, Dtype stat_dtype, std::int64_t rows, std::int64_t h, std::uint64_t seed) {
  GradProblem p;
  p.rows = rows;
  p.h = h;
  p.dy = Tensor(dtype, {rows, h});
  p.x = Tensor(dtype, {rows, h});
  p.mean = Tensor(stat_dtype, {rows});
  p.variance = Tensor(stat_dtype, {rows});
  p.gamma = Tensor(dtype, {h});
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> unit(-1.0, 1.0);
  for (std::int64_t j = 0; j < h; ++j) p.gamma.set(j, (unit(rng) > 0 ? 1 : -1) * (1.0 + 0.5 * unit(rng)));
  for (std::int64_t r = 0; r < rows; ++r) {
    // Rows centred away from zero with unit-scale spread: the centred
    // formulation matters and rstd stays moderate.
    const double centre = 3.0 * unit(rng);
    double sum = 0.0;
    for (std::int64_t j = 0; j < h; ++j) {
      p.dy.set(r * h + j, unit(rng));
      p.x.set(r * h + j, centre + 2.0 * unit(rng));
      sum += p.x.at(r * h + j);
    }
    const double mean = sum / static_cast<double>(h);
    double sq = 0.0;
    for (std::int64_t j = 0; j < h; ++j) sq += (p.x.at(r * h + j) - mean) * (p.x.at(r * h + j) - mean);
    p.mean.set(r, mean);
    p.variance.set(r, sq / static_cast<double>(h));
  }
  return p;
}

namespace {
Dtype param_dtype(const GradProblem& p) { return p.gamma.dtype(); }
}  // namespace

GradOutputs run_grad(const GradProblem& p, int num_threads) {
  GradOutputs out;
  out.pd_x = Tensor(p.x.dtype(), p.x.shape());
  out.pd_gamma = Tensor(param_dtype(p), {p.h});
  out.pd_beta = Tensor(param_dtype(p), {p.h});
  GradOptions opt;
  opt.epsilon = p.epsilon;
  opt.num_threads = num_threads;
  layer_norm_grad(p.dy.cview(), p.x.cview(), p.variance.cview(), p.mean.cview(), p.gamma_v(), out.pd_x.view(),
                  out.pd_gamma.view(), out.pd_beta.view(), opt);
  return out;
}

GradOutputs run_grad_x(const GradProblem& p, int num_threads) {
  GradOutputs out;
  out.pd_x = Tensor(p.x.dtype(), p.x.shape());
  out.res_for_gamma = Tensor(p.x.dtype(), p.x.shape());
  GradXOptions opt;
  opt.epsilon = p.epsilon;
  opt.num_threads = num_threads;
  layer_norm_grad_x(p.dy.cview(), p.x.cview(), p.variance.cview(), p.mean.cview(), p.gamma_v(), out.pd_x.view(),
                    out.res_for_gamma.view(), opt);
  return out;
}

reference::GradInputs reference_inputs(const GradProblem& p) {
  reference::GradInputs in;
  in.rows = p.rows;
  in.h = p.h;
  const std::int64_t n = p.rows * p.h;
  in.dy.resize(static_cast<std::size_t>(n));
  in.x.resize(static_cast<std::size_t>(n));
  for (std::int64_t i = 0; i < n; ++i) {
    in.dy[i] = p.dy.at(i);
    in.x[i] = p.x.at(i);
  }
  for (std::int64_t r = 0; r < p.rows; ++r) {
    in.mean.push_back(p.mean.at(r));
    in.variance.push_back(p.variance.at(r));
  }
  if (p.with_gamma) {
    for (std::int64_t j = 0; j < p.h; ++j) in.gamma.push_back(p.gamma.at(j));
  }
  in.epsilon = p.x.dtype() == Dtype::float64 ? p.epsilon : static_cast<double>(static_cast<float>(p.epsilon));
  return in;
}

std::vector<double> pd_x_bound(const reference::GradInputs& in, Dtype x_dtype) {
  const reference::GradOutputs ref = reference::layer_norm_grad(in);
  const double ua = arithmetic_roundoff(x_dtype);
  const double us = x_dtype == Dtype::float64 || x_dtype == Dtype::float32 ? 0.0 : storage_roundoff(x_dtype);
  const std::int64_t h = in.h;
  const double hd = static_cast<double>(h);
  std::vector<double> bound(static_cast<std::size_t>(in.rows * h));
  for (std::int64_t r = 0; r < in.rows; ++r) {
    const double rstd = in.stat_is_rstd ? in.variance[r] : 1.0 / std::sqrt(in.variance[r] + in.epsilon);
    double a1 = 0, a2 = 0, a3 = 0;
    for (std::int64_t j = 0; j < h; ++j) {
      const double g = in.dy[r * h + j] * (in.gamma.empty() ? 1.0 : in.gamma[j]);
      const double xm = in.x[r * h + j] - in.mean[r];
      a1 += std::fabs(g);
      a2 += std::fabs(g * xm);
      a3 += std::fabs(xm);
    }
    const double r3 = rstd * rstd * rstd;
    for (std::int64_t j = 0; j < h; ++j) {
      const double g = in.dy[r * h + j] * (in.gamma.empty() ? 1.0 : in.gamma[j]);
      const double xm = in.x[r * h + j] - in.mean[r];
      const double m = rstd * std::fabs(g) + r3 * a2 * std::fabs(xm) / hd + rstd * a1 / hd + r3 * a2 * a3 / (hd * hd);
      const double arithmetic = (hd + 16.0) * ua * m;
      bound[r * h + j] = arithmetic + us * (std::fabs(ref.pd_x[r * h + j]) + arithmetic);
    }
  }
  return bound;
}

std::vector<double> column_bound(const reference::GradInputs& in, Dtype x_dtype, Dtype param_dtype,
                                 bool gamma_column) {
  const reference::GradOutputs ref = reference::layer_norm_grad(in);
  const double ua = arithmetic_roundoff(x_dtype);
  const double us = param_dtype == Dtype::float64 || param_dtype == Dtype::float32 ? 0.0 : storage_roundoff(param_dtype);
  const double levels = static_cast<double>(runtime::kBlockRows) + std::ceil(std::log2(static_cast<double>(in.rows) + 1.0)) + 4.0;
  std::vector<double> bound(static_cast<std::size_t>(in.h));
  for (std::int64_t j = 0; j < in.h; ++j) {
    double mag = 0;
    for (std::int64_t r = 0; r < in.rows; ++r) {
      const double rstd = in.stat_is_rstd ? in.variance[r] : 1.0 / std::sqrt(in.variance[r] + in.epsilon);
      const double dy = in.dy[r * in.h + j];
      mag += gamma_column ? std::fabs(dy * (in.x[r * in.h + j] - in.mean[r]) * rstd) : std::fabs(dy);
    }
    const double value = gamma_column ? ref.pd_gamma[j] : ref.pd_beta[j];
    const double arithmetic = levels * ua * mag;
    bound[j] = arithmetic + us * (std::fabs(value) + arithmetic);
  }
  return bound;
}

bool all_non_finite(const Tensor& t, std::int64_t begin, std::int64_t end) {
  for (std::int64_t i = begin; i < end; ++i) {
    if (std::isfinite(t.at(i))) return false;
  }
  return true;
}

void expect_near_reference(const GradProblem& p, const GradOutputs& out, const std::string& what) {
  const reference::GradInputs in = reference_inputs(p);
  const reference::GradOutputs ref = reference::layer_norm_grad(in);
  const std::vector<double> bx = pd_x_bound(in, p.x.dtype());
  const std::vector<double> bg = column_bound(in, p.x.dtype(), p.gamma.dtype(), true);
  const std::vector<double> bb = column_bound(in, p.x.dtype(), p.gamma.dtype(), false);
  for (std::int64_t i = 0; i < p.rows * p.h; ++i) {
    ASSERT_NEAR(out.pd_x.at(i), ref.pd_x[i], bx[i]) << what << " pd_x[" << i << "]";
  }
  for (std::int64_t j = 0; j < p.h; ++j) {
    ASSERT_NEAR(out.pd_gamma.at(j), ref.pd_gamma[j], bg[j]) << what << " pd_gamma[" << j << "]";
    ASSERT_NEAR(out.pd_beta.at(j), ref.pd_beta[j], bb[j]) << what << " pd_beta[" << j << "]";
  }
}

}  // namespace lngrad::hardening
