"""End-to-end tests of lngrad.torch: the functions over tensors against the
float64 oracle, the autograd LayerNorm against finite differences and against
torch.nn.LayerNorm, and bfloat16 parameter gradients over many rows."""

import numpy as np
import pytest
import torch

import lngrad
import lngrad.torch as lt
import oracle

TORCH_DTYPES = {"float64": torch.float64, "float32": torch.float32, "float16": torch.float16,
                "bfloat16": torch.bfloat16}


@pytest.fixture
def torch_threads():
    """Sets torch's thread count for a test and restores it."""
    old = torch.get_num_threads()
    yield torch.set_num_threads
    torch.set_num_threads(old)


def f64(t):
    return t.detach().to(torch.float64).numpy()


def make_case(dtype, shape, seed):
    """Inputs stored in `dtype`; statistics float32 for 16-bit x, mean perturbed
    off the row mean so that seed 002's sum(-2 xm) term is exercised."""
    g = torch.Generator().manual_seed(seed)
    td = TORCH_DTYPES[dtype]
    sd = torch.float32 if dtype in ("float16", "bfloat16") else td
    x = (torch.randn(shape, generator=g, dtype=torch.float64) * 2 + 3).to(td)
    dy = torch.randn(shape, generator=g, dtype=torch.float64).to(td)
    gamma = (torch.rand(shape[-1], generator=g, dtype=torch.float64) + 0.5).to(td)
    x64 = x.to(torch.float64)
    mean = x64.mean(-1) + 0.05 * torch.randn(shape[:-1], generator=g, dtype=torch.float64)
    var = x64.var(-1, unbiased=False)
    return dict(dy=dy, x=x, variance=var.to(sd), mean=mean.to(sd), gamma=gamma)


# ---- The functions over tensors. ------------------------------------------------------------------

@pytest.mark.parametrize("dtype", list(TORCH_DTYPES))
def test_functions_match_oracle(dtype):
    c = make_case(dtype, (6, 5, 48), seed=1)
    args = [c[k] for k in ("dy", "x", "variance", "mean", "gamma")]
    ref = oracle.layer_norm_grad(*(f64(a) for a in args), 1e-5, 1)
    pd_x, pd_gamma, pd_beta = lt.layer_norm_grad(*args, 1e-5)
    assert pd_x.dtype == pd_gamma.dtype == pd_beta.dtype == TORCH_DTYPES[dtype]
    for name, got in (("pd_x", pd_x), ("pd_gamma", pd_gamma), ("pd_beta", pd_beta)):
        oracle.assert_within(name, f64(got), ref[name], ref["bound"](name, dtype))
    pd_x2, res = lt.layer_norm_grad_x(*args, 1e-5)
    oracle.assert_within("pd_x", f64(pd_x2), ref["pd_x"], ref["bound"]("pd_x", dtype))
    oracle.assert_within("res_for_gamma", f64(res), ref["res_for_gamma"], ref["bound"]("res_for_gamma", dtype))
    # pd_gamma from the stored res_for_gamma: its rounding adds STORE_U per term.
    pg, pb = lt.layer_norm_grad_beta(res, c["dy"])
    extra = oracle.STORE_U[dtype] * 2 * np.abs(f64(c["dy"]) * ref["res_for_gamma"]).sum(axis=(0, 1))
    oracle.assert_within("pd_gamma", f64(pg), ref["pd_gamma"], ref["bound"]("pd_gamma", dtype) + extra)
    oracle.assert_within("pd_beta", f64(pb), ref["pd_beta"], ref["bound"]("pd_beta", dtype))

    y, mean, var, rstd = lt.layer_norm(c["x"], c["gamma"], None, 1e-5)
    sd = "float32" if dtype in ("float16", "bfloat16") else dtype
    assert mean.dtype == var.dtype == rstd.dtype == TORCH_DTYPES[sd] and mean.shape == (6, 5)
    fref = oracle.layer_norm(f64(c["x"]), f64(c["gamma"]), None, 1e-5, 1)
    for name, got in (("y", y), ("mean", mean), ("variance", var), ("rstd", rstd)):
        oracle.assert_within(name, f64(got), fref[name], fref["bound"](name, dtype, sd))


