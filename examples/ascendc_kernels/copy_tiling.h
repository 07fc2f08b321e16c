/*
 * The example kernels' tiling arrives as GM_ADDR; each kernel copies it
 * into its struct word by word, as CANN's samples do.
 */
#ifndef COPY_TILING_H
#define COPY_TILING_H

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

#endif // COPY_TILING_H
