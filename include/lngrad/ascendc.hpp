// The AscendC high-level LayerNormGrad / LayerNormGradBeta APIs and their
// host tiling, in CANN's names and namespaces, runnable on any CPU.
//
// Kernel code written against CANN (seeds 001 and 002) compiles unchanged:
// LocalTensor<T> is a non-owning view over host memory, `half` is IEEE
// binary16 storage, and the calls run the tiling's plan (loopNum passes of
// nohCalSize rows and a tail) with sharedTmpBuffer as the real scratch.
// The arithmetic is lngrad's op-level float32 kernels (<lngrad/lngrad.hpp>);
// half inputs are widened exactly and results rounded to nearest-even.
//
// Layout: inputDy, inputX, outputPdX, resForGamma hold B*S rows of storageH
// (tiling.hLength) elements, of which the first originH
// (tiling.originalHLength) are computed; the padding is ignored on input and
// written as zero. inputMean/inputVariance hold B*S values (their allocation
// may be rounded up to 32 bytes), inputGamma and the parameter gradients
// storageH values.
//
// Every refusal throws lngrad::Error naming the argument, what was expected
// and what was given; nothing is written before all checks have passed.
#pragma once

#include <cstddef>
#include <cstdint>
#include <type_traits>
#include <vector>

#include "lngrad/half.hpp"
#include "lngrad/lngrad.hpp"

// ---- ge::Shape: the host tiling's shape argument ---------------------------

namespace ge {

class Shape {
 public:
  Shape() = default;
  explicit Shape(const std::vector<std::int64_t>& dims) : dims_(dims) {}

  std::size_t GetDimNum() const { return dims_.size(); }
  // 0 for an axis past the last, as CANN's.
  std::int64_t GetDim(std::size_t idx) const { return idx < dims_.size() ? dims_[idx] : 0; }
  std::vector<std::int64_t> GetDims() const { return dims_; }
  // Product of the dims; 0 for a shape without dims.
  std::int64_t GetShapeSize() const {
    if (dims_.empty()) return 0;
    std::int64_t n = 1;
    for (std::int64_t d : dims_) n *= d;
    return n;
  }

 private:
  std::vector<std::int64_t> dims_;
};

}  // namespace ge

namespace AscendC {

// ---- Element type and tensor view -----------------------------------------

// IEEE binary16 storage. Converts implicitly from any arithmetic value
// (through float, rounding to nearest-even) and to float (exactly).
class half {
 public:
  half() = default;
  template <typename U, typename = std::enable_if_t<std::is_arithmetic_v<U>>>
  half(U value) : bits_(lngrad::float_to_float16(static_cast<float>(value))) {}  // NOLINT(google-explicit-constructor)
  operator float() const { return lngrad::float16_to_float(bits_); }  // NOLINT(google-explicit-constructor)

  static half FromBits(std::uint16_t bits) {
    half h;
    h.bits_ = bits;
    return h;
  }
  std::uint16_t Bits() const { return bits_; }

 private:
  std::uint16_t bits_ = 0;
};
static_assert(sizeof(half) == 2 && std::is_trivially_copyable_v<half>);

// A non-owning view of `count` elements of T. operator[] is an offset view
// (as on the device: tensor[pos] starts at element pos); operator() and
// GetValue/SetValue access one element. No bounds are checked here; the
// LayerNormGrad calls check every size against the tiling.
template <typename T>
class LocalTensor {
 public:
  LocalTensor() = default;
  LocalTensor(T* data, std::uint32_t count) : data_(data), size_(count) {}

  std::uint32_t GetSize() const { return size_; }
  void SetSize(std::uint32_t count) { size_ = count; }
  T GetValue(std::uint32_t index) const { return data_[index]; }
  void SetValue(std::uint32_t index, T value) const { data_[index] = value; }
  T& operator()(std::uint32_t index) const { return data_[index]; }
  LocalTensor operator[](std::uint32_t offset) const {
    return LocalTensor(data_ + offset, offset < size_ ? size_ - offset : 0);
  }
  T* GetPhyAddr() const { return data_; }
  T* GetPhyAddr(std::uint32_t offset) const { return data_ + offset; }

  // The same bytes seen as U (the element count scales with the sizes).
  template <typename U>
  LocalTensor<U> ReinterpretCast() const {
    return LocalTensor<U>(reinterpret_cast<U*>(data_),
                          static_cast<std::uint32_t>(std::uint64_t{size_} * sizeof(T) / sizeof(U)));
  }

