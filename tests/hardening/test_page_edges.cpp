// Tensors against inaccessible pages (docs/HARDENING.md, "Page edges"): the
// kernels read and write only their tensors' bytes, the masked loads and
// stores of a row's tail included, which AVX2 makes 32 bits at a time for
// 16-bit elements. Every tensor of every operator sits in a mapping of its own
// whose neighbouring pages are PROT_NONE, once ending where a page ends and
// once starting where one starts; a byte read or written past either end
// faults. The outputs must be the bits of the same call on ordinary buffers.
#include <gtest/gtest.h>

#include <sys/mman.h>
#include <unistd.h>

#include <cstring>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "support.hpp"

namespace lngrad::hardening {
namespace {

// A tensor's bytes between two PROT_NONE pages, flush against the one after
// it (at_end) or the one before it.
class Fenced {
 public:
  Fenced(Dtype dtype, Shape shape, bool at_end) : dtype_(dtype), shape_(std::move(shape)) {
    std::int64_t n = 1;
    for (int a = 0; a < shape_.rank(); ++a) n *= shape_[a];
    bytes_ = static_cast<std::size_t>(n) * dtype_size(dtype_);
    const std::size_t page = static_cast<std::size_t>(sysconf(_SC_PAGESIZE));
    const std::size_t inner = (bytes_ + page - 1) / page * page;
    mapped_ = inner + 2 * page;
    void* base = mmap(nullptr, mapped_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (base == MAP_FAILED) throw std::runtime_error("mmap failed");
    base_ = static_cast<unsigned char*>(base);
    if (mprotect(base_, page, PROT_NONE) != 0 || mprotect(base_ + page + inner, page, PROT_NONE) != 0) {
      throw std::runtime_error("mprotect failed");
    }
    data_ = at_end ? base_ + page + inner - bytes_ : base_ + page;
  }
  Fenced(const Fenced&) = delete;
  Fenced& operator=(const Fenced&) = delete;
  ~Fenced() { munmap(base_, mapped_); }

  // A fenced copy of t.
  Fenced(const Tensor& t, bool at_end) : Fenced(t.dtype(), t.shape(), at_end) {
    std::memcpy(data_, t.data(), bytes_);
  }
  TensorView view() { return {data_, dtype_, shape_}; }
  ConstTensorView cview() const { return {data_, dtype_, shape_}; }
  std::vector<std::uint8_t> payload() const { return {data_, data_ + bytes_}; }

 private:
  Dtype dtype_;
  Shape shape_;
  std::size_t bytes_ = 0, mapped_ = 0;
  unsigned char* base_ = nullptr;
  unsigned char* data_ = nullptr;
};

// Row lengths with tails of every size a 16-bit or 32-bit vector has (odd
// ones for the 16-bit elements taken apart), below and above a vector, a
// chunk of 32 and a pair of vectors.
const std::int64_t kWidths[] = {1, 3, 7, 9, 15, 17, 31, 33, 47, 100, 1001};
const std::int64_t kRows[] = {1, 3, 5};

std::string describe(Dtype dtype, std::int64_t rows, std::int64_t h, bool at_end) {
  return std::string(dtype_name(dtype)) + " " + std::to_string(rows) + "x" + std::to_string(h) +
         (at_end ? " at a page's end" : " at a page's start");
}

LNGRAD_TARGET_SUITE(PageEdges);

TEST_P(PageEdges, GradOperatorsTouchOnlyTheirTensors) {
  for (Dtype dtype : kAllDtypes) {
    for (std::int64_t h : kWidths) {
      for (std::int64_t rows : kRows) {
        const GradProblem p = make_problem(dtype, stat_for(dtype), rows, h, 7);
        const GradOutputs want = run_grad(p), want_x = run_grad_x(p);
        for (bool at_end : {true, false}) {
          const std::string what = describe(dtype, rows, h, at_end);
          Fenced dy(p.dy, at_end), x(p.x, at_end), mean(p.mean, at_end), variance(p.variance, at_end);
          Fenced gamma(p.gamma, at_end);
          Fenced pd_x(dtype, {rows, h}, at_end), pd_gamma(dtype, {h}, at_end), pd_beta(dtype, {h}, at_end);
          GradOptions opt;
          opt.epsilon = p.epsilon;
          layer_norm_grad(dy.cview(), x.cview(), variance.cview(), mean.cview(), gamma.cview(), pd_x.view(),
                          pd_gamma.view(), pd_beta.view(), opt);
          EXPECT_EQ(pd_x.payload(), want.pd_x.payload()) << "pd_x, " << what;
          EXPECT_EQ(pd_gamma.payload(), want.pd_gamma.payload()) << "pd_gamma, " << what;
          EXPECT_EQ(pd_beta.payload(), want.pd_beta.payload()) << "pd_beta, " << what;

          Fenced res(dtype, {rows, h}, at_end);
          GradXOptions xopt;
          xopt.epsilon = p.epsilon;
          layer_norm_grad_x(dy.cview(), x.cview(), variance.cview(), mean.cview(), gamma.cview(), pd_x.view(),
                            res.view(), xopt);
          EXPECT_EQ(pd_x.payload(), want_x.pd_x.payload()) << "layer_norm_grad_x pd_x, " << what;
          EXPECT_EQ(res.payload(), want_x.res_for_gamma.payload()) << "res_for_gamma, " << what;

          // LayerNormGradBeta over the res_for_gamma just made, against the
          // same call on ordinary buffers.
          Tensor beta_g(dtype, {h}), beta_b(dtype, {h});
          layer_norm_grad_beta(want_x.res_for_gamma.cview(), p.dy.cview(), beta_g.view(), beta_b.view());
          layer_norm_grad_beta(res.cview(), dy.cview(), pd_gamma.view(), pd_beta.view());
          EXPECT_EQ(pd_gamma.payload(), beta_g.payload()) << "layer_norm_grad_beta pd_gamma, " << what;
          EXPECT_EQ(pd_beta.payload(), beta_b.payload()) << "layer_norm_grad_beta pd_beta, " << what;
        }
      }
    }
  }
}

TEST_P(PageEdges, ForwardTouchesOnlyItsTensors) {
  for (Dtype dtype : kAllDtypes) {
    for (std::int64_t h : kWidths) {
      for (std::int64_t rows : kRows) {
        const GradProblem p = make_problem(dtype, stat_for(dtype), rows, h, 9);
        const Dtype sd = stat_for(dtype);
        Tensor beta(dtype, {h}), y(dtype, {rows, h}), mean(sd, {rows}), variance(sd, {rows}), rstd(sd, {rows});
        for (std::int64_t j = 0; j < h; ++j) beta.set(j, 0.125 * static_cast<double>(j % 9) - 0.5);
        layer_norm(p.x.cview(), p.gamma.cview(), beta.cview(), y.view(), mean.view(), variance.view(), rstd.view());
        for (bool at_end : {true, false}) {
          const std::string what = describe(dtype, rows, h, at_end);
          Fenced x(p.x, at_end), gamma(p.gamma, at_end), fbeta(beta, at_end);
          Fenced fy(dtype, {rows, h}, at_end), fmean(sd, {rows}, at_end), fvar(sd, {rows}, at_end),
              frstd(sd, {rows}, at_end);
          layer_norm(x.cview(), gamma.cview(), fbeta.cview(), fy.view(), fmean.view(), fvar.view(), frstd.view());
          EXPECT_EQ(fy.payload(), y.payload()) << "y, " << what;
          EXPECT_EQ(fmean.payload(), mean.payload()) << "mean, " << what;
          EXPECT_EQ(fvar.payload(), variance.payload()) << "variance, " << what;
          EXPECT_EQ(frstd.payload(), rstd.payload()) << "rstd, " << what;
        }
      }
    }
  }
}

}  // namespace
}  // namespace lngrad::hardening
