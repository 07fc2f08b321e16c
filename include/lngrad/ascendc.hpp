// The AscendC high-level LayerNorm / LayerNormGrad / LayerNormGradBeta APIs
// and their host tiling, in CANN's names and namespaces, runnable on any CPU.
//
// Kernel code written against CANN (seeds 001 and 002) compiles unchanged:
// LocalTensor<T> is a non-owning view over host memory, `half` is IEEE
// binary16 storage, and the calls run the tiling's plan (loopNum passes of
// nohCalSize rows and a tail) with sharedTmpBuffer as the real scratch.
// The arithmetic is float32: lngrad's op-level kernels (<lngrad/lngrad.hpp>)
// for LayerNorm and LayerNormGrad, the device's row-order sums for
// LayerNormGradBeta (see normalization.hpp); half inputs are widened exactly
// and results rounded to nearest-even.
//
// Layout (LayerNormGrad, LayerNormGradBeta; LayerNorm takes unpadded rows):
// inputDy, inputX, outputPdX, resForGamma hold B*S rows of storageH
// (tiling.hLength) elements, of which the first originH
// (tiling.originalHLength) are computed; the padding is ignored on input and
// written as zero. inputMean/inputVariance hold B*S values (their allocation
// may be rounded up to 32 bytes), inputGamma and the parameter gradients
// storageH values.
//
// Every refusal throws lngrad::Error naming the argument, what was expected
// and what was given; nothing is written before all checks have passed.
#pragma once

#include "lngrad/ascendc/normalization.hpp"
#include "lngrad/ascendc/tiling.hpp"
#include "lngrad/ascendc/types.hpp"
#include "lngrad/lngrad.hpp"  // lngrad::Error, which every refusal throws
