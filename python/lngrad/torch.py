"""lngrad over torch tensors: the four functions, a drop-in LayerNorm module,
and install() / uninstall(), which put lngrad behind every torch.nn.LayerNorm
and F.layer_norm on the CPU.

Tensors must be on the CPU, strided, and float64, float32, float16 or bfloat16.
Non-contiguous inputs are copied; out= tensors are written in place (their
version counters bumped, as by an in-place op) and must be contiguous and not
require grad. The functions are not differentiable
(their outputs do not require grad): use :class:`LayerNorm` for autograd.
Arguments, defaults, shapes and dtypes are those of the NumPy functions in
:mod:`lngrad`; torch.set_num_threads does not apply to them (num_threads=0 is
all cores), while the kernels install() registers follow it.

This module imports torch; ``import lngrad`` alone does not.
"""

import torch as _torch

from . import _core

_NAMES = {_torch.float64: "float64", _torch.float32: "float32", _torch.float16: "float16",
          _torch.bfloat16: "bfloat16"}
_DTYPES = {name: dtype for dtype, name in _NAMES.items()}
_SUPPORTED = "float64, float32, float16 or bfloat16"


class TorchBackend:
    @staticmethod
    def _check(function, name, t):
        if not isinstance(t, _torch.Tensor):
            raise TypeError(f"{function}: {name}: expected a torch.Tensor, given {type(t).__name__}")
        if t.dtype not in _NAMES:
            raise TypeError(f"{function}: {name}: expected dtype {_SUPPORTED}, given {t.dtype}")
        if t.layout != _torch.strided:
            raise TypeError(f"{function}: {name}: expected a strided (dense) tensor, given layout {t.layout}")
        if t.device.type != "cpu":
            _core.fail(function, name, "a CPU tensor", f"device {t.device}")

    def input(self, function, name, t):
        """A detached, contiguous CPU tensor (copied when it was not contiguous)."""
        self._check(function, name, t)
        return t.detach().resolve_neg().contiguous()

    def output(self, function, name, t):
        """out= tensors are written through their pointer: refuse what cannot be."""
        self._check(function, name, t)
        if t.requires_grad:
            _core.fail(function, name, "a tensor that does not require grad (it is written directly)",
                       "one that requires grad")
        if not t.is_contiguous() or t.is_neg():
            _core.fail(function, name, "a contiguous tensor", f"strides {tuple(t.stride())}")
        return t

    @staticmethod
    def written(t):
        """Bumps the version counter of an out= tensor the library wrote, as an in-place
        op would, so autograd refuses a backward that saved its old values. An in-place
        op on an empty view does it without touching the data (PyTorch 1.13 has no
        public call for it)."""
        t.reshape(-1)[:0].zero_()

    @staticmethod
    def empty(shape, dtype):
        return _torch.empty(shape, dtype=_DTYPES[dtype])

    @staticmethod
    def view(t):
        return (t.data_ptr(), _NAMES[t.dtype], tuple(t.shape))

    @staticmethod
    def dtype(t):
        return _NAMES[t.dtype]

    @staticmethod
    def shape(t):
        return tuple(t.shape)


_BACKEND = TorchBackend()


def layer_norm_grad(dy, x, variance, mean, gamma=None, epsilon=None, *, rstd=False,
                    output_mask=(True, True, True), out=None, num_threads=0, normalized_ndim=0,
                    pd_x_stores="automatic"):
    """lngrad.layer_norm_grad over tensors: returns (pd_x, pd_gamma, pd_beta), None where masked.

    bfloat16 x takes statistics in bfloat16, float32 or float64 and gamma in
    bfloat16 or float32; pd_gamma/pd_beta are summed in float32 before the
    final rounding, whatever the dtype.
    """
    return _core.layer_norm_grad(_BACKEND, dy, x, variance, mean, gamma, epsilon, rstd, output_mask, out,
                                 num_threads, normalized_ndim, pd_x_stores)


def layer_norm_grad_x(dy, x, variance, mean, gamma=None, epsilon=None, *, rstd=False, out=None, num_threads=0,
                      normalized_ndim=0, pd_x_stores="automatic"):
    """lngrad.layer_norm_grad_x over tensors: returns (pd_x, res_for_gamma)."""
    return _core.layer_norm_grad_x(_BACKEND, dy, x, variance, mean, gamma, epsilon, rstd, out, num_threads,
                                   normalized_ndim, pd_x_stores)


def layer_norm_grad_beta(res_for_gamma, dy, *, gamma_ndim=1, out=None, num_threads=0):
    """lngrad.layer_norm_grad_beta over tensors: returns (pd_gamma, pd_beta)."""
    return _core.layer_norm_grad_beta(_BACKEND, res_for_gamma, dy, gamma_ndim, out, num_threads)


def layer_norm(x, gamma=None, beta=None, epsilon=None, *, normalized_ndim=1, out=None, num_threads=0,
               y_stores="automatic"):
    """lngrad.layer_norm over tensors: returns (y, mean, variance, rstd); the
    statistics are float32 for 16-bit x."""
    return _core.layer_norm(_BACKEND, x, gamma, beta, epsilon, normalized_ndim, out, num_threads, y_stores)