@pytest.mark.parametrize("dtype", ["float64", "float32", "float16"])
def test_tensors_and_arrays_give_identical_results(dtype):
    c = make_case(dtype, (7, 33), seed=2)
    args = [c[k] for k in ("dy", "x", "variance", "mean", "gamma")]
    for a, b in zip(lt.layer_norm_grad(*args), lngrad.layer_norm_grad(*(t.numpy() for t in args))):
        np.testing.assert_array_equal(a.numpy(), b)


@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
def test_stores_options_give_the_same_bits(dtype):
    # Rows of whole 64-byte stores, so "streaming" streams (torch's CPU allocator aligns to
    # 64 bytes); the names reach the library and give what the default gives.
    c = make_case(dtype, (24, 1024), seed=4)
    args = [c[k] for k in ("dy", "x", "variance", "mean", "gamma")]
    grad, grad_x, forward = lt.layer_norm_grad(*args), lt.layer_norm_grad_x(*args), lt.layer_norm(c["x"], c["gamma"])
    for stores in ("automatic", "cached", "streaming"):
        for a, b in zip(lt.layer_norm_grad(*args, pd_x_stores=stores), grad):
            assert torch.equal(a, b)
        for a, b in zip(lt.layer_norm_grad_x(*args, pd_x_stores=stores), grad_x):
            assert torch.equal(a, b)
        for a, b in zip(lt.layer_norm(c["x"], c["gamma"], y_stores=stores), forward):
            assert torch.equal(a, b)
    with pytest.raises(lngrad.Error, match="layer_norm: y_stores: expected 'automatic', 'cached' or 'streaming'"):
        lt.layer_norm(c["x"], y_stores="always")


def test_non_contiguous_and_grad_requiring_inputs_are_accepted():
    c = make_case("float32", (10, 24), seed=3)
    args = [c[k] for k in ("dy", "x", "variance", "mean", "gamma")]
    expected = lt.layer_norm_grad(*args)
    wide = [torch.zeros(a.shape[:-1] + (2 * a.shape[-1],)) for a in args[:2]]
    for w, a in zip(wide, args[:2]):
        w[..., ::2] = a
    strided = [w[..., ::2] for w in wide]
    transposed = [a.t().contiguous().t() for a in args[:2]]
    assert not strided[0].is_contiguous() and not transposed[0].is_contiguous()
    for pair in (strided, transposed):
        for got, want in zip(lt.layer_norm_grad(*pair, *args[2:]), expected):
            assert torch.equal(got, want)
    leaf = c["x"].clone().requires_grad_(True)
    got = lt.layer_norm_grad(c["dy"], leaf, *args[2:])
    assert not any(t.requires_grad for t in got)
    assert torch.equal(got[0], expected[0])


def test_out_tensors_are_written_and_returned():
    c = make_case("bfloat16", (12, 16), seed=4)
    args = [c[k] for k in ("dy", "x", "variance", "mean", "gamma")]
    expected = lt.layer_norm_grad(*args)
    out = (torch.empty(12, 16, dtype=torch.bfloat16), torch.empty(16, dtype=torch.bfloat16), None)
    got = lt.layer_norm_grad(*args, out=out)
    assert got[0] is out[0] and got[1] is out[1]
    for g, e in zip(got, expected):
        assert torch.equal(g, e)


