/*
 * Tiling data of the quickstart LayerNormGrad kernel, defined with CANN's
 * tiling-data macros: the host sets it and saves it to a buffer, the kernel
 * reads it with GET_TILING_DATA.
 */
#ifndef QUICKSTART_LAYER_NORM_GRAD_TILING_H
#define QUICKSTART_LAYER_NORM_GRAD_TILING_H

#include "register/tilingdata_base.h"
#include "tiling/tiling_api.h"

namespace optiling {
BEGIN_TILING_DATA_DEF(LayerNormGradQuickTilingData)
TILING_DATA_FIELD_DEF(uint32_t, rowsPerCore);  // a multiple of tileRows
TILING_DATA_FIELD_DEF(uint32_t, tileRows);
TILING_DATA_FIELD_DEF(uint32_t, hLength);
TILING_DATA_FIELD_DEF(float, epsilon);
TILING_DATA_FIELD_DEF_STRUCT(LayerNormGradTiling, gradTiling);  // one tile
END_TILING_DATA_DEF;

REGISTER_TILING_DATA_CLASS(LayerNormGradQuick, LayerNormGradQuickTilingData)
}  // namespace optiling

#endif  // QUICKSTART_LAYER_NORM_GRAD_TILING_H
