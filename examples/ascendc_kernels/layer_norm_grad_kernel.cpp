/*
 * LayerNormGrad kernel: pd_x and res_for_gamma of a [B*S, H] float problem
 * (seed 002), rows split across cores, each core walking its rows in tiles
 * through double-buffered queues.
 */
#include "kernel_common.h"
#include "kernel_operator.h"
#include "layer_norm_grad_tiling.h"

namespace {
constexpr int32_t BUFFER_NUM = 2;
constexpr uint32_t BLOCK_BYTES = 32;
}

class KernelLayerNormGrad {
public:
    __aicore__ inline KernelLayerNormGrad() {}
    __aicore__ inline void Init(GM_ADDR dy, GM_ADDR x, GM_ADDR variance, GM_ADDR mean, GM_ADDR gamma, GM_ADDR pdX,
                                GM_ADDR resForGamma, const LayerNormGradCustomTiling& tiling, AscendC::TPipe* pipeIn)
    {
        pipe = pipeIn;
        tiling_ = tiling;
        hLength = tiling.hLength;
        const CoreRows rows = RowsOfThisCore(tiling.rowNum, tiling.rowsPerCore);
        const uint32_t firstRow = rows.first;
        rowCount = rows.count;
        dyGm.SetGlobalBuffer((__gm__ float*)dy + firstRow * hLength, rowCount * hLength);
        xGm.SetGlobalBuffer((__gm__ float*)x + firstRow * hLength, rowCount * hLength);
        varianceGm.SetGlobalBuffer((__gm__ float*)variance + firstRow, rowCount);
        meanGm.SetGlobalBuffer((__gm__ float*)mean + firstRow, rowCount);
        gammaGm.SetGlobalBuffer((__gm__ float*)gamma, hLength);
        pdXGm.SetGlobalBuffer((__gm__ float*)pdX + firstRow * hLength, rowCount * hLength);
        resGm.SetGlobalBuffer((__gm__ float*)resForGamma + firstRow * hLength, rowCount * hLength);

        const uint32_t tileBytes = tiling.tileRows * hLength * sizeof(float);
        const uint32_t statBytes = (tiling.tileRows * sizeof(float) + BLOCK_BYTES - 1) / BLOCK_BYTES * BLOCK_BYTES;
        pipe->InitBuffer(inQueueDy, BUFFER_NUM, tileBytes);
        pipe->InitBuffer(inQueueX, BUFFER_NUM, tileBytes);
        pipe->InitBuffer(inQueueVariance, BUFFER_NUM, statBytes);
        pipe->InitBuffer(inQueueMean, BUFFER_NUM, statBytes);
        pipe->InitBuffer(outQueuePdX, BUFFER_NUM, tileBytes);
        pipe->InitBuffer(outQueueRes, BUFFER_NUM, tileBytes);
        pipe->InitBuffer(gammaBuf, hLength * sizeof(float));
        pipe->InitBuffer(tmpBuf, tiling.gradTmpSize);
    }

    __aicore__ inline void Process()
    {
        if (rowCount == 0) {
            return;
        }
        gammaLocal = gammaBuf.Get<float>();
        AscendC::DataCopy(gammaLocal, gammaGm, hLength);
        AscendC::SetFlag<AscendC::HardEvent::MTE2_V>(EVENT_ID0);
        AscendC::WaitFlag<AscendC::HardEvent::MTE2_V>(EVENT_ID0);
        const uint32_t tileNum = (rowCount + tiling_.tileRows - 1) / tiling_.tileRows;
        for (uint32_t i = 0; i < tileNum; i++) {
            const uint32_t rows = (i + 1 < tileNum) ? tiling_.tileRows : rowCount - i * tiling_.tileRows;
            CopyIn(i, rows);
            Compute(rows);
            CopyOut(i, rows);
        }
    }

private:
    __aicore__ inline void CopyIn(uint32_t progress, uint32_t rows)
    {
        AscendC::LocalTensor<float> dyLocal = inQueueDy.AllocTensor<float>();
        AscendC::LocalTensor<float> xLocal = inQueueX.AllocTensor<float>();
        AscendC::LocalTensor<float> varianceLocal = inQueueVariance.AllocTensor<float>();
        AscendC::LocalTensor<float> meanLocal = inQueueMean.AllocTensor<float>();
        const uint32_t offset = progress * tiling_.tileRows * hLength;
        AscendC::DataCopy(dyLocal, dyGm[offset], rows * hLength);
        AscendC::DataCopy(xLocal, xGm[offset], rows * hLength);
        // A tile's statistics are rows * 4 bytes, rarely whole 32-byte blocks.
        AscendC::DataCopyExtParams statParams{1, static_cast<uint32_t>(rows * sizeof(float)), 0, 0, 0};
        AscendC::DataCopyPadExtParams<float> padParams{false, 0, 0, 0.0f};
        AscendC::DataCopyPad(varianceLocal, varianceGm[progress * tiling_.tileRows], statParams, padParams);
        AscendC::DataCopyPad(meanLocal, meanGm[progress * tiling_.tileRows], statParams, padParams);
        inQueueDy.EnQue(dyLocal);
        inQueueX.EnQue(xLocal);
        inQueueVariance.EnQue(varianceLocal);
        inQueueMean.EnQue(meanLocal);
    }

