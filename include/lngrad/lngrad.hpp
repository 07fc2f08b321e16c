// lngrad: LayerNorm backward (the LayerNormGrad operator family) on any CPU.
//
// Every function takes non-owning views of contiguous row-major (ND) tensors
// and writes into caller-provided buffers; none allocates its outputs.
// Arguments are validated before anything is written: a rejected call throws
// lngrad::Error and leaves every output untouched.
//
// Arithmetic is float32 for float32/float16/bfloat16 storage and float64 for
// float64. Results are bit-identical for any thread count.
#pragma once

#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "lngrad/version.hpp"

namespace lngrad {

// The one exception type: the message names the argument, what was expected
// and what was given.
class Error : public std::invalid_argument {
 public:
  using std::invalid_argument::invalid_argument;
};

// Storage types. float16 is IEEE binary16, bfloat16 the upper half of a
// float32; both are passed as 16-bit words (e.g. uint16_t*).
enum class Dtype : std::uint8_t { float64, float32, float16, bfloat16 };

const char* dtype_name(Dtype dtype);
std::size_t dtype_size(Dtype dtype);

inline constexpr int kMaxRank = 8;

// Up to kMaxRank extents. A longer list is remembered as too long (rank()
// reports it) so that validation can name the offending argument.
class Shape {
 public:
  Shape() = default;
  Shape(std::initializer_list<std::int64_t> dims) : Shape(dims.begin(), dims.size()) {}
  Shape(const std::int64_t* dims, std::size_t rank) : rank_(static_cast<int>(rank)) {
    for (std::size_t i = 0; i < rank && i < static_cast<std::size_t>(kMaxRank); ++i) dims_[i] = dims[i];
  }
  Shape(const std::vector<std::int64_t>& dims) : Shape(dims.data(), dims.size()) {}  // NOLINT(google-explicit-constructor)

  int rank() const { return rank_; }
  std::int64_t operator[](int axis) const { return dims_[axis]; }
  std::vector<std::int64_t> dims() const;
  std::string str() const;  // "[2, 32, 16]"