 private:
  T* data_ = nullptr;
  std::uint32_t size_ = 0;
};

enum class DataFormat : std::uint8_t { ND = 0, NZ, NCHW, NC1HWC0, NHWC };

struct LayerNormGradShapeInfo {
  DataFormat dataFormat = DataFormat::ND;
};

// ---- Tiling structs (CANN's fields, in CANN's order) ------------------------

namespace tiling {

struct LayerNormGradTiling {
  std::uint32_t stackBufferSize = 0;  // bytes
  std::uint32_t bLength = 0;
  std::uint32_t sLength = 0;
  std::uint32_t hLength = 0;  // storageH
  std::uint32_t originalHLength = 0;
  std::uint32_t oneCalSize = 0;  // elements per pass: nohCalSize * hLength
  std::uint32_t nohCalSize = 0;  // rows per pass
  std::uint32_t loopNum = 0;
  std::uint32_t tailSize = 0;
  std::uint32_t nohTailSize = 0;
  std::uint32_t tmpTensorBSHPos = 0;
  std::uint32_t tmpTensorBSHSize = 0;
  std::uint32_t pdVarTensorPos = 0;
  std::uint32_t pdVarTensorSize = 0;
  std::uint32_t pdMeanTensorPos = 0;
  std::uint32_t pdMeanTensorSize = 0;
  std::uint32_t x1TensorPos = 0;
  std::uint32_t x1TensorSize = 0;
  std::uint32_t x2TensorPos = 0;
  std::uint32_t x2TensorSize = 0;
  std::uint32_t x3TensorPos = 0;
  std::uint32_t x3TensorSize = 0;
  std::uint32_t tmpTensorPos = 0;
  std::uint32_t tmpTensorSize = 0;
  std::uint32_t tmpTensor1Pos = 0;
  std::uint32_t tmpTensor1Size = 0;
  std::uint32_t tmpTensor2Pos = 0;
  std::uint32_t tmpTensor2Size = 0;
  std::uint32_t lastDimValueBack = 0;        // bits of float 1/originH
  std::uint32_t lastDimValueBackMulTwo = 0;  // bits of float 2/originH
};

struct LayerNormGradBetaTiling {
  std::uint32_t stackBufferSize = 0;  // a count of floats
  std::uint32_t bLength = 0;
  std::uint32_t sLength = 0;
  std::uint32_t hLength = 0;
  std::uint32_t originalHLength = 0;
  std::uint32_t bshLength = 0;
  std::uint32_t bsLength = 0;
  std::uint32_t oneCalSize = 0;  // elements per pass
  std::uint32_t numberOfTmpBuf = 0;
  std::uint32_t loopRound = 0;
  std::uint32_t inputTailSize = 0;
  std::uint32_t inputTailPos = 0;
  std::uint32_t bsTailSize = 0;
  std::uint32_t bshCurLength = 0;
  std::uint32_t bsCurLength = 0;
  std::uint32_t gammaTempTensorPos = 0;
  std::uint32_t betaTempTensorPos = 0;
  std::uint32_t inputDyTmpTensorPos = 0;
  std::uint32_t resForGammaTmpTensorPos = 0;
  std::uint32_t reserved = 0;
};

}  // namespace tiling

using tiling::LayerNormGradBetaTiling;
using tiling::LayerNormGradTiling;

// ---- Host tiling -------------------------------------------------------------
// srcShape is {B, S, storageH, originH}; typeSize 2 (half) or 4 (float). The
// numbers are CANN's for the classic chips (see FACTS: tmp sizes and tiling).
// Invalid arguments (not 4 dims, a dim < 1, another typeSize, a buffer too
// small for one row, sizes beyond 32 bits) throw lngrad::Error.

void GetLayerNormGradMaxMinTmpSize(const ge::Shape& srcShape, std::uint32_t typeSize, bool isReuseSource,
                                   std::uint32_t& maxValue, std::uint32_t& minValue);
void GetLayerNormGradNDTilingInfo(const ge::Shape srcShape, std::uint32_t stackBufferSize, std::uint32_t typeSize,
                                  bool isReuseSource, LayerNormGradTiling& tiling);
void GetLayerNormGradBetaMaxMinTmpSize(const ge::Shape& srcShape, std::uint32_t typeSize, bool isReuseSource,
                                       std::uint32_t& maxValue, std::uint32_t& minValue);
void GetLayerNormGradBetaNDTilingInfo(const ge::Shape srcShape, std::uint32_t stackBufferSize,
                                      std::uint32_t typeSize, bool isReuseSource, LayerNormGradBetaTiling& tiling);

// ---- Kernel entry points (implemented in src/ascendc) -----------------------

namespace detail {

struct Buffer {
  void* data;
  std::uint32_t count;  // elements of the call's type
};

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