def test_out_tensors_written_bump_their_version_for_autograd():
    # A tensor saved for backward and then overwritten through out= must make that backward
    # fail, as after any in-place op, rather than silently use the new values.
    c = make_case("float32", (6, 8), seed=9)
    args = [c[k] for k in ("dy", "x", "variance", "mean", "gamma")]
    w = torch.ones(6, 8, requires_grad=True)
    saved = torch.zeros(6, 8)
    loss = (w * saved).sum()  # saves `saved` to compute w's gradient
    before = saved._version
    lt.layer_norm_grad(*args, output_mask=(True, False, False), out=(saved, None, None))
    assert saved._version > before
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        loss.backward()
    # Every function that takes out= bumps each array it was given.
    outs = [torch.empty(6, 8), torch.empty(6, 8)]
    versions = [t._version for t in outs]
    lt.layer_norm_grad_x(*args, out=tuple(outs))
    assert all(t._version > v for t, v in zip(outs, versions))
    pg = torch.empty(8)
    version = pg._version
    lt.layer_norm_grad_beta(outs[1], c["dy"], out=(pg, None))
    assert pg._version > version
    y = torch.empty(6, 8)
    version = y._version
    lt.layer_norm(c["x"], c["gamma"], out=(y, None, None, None))
    assert y._version > version


def _raises(exc, message, fn, *args, **kwargs):
    with pytest.raises(exc) as info:
        fn(*args, **kwargs)
    assert str(info.value) == message


def test_tensors_the_library_cannot_read_are_refused():
    c = make_case("float32", (4, 8), seed=5)
    dy, x, var, mean = (c[k] for k in ("dy", "x", "variance", "mean"))
    _raises(ValueError, "layer_norm_grad: x: expected a CPU tensor, given device meta",
            lt.layer_norm_grad, dy, torch.empty(4, 8, device="meta"), var, mean)
    _raises(TypeError, "layer_norm_grad: x: expected dtype float64, float32, float16 or bfloat16, given torch.int32",
            lt.layer_norm_grad, dy, x.to(torch.int32), var, mean)
    _raises(TypeError, "layer_norm_grad: dy: expected a strided (dense) tensor, given layout torch.sparse_coo",
            lt.layer_norm_grad, dy.to_sparse(), x, var, mean)
    _raises(TypeError, "layer_norm_grad: mean: expected a torch.Tensor, given ndarray",
            lt.layer_norm_grad, dy, x, var, mean.numpy())
    _raises(ValueError, "layer_norm_grad: out[0] (pd_x): expected a tensor that does not require grad "
            "(it is written directly), given one that requires grad",
            lt.layer_norm_grad, dy, x, var, mean, out=(torch.empty(4, 8, requires_grad=True), None, None))
    _raises(ValueError, "layer_norm_grad: out[0] (pd_x): expected a contiguous tensor, given strides (1, 4)",
            lt.layer_norm_grad, dy, x, var, mean, out=(torch.empty(8, 4).t(), None, None))
    _raises(ValueError, "layer_norm_grad: variance (rstd): expected shape [4] (the shape of mean), given [3]",
            lt.layer_norm_grad, dy, x, var[:3], mean, rstd=True)
    _raises(ValueError, "layer_norm: gamma: expected dtype float32 (x's dtype or float32), given bfloat16",
            lt.layer_norm, x, torch.ones(8, dtype=torch.bfloat16))


# ---- LayerNorm and its autograd Function. -----------------------------------------------------------

@pytest.mark.parametrize("normalized_shape,affine", [((7,), True), ((3, 5), True), ((6,), False)])
def test_gradcheck_float64(normalized_shape, affine):
    """Finite differences against the backward, in float64 (gradcheck's default
    eps 1e-6, atol 1e-5, rtol 1e-3 are loose next to float64 rounding)."""
    torch.manual_seed(0)
    ln = lt.LayerNorm(normalized_shape, elementwise_affine=affine, dtype=torch.float64)
    if affine:
        with torch.no_grad():
            ln.weight.uniform_(0.5, 1.5)
            ln.bias.normal_()
    x = (torch.randn((4, 2) + normalized_shape, dtype=torch.float64) * 3 + 1).requires_grad_(True)
    params = (ln.weight, ln.bias) if affine else ()
    assert torch.autograd.gradcheck(lambda x, *p: ln(x), (x, *params))


