// CANN's host tiling header ("tiling/tiling_api.h"): ge::Shape /
// AscendC::TensorShape, the tiling structs (also as optiling::) and the
// Get*TmpSize / Get*NDTilingInfo functions.
#pragma once

#include "lngrad/ascendc/tiling.hpp"
