// CANN's kernel-side umbrella header ("kernel_operator.h"): the AscendC
// programming model of <lngrad/ascendc/kernel.hpp> and the high-level APIs,
// for kernel files written against CANN. Reached through lngrad::ascendc.
#pragma once

#include "kernel_tiling/kernel_tiling.h"
#include "lngrad/ascendc.hpp"
