/*
 * What the example kernels share: the tiling copied from GM word by word,
 * as CANN's samples do, and the rows a core takes.
 */
#ifndef KERNEL_COMMON_H
#define KERNEL_COMMON_H

#include "kernel_operator.h"

template <typename Tiling>
__aicore__ inline void CopyTiling(Tiling* tiling, GM_ADDR tilingGM)
{
    uint32_t* ptr = reinterpret_cast<uint32_t*>(tiling);
    auto tiling32 = reinterpret_cast<__gm__ uint32_t*>(tilingGM);
    for (uint32_t i = 0; i < sizeof(Tiling) / sizeof(uint32_t); i++, ptr++) {
        *ptr = *(tiling32 + i);
    }
}

// Rows [first, first + count) of rowNum, rowsPerCore to a core in block
// order; the last cores may get fewer, or none.
struct CoreRows {
    uint32_t first;
    uint32_t count;
};

__aicore__ inline CoreRows RowsOfThisCore(uint32_t rowNum, uint32_t rowsPerCore)
{
    const uint32_t first = rowsPerCore * AscendC::GetBlockIdx();
    const uint32_t left = first >= rowNum ? 0 : rowNum - first;
    return {first, left < rowsPerCore ? left : rowsPerCore};
}

#endif // KERNEL_COMMON_H
