// CANN's CPU-debug header ("tikicpulib.h"): what a host main calls to run a
// kernel on the CPU: AscendC::GmAlloc / GmFree, AscendC::SetKernelMode,
// ICPU_RUN_KF and ICPU_SET_TILING_KEY.
#pragma once

#include "kernel_operator.h"
#include "lngrad/ascendc/launch.hpp"
