/*
 * LayerNorm kernel: y, mean and variance of a [B*S, H] float problem, the
 * forward pass whose mean and variance the LayerNormGrad kernel takes.
 * Rows are split across cores; each core walks its rows in tiles through
 * double-buffered queues.
 */
#include "kernel_common.h"
#include "kernel_operator.h"
#include "layer_norm_tiling.h"

namespace {
constexpr int32_t BUFFER_NUM = 2;
constexpr uint32_t BLOCK_BYTES = 32;
}

class KernelLayerNorm {
public:
    __aicore__ inline KernelLayerNorm() {}
    __aicore__ inline void Init(GM_ADDR x, GM_ADDR gamma, GM_ADDR beta, GM_ADDR y, GM_ADDR mean, GM_ADDR variance,
                                const LayerNormCustomTiling& tiling, AscendC::TPipe* pipeIn)
    {
        pipe = pipeIn;
        tiling_ = tiling;
        hLength = tiling.hLength;
        const CoreRows rows = RowsOfThisCore(tiling.rowNum, tiling.rowsPerCore);
        const uint32_t firstRow = rows.first;
        rowCount = rows.count;
        xGm.SetGlobalBuffer((__gm__ float*)x + firstRow * hLength, rowCount * hLength);
        yGm.SetGlobalBuffer((__gm__ float*)y + firstRow * hLength, rowCount * hLength);
        meanGm.SetGlobalBuffer((__gm__ float*)mean + firstRow, rowCount);
        varianceGm.SetGlobalBuffer((__gm__ float*)variance + firstRow, rowCount);
        gammaGm.SetGlobalBuffer((__gm__ float*)gamma, hLength);
        betaGm.SetGlobalBuffer((__gm__ float*)beta, hLength);

        const uint32_t tileBytes = tiling.tileRows * hLength * sizeof(float);
        const uint32_t statBytes = (tiling.tileRows * sizeof(float) + BLOCK_BYTES - 1) / BLOCK_BYTES * BLOCK_BYTES;
        pipe->InitBuffer(inQueueX, BUFFER_NUM, tileBytes);
        pipe->InitBuffer(outQueueY, BUFFER_NUM, tileBytes);
        pipe->InitBuffer(outQueueMean, BUFFER_NUM, statBytes);
        pipe->InitBuffer(outQueueVariance, BUFFER_NUM, statBytes);
        pipe->InitBuffer(paramBuf, 2 * hLength * sizeof(float));  // gamma | beta
        pipe->InitBuffer(tmpBuf, tiling.tmpSize);
    }

    __aicore__ inline void Process()
    {
        if (rowCount == 0) {
            return;
        }
        AscendC::LocalTensor<float> params = paramBuf.Get<float>();
        gammaLocal = params;
        betaLocal = params[hLength];
        AscendC::DataCopy(gammaLocal, gammaGm, hLength);
        AscendC::DataCopy(betaLocal, betaGm, hLength);
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
        AscendC::LocalTensor<float> xLocal = inQueueX.AllocTensor<float>();
        AscendC::DataCopy(xLocal, xGm[progress * tiling_.tileRows * hLength], rows * hLength);
        inQueueX.EnQue(xLocal);
    }

    __aicore__ inline void Compute(uint32_t rows)
    {
        AscendC::LocalTensor<float> xLocal = inQueueX.DeQue<float>();
        AscendC::LocalTensor<float> yLocal = outQueueY.AllocTensor<float>();
        AscendC::LocalTensor<float> meanLocal = outQueueMean.AllocTensor<float>();
        AscendC::LocalTensor<float> varianceLocal = outQueueVariance.AllocTensor<float>();
        AscendC::LocalTensor<uint8_t> tmpLocal = tmpBuf.Get<uint8_t>();
        // The call leaves its tail pass's sizes in the tiling: each call gets a fresh copy.
        LayerNormTiling lnTiling = tiling_.lnTiling[rows - 1];
        AscendC::LayerNorm<float, false>(yLocal, meanLocal, varianceLocal, xLocal, gammaLocal, betaLocal, tmpLocal,
                                         tiling_.epsilon, lnTiling);
        outQueueY.EnQue<float>(yLocal);
        outQueueMean.EnQue<float>(meanLocal);
        outQueueVariance.EnQue<float>(varianceLocal);
        inQueueX.FreeTensor(xLocal);
    }

    __aicore__ inline void CopyOut(uint32_t progress, uint32_t rows)
    {
        AscendC::LocalTensor<float> yLocal = outQueueY.DeQue<float>();
        AscendC::LocalTensor<float> meanLocal = outQueueMean.DeQue<float>();
        AscendC::LocalTensor<float> varianceLocal = outQueueVariance.DeQue<float>();
        AscendC::DataCopy(yGm[progress * tiling_.tileRows * hLength], yLocal, rows * hLength);
        // A tile's statistics are rows * 4 bytes, rarely whole 32-byte blocks.
        AscendC::DataCopyExtParams statParams{1, static_cast<uint32_t>(rows * sizeof(float)), 0, 0, 0};
        AscendC::DataCopyPad(meanGm[progress * tiling_.tileRows], meanLocal, statParams);
        AscendC::DataCopyPad(varianceGm[progress * tiling_.tileRows], varianceLocal, statParams);
        outQueueY.FreeTensor(yLocal);
        outQueueMean.FreeTensor(meanLocal);
        outQueueVariance.FreeTensor(varianceLocal);
    }

private:
    AscendC::TPipe* pipe = nullptr;
    AscendC::TQue<AscendC::TPosition::VECIN, BUFFER_NUM> inQueueX;
    AscendC::TQue<AscendC::TPosition::VECOUT, BUFFER_NUM> outQueueY;
    AscendC::TQue<AscendC::TPosition::VECOUT, BUFFER_NUM> outQueueMean;
    AscendC::TQue<AscendC::TPosition::VECOUT, BUFFER_NUM> outQueueVariance;
    AscendC::TBuf<AscendC::TPosition::VECCALC> paramBuf;
    AscendC::TBuf<AscendC::TPosition::VECCALC> tmpBuf;
    AscendC::GlobalTensor<float> xGm;
    AscendC::GlobalTensor<float> yGm;
    AscendC::GlobalTensor<float> meanGm;
    AscendC::GlobalTensor<float> varianceGm;
    AscendC::GlobalTensor<float> gammaGm;
    AscendC::GlobalTensor<float> betaGm;
    AscendC::LocalTensor<float> gammaLocal;
    AscendC::LocalTensor<float> betaLocal;
    LayerNormCustomTiling tiling_;
    uint32_t hLength = 0;
    uint32_t rowCount = 0;
};

extern "C" __global__ __aicore__ void layer_norm_custom(GM_ADDR x, GM_ADDR gamma, GM_ADDR beta, GM_ADDR y,
                                                        GM_ADDR mean, GM_ADDR variance, GM_ADDR workspace,
                                                        GM_ADDR tiling)
{
    KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_AIV_ONLY);
    LayerNormCustomTiling tilingData;
    CopyTiling(&tilingData, tiling);
    AscendC::TPipe pipe;
    KernelLayerNorm op;
    op.Init(x, gamma, beta, y, mean, variance, tilingData, &pipe);
    op.Process();
}
