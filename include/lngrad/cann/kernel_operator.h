// CANN's kernel-side umbrella header ("kernel_operator.h"): the AscendC
// programming model (<lngrad/ascendc/kernel.hpp>, kernel_ops.hpp), the
// high-level normalization APIs and the tiling structs, for kernel files
// written against CANN. Reached through the CMake target lngrad::ascendc.
#pragma once

#include "kernel_tiling/kernel_tiling.h"
#include "lngrad/ascendc.hpp"
#include "lngrad/ascendc/kernel.hpp"
#include "lngrad/ascendc/kernel_ops.hpp"
