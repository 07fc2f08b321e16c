// CANN's kernel-side tiling header: the tiling structs under the unqualified
// names kernel code uses (LayerNormTiling, LayerNormGradTiling, ...), the
// same types as AscendC::tiling:: and optiling:: ones.
#pragma once

#include "lngrad/ascendc/tiling.hpp"

using AscendC::tiling::LayerNormGradBetaTiling;
using AscendC::tiling::LayerNormGradTiling;
using AscendC::tiling::LayerNormTiling;