    __aicore__ inline void Compute(uint32_t rows)
    {
        AscendC::LocalTensor<float> dyLocal = inQueueDy.DeQue<float>();
        AscendC::LocalTensor<float> xLocal = inQueueX.DeQue<float>();
        AscendC::LocalTensor<float> varianceLocal = inQueueVariance.DeQue<float>();
        AscendC::LocalTensor<float> meanLocal = inQueueMean.DeQue<float>();
        AscendC::LocalTensor<float> pdXLocal = outQueuePdX.AllocTensor<float>();
        AscendC::LocalTensor<float> resLocal = outQueueRes.AllocTensor<float>();
        AscendC::LocalTensor<uint8_t> tmpLocal = tmpBuf.Get<uint8_t>();

        AscendC::LayerNormGrad<float, false>(pdXLocal, resLocal, dyLocal, xLocal, varianceLocal, meanLocal,
                                             gammaLocal, tmpLocal, tiling_.epsilon, tiling_.gradTiling[rows - 1]);

        outQueuePdX.EnQue<float>(pdXLocal);
        outQueueRes.EnQue<float>(resLocal);
        inQueueDy.FreeTensor(dyLocal);
        inQueueX.FreeTensor(xLocal);
        inQueueVariance.FreeTensor(varianceLocal);
        inQueueMean.FreeTensor(meanLocal);
    }

    __aicore__ inline void CopyOut(uint32_t progress, uint32_t rows)
    {
        AscendC::LocalTensor<float> pdXLocal = outQueuePdX.DeQue<float>();
        AscendC::LocalTensor<float> resLocal = outQueueRes.DeQue<float>();
        const uint32_t offset = progress * tiling_.tileRows * hLength;
        AscendC::DataCopy(pdXGm[offset], pdXLocal, rows * hLength);
        AscendC::DataCopy(resGm[offset], resLocal, rows * hLength);
        outQueuePdX.FreeTensor(pdXLocal);
        outQueueRes.FreeTensor(resLocal);
    }

private:
    AscendC::TPipe* pipe = nullptr;
    AscendC::TQue<AscendC::TPosition::VECIN, BUFFER_NUM> inQueueDy;
    AscendC::TQue<AscendC::TPosition::VECIN, BUFFER_NUM> inQueueX;
    AscendC::TQue<AscendC::TPosition::VECIN, BUFFER_NUM> inQueueVariance;
    AscendC::TQue<AscendC::TPosition::VECIN, BUFFER_NUM> inQueueMean;
    AscendC::TQue<AscendC::TPosition::VECOUT, BUFFER_NUM> outQueuePdX;
    AscendC::TQue<AscendC::TPosition::VECOUT, BUFFER_NUM> outQueueRes;
    AscendC::TBuf<AscendC::TPosition::VECCALC> gammaBuf;
    AscendC::TBuf<AscendC::TPosition::VECCALC> tmpBuf;
    AscendC::GlobalTensor<float> dyGm;
    AscendC::GlobalTensor<float> xGm;
    AscendC::GlobalTensor<float> varianceGm;
    AscendC::GlobalTensor<float> meanGm;
    AscendC::GlobalTensor<float> gammaGm;
    AscendC::GlobalTensor<float> pdXGm;
    AscendC::GlobalTensor<float> resGm;
    AscendC::LocalTensor<float> gammaLocal;
    LayerNormGradCustomTiling tiling_;
    uint32_t hLength = 0;
    uint32_t rowCount = 0;
};

extern "C" __global__ __aicore__ void layer_norm_grad_custom(GM_ADDR dy, GM_ADDR x, GM_ADDR variance, GM_ADDR mean,
                                                             GM_ADDR gamma, GM_ADDR pdX, GM_ADDR resForGamma,
                                                             GM_ADDR workspace, GM_ADDR tiling)
{
    KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_AIV_ONLY);
    LayerNormGradCustomTiling tilingData;
    CopyTiling(&tilingData, tiling);
    AscendC::TPipe pipe;
    KernelLayerNormGrad op;
    op.Init(dy, x, variance, mean, gamma, pdX, resForGamma, tilingData, &pipe);
    op.Process();
}
