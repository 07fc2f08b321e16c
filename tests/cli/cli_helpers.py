"""Helpers for the lngrad CLI tests: running the executable, a NumPy float64
oracle of the documented formulas with first-order rounding-error bounds,
bfloat16 bit conversions, and the seeds' listed values.

The oracle is written here from the formulas of seed 002 (pd_x, res_for_gamma)
and seed 001 (pd_gamma, pd_beta); it shares no code with lngrad."""

import os
import re
import subprocess
from pathlib import Path

import numpy as np

CLI = os.environ.get("LNGRAD_CLI", "")
SEED_HEADER = Path(__file__).resolve().parents[1] / "seed_data.hpp"

# Unit roundoff of the arithmetic lngrad uses: float32 for 16- and 32-bit
# storage, float64 for float64.
U32 = 2.0 ** -24
U64 = 2.0 ** -53
# Unit roundoff of the storage types an output is rounded to once at the end.
U_STORE = {"float64": U64, "float32": U32, "float16": 2.0 ** -11, "bfloat16": 2.0 ** -8}
# Half the smallest subnormal: the absolute error floor of a rounded store.
TINY_STORE = {"float64": 0.0, "float32": 2.0 ** -150, "float16": 2.0 ** -25, "bfloat16": 2.0 ** -134}
# The oracle's bounds are first-order worst cases; a factor 2 covers the
# second-order terms and algebraically equivalent orderings of the same sums.
SAFETY = 2.0


def run(*args, check_rc=None, env=None):
    """Runs the CLI; returns the CompletedProcess (text mode)."""
    assert CLI, "LNGRAD_CLI must name the lngrad executable"
    proc = subprocess.run([CLI, *map(str, args)], capture_output=True, text=True, env=env, timeout=300)
    if check_rc is not None:
        assert proc.returncode == check_rc, (proc.returncode, proc.stdout, proc.stderr)
    return proc


def one_line_error(proc, *phrases):
    """Asserts exit status 2 and a single 'lngrad: ...' line naming each phrase."""
    assert proc.returncode == 2, (proc.returncode, proc.stdout, proc.stderr)
    lines = proc.stderr.splitlines()
    assert len(lines) == 1, proc.stderr
    assert lines[0].startswith("lngrad: "), lines[0]
    for p in phrases:
        assert str(p) in lines[0], (p, lines[0])
    return lines[0]


# ---- bfloat16 as uint16 bit patterns (round to nearest even) ----

def to_bf16_bits(a):
    bits = np.asarray(a, dtype=np.float32).view(np.uint32).astype(np.uint64)
    rounded = (bits + 0x7FFF + ((bits >> 16) & 1)) >> 16
    return rounded.astype(np.uint16)


def from_bf16_bits(b):
    return (np.asarray(b, dtype=np.uint16).astype(np.uint32) << 16).view(np.float32)


def storage(values, dtype):
    """float64 values rounded to a storage dtype; returns (array to save, its exact float64 value)."""
    if dtype == "bfloat16":
        bits = to_bf16_bits(values)
        return bits, from_bf16_bits(bits).astype(np.float64)
    arr = np.asarray(values).astype(dtype)
    return arr, arr.astype(np.float64)


def decode(arr, dtype):
    """A loaded output as float64 (uint16 read as bfloat16 when dtype says so)."""
    if dtype == "bfloat16":
        assert arr.dtype == np.uint16, arr.dtype
        return from_bf16_bits(arr).astype(np.float64)
    assert arr.dtype == np.dtype(dtype), (arr.dtype, dtype)
    return arr.astype(np.float64)


# ---- the float64 oracle and its error bounds ----

def grad_oracle(dy, x, stat, mean, gamma, ndim, eps, u, stat_is_rstd=False):
    """Seed 002's chain rule and seed 001's sums in float64, with a bound on the
    error of an evaluation in arithmetic of unit roundoff u.

    Returns dict name -> (value, bound), arrays shaped like lngrad's outputs."""
    shape = x.shape
    h = int(np.prod(shape[len(shape) - ndim:]))
    dy2, x2 = dy.reshape(-1, h), x.reshape(-1, h)
    mean2, stat2 = mean.reshape(-1, 1), stat.reshape(-1, 1)
    g_row = np.ones(h) if gamma is None else gamma.reshape(h)
    rstd = stat2 if stat_is_rstd else 1.0 / np.sqrt(stat2 + eps)
    xm = x2 - mean2
    g = dy2 * g_row
    var_terms = -0.5 * g * xm * rstd ** 3
    pd_var = var_terms.sum(axis=1, keepdims=True)
    sum_m2xm = (-2.0 * xm).sum(axis=1, keepdims=True)
    pd_mean = (-g * rstd).sum(axis=1, keepdims=True) + pd_var * (1.0 / h) * sum_m2xm
    pd_x = g * rstd + pd_var * (2.0 / h) * xm + pd_mean / h
    res = xm * rstd
    pd_gamma = (dy2 * res).sum(axis=0)
    pd_beta = dy2.sum(axis=0)

    # First-order bounds. A sum of n terms carries at most (n-1)u times the
    # sum of their magnitudes; each product or quotient adds u relative, rstd
    # (add, sqrt, divide) about 3u, so rstd^3 about 9u; k covers the sum
    # length plus those per-term constants.
    k = h + 12
    e_rstd = 0.0 if stat_is_rstd else 3 * u
    abs_var = np.abs(var_terms).sum(axis=1, keepdims=True)
    err_var = (k * u + 3 * e_rstd) * abs_var
    abs_grstd = np.abs(g * rstd).sum(axis=1, keepdims=True)
    abs_2xm = np.abs(2.0 * xm).sum(axis=1, keepdims=True)
    err_mean = ((k * u + e_rstd) * abs_grstd + err_var * np.abs(sum_m2xm) / h
                + np.abs(pd_var) * k * u * abs_2xm / h)
    t1, t2, t3 = np.abs(g * rstd), np.abs(pd_var * (2.0 / h) * xm), np.abs(pd_mean / h)
    err_x = (4 * u + e_rstd) * (t1 + t2 + t3) + err_var * (2.0 / h) * np.abs(xm) + err_mean / h
    err_res = (3 * u + e_rstd) * np.abs(res)
    rows = x2.shape[0]
    err_gamma = ((rows + 4) * u + e_rstd) * np.abs(dy2 * res).sum(axis=0)
    err_beta = (rows + 1) * u * np.abs(dy2).sum(axis=0)

    norm_shape = shape[len(shape) - ndim:]
    return {
        "pd_x": (pd_x.reshape(shape), SAFETY * err_x.reshape(shape)),
        "res_for_gamma": (res.reshape(shape), SAFETY * err_res.reshape(shape)),
        "pd_gamma": (pd_gamma.reshape(norm_shape), SAFETY * err_gamma.reshape(norm_shape)),
        "pd_beta": (pd_beta.reshape(norm_shape), SAFETY * err_beta.reshape(norm_shape)),
    }


