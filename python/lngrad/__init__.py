"""lngrad: LayerNorm backward (the Ascend LayerNormGrad operator family) on CPU.

NumPy front end of the lngrad C++ library. Arrays may be float64, float32 or
float16; inputs that are not C-contiguous, aligned and in native byte order
are copied first, and array-likes are converted. ``out=`` arrays are written in
place and must already be C-contiguous, aligned and writable. Arithmetic is
float32 for float32/float16 storage and float64 for float64; results are
bit-identical for any ``num_threads`` (0 = all cores). The GIL is released
while the library runs. Invalid arguments raise :class:`lngrad.Error` (a
ValueError) with the library's message, or TypeError for an argument of the
wrong kind.

``lngrad.torch`` offers the same functions over torch tensors (adding
bfloat16) and ``lngrad.torch.LayerNorm``; torch is imported only then.
"""

import importlib as _importlib

import numpy as _np

from . import _core, _lngrad
from ._lngrad import Error, __version__, active_target, available_targets, default_num_threads, set_max_target
from ._numpy import BACKEND as _NUMPY

Error.__module__ = __name__  # shown as lngrad.Error in tracebacks

__all__ = [
    "Error", "__version__", "layer_norm_grad", "layer_norm_grad_x", "layer_norm_grad_beta", "layer_norm",
    "default_epsilon", "available_targets", "active_target", "set_max_target", "default_num_threads",
    "aligned_empty", "aligned",
]


def layer_norm_grad(dy, x, variance, mean, gamma=None, epsilon=None, *, rstd=False,
                    output_mask=(True, True, True), out=None, num_threads=0, normalized_ndim=0,
                    pd_x_stores="automatic"):
    """Gradients of LayerNorm (seed 000's LayerNormGrad): returns (pd_x, pd_gamma, pd_beta).

    With g = dy * gamma, xm = x - mean, rstd = 1/sqrt(variance + epsilon) and H
    the number of normalized elements in a row:
      pd_var   = sum(-0.5 * g * xm * rstd**3)
      pd_mean  = sum(-g * rstd) + pd_var / H * sum(-2 * xm)
      pd_x     = g * rstd + pd_var * 2 / H * xm + pd_mean / H
      pd_gamma = sum over rows of dy * xm * rstd,  pd_beta = sum over rows of dy.

    dy, x: [A1..Ai, R1..Rj], one dtype. mean, variance: [A1..Ai] or
    [A1..Ai, 1..1], x's dtype or wider (float32 or float64). gamma: [R1..Rj],
    x's dtype or float32; None acts as ones. The normalized axes R1..Rj are
    gamma's rank, else normalized_ndim when > 0, else where mean's shape
    departs from x's.

    rstd=True: `variance` holds rstd itself (as torch and aclnnLayerNormBackward
    pass it) and epsilon is unused. epsilon=None: 1e-12 for float32/float64 x,
    1e-5 for float16.

    Returns pd_x like x, and pd_gamma, pd_beta shaped [R1..Rj] in gamma's dtype
    (x's dtype when gamma is None); None for an output whose output_mask entry
    is False. out=(pd_x, pd_gamma, pd_beta): arrays to write into and return
    (an entry may be None to allocate that output; masked entries must be
    None). pd_x may be dy or x itself (in place).

    pd_x_stores: "automatic" writes pd_x past the caches (non-temporal
    stores) when dy, x and pd_x together exceed the last-level cache;
    "cached" keeps it in cache for a consumer that reads it right away;
    "streaming" always streams. The bits are the same every way.
    """
    return _core.layer_norm_grad(_NUMPY, dy, x, variance, mean, gamma, epsilon, rstd, output_mask, out,
                                 num_threads, normalized_ndim, pd_x_stores)


