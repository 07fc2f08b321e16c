// The AscendC high-level normalization APIs on LocalTensors: LayerNorm
// (forward) and LayerNormGrad (seed 002), computed by lngrad's op-level
// float32 kernels through the tiling's plan, and LayerNormGradBeta (seed
// 001), summed in the device's order.
//
// Summation order: LayerNormGradBeta adds rows strictly in row order into
// one float32 accumulator per column, as the device does, whatever the tmp
// size: its results are the device's bits. LayerNorm's and LayerNormGrad's
// row sums (mean, variance, pd_var, pd_mean) are lngrad's op-level sums,
// whose order differs from the device's folding of a row into 64-lane
// blocks: those results agree with the device within float32 rounding, not
// bit for bit.
//
// The overloads without sharedTmpBuffer take their tmp space where the
// device does: inside a kernel core, the unified buffer left after the
// pipe's InitBuffer calls (which must hold the Get*MaxMinTmpSize minimum);
// called outside a kernel, they allocate their own.
#pragma once

#include <cstdint>
#include <type_traits>

#include "lngrad/ascendc/tiling.hpp"
#include "lngrad/ascendc/types.hpp"

namespace AscendC {

// ---- Kernel entry points (implemented in src/ascendc) -----------------------

namespace detail {

// A call's tmp space: the caller's sharedTmpBuffer, or the kernel core's
// stack for the overloads without it (buffer.data == nullptr outside a
// kernel: the library provides the scratch).
struct Scratch {
  Buffer buffer;
  bool kernel_stack;
};

inline Scratch shared_tmp(Buffer b) { return {b, false}; }
inline Scratch stack_tmp() { return {kernel_stack_buffer(), true}; }

void LayerNorm(Buffer output, Buffer outputMean, Buffer outputVariance, Buffer inputX, Buffer gamma, Buffer beta,
               Scratch scratch, float epsilon, LayerNormTiling& tiling, std::uint32_t typeSize, bool isReuseSource);
void LayerNormGrad(Buffer outputPdX, Buffer resForGamma, Buffer inputDy, Buffer inputX, Buffer inputVariance,
                   Buffer inputMean, Buffer inputGamma, Scratch scratch, float epsilon,
                   const LayerNormGradTiling& tiling, DataFormat format, std::uint32_t typeSize,
                   bool isReuseSource);
void LayerNormGradBeta(Buffer outputPdGamma, Buffer outputPdBeta, Buffer resForGamma, Buffer inputDy,
                       Scratch scratch, const LayerNormGradBetaTiling& tiling, std::uint32_t typeSize,
                       bool isReuseSource);

template <typename T>
Buffer buffer(const LocalTensor<T>& t) {
  return {static_cast<void*>(t.GetPhyAddr()), t.GetSize()};
}

template <typename T>
constexpr void check_type() {
  static_assert(std::is_same_v<T, half> || std::is_same_v<T, float>,
                "AscendC::LayerNorm/LayerNormGrad/LayerNormGradBeta: T must be AscendC::half or float");
}

}  // namespace detail

// LayerNorm over rows of storageH = originH elements (CANN's LayerNorm
// supports no row padding: its variance would count it):
//   mean = sum(x)/H, variance = sum((x - mean)^2)/H (biased),
//   output = (x - mean) / sqrt(variance + epsilon) * gamma + beta,
// in float32; half inputs are widened exactly and every output (mean and
// variance too) rounded once. output may be exactly inputX; outputMean and
// outputVariance hold B*S values (their allocation may be rounded up to 32
// bytes). As on the device, a call whose plan has a tail pass leaves the
// tail's sizes in tiling.bshCurLength / bsCurLength, so each call needs a
// fresh copy of the host tiling (a reused one is refused). isReuseSource
// (float only) lets the call work in inputX: the device uses its first
// tiling.oneTmpSize elements as scratch on every pass, so they are left NaN
// here, and output over inputX is refused when the plan has several passes
// (the device would overwrite the first pass's output).
template <typename T, bool isReuseSource = false>
inline void LayerNorm(const LocalTensor<T>& output, const LocalTensor<T>& outputMean,
                      const LocalTensor<T>& outputVariance, const LocalTensor<T>& inputX, const LocalTensor<T>& gamma,
                      const LocalTensor<T>& beta, const LocalTensor<std::uint8_t>& sharedTmpBuffer, const T epsilon,
                      LayerNormTiling& tiling) {
  detail::check_type<T>();
  detail::LayerNorm(detail::buffer(output), detail::buffer(outputMean), detail::buffer(outputVariance),
                    detail::buffer(inputX), detail::buffer(gamma), detail::buffer(beta),
                    detail::shared_tmp(detail::buffer(sharedTmpBuffer)), static_cast<float>(epsilon), tiling,
                    sizeof(T), isReuseSource);
}

template <typename T, bool isReuseSource = false>
inline void LayerNorm(const LocalTensor<T>& output, const LocalTensor<T>& outputMean,
                      const LocalTensor<T>& outputVariance, const LocalTensor<T>& inputX, const LocalTensor<T>& gamma,
                      const LocalTensor<T>& beta, const T epsilon, LayerNormTiling& tiling) {
  detail::check_type<T>();
  detail::LayerNorm(detail::buffer(output), detail::buffer(outputMean), detail::buffer(outputVariance),
                    detail::buffer(inputX), detail::buffer(gamma), detail::buffer(beta), detail::stack_tmp(),
                    static_cast<float>(epsilon), tiling, sizeof(T), isReuseSource);
}

// Seed 002. outputPdX and resForGamma may be the very buffers of inputDy or
// inputX (exactly, not shifted). isReuseSource (float only) lets the call
// stage inputX in place, overwriting it, so it needs less scratch.
template <typename T, bool isReuseSource = false>
inline void LayerNormGrad(const LocalTensor<T>& outputPdX, const LocalTensor<T>& resForGamma,
                          const LocalTensor<T>& inputDy, const LocalTensor<T>& inputX,
                          const LocalTensor<T>& inputVariance, const LocalTensor<T>& inputMean,
                          const LocalTensor<T>& inputGamma, LocalTensor<std::uint8_t>& sharedTmpBuffer, T epsilon,
                          LayerNormGradTiling& tiling, const LayerNormGradShapeInfo& shapeInfo = {}) {
  detail::check_type<T>();
  detail::LayerNormGrad(detail::buffer(outputPdX), detail::buffer(resForGamma), detail::buffer(inputDy),
                        detail::buffer(inputX), detail::buffer(inputVariance), detail::buffer(inputMean),
                        detail::buffer(inputGamma), detail::shared_tmp(detail::buffer(sharedTmpBuffer)),
                        static_cast<float>(epsilon), tiling, shapeInfo.dataFormat, sizeof(T), isReuseSource);
}

template <typename T, bool isReuseSource = false>
inline void LayerNormGrad(const LocalTensor<T>& outputPdX, const LocalTensor<T>& resForGamma,
                          const LocalTensor<T>& inputDy, const LocalTensor<T>& inputX,
                          const LocalTensor<T>& inputVariance, const LocalTensor<T>& inputMean,
                          const LocalTensor<T>& inputGamma, T epsilon, LayerNormGradTiling& tiling,
                          const LayerNormGradShapeInfo& shapeInfo = {}) {
  detail::check_type<T>();
  detail::LayerNormGrad(detail::buffer(outputPdX), detail::buffer(resForGamma), detail::buffer(inputDy),
                        detail::buffer(inputX), detail::buffer(inputVariance), detail::buffer(inputMean),
                        detail::buffer(inputGamma), detail::stack_tmp(), static_cast<float>(epsilon), tiling,
                        shapeInfo.dataFormat, sizeof(T), isReuseSource);
}

// Seed 001, in the device's row order (above). The outputs must not overlap
// the inputs. isReuseSource (float only) lets the call keep the products
// dy * resForGamma in resForGamma, as the device does; it is refused for half.
template <typename T, bool isReuseSource = false>
inline void LayerNormGradBeta(const LocalTensor<T>& outputPdGamma, const LocalTensor<T>& outputPdBeta,
                              const LocalTensor<T>& resForGamma, const LocalTensor<T>& inputDy,
                              const LocalTensor<std::uint8_t>& sharedTmpBuffer,
                              const LayerNormGradBetaTiling& tiling) {
  detail::check_type<T>();
  detail::LayerNormGradBeta(detail::buffer(outputPdGamma), detail::buffer(outputPdBeta),
                            detail::buffer(resForGamma), detail::buffer(inputDy),
                            detail::shared_tmp(detail::buffer(sharedTmpBuffer)), tiling, sizeof(T), isReuseSource);
}

template <typename T, bool isReuseSource = false>
inline void LayerNormGradBeta(const LocalTensor<T>& outputPdGamma, const LocalTensor<T>& outputPdBeta,
                              const LocalTensor<T>& resForGamma, const LocalTensor<T>& inputDy,
                              LayerNormGradBetaTiling& tiling) {
  detail::check_type<T>();
  detail::LayerNormGradBeta(detail::buffer(outputPdGamma), detail::buffer(outputPdBeta),
                            detail::buffer(resForGamma), detail::buffer(inputDy), detail::stack_tmp(), tiling,
                            sizeof(T), isReuseSource);
}

}  // namespace AscendC
