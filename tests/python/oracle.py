"""The tests' oracle: seed 002's formulas evaluated in float64 with NumPy,
written here from the seed's text (independent of the C++ reference), the
error bounds the library's arithmetic must meet against it, and the seeds'
example data read from tests/seed_data.hpp.

Error bounds. The library computes in float32 (u = 2^-24) for 32- and 16-bit
storage and float64 (u = 2^-53) for float64, from the same stored inputs the
oracle reads. A sum of n terms carries at most about n*u*sum(|term|) of
rounding (the classic worst case, whatever the summation order), and each
product or quotient a few u. So every bound below is (n + 8) * u times the
sum of the magnitudes of the terms that form the value, plus half an ulp of
the output dtype for the final rounding. These are worst cases, not fits to
observed errors.
"""

import pathlib
import re

import numpy as np

# Unit roundoff of the arithmetic and of the storage, by storage dtype name.
ARITH_U = {"float64": 2.0**-53, "float32": 2.0**-24, "float16": 2.0**-24, "bfloat16": 2.0**-24}
STORE_U = {"float64": 2.0**-53, "float32": 2.0**-24, "float16": 2.0**-11, "bfloat16": 2.0**-8}


def _rows(a, ndim):
    """[A.., R..] -> [rows, H] in float64."""
    a = np.asarray(a, np.float64)
    h = int(np.prod(a.shape[a.ndim - ndim:]))
    return a.reshape(-1, h)


def layer_norm_grad(dy, x, variance, mean, gamma, eps, ndim, rstd_given=False):
    """Seed 002's LayerNormGrad plus the parameter sums, in float64.

    Returns a dict of pd_x, res_for_gamma (shaped like x), pd_gamma, pd_beta
    (shaped like x's trailing ndim axes) and, for each, the error bound the
    library must meet in arithmetic `u` (`bound(name, dtype)`)."""
    shape = np.shape(x)
    dy, x = _rows(dy, ndim), _rows(x, ndim)
    h = x.shape[1]
    mean = np.asarray(mean, np.float64).reshape(-1, 1)
    stat = np.asarray(variance, np.float64).reshape(-1, 1)
    gamma = np.ones(h) if gamma is None else np.asarray(gamma, np.float64).reshape(-1)
    if rstd_given:
        rstd = stat
        inv_var_15 = rstd**3
    else:
        rstd = np.power(stat + eps, -0.5)
        inv_var_15 = np.power(stat + eps, -1.5)
    xm = x - mean
    pd_xl = dy * gamma
    pd_var = np.sum(-0.5 * pd_xl * xm * inv_var_15, axis=1, keepdims=True)
    pd_mean = np.sum(-1.0 * pd_xl * rstd, axis=1, keepdims=True) + pd_var * (1.0 / h) * np.sum(-2.0 * xm, axis=1,
                                                                                               keepdims=True)
    pd_x = pd_xl * rstd + pd_var * (2.0 / h) * xm + pd_mean * (1.0 / h)
    res = xm * rstd
    out = {"pd_x": pd_x.reshape(shape), "res_for_gamma": res.reshape(shape),
           "pd_gamma": np.sum(dy * res, axis=0).reshape(shape[len(shape) - ndim:]),
           "pd_beta": np.sum(dy, axis=0).reshape(shape[len(shape) - ndim:])}

    # Magnitudes of the terms forming each value (see the module docstring).
    a_g = np.abs(pd_xl)
    s1 = np.sum(a_g, axis=1, keepdims=True) * rstd                    # forms pd_mean's first sum
    s2 = np.sum(a_g * np.abs(xm), axis=1, keepdims=True) * rstd**3     # forms pd_var
    s3 = np.sum(np.abs(xm), axis=1, keepdims=True)                    # forms sum(x - mean)
    pd_x_terms = (a_g * rstd + (s2 * 2.0 / h) * np.abs(xm) + s1 / h + s2 * 2.0 / h**2 * s3
                  + np.abs(pd_var) * 2.0 / h**2 * s3)
    rows = x.shape[0]
    terms = {"pd_x": (pd_x_terms.reshape(shape), h),
             "res_for_gamma": (np.abs(res).reshape(shape), 1),
             "pd_gamma": (np.sum(np.abs(dy * res), axis=0).reshape(shape[len(shape) - ndim:]), rows),
             "pd_beta": (np.sum(np.abs(dy), axis=0).reshape(shape[len(shape) - ndim:]), rows)}

    def bound(name, dtype):
        magnitude, n = terms[name]
        return (n + 8) * ARITH_U[dtype] * magnitude + STORE_U[dtype] * np.abs(out[name])

    out["bound"] = bound
    return out


