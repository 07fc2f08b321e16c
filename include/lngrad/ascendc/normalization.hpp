// The AscendC high-level normalization APIs (seeds 001 and 002) on
// LocalTensors: LayerNormGrad and LayerNormGradBeta, computed by lngrad's
// op-level float32 kernels through the tiling's plan.
#pragma once

#include <cstdint>
#include <type_traits>

#include "lngrad/ascendc/tiling.hpp"
#include "lngrad/ascendc/types.hpp"

namespace AscendC {

// ---- Kernel entry points (implemented in src/ascendc) -----------------------

namespace detail {

// scratch.data == nullptr: the library provides the scratch.
void LayerNormGrad(Buffer outputPdX, Buffer resForGamma, Buffer inputDy, Buffer inputX, Buffer inputVariance,
                   Buffer inputMean, Buffer inputGamma, Buffer scratch, float epsilon,
                   const LayerNormGradTiling& tiling, DataFormat format, std::uint32_t typeSize,
                   bool isReuseSource);
void LayerNormGradBeta(Buffer outputPdGamma, Buffer outputPdBeta, Buffer resForGamma, Buffer inputDy,
                       Buffer scratch, const LayerNormGradBetaTiling& tiling, std::uint32_t typeSize,
                       bool isReuseSource);

template <typename T>
Buffer buffer(const LocalTensor<T>& t) {
  return {static_cast<void*>(t.GetPhyAddr()), t.GetSize()};
}

template <typename T>
constexpr void check_type() {
  static_assert(std::is_same_v<T, half> || std::is_same_v<T, float>,
                "AscendC::LayerNormGrad/LayerNormGradBeta: T must be AscendC::half or float");
}

}  // namespace detail

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
                        detail::buffer(inputGamma), detail::buffer(sharedTmpBuffer), static_cast<float>(epsilon),
                        tiling, shapeInfo.dataFormat, sizeof(T), isReuseSource);
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
                        detail::buffer(inputGamma), {nullptr, 0}, static_cast<float>(epsilon), tiling,
                        shapeInfo.dataFormat, sizeof(T), isReuseSource);
}

// Seed 001. The outputs must not overlap the inputs. isReuseSource is
// accepted for float (the inputs are left intact) and refused for half.
template <typename T, bool isReuseSource = false>
inline void LayerNormGradBeta(const LocalTensor<T>& outputPdGamma, const LocalTensor<T>& outputPdBeta,
                              const LocalTensor<T>& resForGamma, const LocalTensor<T>& inputDy,
                              const LocalTensor<std::uint8_t>& sharedTmpBuffer,
                              const LayerNormGradBetaTiling& tiling) {
  detail::check_type<T>();
  detail::LayerNormGradBeta(detail::buffer(outputPdGamma), detail::buffer(outputPdBeta),
                            detail::buffer(resForGamma), detail::buffer(inputDy), detail::buffer(sharedTmpBuffer),
                            tiling, sizeof(T), isReuseSource);
}

template <typename T, bool isReuseSource = false>
inline void LayerNormGradBeta(const LocalTensor<T>& outputPdGamma, const LocalTensor<T>& outputPdBeta,
                              const LocalTensor<T>& resForGamma, const LocalTensor<T>& inputDy,
                              LayerNormGradBetaTiling& tiling) {
  detail::check_type<T>();
  detail::LayerNormGradBeta(detail::buffer(outputPdGamma), detail::buffer(outputPdBeta),
                            detail::buffer(resForGamma), detail::buffer(inputDy), {nullptr, 0}, tiling, sizeof(T),
                            isReuseSource);
}

}  // namespace AscendC
