/*
 * Tiling of the LayerNorm example kernel, shared by the host (which fills
 * it) and the kernel (which copies it from GM word by word): rows split
 * across cores, each core's rows in tiles, and the LayerNorm API tiling for
 * every tile height (the last tile of a core may be shorter).
 */
#ifndef LAYER_NORM_TILING_H
#define LAYER_NORM_TILING_H

#include <cstdint>

#include "kernel_tiling/kernel_tiling.h"

constexpr uint32_t LN_MAX_TILE_ROWS = 8;

struct LayerNormCustomTiling {
    uint32_t rowNum;       // B * S
    uint32_t hLength;      // H, rows 32-byte aligned (LayerNorm takes no padding)
    uint32_t rowsPerCore;  // the last core may get fewer
    uint32_t tileRows;     // rows per tile, at most LN_MAX_TILE_ROWS
    uint32_t tmpSize;      // bytes of the LayerNorm tmp buffer
    float epsilon;
    LayerNormTiling lnTiling[LN_MAX_TILE_ROWS];  // [r - 1]: a tile of r rows
};

#endif // LAYER_NORM_TILING_H
