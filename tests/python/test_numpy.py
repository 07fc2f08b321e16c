"""End-to-end tests of the NumPy front end of lngrad against the float64 oracle
(oracle.py), the seeds' examples, and the argument rules."""

import subprocess
import sys
import threading
import time
import zlib

import numpy as np
import pytest

import lngrad
import oracle

DTYPES = ["float64", "float32", "float16"]


def stat_dtype(dtype):
    return "float32" if dtype == "float16" else dtype


def make_case(dtype, shape, ndim, seed, exact_stats=True):
    """Inputs stored in `dtype` (statistics in the forward's dtype). x has a row
    offset so that x - mean cancels; mean is perturbed off the row mean when
    exact_stats is False, which exercises seed 002's pd_var * sum(-2 xm) term."""
    rng = np.random.default_rng(seed)
    lead, norm = shape[:len(shape) - ndim], shape[len(shape) - ndim:]
    x = (rng.standard_normal(shape) * 2 + rng.uniform(-4, 4, lead + (1,) * ndim)).astype(dtype)
    dy = rng.standard_normal(shape).astype(dtype)
    gamma = rng.uniform(0.5, 1.5, norm).astype(dtype)
    axes = tuple(range(len(lead), len(shape)))
    x64 = x.astype(np.float64)
    mean = x64.mean(axis=axes)
    variance = x64.var(axis=axes)
    if not exact_stats:
        mean = mean + rng.uniform(-0.1, 0.1, mean.shape)
        variance = variance * rng.uniform(0.9, 1.1, variance.shape)
    sd = stat_dtype(dtype)
    return dict(dy=dy, x=x, variance=variance.astype(sd), mean=mean.astype(sd), gamma=gamma)


SHAPES = [((4, 3, 40), 1), ((5, 6, 10), 2), ((64, 8), 1), ((3, 129), 1), ((2, 1), 1)]


# ---- The seeds' examples. ---------------------------------------------------------------------

def test_seed002_listed_values():
    s = oracle.seed_data()["002"]
    x, dy = s["x"].reshape(1, 8, 8), s["dy"].reshape(1, 8, 8)
    mean, var = s["mean"].reshape(1, 8), s["variance"].reshape(1, 8)
    pd_x, res = lngrad.layer_norm_grad_x(dy, x, var, mean, s["gamma"], 1e-4)
    assert pd_x.dtype == np.float32 and res.dtype == np.float32 and pd_x.shape == (1, 8, 8)
    # The listed values carry the device's float32 rounding: a float64 evaluation is
    # within 1.4e-5 of them, a float32 one about 2e-5 (row sums cancel ~400 to ~3).
    np.testing.assert_allclose(pd_x.reshape(-1), s["pd_x"], rtol=0, atol=5e-5)
    np.testing.assert_allclose(res.reshape(-1), s["res_for_gamma"], rtol=0, atol=5e-5)
    # And against the oracle with the library's own float32 bound.
    ref = oracle.layer_norm_grad(dy, x, var, mean, s["gamma"], float(np.float32(1e-4)), 1)
    oracle.assert_within("pd_x", pd_x, ref["pd_x"], ref["bound"]("pd_x", "float32"))
    oracle.assert_within("res_for_gamma", res, ref["res_for_gamma"], ref["bound"]("res_for_gamma", "float32"))


def test_seed001_listed_values():
    s = oracle.seed_data()["001"]
    pd_gamma, pd_beta = lngrad.layer_norm_grad_beta(s["res_for_gamma"].reshape(1, 8, 8), s["dy"].reshape(1, 8, 8))
    # Integer sums below 2^24: exact in float32.
    np.testing.assert_array_equal(pd_gamma, s["pd_gamma"])
    np.testing.assert_array_equal(pd_beta, s["pd_beta"])


# ---- Results against the float64 oracle. ---------------------------------------------------------

@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape,ndim", SHAPES)
@pytest.mark.parametrize("exact_stats", [True, False])
def test_layer_norm_grad_matches_oracle(dtype, shape, ndim, exact_stats):
    c = make_case(dtype, shape, ndim, seed=zlib.crc32(repr((dtype, shape, exact_stats)).encode()), exact_stats=exact_stats)
    eps = 1e-5
    pd_x, pd_gamma, pd_beta = lngrad.layer_norm_grad(c["dy"], c["x"], c["variance"], c["mean"], c["gamma"], eps)
    assert pd_x.dtype == np.dtype(dtype) and pd_x.shape == shape
    assert pd_gamma.dtype == np.dtype(dtype) and pd_gamma.shape == shape[len(shape) - ndim:]
    assert pd_beta.dtype == pd_gamma.dtype and pd_beta.shape == pd_gamma.shape
    ref = oracle.layer_norm_grad(c["dy"], c["x"], c["variance"], c["mean"], c["gamma"], eps, ndim)
    for name, got in (("pd_x", pd_x), ("pd_gamma", pd_gamma), ("pd_beta", pd_beta)):
        oracle.assert_within(name, got, ref[name], ref["bound"](name, dtype))


