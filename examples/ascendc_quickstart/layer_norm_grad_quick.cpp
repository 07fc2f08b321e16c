/*
 * A LayerNormGrad kernel: each core takes rowsPerCore rows of [rows, H]
 * float tensors and computes pd_x and res_for_gamma tile by tile. Tiling by
 * GET_TILING_DATA, single-buffered queues, gamma in a TBuf, and the
 * LayerNormGrad tmp buffer taken from the rest of the unified buffer with
 * PopStackBuffer.
 */
#include "kernel_operator.h"
#include "layer_norm_grad_tiling.h"

class KernelLayerNormGradQuick {
public:
    __aicore__ inline void Init(GM_ADDR dy, GM_ADDR x, GM_ADDR variance, GM_ADDR mean, GM_ADDR gamma, GM_ADDR pdX,
                                GM_ADDR res, uint32_t rowsPerCore, uint32_t tileRows, uint32_t hLength)
    {
        this->tileRows = tileRows;
        this->hLength = hLength;
        tileNum = rowsPerCore / tileRows;
        const uint32_t first = rowsPerCore * AscendC::GetBlockIdx();
        dyGm.SetGlobalBuffer((__gm__ float*)dy + first * hLength, rowsPerCore * hLength);
        xGm.SetGlobalBuffer((__gm__ float*)x + first * hLength, rowsPerCore * hLength);
        varianceGm.SetGlobalBuffer((__gm__ float*)variance + first, rowsPerCore);
        meanGm.SetGlobalBuffer((__gm__ float*)mean + first, rowsPerCore);
        gammaGm.SetGlobalBuffer((__gm__ float*)gamma, hLength);
        pdXGm.SetGlobalBuffer((__gm__ float*)pdX + first * hLength, rowsPerCore * hLength);
        resGm.SetGlobalBuffer((__gm__ float*)res + first * hLength, rowsPerCore * hLength);
        pipe.InitBuffer(inQueue, 1, 2 * tileRows * hLength * sizeof(float));  // dy | x
        pipe.InitBuffer(statQueue, 1, 2 * tileRows * sizeof(float));          // variance | mean
        pipe.InitBuffer(outQueue, 1, 2 * tileRows * hLength * sizeof(float)); // pd_x | res
        pipe.InitBuffer(gammaBuf, hLength * sizeof(float));
    }

    __aicore__ inline void Process(float epsilon, LayerNormGradTiling& tiling)
    {
        AscendC::LocalTensor<float> gammaLocal = gammaBuf.Get<float>();
        AscendC::DataCopy(gammaLocal, gammaGm, hLength);
        AscendC::LocalTensor<uint8_t> tmp;
        AscendC::PopStackBuffer<uint8_t, AscendC::TPosition::LCM>(tmp);
        const uint32_t tile = tileRows * hLength;
        for (uint32_t i = 0; i < tileNum; i++) {
            AscendC::LocalTensor<float> in = inQueue.AllocTensor<float>();
            AscendC::LocalTensor<float> stats = statQueue.AllocTensor<float>();
            AscendC::DataCopy(in, dyGm[i * tile], tile);
            AscendC::DataCopy(in[tile], xGm[i * tile], tile);
            AscendC::DataCopy(stats, varianceGm[i * tileRows], tileRows);
            AscendC::DataCopy(stats[tileRows], meanGm[i * tileRows], tileRows);
            inQueue.EnQue(in);
            statQueue.EnQue(stats);

            in = inQueue.DeQue<float>();
            stats = statQueue.DeQue<float>();
            AscendC::LocalTensor<float> out = outQueue.AllocTensor<float>();
            AscendC::LayerNormGrad<float, false>(out, out[tile], in, in[tile], stats, stats[tileRows], gammaLocal,
                                                 tmp, epsilon, tiling);
            outQueue.EnQue(out);
            inQueue.FreeTensor(in);
            statQueue.FreeTensor(stats);

            out = outQueue.DeQue<float>();
            AscendC::DataCopy(pdXGm[i * tile], out, tile);
            AscendC::DataCopy(resGm[i * tile], out[tile], tile);
            outQueue.FreeTensor(out);
        }
    }

private:
    AscendC::TPipe pipe;
    AscendC::TQue<AscendC::TPosition::VECIN, 1> inQueue, statQueue;
    AscendC::TQue<AscendC::TPosition::VECOUT, 1> outQueue;
    AscendC::TBuf<AscendC::TPosition::VECCALC> gammaBuf;
    AscendC::GlobalTensor<float> dyGm, xGm, varianceGm, meanGm, gammaGm, pdXGm, resGm;
    uint32_t tileRows = 0, hLength = 0, tileNum = 0;
};

extern "C" __global__ __aicore__ void layer_norm_grad_quick(GM_ADDR dy, GM_ADDR x, GM_ADDR variance, GM_ADDR mean,
                                                            GM_ADDR gamma, GM_ADDR pdX, GM_ADDR res,
                                                            GM_ADDR workspace, GM_ADDR tiling)
{
    GET_TILING_DATA(tilingData, tiling);
    KernelLayerNormGradQuick op;
    op.Init(dy, x, variance, mean, gamma, pdX, res, tilingData.rowsPerCore, tilingData.tileRows,
            tilingData.hLength);
    op.Process(tilingData.epsilon, tilingData.gradTiling);
}
