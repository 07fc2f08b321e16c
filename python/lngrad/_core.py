"""Argument handling shared by the NumPy and torch front ends.

Each function here takes a *backend* (lngrad._numpy.BACKEND or the one in
lngrad.torch) that knows its array type: how to accept an input (copying what
the library cannot read in place), how to check an ``out=`` array, how to
allocate one and how to describe one as an (address, dtype, shape) view for
the extension. This module decides which outputs exist and their shapes and
dtypes (the library's rules), then hands views to ``_lngrad``; every formula
and every check of shapes and dtypes against each other lives in the C++
library, whose messages reach the caller unchanged.

The arrays behind the views stay referenced by this module's locals until the
extension returns, so their memory outlives the call.
"""

import numbers
import operator

from . import _lngrad

Error = _lngrad.Error

_INT_MAX = 2**31 - 1


def fail(function, argument, expected, given):
    """Raises lngrad.Error (a ValueError) worded like the library's errors."""
    raise Error(f"{function}: {argument}: expected {expected}, given {given}")


def stat_dtype(x_dtype):
    """Forward statistics are float32 for 16-bit x, else x's dtype."""
    return "float32" if x_dtype in ("float16", "bfloat16") else x_dtype


def _int(function, name, value, low):
    try:
        value = operator.index(value)
    except TypeError:
        raise TypeError(f"{function}: {name}: expected an int, given {type(value).__name__}") from None
    if value < low:
        fail(function, name, f">= {low}" + (" (0 = all cores)" if name == "num_threads" else ""), value)
    if value > _INT_MAX:
        fail(function, name, f"at most {_INT_MAX}", value)
    return value


def _epsilon(function, epsilon):
    if epsilon is None:
        return None
    if not isinstance(epsilon, numbers.Real) or isinstance(epsilon, bool):
        raise TypeError(f"{function}: epsilon: expected a float or None, given {type(epsilon).__name__}")
    return float(epsilon)


_STORES = ("automatic", "cached", "streaming")


def _stores(function, name, value):
    """pd_x_stores / y_stores: how the output is written (lngrad::Stores)."""
    if not isinstance(value, str):
        raise TypeError(f"{function}: {name}: expected a str, given {type(value).__name__}")
    if value not in _STORES:
        fail(function, name, "'automatic', 'cached' or 'streaming'", repr(value))
    return value


def _mask(function, output_mask):
    try:
        mask = tuple(bool(m) for m in output_mask)
    except TypeError:
        raise TypeError(f"{function}: output_mask: expected 3 booleans, given {type(output_mask).__name__}") from None
    if len(mask) != 3:
        fail(function, "output_mask", "3 booleans (pd_x, pd_gamma, pd_beta)", f"{len(mask)} values")
    return mask


def _outs(backend, function, out, names):
    """out=None, or a tuple/list with one entry per output: an array to write or None to allocate."""
    if out is None:
        return [None] * len(names)
    if not isinstance(out, (tuple, list)):
        raise TypeError(f"{function}: out: expected a tuple of {len(names)} arrays or None, "
                        f"given {type(out).__name__}")
    if len(out) != len(names):
        fail(function, "out", f"{len(names)} entries ({', '.join(names)})", f"{len(out)}")
    return [None if o is None else backend.output(function, f"out[{i}] ({names[i]})", o)
            for i, o in enumerate(out)]


def _written(backend, outs):
    """Tells the backend which out= arrays the library has written."""
    for o in outs:
        if o is not None:
            backend.written(o)


def _view(backend, array):
    return None if array is None else backend.view(array)


def _grad_ndim(backend, gamma, outs, normalized_ndim, mean, x_shape):
    """The normalized rank, found as the library finds it (first of gamma, pd_gamma,
    pd_beta, normalized_ndim, mean's shape), or None when it cannot be found: the
    library then refuses the call with its own message."""
    ndim = None
    for fixed in (gamma, *outs):
        if fixed is not None:
            ndim = len(backend.shape(fixed))
            break
    if ndim is None and normalized_ndim > 0:
        ndim = normalized_ndim
    if ndim is None:
        m = backend.shape(mean)
        if len(m) < len(x_shape):
            ndim = len(x_shape) - len(m)
        else:
            ndim = next((len(x_shape) - i for i in range(len(x_shape)) if m[i] != x_shape[i]), None)
    return ndim if ndim is not None and 1 <= ndim <= len(x_shape) else None