class _LayerNormFunction(_torch.autograd.Function):
    """y = LayerNorm(x) with lngrad's forward and backward (rstd saved, not recomputed)."""

    @staticmethod
    def forward(ctx, x, weight, bias, normalized_ndim, eps):
        ctx.param_shape = x.shape[x.dim() - normalized_ndim:]
        ctx.param_dtypes = tuple(None if p is None else p.dtype for p in (weight, bias))
        if x.numel() == 0:
            # The library refuses empty tensors; torch.nn.LayerNorm maps an empty batch to an empty output.
            ctx.save_for_backward(x, weight, None, None)
            return _torch.empty_like(x)
        y, mean, _, rstd = layer_norm(x, weight, bias, eps, normalized_ndim=normalized_ndim)
        ctx.save_for_backward(x, weight, mean, rstd)
        return y

    @staticmethod
    @_torch.autograd.function.once_differentiable
    def backward(ctx, dy):
        x, weight, mean, rstd = ctx.saved_tensors
        mask = tuple(bool(need and has) for need, has in
                     zip(ctx.needs_input_grad[:3], (True, *(d is not None for d in ctx.param_dtypes))))
        if not any(mask):
            return None, None, None, None, None
        if x.numel() == 0:
            # Sums over no rows are zero (as aclnnLayerNormBackward returns for an empty batch).
            pd_x = _torch.empty_like(x) if mask[0] else None
            pd_gamma, pd_beta = (_torch.zeros(ctx.param_shape, dtype=d) if m else None
                                 for m, d in zip(mask[1:], ctx.param_dtypes))
            return pd_x, pd_gamma, pd_beta, None, None
        pd_x, pd_gamma, pd_beta = layer_norm_grad(dy, x, rstd, mean, weight, rstd=True, output_mask=mask)
        return pd_x, pd_gamma, pd_beta, None, None


class LayerNorm(_torch.nn.LayerNorm):
    """A drop-in for torch.nn.LayerNorm whose forward and backward run lngrad.

    Same constructor, parameters (weight, bias), state_dict and repr as
    torch.nn.LayerNorm; eps defaults to 1e-5 like torch's. Inputs are CPU
    tensors of float64, float32, float16 or bfloat16 whose trailing axes equal
    normalized_shape; weight and bias share x's dtype or are float32. The
    forward saves mean and rstd (float32 for 16-bit x) and the backward computes
    only the gradients autograd asks for. Double backward is not supported.
    """

    def forward(self, x):
        shape = tuple(self.normalized_shape)
        if not isinstance(x, _torch.Tensor):
            raise TypeError(f"LayerNorm: input: expected a torch.Tensor, given {type(x).__name__}")
        if x.dim() < len(shape) or tuple(x.shape[x.dim() - len(shape):]) != shape:
            _core.fail("LayerNorm", "input", f"trailing axes {list(shape)} (normalized_shape)",
                       f"shape {list(x.shape)}")
        return _LayerNormFunction.apply(x, self.weight, self.bias, len(shape), self.eps)


# ---- lngrad behind every torch.nn.LayerNorm on the CPU. ----------------------------------------------

def _extension():
    """The compiled kernels (lngrad._lngrad_torch), checked against the running torch."""
    try:
        from . import _lngrad_torch as ext
    except ImportError as e:
        raise RuntimeError("lngrad.torch.install: the torch extension is not available (lngrad was built "
                           f"without libtorch-dev, or against another torch): {e}") from None
    if not _torch.__version__.startswith(ext.torch_version):
        raise RuntimeError(f"lngrad.torch.install: the extension was built against torch {ext.torch_version}, "
                           f"this is torch {_torch.__version__}: rebuild lngrad against this torch")
    return ext


class _Installation:
    """What install() returns: as a context manager, it puts back on exit the
    state before install() (torch's kernels, or an earlier install's thread setting)."""

    def __init__(self, ext, previous):
        self._ext, self._previous = ext, previous

    def __enter__(self):
        return self

    def __exit__(self, *exc_info):
        was_installed, threads = self._previous
        if was_installed:
            self._ext.install(threads)
        else:
            self._ext.uninstall()
        return False


def install(num_threads=None):
    """Makes lngrad the CPU kernel of aten's native_layer_norm and
    native_layer_norm_backward, so that every torch.nn.LayerNorm,
    F.layer_norm and model built on them runs lngrad's forward and backward
    on CPU tensors, float16 and bfloat16 included, without naming lngrad.

    Served: float64, float32, float16 and bfloat16 inputs of rank <= 8 with
    weight and bias of x's dtype or float32. The saved mean and rstd are
    float32 for 16-bit inputs (torch 1.13 keeps them in x's dtype). Every
    other call (other dtypes, empty tensors, shapes torch refuses) runs
    torch's own kernel; nothing else in torch changes.

    num_threads: None follows torch.get_num_threads() at each call; N >= 1
    uses N threads; 0 all cores. Results are bit-identical for any count.

    Calling it again changes only num_threads. Returns a context manager:
    ``with lngrad.torch.install(): ...`` puts back on exit what was there
    before (torch's kernels, or the earlier setting).
    """
    if num_threads is None:
        threads = None
    else:
        threads = _core._int("install", "num_threads", num_threads, 0)
    ext = _extension()
    previous = (ext.installed(), ext.num_threads())
    ext.install(ext.FOLLOW_TORCH if threads is None else threads)
    return _Installation(ext, previous)


def uninstall():
    """Gives the CPU LayerNorm operators back to torch's own kernels, exactly
    as they were before install(). Without an install, does nothing."""
    try:
        from . import _lngrad_torch as ext
    except ImportError:
        return  # never built, so never installed
    ext.uninstall()


def is_installed():
    """Whether install() is in effect."""
    try:
        from . import _lngrad_torch as ext
    except ImportError:
        return False
    return ext.installed()