@pytest.mark.parametrize("dtype", DTYPES)
def test_layer_norm_grad_x_then_beta_match_oracle(dtype):
    shape, ndim = (6, 5, 24), 1
    c = make_case(dtype, shape, ndim, seed=7, exact_stats=False)
    ref = oracle.layer_norm_grad(c["dy"], c["x"], c["variance"], c["mean"], c["gamma"], 1e-3, ndim)
    pd_x, res = lngrad.layer_norm_grad_x(c["dy"], c["x"], c["variance"], c["mean"], c["gamma"], 1e-3)
    assert res.dtype == np.dtype(dtype)
    oracle.assert_within("pd_x", pd_x, ref["pd_x"], ref["bound"]("pd_x", dtype))
    oracle.assert_within("res_for_gamma", res, ref["res_for_gamma"], ref["bound"]("res_for_gamma", dtype))
    pd_gamma, pd_beta = lngrad.layer_norm_grad_beta(res, c["dy"])
    # pd_gamma is summed from the stored res_for_gamma, whose rounding adds
    # STORE_U * |dy * res| per term on top of pd_gamma's own bound.
    extra = oracle.STORE_U[dtype] * 2 * np.abs(c["dy"].astype(np.float64) * ref["res_for_gamma"]).sum(axis=(0, 1))
    oracle.assert_within("pd_gamma", pd_gamma, ref["pd_gamma"], ref["bound"]("pd_gamma", dtype) + extra)
    oracle.assert_within("pd_beta", pd_beta, ref["pd_beta"], ref["bound"]("pd_beta", dtype))


@pytest.mark.parametrize("dtype", DTYPES)
def test_rstd_statistic_and_default_epsilon(dtype):
    c = make_case(dtype, (8, 33), 1, seed=11)
    eps = lngrad.default_epsilon(np.dtype(dtype))
    assert eps == (1e-5 if dtype == "float16" else 1e-12)
    rstd = (1.0 / np.sqrt(c["variance"].astype(np.float64) + eps)).astype(c["variance"].dtype)
    got = lngrad.layer_norm_grad(c["dy"], c["x"], rstd, c["mean"], c["gamma"], rstd=True)
    ref = oracle.layer_norm_grad(c["dy"], c["x"], rstd, c["mean"], c["gamma"], None, 1, rstd_given=True)
    for name, a in zip(("pd_x", "pd_gamma", "pd_beta"), got):
        oracle.assert_within(name, a, ref[name], ref["bound"](name, dtype))
    # epsilon=None is the library default: identical to passing it.
    default = lngrad.layer_norm_grad(c["dy"], c["x"], c["variance"], c["mean"], c["gamma"])
    explicit = lngrad.layer_norm_grad(c["dy"], c["x"], c["variance"], c["mean"], c["gamma"], eps)
    for a, b in zip(default, explicit):
        np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("dtype", DTYPES)
def test_layer_norm_matches_oracle_and_feeds_the_backward(dtype):
    rng = np.random.default_rng(3)
    shape = (7, 3, 50)
    x = (rng.standard_normal(shape) * 3 + 5).astype(dtype)
    gamma = rng.uniform(0.5, 1.5, 50).astype(dtype)
    beta = rng.standard_normal(50).astype(dtype)
    eps = 1e-5
    y, mean, var, rstd = lngrad.layer_norm(x, gamma, beta, eps)
    sd = stat_dtype(dtype)
    assert y.dtype == np.dtype(dtype) and y.shape == shape
    for s in (mean, var, rstd):
        assert s.dtype == np.dtype(sd) and s.shape == (7, 3)
    ref = oracle.layer_norm(x, gamma, beta, eps, 1)
    for name, got in (("y", y), ("mean", mean), ("variance", var), ("rstd", rstd)):
        oracle.assert_within(name, got, ref[name], ref["bound"](name, dtype, sd))
    # The forward's statistics are valid backward inputs, as variance or as rstd.
    dy = rng.standard_normal(shape).astype(dtype)
    by_var = lngrad.layer_norm_grad(dy, x, var, mean, gamma, eps)
    by_rstd = lngrad.layer_norm_grad(dy, x, rstd, mean, gamma, rstd=True)
    ref_g = oracle.layer_norm_grad(dy, x, var, mean, gamma, eps, 1)
    for name, a, b in zip(("pd_x", "pd_gamma", "pd_beta"), by_var, by_rstd):
        oracle.assert_within(name, a, ref_g[name], ref_g["bound"](name, dtype))
        # rstd itself was rounded to the statistics' dtype: one more STORE_U relative.
        oracle.assert_within(name, b, ref_g[name], 2 * ref_g["bound"](name, dtype)
                             + 4 * oracle.STORE_U[sd] * np.abs(ref_g[name]))