def _grad_inputs(backend, fn, dy, x, variance, mean, gamma, epsilon, rstd):
    """The inputs layer_norm_grad and layer_norm_grad_x share, taken in one place."""
    x = backend.input(fn, "x", x)
    dy = backend.input(fn, "dy", dy)
    variance = backend.input(fn, "variance (rstd)" if rstd else "variance", variance)
    mean = backend.input(fn, "mean", mean)
    gamma = None if gamma is None else backend.input(fn, "gamma", gamma)
    return dy, x, variance, mean, gamma, _epsilon(fn, epsilon)


def layer_norm_grad(backend, dy, x, variance, mean, gamma, epsilon, rstd, output_mask, out, num_threads,
                    normalized_ndim, pd_x_stores):
    fn = "layer_norm_grad"
    dy, x, variance, mean, gamma, epsilon = _grad_inputs(backend, fn, dy, x, variance, mean, gamma, epsilon, rstd)
    mask = _mask(fn, output_mask)
    names = ("pd_x", "pd_gamma", "pd_beta")
    outs = _outs(backend, fn, out, names)
    for i, (wanted, o) in enumerate(zip(mask, outs)):
        if not wanted and o is not None:
            fail(fn, f"out[{i}] ({names[i]})", f"None (output_mask[{i}] is False)", "an array")
    threads = _int(fn, "num_threads", num_threads, 0)
    normalized_ndim = _int(fn, "normalized_ndim", normalized_ndim, -_INT_MAX)
    pd_x_stores = _stores(fn, "pd_x_stores", pd_x_stores)

    x_shape = backend.shape(x)
    pd_x = outs[0]
    if mask[0] and pd_x is None:
        pd_x = backend.empty(x_shape, backend.dtype(x))
    pd_gamma, pd_beta = outs[1], outs[2]
    if (mask[1] and pd_gamma is None) or (mask[2] and pd_beta is None):
        ndim = _grad_ndim(backend, gamma, outs[1:], normalized_ndim, mean, x_shape)
        if ndim is not None:
            shape = x_shape[len(x_shape) - ndim:]
            # pd_gamma/pd_beta follow gamma, else a given pd_gamma/pd_beta, else x.
            source = next((a for a in (gamma, *outs[1:]) if a is not None), x)
            dtype = backend.dtype(source)
            if mask[1] and pd_gamma is None:
                pd_gamma = backend.empty(shape, dtype)
            if mask[2] and pd_beta is None:
                pd_beta = backend.empty(shape, dtype)

    _lngrad.layer_norm_grad(backend.view(dy), backend.view(x), backend.view(variance), backend.view(mean),
                            _view(backend, gamma), _view(backend, pd_x), _view(backend, pd_gamma),
                            _view(backend, pd_beta), epsilon, bool(rstd), mask[0], mask[1], mask[2],
                            normalized_ndim, threads, pd_x_stores)
    _written(backend, outs)
    return tuple(a if wanted else None for a, wanted in zip((pd_x, pd_gamma, pd_beta), mask))


def layer_norm_grad_x(backend, dy, x, variance, mean, gamma, epsilon, rstd, out, num_threads, normalized_ndim,
                      pd_x_stores):
    fn = "layer_norm_grad_x"
    dy, x, variance, mean, gamma, epsilon = _grad_inputs(backend, fn, dy, x, variance, mean, gamma, epsilon, rstd)
    outs = _outs(backend, fn, out, ("pd_x", "res_for_gamma"))
    pd_x, res = outs
    threads = _int(fn, "num_threads", num_threads, 0)
    normalized_ndim = _int(fn, "normalized_ndim", normalized_ndim, -_INT_MAX)
    pd_x_stores = _stores(fn, "pd_x_stores", pd_x_stores)
    x_shape, x_dtype = backend.shape(x), backend.dtype(x)
    if pd_x is None:
        pd_x = backend.empty(x_shape, x_dtype)
    if res is None:
        res = backend.empty(x_shape, x_dtype)  # as the seed's resForGamma: x's dtype
    _lngrad.layer_norm_grad_x(backend.view(dy), backend.view(x), backend.view(variance), backend.view(mean),
                              _view(backend, gamma), backend.view(pd_x), backend.view(res), epsilon, bool(rstd),
                              normalized_ndim, threads, pd_x_stores)
    _written(backend, outs)
    return pd_x, res