def forward_oracle(x, gamma, beta, ndim, eps, u):
    """LayerNorm forward in float64 with error bounds as grad_oracle's."""
    shape = x.shape
    h = int(np.prod(shape[len(shape) - ndim:]))
    x2 = x.reshape(-1, h)
    g = np.ones(h) if gamma is None else gamma.reshape(h)
    b = np.zeros(h) if beta is None else beta.reshape(h)
    mean = x2.mean(axis=1, keepdims=True)
    xm = x2 - mean
    var = (xm ** 2).mean(axis=1, keepdims=True)
    rstd = 1.0 / np.sqrt(var + eps)
    y = xm * rstd * g + b
    k = h + 12
    err_mean = k * u * np.abs(x2).mean(axis=1, keepdims=True)
    # Covers a two-pass variance and the one-pass E[x^2] - mean^2 form alike.
    err_var = 2 * k * u * (x2 ** 2).mean(axis=1, keepdims=True)
    err_rstd = 0.5 * rstd ** 3 * err_var + 3 * u * rstd
    err_y = (np.abs(xm) * err_rstd + err_mean * rstd + 4 * u * np.abs(xm) * rstd) * np.abs(g) + 2 * u * np.abs(y)
    lead = shape[:len(shape) - ndim]
    return {
        "y": (y.reshape(shape), SAFETY * err_y.reshape(shape)),
        "mean": (mean.reshape(lead), SAFETY * err_mean.reshape(lead)),
        "variance": (var.reshape(lead), SAFETY * err_var.reshape(lead)),
        "rstd": (rstd.reshape(lead), SAFETY * err_rstd.reshape(lead)),
    }


def assert_close(name, got, want, bound, out_dtype):
    """|got - want| <= bound + one rounding to the output's storage type."""
    allowed = bound + U_STORE[out_dtype] * np.abs(want) + TINY_STORE[out_dtype]
    err = np.abs(got - want)
    bad = np.argwhere(err > allowed)
    assert bad.size == 0, (f"{name}: {len(bad)} elements outside the bound; first at {tuple(bad[0])}: "
                           f"got {got[tuple(bad[0])]!r}, want {want[tuple(bad[0])]!r}, "
                           f"bound {allowed[tuple(bad[0])]!r}")


# ---- the seeds' listed values, read from tests/seed_data.hpp ----

_SEED_TEXT = SEED_HEADER.read_text() if SEED_HEADER.exists() else ""


def seed_values(lhs):
    """The brace list assigned to `lhs` in seed_data.hpp, e.g. 'd.pd_x'."""
    m = re.search(re.escape(lhs) + r"\s*=\s*\{([^}]*)\}", _SEED_TEXT)
    assert m, f"{lhs} not found in {SEED_HEADER}"
    return np.array([float(v.strip().rstrip("f")) for v in m.group(1).split(",") if v.strip()])


def seed_assigned(lhs):
    """The value of `lhs.assign(n, v)` in seed_data.hpp: (n, v)."""
    m = re.search(re.escape(lhs) + r"\.assign\((\d+),\s*([-0-9.e]+)f?\)", _SEED_TEXT)
    assert m, f"{lhs}.assign not found in {SEED_HEADER}"
    return int(m.group(1)), float(m.group(2))


# ---- hand-made .npy files ----

def npy_bytes(header, data=b"", version=(1, 0), header_len=None):
    """An .npy image with the given header text (padded and newline-terminated
    unless it already ends in a newline) and raw data."""
    text = header.encode("latin1")
    if not text.endswith(b"\n"):
        pre = 10 if version[0] == 1 else 12
        text += b" " * ((-(pre + len(text) + 1)) % 64) + b"\n"
    n = len(text) if header_len is None else header_len
    size = n.to_bytes(2 if version[0] == 1 else 4, "little")
    return b"\x93NUMPY" + bytes(version) + size + text + data
