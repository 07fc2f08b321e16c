// CANN's tiling-data registration header ("register/tilingdata_base.h"):
// BEGIN_TILING_DATA_DEF ... REGISTER_TILING_DATA_CLASS
// (<lngrad/ascendc/tiling_data.hpp>), and the built-in tiling structs that
// TILING_DATA_FIELD_DEF_STRUCT nests.
#pragma once

#include "lngrad/ascendc/tiling.hpp"
#include "lngrad/ascendc/tiling_data.hpp"