def layer_norm_grad_x(dy, x, variance, mean, gamma=None, epsilon=None, *, rstd=False, out=None, num_threads=0,
                      normalized_ndim=0, pd_x_stores="automatic"):
    """Seed 002's LayerNormGrad: returns (pd_x, res_for_gamma).

    pd_x as in layer_norm_grad; res_for_gamma = (x - mean) * rstd, shaped like
    x, in x's dtype (an out= array may instead be float32 for float16 x). Pass
    res_for_gamma with dy to layer_norm_grad_beta for pd_gamma and pd_beta.
    Arguments as layer_norm_grad (pd_x_stores included); out=(pd_x, res_for_gamma).
    """
    return _core.layer_norm_grad_x(_NUMPY, dy, x, variance, mean, gamma, epsilon, rstd, out, num_threads,
                                   normalized_ndim, pd_x_stores)


def layer_norm_grad_beta(res_for_gamma, dy, *, gamma_ndim=1, out=None, num_threads=0):
    """Seed 001's LayerNormGradBeta: returns (pd_gamma, pd_beta).

    pd_gamma = sum over rows of dy * res_for_gamma, pd_beta = sum over rows of
    dy, where rows run over all but the trailing gamma_ndim axes of dy.
    res_for_gamma is shaped like dy, in dy's dtype or float32. The results are
    shaped dy.shape[-gamma_ndim:], in dy's dtype (out= arrays may instead be
    float32 for float16 dy). out=(pd_gamma, pd_beta).
    """
    return _core.layer_norm_grad_beta(_NUMPY, res_for_gamma, dy, gamma_ndim, out, num_threads)


def layer_norm(x, gamma=None, beta=None, epsilon=None, *, normalized_ndim=1, out=None, num_threads=0,
               y_stores="automatic"):
    """LayerNorm forward, producing the backward's inputs: returns (y, mean, variance, rstd).

    Over the trailing normalized_ndim axes of x (0: gamma's or beta's rank):
      mean = sum(x) / H, variance = sum((x - mean)**2) / H (biased),
      rstd = 1 / sqrt(variance + epsilon), y = (x - mean) * rstd * gamma + beta.
    gamma, beta: x's trailing axes, x's dtype or float32; None acts as ones /
    zeros. y is like x; mean, variance and rstd are shaped like x's leading
    axes, in float32 for float16 x, else x's dtype. epsilon=None as in
    layer_norm_grad. out=(y, mean, variance, rstd): a given statistic fixes the
    shape ([A..] or [A.., 1..1]) and dtype (float32 or float64, never narrower
    than x) of the others. y_stores: as layer_norm_grad's pd_x_stores, for y
    ("automatic": streamed when x and y together exceed the last-level cache).
    """
    return _core.layer_norm(_NUMPY, x, gamma, beta, epsilon, normalized_ndim, out, num_threads, y_stores)


def aligned_empty(shape, dtype="float32"):
    """An uninitialized C-contiguous NumPy array that starts on a 64-byte cache
    line (unless it has no elements), of any shape and dtype. np.empty's
    large arrays start 16-48 bytes past one, and rows that do not start on a
    line run slower (python/README.md, Speed): allocate long-lived inputs and
    outputs with this instead."""
    dims = (shape,) if isinstance(shape, (int, _np.integer)) else tuple(shape)
    if any(not isinstance(d, (int, _np.integer)) or d < 0 for d in dims):
        raise ValueError(f"aligned_empty: shape: expected non-negative integer sizes, given {shape!r}")
    return _NUMPY.empty(dims, dtype)


def aligned(a):
    """a itself when it is a C-contiguous NumPy array on a 64-byte cache line,
    else a copy that is (same dtype, shape and values)."""
    arr = _np.asarray(a)
    if arr.flags.c_contiguous and arr.ctypes.data % 64 == 0:
        return arr
    out = aligned_empty(arr.shape, arr.dtype)
    out[...] = arr
    return out


def default_epsilon(dtype):
    """The Ascend default epsilon for x of this dtype (a NumPy dtype, or a name
    such as "bfloat16"): 1e-12 for float32/float64, 1e-5 for 16-bit types."""
    if not isinstance(dtype, str):
        dtype = _NUMPY.dtype_name("default_epsilon", "dtype", dtype)
    return _lngrad.default_epsilon(dtype)


def __getattr__(name):
    # `lngrad.torch` imports torch on first use only.
    if name == "torch":
        return _importlib.import_module(".torch", __name__)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
