"""lngrad.torch.install(): lngrad as torch's CPU kernel of native_layer_norm and
native_layer_norm_backward. Models here use torch.nn.LayerNorm and
F.layer_norm only; the tests check that they then get lngrad's numbers
(against the float64 oracle and against lngrad.torch.LayerNorm), that what
lngrad does not serve still reaches torch, and that uninstall() gives torch
back exactly."""

import numpy as np
import pytest
import torch
import torch.nn.functional as F

import lngrad.torch as lt
import oracle
from test_torch import Block, f64

EPS = 1e-5


@pytest.fixture(autouse=True)
def clean_state():
    """Every test starts and ends with torch's own kernels and its thread count."""
    threads = torch.get_num_threads()
    lt.uninstall()
    yield
    lt.uninstall()
    torch.set_num_threads(threads)


def params(ln, seed):
    """Non-trivial weight and bias (ones and zeros would hide a swapped or dropped term)."""
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        ln.weight.copy_(torch.rand(ln.weight.shape, generator=g) + 0.5)
        ln.bias.copy_(torch.randn(ln.bias.shape, generator=g))
    return ln


def grads_of(model, x, w):
    """Input and parameter gradients of sum(model(x) * w)."""
    xi = x.clone().requires_grad_(True)
    model.zero_grad(set_to_none=True)
    (model(xi) * w).sum().backward()
    return {"input": xi.grad, **{n: p.grad for n, p in model.named_parameters()}}


# ---- A model that never names lngrad. ---------------------------------------------------------------

@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_unmodified_model_gets_the_gradients_of_lngrad_layer_norm(dtype):
    torch.manual_seed(2)
    plain = Block(64, 4, torch.nn.LayerNorm, dtype)  # torch.nn.LayerNorm only
    for ln in (plain.ln1, plain.ln2):
        params(ln, 3)
    named = Block(64, 4, lt.LayerNorm, dtype)
    named.load_state_dict(plain.state_dict())
    x = torch.randn(3, 10, 64, dtype=dtype) + 0.5
    w = torch.randn(3, 10, 64, dtype=dtype)

    torch_own = grads_of(plain, x, w)
    with lt.install():
        installed = grads_of(plain, x, w)
    with_named = grads_of(named, x, w)
    # Installed, the block runs the same lngrad forward and backward on the same
    # inputs as lngrad.torch.LayerNorm (rstd saved in the same dtype, the same
    # epsilon, and lngrad's bits do not depend on the thread count); every
    # other op is torch's on identical inputs. So the gradients are the same
    # bits, far inside any float32 bound.
    assert installed.keys() == with_named.keys()
    for name in installed:
        assert torch.equal(installed[name], with_named[name]), name
    # Against torch's own kernels: within the bound test_torch derives for this
    # block (2e-5 / 1e-12 of each gradient's largest entry), and not the same
    # bits everywhere, which shows the installed kernels ran.
    tol = 2e-5 if dtype == torch.float32 else 1e-12
    differs = False
    for name in installed:
        a, b = torch_own[name], installed[name]
        assert (a - b).abs().max().item() <= tol * a.abs().max().item(), name
        differs |= not torch.equal(a, b)
    assert differs


def test_functional_and_transformer_layers_reach_the_installed_kernels():
    # F.layer_norm in float16: torch 1.13's CPU kernels refuse the dtype.
    x = torch.randn(2, 6, 32)
    with pytest.raises(RuntimeError, match="not implemented for 'Half'"):
        F.layer_norm(x.half(), (32,))
    with lt.install():
        y = F.layer_norm(x.half(), (32,))
    fwd = oracle.layer_norm(f64(x.half()), None, None, EPS, 1)
    oracle.assert_within("y", f64(y), fwd["y"], fwd["bound"]("y", "float16", "float32"))
    # nn.TransformerEncoderLayer builds its own LayerNorms: installed, it gets the
    # bits of the same layer with those replaced by lngrad.torch.LayerNorm.
    torch.manual_seed(4)
    layer = torch.nn.TransformerEncoderLayer(32, 4, 64, dropout=0.0, batch_first=True)
    for ln in (layer.norm1, layer.norm2):
        params(ln, 5)
    named = torch.nn.TransformerEncoderLayer(32, 4, 64, dropout=0.0, batch_first=True)
    named.norm1, named.norm2 = lt.LayerNorm(32), lt.LayerNorm(32)
    named.load_state_dict(layer.state_dict())
    w = torch.randn(2, 6, 32)
    with lt.install():
        installed = grads_of(layer, x, w)
    expected = grads_of(named, x, w)
    for name in expected:
        assert torch.equal(installed[name], expected[name]), name


# ---- float16 and bfloat16 against the float64 oracle. ----------------------------------------------