def test_layer_norm_without_affine_and_normalized_ndim():
    rng = np.random.default_rng(5)
    x = rng.standard_normal((4, 6, 5))
    y, mean, var, rstd = lngrad.layer_norm(x, normalized_ndim=2)
    assert mean.shape == (4,)
    ref = oracle.layer_norm(x, None, None, 1e-12, 2)
    oracle.assert_within("y", y, ref["y"], ref["bound"]("y", "float64", "float64"))
    # gamma fixes the normalized rank when normalized_ndim=0.
    y2 = lngrad.layer_norm(x, np.ones((6, 5)), normalized_ndim=0)[0]
    np.testing.assert_array_equal(y, y2)


def test_gamma_none_acts_as_ones_and_statistics_may_keep_dims():
    c = make_case("float32", (10, 16), 1, seed=2)
    ones = np.ones(16, np.float32)
    with_ones = lngrad.layer_norm_grad(c["dy"], c["x"], c["variance"], c["mean"], ones)
    without = lngrad.layer_norm_grad(c["dy"], c["x"], c["variance"], c["mean"])
    kept = lngrad.layer_norm_grad(c["dy"], c["x"], c["variance"][:, None], c["mean"][:, None])
    for a, b, k in zip(with_ones, without, kept):
        np.testing.assert_array_equal(a, b)
        np.testing.assert_array_equal(a, k)
    assert without[1].dtype == np.float32  # x's dtype when gamma is None


def test_normalized_ndim_sets_the_axes_the_statistics_leave_open():
    # x [4, 1, 5] with statistics [4, 1, 1]: mean's shape says one normalized axis
    # (the first that differs), normalized_ndim=2 says two; both are valid.
    c = make_case("float64", (4, 1, 5), 2, seed=9)
    var, mean = c["variance"].reshape(4, 1, 1), c["mean"].reshape(4, 1, 1)
    one = lngrad.layer_norm_grad(c["dy"], c["x"], var, mean)
    two = lngrad.layer_norm_grad(c["dy"], c["x"], var, mean, normalized_ndim=2)
    assert one[1].shape == (5,) and two[1].shape == (1, 5)
    ref = oracle.layer_norm_grad(c["dy"], c["x"], var, mean, None, 1e-12, 2)
    for name, a, b in zip(("pd_x", "pd_gamma", "pd_beta"), one, two):
        oracle.assert_within(name, b, ref[name], ref["bound"](name, "float64"))
        oracle.assert_within(name, a.reshape(b.shape), ref[name], ref["bound"](name, "float64"))


def test_results_do_not_depend_on_thread_count():
    c = make_case("float32", (3000, 72), 1, seed=4)
    runs = [lngrad.layer_norm_grad(c["dy"], c["x"], c["variance"], c["mean"], c["gamma"], num_threads=n)
            for n in (1, 2, 3, 0)]
    for other in runs[1:]:
        for a, b in zip(runs[0], other):
            np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("dtype", ["float32", "float16"])
def test_stores_options_give_the_same_bits(dtype):
    # Rows of 4 KiB (float32) and 2 KiB (float16): whole 64-byte stores, so "streaming"
    # writes pd_x and y with non-temporal stores from the 64-byte line NumPy outputs start on.
    # The library's own tests check streamed against cached bits on every target; here the
    # three names must reach it and give what the default gives.
    c = make_case(dtype, (40, 1024), 1, seed=5)
    args = (c["dy"], c["x"], c["variance"], c["mean"], c["gamma"])
    grad = lngrad.layer_norm_grad(*args)
    grad_x = lngrad.layer_norm_grad_x(*args)
    forward = lngrad.layer_norm(c["x"], c["gamma"])
    for stores in ("automatic", "cached", "streaming"):
        for a, b in zip(lngrad.layer_norm_grad(*args, pd_x_stores=stores), grad):
            np.testing.assert_array_equal(a, b)
        for a, b in zip(lngrad.layer_norm_grad_x(*args, pd_x_stores=stores), grad_x):
            np.testing.assert_array_equal(a, b)
        for a, b in zip(lngrad.layer_norm(c["x"], c["gamma"], y_stores=stores), forward):
            np.testing.assert_array_equal(a, b)