def test_matches_torch_layer_norm_in_float64():
    torch.manual_seed(1)
    ref = torch.nn.LayerNorm(40, dtype=torch.float64)
    with torch.no_grad():
        ref.weight.uniform_(0.5, 1.5)
        ref.bias.normal_()
    ours = lt.LayerNorm(40, dtype=torch.float64)
    ours.load_state_dict(ref.state_dict())
    assert isinstance(ours, torch.nn.LayerNorm) and repr(ours) == repr(ref)
    x = torch.randn(8, 3, 40, dtype=torch.float64) + 2
    dy = torch.randn(8, 3, 40, dtype=torch.float64)
    grads = []
    for m in (ref, ours):
        xi = x.clone().requires_grad_(True)
        y = m(xi)
        y.backward(dy)
        grads.append((y.detach(), xi.grad, m.weight.grad, m.bias.grad))
    # Both are centred float64 evaluations of the same formulas: a few hundred
    # float64 ulps of O(10) values at most.
    for a, b in zip(*grads):
        torch.testing.assert_close(b, a, rtol=0, atol=1e-12)


def test_backward_computes_only_what_autograd_needs():
    ln = lt.LayerNorm(16)
    x = torch.randn(5, 16)
    ln(x).sum().backward()  # x needs no grad: only weight and bias
    assert ln.weight.grad is not None and ln.bias.grad is not None
    ln.zero_grad(set_to_none=True)
    ln.weight.requires_grad_(False)
    xi = x.clone().requires_grad_(True)
    ln(xi).pow(2).sum().backward()
    assert ln.weight.grad is None and ln.bias.grad is not None and xi.grad is not None
    ref = torch.nn.LayerNorm(16)
    ref.load_state_dict(ln.state_dict())
    xr = x.clone().requires_grad_(True)
    ref(xr).pow(2).sum().backward()
    torch.testing.assert_close(xi.grad, xr.grad, rtol=1e-5, atol=1e-6)
    torch.testing.assert_close(ln.bias.grad, ref.bias.grad, rtol=1e-5, atol=1e-6)


def test_empty_batch_and_shape_errors():
    ln, ref = lt.LayerNorm(8), torch.nn.LayerNorm(8)
    x = torch.empty(0, 8, requires_grad=True)
    y = ln(x)
    assert y.shape == (0, 8)
    y.sum().backward()
    assert x.grad.shape == (0, 8)
    assert torch.equal(ln.weight.grad, torch.zeros(8)) and torch.equal(ln.bias.grad, torch.zeros(8))
    ref(torch.empty(0, 8, requires_grad=True)).sum().backward()
    assert torch.equal(ref.weight.grad, ln.weight.grad)
    _raises(ValueError, "LayerNorm: input: expected trailing axes [8] (normalized_shape), given shape [3, 7]",
            ln, torch.randn(3, 7))
    with pytest.raises(RuntimeError):  # once_differentiable: no double backward
        xi = torch.randn(2, 8, requires_grad=True)
        (g,) = torch.autograd.grad(ln(xi).pow(2).sum(), xi, create_graph=True)
        g.sum().backward()