@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_16_bit_forward_and_backward_match_the_oracle(dtype):
    td = {"float16": torch.float16, "bfloat16": torch.bfloat16}[dtype]
    g = torch.Generator().manual_seed(7)
    shape = (6, 5, 48)
    x = (torch.randn(shape, generator=g, dtype=torch.float64) * 2 + 3).to(td)
    dy = torch.randn(shape, generator=g, dtype=torch.float64).to(td)
    ln = params(torch.nn.LayerNorm(48), 8).to(td)
    weight, bias = ln.weight.detach(), ln.bias.detach()
    with lt.install():
        y, mean, rstd = torch.native_layer_norm(x, (48,), weight, bias, EPS)
        pd_x, pd_gamma, pd_beta = torch.ops.aten.native_layer_norm_backward(
            dy, x, (48,), mean, rstd, weight, bias, [True, True, True])
        # The same kernels through autograd, from an unmodified module.
        xi = x.clone().requires_grad_(True)
        ln(xi).backward(dy)
    assert y.dtype == pd_x.dtype == pd_gamma.dtype == pd_beta.dtype == td
    assert mean.dtype == rstd.dtype == torch.float32 and mean.shape == rstd.shape == (6, 5, 1)
    fwd = oracle.layer_norm(f64(x), f64(weight), f64(bias), EPS, 1)
    oracle.assert_within("y", f64(y), fwd["y"], fwd["bound"]("y", dtype, "float32"))
    oracle.assert_within("mean", f64(mean)[..., 0], fwd["mean"], fwd["bound"]("mean", dtype, "float32"))
    oracle.assert_within("rstd", f64(rstd)[..., 0], fwd["rstd"], fwd["bound"]("rstd", dtype, "float32"))
    # The backward from the statistics it was given (float32 rstd, as torch passes it).
    ref = oracle.layer_norm_grad(f64(dy), f64(x), f64(rstd), f64(mean), f64(weight), None, 1, rstd_given=True)
    for name, got in (("pd_x", pd_x), ("pd_gamma", pd_gamma), ("pd_beta", pd_beta)):
        oracle.assert_within(name, f64(got), ref[name], ref["bound"](name, dtype))
    assert torch.equal(xi.grad, pd_x) and torch.equal(ln.weight.grad, pd_gamma) and torch.equal(ln.bias.grad, pd_beta)


def test_bfloat16_pd_beta_over_65536_rows_of_one_half_is_32768():
    """dy = 0.5 over 65536 rows: float32 sums of 0.5 are exact below 2^24 and
    32768 is a bfloat16, so pd_beta is exactly 32768 for any thread count.
    torch 1.13's own kernel gives 128 (1 thread) or 256 (2 threads)."""
    rows, h = 65536, 16
    x = torch.randn(rows, h, generator=torch.Generator().manual_seed(1)).to(torch.bfloat16)
    dy = torch.full((rows, h), 0.5, dtype=torch.bfloat16)
    ln = torch.nn.LayerNorm(h, dtype=torch.bfloat16)
    want = torch.full((h,), 32768.0, dtype=torch.bfloat16)
    with lt.install():
        for threads in (1, 2):
            torch.set_num_threads(threads)
            ln.zero_grad(set_to_none=True)
            ln(x.clone().requires_grad_(True)).backward(dy)
            assert torch.equal(ln.bias.grad, want), (threads, ln.bias.grad[:4])


def test_bfloat16_parameter_sums_count_every_row_once():
    """32768 sits where bfloat16 spacing is 128 below and 256 above, so one
    lost or doubled row of 0.5 would round back to it. Here each of 512
    columns gets 0.5 from exactly 128 of the 65536 rows (row r feeds column
    r % 512) and 0 from the rest: the exact sums are 64, and 63.5 or 64.5
    (one row lost or counted twice) are bfloat16 values of their own. So
    pd_beta must equal the float64 sum of dy exactly; pd_gamma, which sums
    dy * xhat over the same rows, is held to the oracle's bound."""
    rows, h = 65536, 512
    g = torch.Generator().manual_seed(5)
    x = (torch.randn(rows, h, generator=g) * 2 + 1).to(torch.bfloat16)
    r = torch.arange(rows)
    dy = torch.zeros(rows, h, dtype=torch.bfloat16)
    dy[r, r % h] = 0.5
    ln = torch.nn.LayerNorm(h, dtype=torch.bfloat16)
    with lt.install():
        y, mean, rstd = torch.native_layer_norm(x, (h,), ln.weight.detach(), ln.bias.detach(), EPS)
        grads = {}
        for threads in (1, 2, 3):
            torch.set_num_threads(threads)
            ln.zero_grad(set_to_none=True)
            ln(x.clone().requires_grad_(True)).backward(dy)
            grads[threads] = (ln.weight.grad, ln.bias.grad)
    exact = f64(dy).sum(axis=0)
    np.testing.assert_array_equal(f64(grads[1][1]), exact)
    ref = oracle.layer_norm_grad(f64(dy), f64(x), f64(rstd), f64(mean), None, None, 1, rstd_given=True)
    oracle.assert_within("pd_gamma", f64(grads[1][0]), ref["pd_gamma"], ref["bound"]("pd_gamma", "bfloat16"))
    # torch 1.13's own dgamma changes with the thread count; lngrad's is the same bits.
    for threads in (2, 3):
        assert torch.equal(grads[threads][0], grads[1][0]) and torch.equal(grads[threads][1], grads[1][1])