def test_stores_options_are_checked():
    c = make_case("float32", (4, 8), 1, seed=5)
    args = (c["dy"], c["x"], c["variance"], c["mean"])
    _raises(ValueError, "layer_norm_grad: pd_x_stores: expected 'automatic', 'cached' or 'streaming', "
            "given 'stream'", lngrad.layer_norm_grad, *args, pd_x_stores="stream")
    _raises(ValueError, "layer_norm_grad_x: pd_x_stores: expected 'automatic', 'cached' or 'streaming', "
            "given 'Cached'", lngrad.layer_norm_grad_x, *args, pd_x_stores="Cached")
    _raises(ValueError, "layer_norm: y_stores: expected 'automatic', 'cached' or 'streaming', given ''",
            lngrad.layer_norm, c["x"], y_stores="")
    _raises(TypeError, "layer_norm_grad: pd_x_stores: expected a str, given NoneType",
            lngrad.layer_norm_grad, *args, pd_x_stores=None)
    # The binding itself reads the name (a binding that dropped it would accept anything).
    from lngrad import _lngrad
    v = (c["x"].ctypes.data, "float32", [4, 8])
    s = (c["mean"].ctypes.data, "float32", [4])
    out = np.empty((4, 8), np.float32)
    o = (out.ctypes.data, "float32", [4, 8])
    _raises(ValueError, "stores: expected automatic, cached or streaming, given bogus", _lngrad.layer_norm_grad,
            v, v, s, s, None, o, None, None, None, False, True, False, False, 0, 1, "bogus")
    _raises(ValueError, "stores: expected automatic, cached or streaming, given bogus", _lngrad.layer_norm_grad_x,
            v, v, s, s, None, o, o, None, False, 0, 1, "bogus")
    _raises(ValueError, "stores: expected automatic, cached or streaming, given bogus", _lngrad.layer_norm,
            v, None, None, o, s, s, None, None, 1, 1, "bogus")


# ---- out= and output_mask. -------------------------------------------------------------------------

def test_out_arrays_are_written_and_returned():
    c = make_case("float32", (12, 20), 1, seed=6)
    expected = lngrad.layer_norm_grad(c["dy"], c["x"], c["variance"], c["mean"], c["gamma"])
    out = (np.full((12, 20), np.nan, np.float32), np.full(20, np.nan, np.float32), np.full(20, np.nan, np.float32))
    got = lngrad.layer_norm_grad(c["dy"], c["x"], c["variance"], c["mean"], c["gamma"], out=out)
    for g, o, e in zip(got, out, expected):
        assert g is o
        np.testing.assert_array_equal(o, e)
    # A None entry is allocated.
    got = lngrad.layer_norm_grad(c["dy"], c["x"], c["variance"], c["mean"], c["gamma"], out=(None, out[1], None))
    assert got[1] is out[1] and got[0] is not None and got[2] is not None
    np.testing.assert_array_equal(got[0], expected[0])
    # layer_norm, layer_norm_grad_x and layer_norm_grad_beta take out= too.
    y = np.empty((12, 20), np.float32)
    stats = [np.empty((12, 1), np.float64) for _ in range(3)]  # wider, kept-dims statistics
    r = lngrad.layer_norm(c["x"], out=(y, *stats))
    assert r[0] is y and all(a is b for a, b in zip(r[1:], stats))
    assert r[1].dtype == np.float64 and r[1].shape == (12, 1)
    pdx, res = np.empty((12, 20), np.float32), np.empty((12, 20), np.float32)
    assert all(a is b for a, b in zip(lngrad.layer_norm_grad_x(c["dy"], c["x"], c["variance"], c["mean"],
                                                               out=(pdx, res)), (pdx, res)))
    pg, pb = np.empty(20, np.float32), np.empty(20, np.float32)
    assert all(a is b for a, b in zip(lngrad.layer_norm_grad_beta(res, c["dy"], out=(pg, pb)), (pg, pb)))