def layer_norm(x, gamma, beta, eps, ndim):
    """LayerNorm forward in float64 with the bounds of the library's results."""
    shape = np.shape(x)
    xr = _rows(x, ndim)
    h = xr.shape[1]
    gamma = np.ones(h) if gamma is None else np.asarray(gamma, np.float64).reshape(-1)
    beta = np.zeros(h) if beta is None else np.asarray(beta, np.float64).reshape(-1)
    mean = xr.mean(axis=1, keepdims=True)
    xm = xr - mean
    var = np.mean(xm * xm, axis=1, keepdims=True)
    rstd = 1.0 / np.sqrt(var + eps)
    y = xm * rstd * gamma + beta
    lead = shape[:len(shape) - ndim]
    out = {"y": y.reshape(shape), "mean": mean.reshape(lead), "variance": var.reshape(lead),
           "rstd": rstd.reshape(lead)}

    def bound(name, dtype, stat_dtype):
        u, su = ARITH_U[dtype], STORE_U[stat_dtype]
        d_mean = (h + 8) * u * np.mean(np.abs(xr), axis=1, keepdims=True)
        # Two-pass variance: the mean's error enters only squared (sum(x - mean) = 0).
        d_var = (h + 8) * u * var + d_mean**2
        rel_rstd = 0.5 * d_var / (var + eps) + 4 * u
        if name == "mean":
            b = d_mean + su * np.abs(mean)
        elif name == "variance":
            b = d_var + su * var
        elif name == "rstd":
            b = rel_rstd * rstd + su * rstd
        else:  # y = (x - mean) * rstd * gamma + beta
            xhat = np.abs(xm) * rstd
            b = (np.abs(gamma) * (d_mean * rstd + xhat * (rel_rstd + 4 * u)) + u * np.abs(beta)
                 + STORE_U[dtype] * np.abs(y))
            return b.reshape(shape)
        return b.reshape(lead)

    out["bound"] = bound
    return out


def assert_within(name, got, want, bound):
    """|got - want| <= bound elementwise, with the worst offender in the message."""
    got = np.asarray(got, np.float64)
    err = np.abs(got - want)
    excess = err - bound
    i = np.unravel_index(np.argmax(excess), np.shape(err)) if np.ndim(err) else ()
    assert np.all(err <= bound), (f"{name}: error {err[i]:.3g} > bound {np.broadcast_to(bound, err.shape)[i]:.3g} "
                                  f"at {i} (got {got[i]!r}, want {want[i]!r})")


# ---- The seeds' examples, read from tests/seed_data.hpp (the C++ tests' copy). ----

_HEADER = pathlib.Path(__file__).resolve().parents[1] / "seed_data.hpp"


def _floats(text):
    return [float(v.rstrip("f")) for v in re.findall(r"-?[0-9][0-9.e+-]*f?", text)]


def seed_data():
    """{'002': {...}, '001': {...}} as float32 arrays, parsed from seed_data.hpp."""
    src = _HEADER.read_text()
    blocks = {name: src[src.index(f"inline const Seed{name}&"):] for name in ("002", "001")}
    blocks["002"] = blocks["002"][:blocks["002"].index("inline const Seed001&")]
    seeds = {}
    for name, text in blocks.items():
        d = {}
        for field, body in re.findall(r"d\.(\w+) = \{([^}]*)\};", text):
            d[field] = _floats(body)
        for field in re.findall(r"d\.(\w+) = iota64\(\);", text):
            d[field] = list(range(64))
        for field, count, value in re.findall(r"d\.(\w+)\.assign\((\d+), ([-0-9.e+f]+)\);", text):
            d[field] = [float(value.rstrip("f"))] * int(count)
        row = re.search(r"const float row\[(\d+)\] = \{([^}]*)\};", text)
        if row:  # res_for_gamma: the same row repeated for each of the 8 rows
            d["res_for_gamma"] = _floats(row.group(2)) * 8
        seeds[name] = {k: np.asarray(v, np.float32) for k, v in d.items()}
    return seeds
