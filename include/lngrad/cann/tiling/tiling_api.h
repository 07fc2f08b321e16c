// CANN's host tiling header ("tiling/tiling_api.h"): ge::Shape and the
// Get*TmpSize / Get*NDTilingInfo functions.
#pragma once

#include "lngrad/ascendc/tiling.hpp"