class Block(torch.nn.Module):
    """A pre-norm transformer block: attention and an MLP, each behind a LayerNorm."""

    def __init__(self, d, heads, norm, dtype):
        super().__init__()
        self.ln1 = norm(d, dtype=dtype)
        self.attn = torch.nn.MultiheadAttention(d, heads, batch_first=True, dtype=dtype)
        self.ln2 = norm(d, dtype=dtype)
        self.mlp = torch.nn.Sequential(torch.nn.Linear(d, 4 * d, dtype=dtype), torch.nn.GELU(),
                                       torch.nn.Linear(4 * d, d, dtype=dtype))

    def forward(self, x):
        h = self.ln1(x)
        x = x + self.attn(h, h, h, need_weights=False)[0]
        return x + self.mlp(self.ln2(x))


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_transformer_block_gradients_equal_torch_layer_norm(dtype, torch_threads):
    torch_threads(1)
    torch.manual_seed(2)
    ref = Block(64, 4, torch.nn.LayerNorm, dtype)
    with torch.no_grad():  # non-trivial LayerNorm parameters
        for ln in (ref.ln1, ref.ln2):
            ln.weight.uniform_(0.5, 1.5)
            ln.bias.normal_(0, 0.5)
    ours = Block(64, 4, lt.LayerNorm, dtype)
    ours.load_state_dict(ref.state_dict())
    x = torch.randn(3, 10, 64, dtype=dtype) + 0.5
    w = torch.randn(3, 10, 64, dtype=dtype)
    results = []
    for block in (ref, ours):
        xi = x.clone().requires_grad_(True)
        (block(xi) * w).sum().backward()
        results.append({"input": xi.grad, **{n: p.grad for n, p in block.named_parameters()}})
    # The two LayerNorms agree to a few units of rounding (float32 u = 6e-8,
    # float64 1.1e-16) of the normalized values; the block's linear maps and
    # sums of up to 256 terms amplify that by well under 1e3 relative to each
    # gradient's largest entry. 2e-5 (float32) and 1e-12 (float64) of that entry
    # bound it; a missing term of the LayerNorm gradient changes them by O(1).
    tol = 2e-5 if dtype == torch.float32 else 1e-12
    assert results[0].keys() == results[1].keys()
    for name in results[0]:
        a, b = results[0][name], results[1][name]
        scale = a.abs().max().item()
        err = (a - b).abs().max().item()
        assert err <= tol * scale, f"{name}: max |diff| {err:.3g} > {tol} * {scale:.3g}"


# ---- bfloat16 parameter gradients over many rows (../shared/FACTS.md). ---------------------------

def test_bfloat16_parameter_gradients_over_65536_rows(torch_threads):
    """dy = +0.5 on the first 32769 of 65536 rows and -0.5 on the rest: every
    partial sum is a multiple of 0.5 below 2^24, so float32 accumulation gives
    pd_beta = 1 exactly, while the partial sums pass 16384, where bfloat16
    accumulation stalls. A row lost or counted twice moves pd_beta by 0.5,
    which its bfloat16 value shows (spacing 2^-7 at 1). Every row of x is the
    same, so pd_gamma = sum(dy) * xhat, checked against the oracle."""
    rows, h, positive = 65536, 16, 32769
    torch_threads(2)
    pattern = torch.linspace(-2, 3, h, dtype=torch.float64) ** 2
    x = pattern.to(torch.bfloat16).expand(rows, h).contiguous()
    dy = torch.full((rows, h), -0.5, dtype=torch.bfloat16)
    dy[:positive] = 0.5
    ln = lt.LayerNorm(h, dtype=torch.bfloat16)
    xi = x.clone().requires_grad_(True)
    ln(xi).backward(dy)
    assert ln.bias.grad.dtype == torch.bfloat16
    assert torch.equal(ln.bias.grad, torch.full((h,), 1.0, dtype=torch.bfloat16))
    # pd_gamma against the oracle from the same float32 statistics the forward saves.
    _, mean, _, rstd = lt.layer_norm(x, ln.weight.detach(), None, ln.eps)
    ref = oracle.layer_norm_grad(f64(dy), f64(x), f64(rstd), f64(mean), None, None, 1, rstd_given=True)
    oracle.assert_within("pd_gamma", f64(ln.weight.grad), ref["pd_gamma"], ref["bound"]("pd_gamma", "bfloat16"))
    # torch's own CPU backward on the same problem, reported (not asserted: it is
    # torch's defect, per thread count).
    for threads in (1, 2):
        torch_threads(threads)
        tl = torch.nn.LayerNorm(h, dtype=torch.bfloat16)
        tl(x.clone().requires_grad_(True)).backward(dy)
        worst = np.max(np.abs(f64(tl.weight.grad) - ref["pd_gamma"]))
        print(f"torch {torch.__version__}, {threads} thread(s): pd_beta[0] = {tl.bias.grad[0].item()} "
              f"(exact 1); max |pd_gamma error| = {worst:.4g}; "
              f"lngrad: pd_beta[0] = {ln.bias.grad[0].item()}")
