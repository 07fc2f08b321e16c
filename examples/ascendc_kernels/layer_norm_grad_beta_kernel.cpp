/*
 * LayerNormGradBeta kernel: each core sums pd_gamma = sum(dy * res_for_gamma)
 * and pd_beta = sum(dy) over its rows (seed 001), tile by tile into float
 * accumulators, and writes them to its slot of a [blockDim, 2, H] partials
 * tensor; the host adds the cores' partials in core order.
 */
#include "kernel_common.h"
#include "kernel_operator.h"
#include "layer_norm_grad_tiling.h"

namespace {
constexpr int32_t BUFFER_NUM = 2;
}

class KernelLayerNormGradBeta {
public:
    __aicore__ inline KernelLayerNormGradBeta() {}
    __aicore__ inline void Init(GM_ADDR resForGamma, GM_ADDR dy, GM_ADDR partials,
                                const LayerNormGradCustomTiling& tiling, AscendC::TPipe* pipeIn)
    {
        pipe = pipeIn;
        tiling_ = tiling;
        hLength = tiling.hLength;
        const CoreRows rows = RowsOfThisCore(tiling.rowNum, tiling.rowsPerCore);
        const uint32_t firstRow = rows.first;
        rowCount = rows.count;
        resGm.SetGlobalBuffer((__gm__ float*)resForGamma + firstRow * hLength, rowCount * hLength);
        dyGm.SetGlobalBuffer((__gm__ float*)dy + firstRow * hLength, rowCount * hLength);
        partialGm.SetGlobalBuffer((__gm__ float*)partials + 2 * hLength * AscendC::GetBlockIdx(), 2 * hLength);

        const uint32_t tileBytes = tiling.tileRows * hLength * sizeof(float);
        pipe->InitBuffer(inQueueRes, BUFFER_NUM, tileBytes);
        pipe->InitBuffer(inQueueDy, BUFFER_NUM, tileBytes);
        pipe->InitBuffer(outQueueSums, 1, 2 * hLength * sizeof(float));
        pipe->InitBuffer(tileSumBuf, 2 * hLength * sizeof(float));
        pipe->InitBuffer(tmpBuf, tiling.betaTmpSize);
    }

    __aicore__ inline void Process()
    {
        AscendC::LocalTensor<float> sums = outQueueSums.AllocTensor<float>();
        AscendC::Duplicate(sums, 0.0f, static_cast<int32_t>(2 * hLength));
        const uint32_t tileNum = (rowCount + tiling_.tileRows - 1) / tiling_.tileRows;
        for (uint32_t i = 0; i < tileNum; i++) {
            const uint32_t rows = (i + 1 < tileNum) ? tiling_.tileRows : rowCount - i * tiling_.tileRows;
            CopyIn(i, rows);
            Compute(rows, sums);
        }
        outQueueSums.EnQue<float>(sums);
        CopyOut();
    }

private:
    __aicore__ inline void CopyIn(uint32_t progress, uint32_t rows)
    {
        AscendC::LocalTensor<float> resLocal = inQueueRes.AllocTensor<float>();
        AscendC::LocalTensor<float> dyLocal = inQueueDy.AllocTensor<float>();
        const uint32_t offset = progress * tiling_.tileRows * hLength;
        AscendC::DataCopy(resLocal, resGm[offset], rows * hLength);
        AscendC::DataCopy(dyLocal, dyGm[offset], rows * hLength);
        inQueueRes.EnQue(resLocal);
        inQueueDy.EnQue(dyLocal);
    }

    __aicore__ inline void Compute(uint32_t rows, const AscendC::LocalTensor<float>& sums)
    {
        AscendC::LocalTensor<float> resLocal = inQueueRes.DeQue<float>();
        AscendC::LocalTensor<float> dyLocal = inQueueDy.DeQue<float>();
        AscendC::LocalTensor<float> tileSums = tileSumBuf.Get<float>();
        AscendC::LocalTensor<float> tileGamma = tileSums;
        AscendC::LocalTensor<float> tileBeta = tileSums[hLength];
        AscendC::LocalTensor<uint8_t> tmpLocal = tmpBuf.Get<uint8_t>();

        AscendC::LayerNormGradBeta<float, false>(tileGamma, tileBeta, resLocal, dyLocal, tmpLocal,
                                                 tiling_.betaTiling[rows - 1]);
        AscendC::Add(sums, sums, tileSums, static_cast<int32_t>(2 * hLength));

        inQueueRes.FreeTensor(resLocal);
        inQueueDy.FreeTensor(dyLocal);
    }

    __aicore__ inline void CopyOut()
    {
        AscendC::LocalTensor<float> sums = outQueueSums.DeQue<float>();
        AscendC::DataCopy(partialGm, sums, 2 * hLength);
        outQueueSums.FreeTensor(sums);
    }

private:
    AscendC::TPipe* pipe = nullptr;
    AscendC::TQue<AscendC::TPosition::VECIN, BUFFER_NUM> inQueueRes;
    AscendC::TQue<AscendC::TPosition::VECIN, BUFFER_NUM> inQueueDy;
    AscendC::TQue<AscendC::TPosition::VECOUT, 1> outQueueSums;
    AscendC::TBuf<AscendC::TPosition::VECCALC> tileSumBuf;
    AscendC::TBuf<AscendC::TPosition::VECCALC> tmpBuf;
    AscendC::GlobalTensor<float> resGm;
    AscendC::GlobalTensor<float> dyGm;
    AscendC::GlobalTensor<float> partialGm;
    LayerNormGradCustomTiling tiling_;
    uint32_t hLength = 0;
    uint32_t rowCount = 0;
};

extern "C" __global__ __aicore__ void layer_norm_grad_beta_custom(GM_ADDR resForGamma, GM_ADDR dy, GM_ADDR partials,
                                                                  GM_ADDR workspace, GM_ADDR tiling)
{
    KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_AIV_ONLY);
    LayerNormGradCustomTiling tilingData;
    CopyTiling(&tilingData, tiling);
    AscendC::TPipe pipe;
    KernelLayerNormGradBeta op;
    op.Init(resForGamma, dy, partials, tilingData, &pipe);
    op.Process();
}