# ---- gradcheck, what falls through, threads. ---------------------------------------------------------

@pytest.mark.parametrize("normalized_shape,affine", [((7,), True), ((3, 5), True), ((6,), False)])
def test_gradcheck_and_gradgradcheck(normalized_shape, affine):
    """Finite differences in float64 against the installed backward (gradcheck's
    default eps 1e-6, atol 1e-5, rtol 1e-3 are loose next to float64 rounding);
    the double backward is torch's formula over the installed kernels' outputs."""
    torch.manual_seed(0)
    x = (torch.randn((4, 2) + normalized_shape, dtype=torch.float64) * 3 + 1).requires_grad_(True)
    ps = ()
    if affine:
        ps = (torch.rand(normalized_shape, dtype=torch.float64).add_(0.5).requires_grad_(True),
              torch.randn(normalized_shape, dtype=torch.float64).requires_grad_(True))

    def fn(x, *p):
        return F.layer_norm(x, normalized_shape, *p)

    with lt.install():
        assert torch.autograd.gradcheck(fn, (x, *ps))
        assert torch.autograd.gradgradcheck(fn, (x, *ps))


def test_what_lngrad_does_not_serve_reaches_torch():
    x = torch.randn(3, 7)
    cases = {
        "shape torch refuses": lambda: F.layer_norm(x, (8,)),
        "weight of another shape": lambda: F.layer_norm(x, (7,), torch.ones(6)),
        "dtype torch refuses": lambda: F.layer_norm(x.to(torch.int32), (7,)),
        "float64 weight with bfloat16 x (lngrad refuses it)": lambda: F.layer_norm(
            x.bfloat16(), (7,), torch.ones(7, dtype=torch.float64)),
    }
    messages = {}
    for name, fn in cases.items():
        with pytest.raises(RuntimeError) as own:
            fn()
        with lt.install(), pytest.raises(RuntimeError) as installed:
            fn()
        messages[name] = str(installed.value)
        assert str(installed.value) == str(own.value), name  # torch's own message, unchanged
    # Empty batches and rank 9 (lngrad stops at 8) are torch's results.
    for shape in ((0, 8), [1] * 8 + [5]):
        xe = torch.randn(shape)
        ln = params(torch.nn.LayerNorm(shape[-1]), 1)
        own = grads_of(ln, xe, torch.ones(shape))
        own_y = ln(xe)
        with lt.install():
            got = grads_of(ln, xe, torch.ones(shape))
            got_y = ln(xe)
        assert torch.equal(got_y, own_y)
        for name in own:
            assert torch.equal(got[name], own[name]), (shape, name)


def test_threads_follow_torch_unless_set():
    from lngrad import _lngrad_torch as ext
    with lt.install():
        for n in (1, 3, 2):
            torch.set_num_threads(n)
            assert ext.effective_threads() == n
        with lt.install(num_threads=4):
            torch.set_num_threads(1)
            assert ext.effective_threads() == 4
        assert ext.effective_threads() == torch.get_num_threads() == 1  # the outer setting is back
    with pytest.raises(ValueError, match=r"install: num_threads: expected >= 0 \(0 = all cores\), given -2"):
        lt.install(num_threads=-2)
    assert not lt.is_installed()


# ---- uninstall. -----------------------------------------------------------------------------------------

def test_uninstall_gives_torch_back_exactly():
    g = torch.Generator().manual_seed(11)
    x = torch.randn(64, 40, generator=g).to(torch.bfloat16)
    dy = torch.randn(64, 40, generator=g).to(torch.bfloat16)
    ln = params(torch.nn.LayerNorm(40), 12).to(torch.bfloat16)

    def run():
        stats = torch.native_layer_norm(x, (40,), ln.weight.detach(), ln.bias.detach(), EPS)
        return stats, grads_of(ln, x, dy)

    before = run()
    lt.install()
    assert lt.is_installed()
    during = run()
    lt.uninstall()
    assert not lt.is_installed()
    after = run()
    # Torch keeps bfloat16 statistics, lngrad float32: the kernel in effect shows.
    assert before[0][2].dtype == after[0][2].dtype == torch.bfloat16 and during[0][2].dtype == torch.float32
    for a, b in zip(before[0], after[0]):
        assert torch.equal(a, b)
    for name in before[1]:
        assert torch.equal(before[1][name], after[1][name]), name
    # torch's float16 refusal is back, and uninstall twice is harmless.
    lt.uninstall()
    with pytest.raises(RuntimeError, match="not implemented for 'Half'"):
        F.layer_norm(x.half(), (40,))


def test_context_manager_restores_the_state_before_it():
    with lt.install(num_threads=2):
        assert lt.is_installed()
        with lt.install():
            assert lt.is_installed()
        assert lt.is_installed()  # the outer install survives the inner block
    assert not lt.is_installed()
    with pytest.raises(KeyError):
        with lt.install():
            raise KeyError("an exception leaves the block")
    assert not lt.is_installed()