def layer_norm_grad_beta(backend, res_for_gamma, dy, gamma_ndim, out, num_threads):
    fn = "layer_norm_grad_beta"
    dy = backend.input(fn, "dy", dy)
    res_for_gamma = backend.input(fn, "res_for_gamma", res_for_gamma)
    names = ("pd_gamma", "pd_beta")
    outs = _outs(backend, fn, out, names)
    threads = _int(fn, "num_threads", num_threads, 0)
    gamma_ndim = _int(fn, "gamma_ndim", gamma_ndim, 1)
    dy_shape = backend.shape(dy)
    if len(dy_shape) < 1:
        fail(fn, "dy", "rank >= 1", "rank 0")
    if gamma_ndim > len(dy_shape):
        fail(fn, "gamma_ndim", f"between 1 and rank(dy) = {len(dy_shape)}", gamma_ndim)
    for i, o in enumerate(outs):
        if o is not None and len(backend.shape(o)) != gamma_ndim:
            fail(fn, f"out[{i}] ({names[i]})", f"rank {gamma_ndim} (gamma_ndim)", f"rank {len(backend.shape(o))}")
    shape = dy_shape[len(dy_shape) - gamma_ndim:]
    dtype = backend.dtype(next((o for o in outs if o is not None), dy))
    pd_gamma, pd_beta = (backend.empty(shape, dtype) if o is None else o for o in outs)
    _lngrad.layer_norm_grad_beta(backend.view(res_for_gamma), backend.view(dy), backend.view(pd_gamma),
                                 backend.view(pd_beta), threads)
    _written(backend, outs)
    return pd_gamma, pd_beta


def layer_norm(backend, x, gamma, beta, epsilon, normalized_ndim, out, num_threads, y_stores):
    fn = "layer_norm"
    x = backend.input(fn, "x", x)
    gamma = None if gamma is None else backend.input(fn, "gamma", gamma)
    beta = None if beta is None else backend.input(fn, "beta", beta)
    epsilon = _epsilon(fn, epsilon)
    outs = _outs(backend, fn, out, ("y", "mean", "variance", "rstd"))
    y, mean, variance, rstd = outs
    threads = _int(fn, "num_threads", num_threads, 0)
    n = _int(fn, "normalized_ndim", normalized_ndim, 0)
    y_stores = _stores(fn, "y_stores", y_stores)
    x_shape, x_dtype = backend.shape(x), backend.dtype(x)
    if len(x_shape) < 1:
        fail(fn, "x", "rank >= 1", "rank 0")
    ndim = n or next((len(backend.shape(p)) for p in (gamma, beta) if p is not None), 0)
    if ndim == 0:
        fail(fn, "normalized_ndim", ">= 1 when gamma and beta are None", 0)
    if ndim > len(x_shape):
        fail(fn, "normalized_ndim", f"between 1 and rank(x) = {len(x_shape)}", ndim)
    if y is None:
        y = backend.empty(x_shape, x_dtype)
    # mean, variance and rstd share one shape and dtype: a given one sets them.
    given = next((s for s in (mean, variance, rstd) if s is not None), None)
    stat_shape = x_shape[:len(x_shape) - ndim] if given is None else backend.shape(given)
    sdtype = stat_dtype(x_dtype) if given is None else backend.dtype(given)
    mean, variance, rstd = (backend.empty(stat_shape, sdtype) if s is None else s for s in (mean, variance, rstd))
    _lngrad.layer_norm(backend.view(x), _view(backend, gamma), _view(backend, beta), backend.view(y),
                       backend.view(mean), backend.view(variance), backend.view(rstd), epsilon, n, threads, y_stores)
    _written(backend, outs)
    return y, mean, variance, rstd