@pytest.mark.parametrize("shape", [(3, 5), (1, 1), (2, 3, 7)])
def test_allocated_outputs_start_on_a_cache_line(shape):
    # The library streams pd_x past the caches from a 64-byte line only, for short rows;
    # np.empty alone gives 16-byte alignment. Checked on outputs of every op.
    x = np.random.default_rng(8).standard_normal(shape).astype(np.float16)
    y, mean, var, rstd = lngrad.layer_norm(x)
    pd_x, pd_gamma, pd_beta = lngrad.layer_norm_grad(x, x, var, mean, None)
    pd_x2, res = lngrad.layer_norm_grad_x(x, x, var, mean, None)
    pg, pb = lngrad.layer_norm_grad_beta(res, x)
    for a in (y, mean, var, rstd, pd_x, pd_gamma, pd_beta, pd_x2, res, pg, pb):
        assert a.ctypes.data % 64 == 0
        assert a.flags.c_contiguous and a.flags.writeable
    assert y.shape == pd_x.shape == res.shape == shape and pd_x.dtype == res.dtype == np.float16
    assert pd_gamma.shape == pb.shape == shape[-1:]
    np.testing.assert_array_equal(pd_x, pd_x2)


@pytest.mark.parametrize("dtype", ["float32", "float16", "float64", "int8"])
@pytest.mark.parametrize("shape", [(0,), (7,), (3, 5), (1000, 1001), 5])
def test_aligned_empty_starts_on_a_cache_line_and_holds_its_elements(dtype, shape):
    a = lngrad.aligned_empty(shape, dtype)
    dims = (shape,) if isinstance(shape, int) else shape
    assert a.shape == dims and a.dtype == np.dtype(dtype)
    assert a.flags.c_contiguous and a.flags.writeable
    assert a.size == 0 or a.ctypes.data % 64 == 0  # a zero-size array has no bytes to place
    values = (np.arange(a.size) % 101).astype(dtype)  # exact in every dtype here
    a[...] = values.reshape(dims)  # every element written and read back: the buffer holds them all
    np.testing.assert_array_equal(a.ravel(), values)


def test_aligned_empty_refuses_a_negative_or_fractional_size():
    for bad in [(-1,), (3, -2), (2.5,)]:
        with pytest.raises(ValueError, match="aligned_empty: shape: expected non-negative integer sizes"):
            lngrad.aligned_empty(bad)


def past_a_line(a, offset):
    """A copy of array a that starts `offset` bytes past a 64-byte line."""
    raw = np.empty(a.nbytes + 64, np.uint8)
    start = (offset - raw.ctypes.data) % 64
    placed = raw[start:start + a.nbytes].view(a.dtype).reshape(a.shape)
    placed[...] = a
    assert placed.ctypes.data % 64 == offset
    return placed


def test_aligned_returns_aligned_arrays_as_they_are_and_copies_the_rest():
    a = lngrad.aligned_empty((64, 300))
    a[...] = np.random.default_rng(3).standard_normal(a.shape)
    assert lngrad.aligned(a) is a
    shifted = past_a_line(a, 16)
    for source in (shifted, a[:, ::2], a.T, a.tolist()):
        b = lngrad.aligned(source)
        assert b.ctypes.data % 64 == 0 and b.flags.c_contiguous
        np.testing.assert_array_equal(b, np.asarray(source))


def test_rows_off_a_line_and_on_one_give_the_same_bits():
    # The kernels place their column steps by each row's offset in a line; the
    # bits must not depend on it (float32 rows of 1.5-3 KiB take other groups
    # off a line, too).
    c = make_case("float32", (64, 500), 1, seed=12, exact_stats=False)
    on = {k: lngrad.aligned(v) for k, v in c.items()}
    off = {k: past_a_line(v, 32) for k, v in c.items()}
    out_on = [lngrad.aligned_empty(s, np.float32) for s in ((64, 500), (500,), (500,))]
    pd_x_off = past_a_line(np.empty((64, 500), np.float32), 32)
    r_on = lngrad.layer_norm_grad(on["dy"], on["x"], on["variance"], on["mean"], on["gamma"], out=tuple(out_on))
    r_off = lngrad.layer_norm_grad(off["dy"], off["x"], off["variance"], off["mean"], off["gamma"],
                                   out=(pd_x_off, None, None))
    for p, q in zip(r_on, r_off):
        assert p.tobytes() == q.tobytes()
    ref = oracle.layer_norm_grad(c["dy"], c["x"], c["variance"], c["mean"], c["gamma"], 1e-12, 1)
    for name, got in zip(("pd_x", "pd_gamma", "pd_beta"), r_on):
        oracle.assert_within(name, got, ref[name], ref["bound"](name, "float32"))


