#!/usr/bin/python3
"""Writes the seed corpus of fuzz_npy (fuzz/corpus/fuzz_npy/): small valid
files of every accepted element type, byte order and format version, and a
few near misses the reader must refuse. Run once; the files are committed."""
import io
import os
import sys

import numpy as np
from numpy.lib import format as npy

out = os.path.join(os.path.dirname(os.path.abspath(__file__)), "corpus", "fuzz_npy")
os.makedirs(out, exist_ok=True)


def save(name, array, version=None):
    buf = io.BytesIO()
    npy.write_array(buf, array, version=version, allow_pickle=False)
    write(name, buf.getvalue())
    return buf.getvalue()


def write(name, data):
    with open(os.path.join(out, name), "wb") as f:
        f.write(data)


rng = np.random.default_rng(7)
for dt in ["<f8", ">f8", "<f4", ">f4", "<f2", ">f2", "<u2", ">u2"]:
    tag = dt.replace("<", "le_").replace(">", "be_")
    save(f"{tag}_2x3.npy", rng.standard_normal((2, 3)).astype(dt))
save("f4_scalar.npy", np.array(1.5, dtype="<f4"))
save("f4_empty.npy", np.zeros((0, 4), dtype="<f4"))
save("f4_rank5.npy", np.ones((1, 2, 1, 3, 2), dtype="<f4"))
save("f4_v2.npy", np.arange(6, dtype="<f4").reshape(2, 3), version=(2, 0))
save("f4_v3.npy", np.arange(4, dtype="<f4"), version=(3, 0))
save("f4_specials.npy", np.array([np.nan, np.inf, -np.inf, -0.0, 1e-45], dtype="<f4"))
# Refused: other types, Fortran order, structured dtype.
save("i4_refused.npy", np.arange(4, dtype="<i4"))
save("f4_fortran_refused.npy", np.asfortranarray(np.ones((2, 3), dtype="<f4")))
save("struct_refused.npy", np.zeros(2, dtype=[("a", "<f4"), ("b", "<f4")]))
good = save("f4_3.npy", np.arange(3, dtype="<f4"))
write("truncated_data.npy", good[:-2])
write("truncated_header.npy", good[:20])
write("bad_magic.npy", b"\x93NUMPX" + good[6:])
sys.exit(0)
