/*
 * Tiling of the LayerNormGrad and LayerNormGradBeta example kernels, shared
 * by the host (which fills it) and the kernels (which copy it from GM word
 * by word). Rows are split across cores; each core walks its rows in tiles
 * of tileRows rows, and the last tile of a core may be shorter, so the
 * API tilings are kept for every tile height.
 */
#ifndef LAYER_NORM_GRAD_TILING_H
#define LAYER_NORM_GRAD_TILING_H

#include <cstdint>

#include "kernel_tiling/kernel_tiling.h"

constexpr uint32_t MAX_TILE_ROWS = 8;

struct LayerNormGradCustomTiling {
    uint32_t rowNum;        // B * S
    uint32_t hLength;       // storage H (rows padded to 32 bytes)
    uint32_t originHLength; // H
    uint32_t rowsPerCore;   // the last core may get fewer
    uint32_t tileRows;      // rows per tile, at most MAX_TILE_ROWS
    uint32_t gradTmpSize;   // bytes of the LayerNormGrad tmp buffer
    uint32_t betaTmpSize;   // bytes of the LayerNormGradBeta tmp buffer
    float epsilon;
    LayerNormGradTiling gradTiling[MAX_TILE_ROWS];         // [r - 1]: a tile of r rows
    LayerNormGradBetaTiling betaTiling[MAX_TILE_ROWS];     // [r - 1]: a tile of r rows
};

#endif // LAYER_NORM_GRAD_TILING_H
