#!/usr/bin/python3
"""Writes the hand-made seeds of fuzz_validation (fuzz/corpus/fuzz_validation/
tiled-*): consistent calls of each operator, unmutated, that take the tiled
check (their rows repeated to 3 * 2^14 elements, run on 1 and 3 threads), so
that the replay in ctest exercises it. Byte by byte as decode_base, mutate,
fill and LLVMFuzzerTestOneInput read them. Run once; the files are committed."""
import os

out = os.path.join(os.path.dirname(os.path.abspath(__file__)), "corpus", "fuzz_validation")
OPS = {"grad": 0, "grad_x": 1, "grad_beta": 2, "forward": 3}
DTYPES = {"float64": 0, "float32": 1, "float16": 2, "bfloat16": 3}
EXTENTS = [1, 2, 3, 4, 5, 7, 8, 9, 15, 16, 17, 31, 32, 33, 64, 100]


def seed(name, op, dtype, dims, ndim, stat_wider=False, param_float32=False, keepdim=False):
    b = [OPS[op], DTYPES[dtype]]
    b.append(1 if stat_wider else 0)        # statistics: x's dtype (or float32 for float32 x) / wider
    b.append(1 if param_float32 else 0)     # gamma and parameter gradients: x's dtype / float32
    b.append(1 if param_float32 else 0)     # res_for_gamma: x's dtype / float32
    b.append(len(dims) - 1)                 # rank
    b += [EXTENTS.index(d) for d in dims]
    b.append(ndim - 1)                      # normalized axes
    b.append(0 if keepdim else 1)           # statistics [A..] or [A.., 1..1]
    b.append(0)                             # no mutation
    b += [1, 0]                             # epsilon given: 1e-5
    b.append(1)                             # Statistic::variance
    b.append(0)                             # every output requested
    b.append(1)                             # normalized_ndim not given
    b.append(0)                             # num_threads 0 (all cores)
    b += [0x5B, 0x13, 0xC7, 0x2E, 0x91, 0x64, 0x0D, 0xA8]  # seed of the values
    b.append(0)                             # no special values
    b.append(3)                             # the tiled check
    with open(os.path.join(out, name), "wb") as f:
        f.write(bytes(b))


seed("tiled-grad-float32-64x64", "grad", "float32", [64, 64], 1)
seed("tiled-grad-bfloat16-3x7x33", "grad", "bfloat16", [3, 7, 33], 1, stat_wider=True, keepdim=True)
seed("tiled-grad-x-float16-16x100", "grad_x", "float16", [16, 100], 1, param_float32=True)
seed("tiled-grad-beta-float64-9x17", "grad_beta", "float64", [9, 17], 1)
seed("tiled-forward-bfloat16-5x2x64", "forward", "bfloat16", [5, 2, 64], 2)
