// CANN's CPU-debug header ("tikicpulib.h"): what host mains call to run a
// kernel on the CPU (AscendC::GmAlloc, ICPU_RUN_KF, ...).
#pragma once

#include "kernel_operator.h"