def test_float32_parameter_gradients_for_float16_input_via_out():
    c = make_case("float16", (300, 24), 1, seed=8)
    pg, pb = np.empty(24, np.float32), np.empty(24, np.float32)
    _, g32, b32 = lngrad.layer_norm_grad(c["dy"], c["x"], c["variance"], c["mean"], out=(None, pg, pb))
    ref = oracle.layer_norm_grad(c["dy"], c["x"], c["variance"], c["mean"], None, 1e-5, 1)
    oracle.assert_within("pd_gamma", g32, ref["pd_gamma"], ref["bound"]("pd_gamma", "float32"))
    oracle.assert_within("pd_beta", b32, ref["pd_beta"], ref["bound"]("pd_beta", "float32"))


@pytest.mark.parametrize("mask", [(True, False, False), (False, True, True), (False, False, True),
                                  (True, True, False), (False, False, False)])
def test_output_mask(mask):
    c = make_case("float64", (9, 13), 1, seed=1)
    full = lngrad.layer_norm_grad(c["dy"], c["x"], c["variance"], c["mean"], c["gamma"])
    got = lngrad.layer_norm_grad(c["dy"], c["x"], c["variance"], c["mean"], c["gamma"], output_mask=mask)
    for wanted, g, f in zip(mask, got, full):
        if wanted:
            np.testing.assert_array_equal(g, f)
        else:
            assert g is None


def test_masked_out_entry_must_be_none():
    c = make_case("float32", (4, 8), 1, seed=1)
    with pytest.raises(ValueError, match=r"^layer_norm_grad: out\[1\] \(pd_gamma\): expected None "
                                         r"\(output_mask\[1\] is False\), given an array$"):
        lngrad.layer_norm_grad(c["dy"], c["x"], c["variance"], c["mean"], output_mask=(True, False, True),
                               out=(None, np.empty(8, np.float32), None))


def test_in_place_over_dy():
    c = make_case("float32", (16, 40), 1, seed=12)
    expected = lngrad.layer_norm_grad(c["dy"], c["x"], c["variance"], c["mean"], c["gamma"])[0]
    dy = c["dy"].copy()
    pd_x = lngrad.layer_norm_grad(dy, c["x"], c["variance"], c["mean"], c["gamma"], out=(dy, None, None))[0]
    assert pd_x is dy
    np.testing.assert_array_equal(dy, expected)


# ---- Non-contiguous and foreign-layout inputs are copied, never misread. ---------------------------------

def _unaligned(a):
    buf = np.empty(a.nbytes + 1, np.uint8)
    u = buf[1:].view(a.dtype).reshape(a.shape)
    u[...] = a
    assert not u.flags.aligned
    return u


@pytest.mark.parametrize("layout", ["strided", "transposed", "fortran", "byteswapped", "unaligned"])
def test_inputs_in_any_layout_give_the_contiguous_result(layout):
    c = make_case("float32", (10, 24), 1, seed=13)
    expected = lngrad.layer_norm_grad(c["dy"], c["x"], c["variance"], c["mean"], c["gamma"])
    if layout == "strided":  # every other column of a wider array
        def f(a):
            w = np.zeros(a.shape[:-1] + (2 * a.shape[-1],), a.dtype)
            w[..., ::2] = a
            return w[..., ::2]
    elif layout == "transposed":
        def f(a):
            return np.ascontiguousarray(a.T).T
    elif layout == "fortran":
        def f(a):
            return np.asfortranarray(a)
    elif layout == "byteswapped":
        def f(a):
            return a.astype(a.dtype.newbyteorder(">"))
    else:
        f = _unaligned
    args = [f(c[k]) for k in ("dy", "x")] + [c["variance"], c["mean"], f(c["gamma"])]
    got = lngrad.layer_norm_grad(*args)
    for g, e in zip(got, expected):
        np.testing.assert_array_equal(g, e)


def test_array_likes_are_converted():
    c = make_case("float64", (3, 5), 1, seed=14)
    expected = lngrad.layer_norm_grad(c["dy"], c["x"], c["variance"], c["mean"], c["gamma"])
    got = lngrad.layer_norm_grad(*(c[k].tolist() for k in ("dy", "x", "variance", "mean", "gamma")))
    for g, e in zip(got, expected):
        np.testing.assert_array_equal(g, e)


