// CANN's tiling-data registration header ("register/tilingdata_base.h").
#pragma once

#include "lngrad/ascendc/tiling.hpp"