 private:
  std::int64_t dims_[kMaxRank] = {};
  int rank_ = 0;
};

// A read-only view of a contiguous tensor.
struct ConstTensorView {
  const void* data = nullptr;
  Dtype dtype = Dtype::float32;
  Shape shape;
};

// A writable view of a contiguous tensor.
struct TensorView {
  void* data = nullptr;
  Dtype dtype = Dtype::float32;
  Shape shape;
  operator ConstTensorView() const { return {data, dtype, shape}; }  // NOLINT(google-explicit-constructor)
};

// How the row statistic is given: as the variance (rstd = 1/sqrt(variance +
// epsilon)), or directly as rstd, as PyTorch and aclnnLayerNormBackward pass
// it (epsilon is then unused).
enum class Statistic : std::uint8_t { variance, rstd };

// How pd_x (or layer_norm's y) is written. automatic: past the caches
// (non-temporal stores) when the operator's row tensors (dy, x and pd_x; x
// and y) together exceed the last-level cache (counted at most 16 MiB per
// core: a VM may be shown its host's whole L3), so the output neither evicts
// the inputs nor has its destination lines read first (for an output that
// does not start on a 64-byte line, only when rows are 4 KiB or longer);
// cached: always through the caches, for an output read again right away;
// streaming: past the caches wherever rows are whole SIMD stores, but for
// the pd_x stores that measured slower so (float16 with vectors under 64
// bytes; with AVX2, 16-bit row groups 4 KiB apart). Results are the same
// bits whichever way they are stored.
enum class Stores { automatic, cached, streaming };

struct GradOptions {
  // Default as the Ascend op: 1e-12 for float32/float64 x, 1e-5 otherwise.
  std::optional<double> epsilon;
  Statistic statistic = Statistic::variance;
  // Which outputs to compute; a skipped output's view may be left empty.
  bool compute_pd_x = true;
  bool compute_pd_gamma = true;
  bool compute_pd_beta = true;
  // Trailing axes of x that are normalized. 0: taken from gamma, else from
  // pd_gamma/pd_beta, else from the shape of mean.
  int normalized_ndim = 0;
  int num_threads = 0;  // 0: all cores available to the process
  Stores pd_x_stores = Stores::automatic;
};

// Seed 000's LayerNormGrad graph op.
//   dy, x:      [A1..Ai, R1..Rj], same dtype
//   variance, mean: [A1..Ai] or [A1..Ai, 1..1]; x's dtype, float32 or float64,
//               never narrower than x. With Statistic::rstd, `variance` holds rstd.
//   gamma:      [R1..Rj], x's dtype or float32; absent acts as ones.
//   pd_x:       like x.  pd_gamma, pd_beta: like gamma, gamma's dtype
//               (x's dtype or float32 when gamma is absent).
// pd_x = g*rstd + pd_var*(2/H)*(x-mean) + pd_mean/H with g = dy*gamma,
//   pd_var  = sum(-0.5*g*(x-mean)*rstd^3),
//   pd_mean = sum(-g*rstd) + pd_var*(1/H)*sum(-2*(x-mean));
// pd_gamma = sum over rows of dy*(x-mean)*rstd; pd_beta = sum over rows of dy.
void layer_norm_grad(ConstTensorView dy, ConstTensorView x, ConstTensorView variance,
                     ConstTensorView mean, std::optional<ConstTensorView> gamma,
                     TensorView pd_x, TensorView pd_gamma, TensorView pd_beta,
                     const GradOptions& options = {});

struct GradXOptions {
  std::optional<double> epsilon;
  Statistic statistic = Statistic::variance;
  int normalized_ndim = 0;  // 0: from gamma, else from the shape of mean
  int num_threads = 0;
  Stores pd_x_stores = Stores::automatic;
};

// Seed 002's LayerNormGrad: pd_x as above and res_for_gamma = (x-mean)*rstd,
// shaped like x, in x's dtype or float32.
void layer_norm_grad_x(ConstTensorView dy, ConstTensorView x, ConstTensorView variance,
                       ConstTensorView mean, std::optional<ConstTensorView> gamma,
                       TensorView pd_x, TensorView res_for_gamma,
                       const GradXOptions& options = {});

struct GradBetaOptions {
  int num_threads = 0;
};

// Seed 001's LayerNormGradBeta: pd_gamma = sum over rows of dy*res_for_gamma,
// pd_beta = sum over rows of dy. The normalized axes are the trailing
// rank(pd_gamma) axes of dy; pd_gamma and pd_beta share one shape and have
// dy's dtype or float32.
void layer_norm_grad_beta(ConstTensorView res_for_gamma, ConstTensorView dy,
                          TensorView pd_gamma, TensorView pd_beta,
                          const GradBetaOptions& options = {});

struct ForwardOptions {
  std::optional<double> epsilon;  // default as layer_norm_grad
  int normalized_ndim = 0;        // 0: from gamma, else beta, else mean's shape
  int num_threads = 0;
  Stores y_stores = Stores::automatic;
};

// LayerNorm forward, producing the backward's inputs:
//   mean = sum(x)/H, variance = sum((x-mean)^2)/H (biased), rstd = 1/sqrt(variance+eps),
//   y = (x-mean)*rstd*gamma + beta.
// mean, variance and rstd share one shape and dtype (x's, float32 or float64,
// never narrower than x); rstd may be left empty. gamma and beta may be absent.
void layer_norm(ConstTensorView x, std::optional<ConstTensorView> gamma,
                std::optional<ConstTensorView> beta, TensorView y, TensorView mean,
                TensorView variance, TensorView rstd, const ForwardOptions& options = {});

// Bytes of scratch layer_norm_grad keeps for rows x h (normalized size) in
// x_dtype on num_threads threads (0: all cores): the pd_gamma/pd_beta
// partial sums, O((32 + threads*log2(rows)) * h), a copy of gamma (where it
// is not float32 on a 64-byte line), for bfloat16 two reordered copies of
// gamma per thread, and where pd_x streams but its rows
// are not whole 64-byte lines apart, one group of at most 8 rows per thread
// to stage them; independent of rows*h otherwise.
// It is allocated once per calling thread and reused.
std::int64_t grad_workspace_bytes(std::int64_t rows, std::int64_t h, Dtype x_dtype, int num_threads = 0);

// The Ascend default epsilon for x of this dtype.
double default_epsilon(Dtype x_dtype);

// SIMD targets compiled into the library that this CPU runs, best first
// (e.g. "AVX3_BF16", "AVX3", "AVX2", "SSE4", "EMU128"). AVX3_BF16 is AVX3 with
// AVX512-BF16 bfloat16 stores and gives the same bits as AVX3; targets of
// different vector widths agree within the rounding bounds the tests derive.
std::vector<std::string> available_targets();
// The target the kernels dispatch to now.
std::string active_target();
// Caps dispatch at the named target (one of available_targets(), or a
// compiled target this CPU lacks, which then caps at the best below it);
// an empty name lifts the cap. The environment variable LNGRAD_MAX_TARGET
// sets the initial cap. Throws Error for an unknown name.
void set_max_target(std::string_view name);

// The operators, for describe_plan.
enum class Op { layer_norm_grad, layer_norm_grad_x, layer_norm_grad_beta, layer_norm };

// How a call would run here (this machine's caches, the active target): one
// line of the plan's choices, e.g. "threads=2 group=4 fused=1 stream=1
// prefetch_l1=4096 prefetch_l2=8192 ahead=0", with a note where a wanted
// choice was refused. The output is taken to start on a cache line. The
// environment variable LNGRAD_PLAN (same keys, comma-separated) overrides
// choices for experiments; results are the same bits whatever the plan.
std::string describe_plan(Op op, std::int64_t rows, std::int64_t h, Dtype dtype, int num_threads = 0,
                          Stores stores = Stores::automatic);

// Threads used when num_threads is 0.
int default_num_threads();

const char* version();  // LNGRAD_VERSION_STRING

}  // namespace lngrad