@pytest.mark.parametrize("flaw", ["strided", "readonly", "byteswapped", "unaligned"])
def test_out_arrays_that_cannot_be_written_in_place_are_refused(flaw):
    c = make_case("float32", (6, 8), 1, seed=15)
    if flaw == "strided":
        o, text = np.empty((6, 16), np.float32)[:, ::2], "not C-contiguous"
    elif flaw == "readonly":
        o = np.empty((6, 8), np.float32)
        o.flags.writeable = False
        text = "read-only"
    elif flaw == "byteswapped":
        o, text = np.empty((6, 8), np.dtype(">f4")), "byte-swapped"
    else:
        o, text = _unaligned(np.empty((6, 8), np.float32)), "unaligned"
    with pytest.raises(ValueError, match=r"^layer_norm_grad: out\[0\] \(pd_x\): expected a C-contiguous, aligned, "
                                         r"writable array in native byte order, given one that is " + text + "$"):
        lngrad.layer_norm_grad(c["dy"], c["x"], c["variance"], c["mean"], out=(o, None, None))


# ---- Errors carry the library's message. --------------------------------------------------------------

def _raises(exc, message, fn, *args, **kwargs):
    with pytest.raises(exc) as info:
        fn(*args, **kwargs)
    assert str(info.value) == message
    return info.value


def test_library_errors_are_value_errors_with_its_message():
    c = make_case("float32", (4, 8), 1, seed=16)
    dy, x, var, mean = c["dy"], c["x"], c["variance"], c["mean"]
    e = _raises(ValueError, "layer_norm_grad: dy: expected dtype float32 (the dtype of x), given float64",
                lngrad.layer_norm_grad, dy.astype(np.float64), x, var, mean)
    assert isinstance(e, lngrad.Error)
    _raises(ValueError, "layer_norm_grad: dy: expected shape [4, 8] (the shape of x), given [4, 7]",
            lngrad.layer_norm_grad, dy[:, :7], x, var, mean)
    _raises(ValueError, "layer_norm_grad: gamma: expected shape [8] (x's trailing axes), given [7]",
            lngrad.layer_norm_grad, dy, x, var, mean, np.ones(7, np.float32))
    _raises(ValueError, "layer_norm_grad: mean: expected dtype float32 or float64 (never narrower than x), "
            "given float16", lngrad.layer_norm_grad, dy, x, var, mean.astype(np.float16))
    _raises(ValueError, "layer_norm_grad: epsilon: expected a finite value >= 0, given -1",
            lngrad.layer_norm_grad, dy, x, var, mean, None, -1.0)
    _raises(ValueError, "layer_norm_grad: num_threads: expected >= 0 (0 = all cores), given -2",
            lngrad.layer_norm_grad, dy, x, var, mean, num_threads=-2)
    _raises(ValueError, "layer_norm_grad: x: expected a non-empty tensor (every extent >= 1), given shape [0, 8]",
            lngrad.layer_norm_grad, dy[:0], x[:0], var[:0], mean[:0])
    _raises(ValueError, "layer_norm_grad: pd_x: expected dtype float32 (the dtype of x), given float64",
            lngrad.layer_norm_grad, dy, x, var, mean, out=(np.empty((4, 8)), None, None))
    _raises(ValueError, "layer_norm_grad_beta: res_for_gamma: expected shape [4, 8] (the shape of dy), "
            "given [4, 4]", lngrad.layer_norm_grad_beta, x[:, :4], dy)
    _raises(ValueError, "layer_norm_grad_beta: gamma_ndim: expected between 1 and rank(dy) = 2, given 3",
            lngrad.layer_norm_grad_beta, x, dy, gamma_ndim=3)
    _raises(ValueError, "layer_norm_grad: normalized_ndim: expected gamma or a positive normalized_ndim to fix "
            "the normalized axes, given none, and mean's shape [4, 8] does not tell them apart from x's",
            lngrad.layer_norm_grad, dy, x, x, x)
    _raises(ValueError, "layer_norm: gamma: expected shape [4, 8] (x's trailing axes), given [3, 8]",
            lngrad.layer_norm, x, np.ones((3, 8), np.float32), normalized_ndim=0)
    _raises(ValueError, "layer_norm: normalized_ndim: expected rank 2 (as gamma), given rank 1",
            lngrad.layer_norm, x, np.ones((4, 8), np.float32))
    _raises(ValueError, "layer_norm: normalized_ndim: expected >= 1 when gamma and beta are None, given 0",
            lngrad.layer_norm, x, normalized_ndim=0)
    # Overlapping outputs are refused, not raced.
    buf = np.empty(8, np.float32)
    _raises(ValueError, "layer_norm_grad: pd_beta: expected memory disjoint from the other outputs, "
            "given a buffer overlapping pd_gamma", lngrad.layer_norm_grad, dy, x, var, mean, out=(None, buf, buf))


def test_wrong_kinds_of_argument_are_type_errors():
    c = make_case("float32", (4, 8), 1, seed=17)
    dy, x, var, mean = c["dy"], c["x"], c["variance"], c["mean"]
    _raises(TypeError, "layer_norm_grad: x: expected dtype float64, float32 or float16, given int64",
            lngrad.layer_norm_grad, dy, np.arange(32).reshape(4, 8), var, mean)
    _raises(TypeError, "layer_norm_grad: gamma: expected dtype float64, float32 or float16, given complex64",
            lngrad.layer_norm_grad, dy, x, var, mean, np.ones(8, np.complex64))
    _raises(TypeError, "layer_norm_grad: out[2] (pd_beta): expected a numpy.ndarray, given list",
            lngrad.layer_norm_grad, dy, x, var, mean, out=(None, None, [0.0] * 8))
    _raises(TypeError, "layer_norm_grad: out: expected a tuple of 3 arrays or None, given ndarray",
            lngrad.layer_norm_grad, dy, x, var, mean, out=np.empty((4, 8), np.float32))
    _raises(TypeError, "layer_norm_grad: epsilon: expected a float or None, given str",
            lngrad.layer_norm_grad, dy, x, var, mean, None, "1e-5")
    _raises(TypeError, "layer_norm_grad: num_threads: expected an int, given float",
            lngrad.layer_norm_grad, dy, x, var, mean, num_threads=1.5)
    _raises(TypeError, "layer_norm_grad: x: expected an unmasked array, given a numpy.ma.MaskedArray",
            lngrad.layer_norm_grad, dy, np.ma.masked_less(x, 0), var, mean)
    _raises(TypeError, "layer_norm: x: expected dtype float64, float32 or float16, given <U1",
            lngrad.layer_norm, ["a"])


# ---- Threads. -------------------------------------------------------------------------------------

def test_gil_is_released_while_the_library_runs():
    """A second Python thread makes progress during a call. The switch interval
    is made huge so that the interpreter never forces a hand-over: the other
    thread can only run while the caller has released the GIL, and the caller
    reads the counter right before and right after the call. Calls are
    repeated until the counter moved (at most 200): on a loaded 2-core machine
    the counter thread may not get a core during a millisecond call."""
    c = make_case("float32", (2048, 2048), 1, seed=18)
    out = tuple(np.empty(s, np.float32) for s in ((2048, 2048), 2048, 2048))
    count, stop, started = [0], [False], threading.Event()

    def counter():
        started.set()
        while not stop[0]:
            count[0] += 1
            time.sleep(0)  # releases the GIL, so the main thread can take it back

    old = sys.getswitchinterval()
    sys.setswitchinterval(1000.0)
    t = threading.Thread(target=counter)
    try:
        t.start()
        started.wait()
        progress = 0
        for _ in range(200):
            before = count[0]
            lngrad.layer_norm_grad(c["dy"], c["x"], c["variance"], c["mean"], c["gamma"], out=out, num_threads=1)
            progress += count[0] - before
            if progress > 0:
                break
    finally:
        stop[0] = True
        t.join()
        sys.setswitchinterval(old)
    assert progress > 0


def test_concurrent_calls_from_python_threads_agree():
    cases = [make_case("float32", (500, 96), 1, seed=20 + i) for i in range(4)]
    expected = [lngrad.layer_norm_grad(c["dy"], c["x"], c["variance"], c["mean"], c["gamma"]) for c in cases]
    results = [None] * 4

    def run(i):
        c = cases[i]
        results[i] = [lngrad.layer_norm_grad(c["dy"], c["x"], c["variance"], c["mean"], c["gamma"])
                      for _ in range(20)]

    threads = [threading.Thread(target=run, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for exp, runs in zip(expected, results):
        for got in runs:
            for g, e in zip(got, exp):
                np.testing.assert_array_equal(g, e)


# ---- The package. ---------------------------------------------------------------------------------

def test_import_does_not_import_torch_and_reports_the_library():
    code = "import sys, lngrad; assert 'torch' not in sys.modules; print(lngrad.__version__, lngrad.active_target())"
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    version, target = r.stdout.split()
    assert version == lngrad.__version__ and target in lngrad.available_targets()
    assert lngrad.default_num_threads() >= 1
    for name in ("layer_norm_grad", "layer_norm_grad_x", "layer_norm_grad_beta", "layer_norm"):
        assert getattr(lngrad, name).__doc__
