"""grad, grad-x, grad-beta and forward end to end: inputs written by NumPy,
outputs read by NumPy and checked against the float64 oracle in cli_helpers
within its rounding-error bounds."""

import numpy as np
import pytest

from cli_helpers import (U32, U64, assert_close, decode, forward_oracle, grad_oracle, one_line_error, run,
                         seed_assigned, seed_values, storage)

RNG_SEED = 5


def grad_case(tmp_path, dtype, shape, ndim, gamma_dtype="same", keepdims=False, stat_dtype=None, seed=RNG_SEED):
    """Writes dy, x, mean, variance (and gamma) for `shape`, normalizing the
    trailing `ndim` axes. The stored mean is the row mean shifted by a third of
    a standard deviation, so the pd_var * sum(-2 (x - mean)) term of pd_mean is
    far from zero and any formula that drops it fails the bounds."""
    rng = np.random.default_rng(seed)
    lead = shape[:len(shape) - ndim]
    h = int(np.prod(shape[len(shape) - ndim:]))
    x64 = rng.normal(1.5, 2.0, size=shape)
    dy64 = rng.normal(0.0, 1.0, size=shape)
    x_s, x = storage(x64, dtype)
    dy_s, dy = storage(dy64, dtype)
    rows = x.reshape(-1, h)
    stat_dtype = stat_dtype or ("float32" if dtype in ("float16", "bfloat16") else dtype)
    mean_s, mean = storage(rows.mean(axis=1) + rows.std(axis=1) / 3, stat_dtype)
    var_s, var = storage(rows.var(axis=1) * 1.1, stat_dtype)
    stat_shape = lead + (1,) * ndim if keepdims else lead
    files = {"dy": dy_s, "x": x_s, "mean": mean_s.reshape(stat_shape), "variance": var_s.reshape(stat_shape)}
    gamma = None
    if gamma_dtype is not None:
        gd = dtype if gamma_dtype == "same" else gamma_dtype
        gamma_s, gamma = storage(rng.normal(0.5, 1.0, size=shape[len(shape) - ndim:]), gd)
        files["gamma"] = gamma_s
    args = []
    for name, arr in files.items():
        np.save(tmp_path / f"{name}.npy", arr)
        args += [f"--{name}", tmp_path / f"{name}.npy"]
    if dtype == "bfloat16":
        args += ["--dtype", "bfloat16"]
    return args, dict(dy=dy, x=x, stat=var, mean=mean, gamma=gamma, ndim=ndim)


def load(path, dtype):
    arr = np.load(path)
    assert arr.dtype.byteorder in ("<", "=", "|"), arr.dtype  # written in the host's (little-endian) order
    return decode(arr, dtype)


@pytest.mark.parametrize("dtype,shape,ndim,gamma_dtype,keepdims", [
    ("float32", (3, 5, 2, 16), 2, "same", False),
    ("float32", (7, 33), 1, "same", True),
    ("float64", (4, 7, 12), 1, None, True),
    ("float64", (6, 40), 1, "float32", False),
    ("float16", (5, 24), 1, "float32", False),
    ("float16", (2, 3, 20), 1, "same", False),
    ("bfloat16", (5, 24), 1, "same", False),
    ("bfloat16", (4, 2, 8), 2, "float32", False),
])
def test_grad_matches_the_oracle(tmp_path, dtype, shape, ndim, gamma_dtype, keepdims):
    args, inp = grad_case(tmp_path, dtype, shape, ndim, gamma_dtype, keepdims)
    eps = 1e-5
    out = tmp_path / "out"
    run("grad", *args, "--epsilon", eps, "--out", out, check_rc=0)
    u = U64 if dtype == "float64" else U32
    want = grad_oracle(inp["dy"], inp["x"], inp["stat"], inp["mean"], inp["gamma"], ndim, eps, u)
    # Library rules: pd_x like x; pd_gamma, pd_beta like gamma, or like x without gamma.
    param = dtype if gamma_dtype in ("same", None) else gamma_dtype
    for name, out_dtype in (("pd_x", dtype), ("pd_gamma", param), ("pd_beta", param)):
        got = load(out / f"{name}.npy", out_dtype)
        assert got.shape == want[name][0].shape, (name, got.shape)
        assert_close(name, got, *want[name], out_dtype)
    assert sorted(p.name for p in out.iterdir()) == ["pd_beta.npy", "pd_gamma.npy", "pd_x.npy"]


def test_grad_bounds_are_tight_enough_to_catch_the_mean_correction(tmp_path):
    # Dropping the pd_var * (1/H) * sum(-2 (x - mean)) term (seed 000's form)
    # must be caught: with the stored mean off the row mean it moves pd_x by
    # far more than the rounding bound.
    args, inp = grad_case(tmp_path, "float32", (6, 32), 1)
    run("grad", *args, "--epsilon", 1e-5, "--mask", "pd_x", "--out", tmp_path / "o", check_rc=0)
    got = load(tmp_path / "o" / "pd_x.npy", "float32")
    want, bound = grad_oracle(inp["dy"], inp["x"], inp["stat"], inp["mean"], inp["gamma"], 1, 1e-5, U32)["pd_x"]
    h = 32
    xm = inp["x"] - inp["mean"][:, None]
    rstd = 1 / np.sqrt(inp["stat"][:, None] + 1e-5)
    pd_var = (-0.5 * inp["dy"] * inp["gamma"] * xm * rstd ** 3).sum(axis=1, keepdims=True)
    dropped = want - pd_var * (1.0 / h) * (-2 * xm).sum(axis=1, keepdims=True) / h
    assert np.all(np.abs(got - want) <= bound)
    assert np.max(np.abs(got - dropped) - bound) > 0, "the test data does not exercise the mean correction"


def test_grad_with_rstd(tmp_path):
    args, inp = grad_case(tmp_path, "float32", (9, 20), 1)
    rstd = (1 / np.sqrt(inp["stat"] + 1e-5)).astype(np.float32)
    np.save(tmp_path / "rstd.npy", rstd)
    i = args.index("--variance")
    args[i + 1] = tmp_path / "rstd.npy"
    run("grad", *args, "--rstd", "--out", tmp_path / "o", check_rc=0)
    want = grad_oracle(inp["dy"], inp["x"], rstd.astype(np.float64), inp["mean"], inp["gamma"], 1, 0.0, U32,
                       stat_is_rstd=True)
    for name in ("pd_x", "pd_gamma", "pd_beta"):
        assert_close(name, load(tmp_path / "o" / f"{name}.npy", "float32"), *want[name], "float32")
    one_line_error(run("grad", *args, "--rstd", "--epsilon", 1e-5, "--out", tmp_path / "p"), "--epsilon", "--rstd")


def test_grad_default_epsilon_is_the_ascend_one(tmp_path):
    # 1e-12 for float32 x: tiny variances make the default visible.
    args, inp = grad_case(tmp_path, "float32", (4, 16), 1)
    np.save(tmp_path / "variance.npy", np.full(4, 1e-9, np.float32))
    run("grad", *args, "--mask", "pd_x", "--out", tmp_path / "o", check_rc=0)
    var = np.full(4, np.float32(1e-9), dtype=np.float64)
    want = grad_oracle(inp["dy"], inp["x"], var, inp["mean"], inp["gamma"], 1, 1e-12, U32)["pd_x"]
    assert_close("pd_x", load(tmp_path / "o" / "pd_x.npy", "float32"), *want, "float32")


def test_grad_mask_writes_only_what_it_names(tmp_path):
    args, _ = grad_case(tmp_path, "float32", (5, 16), 1)
    run("grad", *args, "--out", tmp_path / "all", check_rc=0)
    run("grad", *args, "--mask", "pd_beta,pd_gamma", "--out", tmp_path / "some", check_rc=0)
    assert sorted(p.name for p in (tmp_path / "some").iterdir()) == ["pd_beta.npy", "pd_gamma.npy"]
    for name in ("pd_gamma", "pd_beta"):  # the same sums, bit for bit
        assert np.load(tmp_path / "all" / f"{name}.npy").tobytes() == \
            np.load(tmp_path / "some" / f"{name}.npy").tobytes()
    one_line_error(run("grad", *args, "--mask", "pd_x,dx", "--out", tmp_path / "x"), "--mask", "'dx'")
    one_line_error(run("grad", *args, "--mask", "pd_x,pd_x", "--out", tmp_path / "x"), "named twice")


def test_grad_results_do_not_depend_on_threads(tmp_path):
    # 256 x 256 elements: the library runs one thread per 2^14 elements and
    # sums pd_gamma/pd_beta in 8 chunks of 32 rows, so --threads 3 really uses
    # three (a smaller problem would run on one).
    args, _ = grad_case(tmp_path, "float32", (256, 256), 1)
    run("grad", *args, "--threads", 1, "--out", tmp_path / "t1", check_rc=0)
    run("grad", *args, "--threads", 3, "--out", tmp_path / "t3", check_rc=0)
    for name in ("pd_x", "pd_gamma", "pd_beta"):
        assert (tmp_path / "t1" / f"{name}.npy").read_bytes() == (tmp_path / "t3" / f"{name}.npy").read_bytes()


@pytest.mark.parametrize("dtype", ["float32", "float64", "float16", "bfloat16"])
def test_grad_x_matches_the_oracle(tmp_path, dtype):
    args, inp = grad_case(tmp_path, dtype, (3, 4, 24), 1)
    run("grad-x", *args, "--epsilon", 1e-5, "--out", tmp_path / "o", check_rc=0)
    u = U64 if dtype == "float64" else U32
    want = grad_oracle(inp["dy"], inp["x"], inp["stat"], inp["mean"], inp["gamma"], 1, 1e-5, u)
    for name in ("pd_x", "res_for_gamma"):  # both in x's dtype
        assert_close(name, load(tmp_path / "o" / f"{name}.npy", dtype), *want[name], dtype)


@pytest.mark.parametrize("dtype,gamma_ndim", [("float32", 1), ("float32", 2), ("float64", 1), ("float16", 1),
                                              ("bfloat16", 2)])
def test_grad_beta_matches_the_oracle(tmp_path, dtype, gamma_ndim):
    rng = np.random.default_rng(11)
    shape = (6, 5, 12)
    dy_s, dy = storage(rng.normal(size=shape), dtype)
    res_s, res = storage(rng.normal(size=shape), dtype)
    np.save(tmp_path / "dy.npy", dy_s)
    np.save(tmp_path / "res.npy", res_s)
    extra = ["--dtype", "bfloat16"] if dtype == "bfloat16" else []
    run("grad-beta", "--dy", tmp_path / "dy.npy", "--res-for-gamma", tmp_path / "res.npy", "--gamma-ndim",
        gamma_ndim, *extra, "--out", tmp_path / "o", check_rc=0)
    norm = shape[len(shape) - gamma_ndim:]
    d2, r2 = dy.reshape(-1, int(np.prod(norm))), res.reshape(-1, int(np.prod(norm)))
    u = U64 if dtype == "float64" else U32
    rows = d2.shape[0]
    # A column sum of `rows` products: (rows + 1) u times the magnitudes.
    want_g = ((d2 * r2).sum(axis=0).reshape(norm), 2 * (rows + 1) * u * np.abs(d2 * r2).sum(axis=0).reshape(norm))
    want_b = (d2.sum(axis=0).reshape(norm), 2 * rows * u * np.abs(d2).sum(axis=0).reshape(norm))
    assert_close("pd_gamma", load(tmp_path / "o" / "pd_gamma.npy", dtype), *want_g, dtype)
    assert_close("pd_beta", load(tmp_path / "o" / "pd_beta.npy", dtype), *want_b, dtype)


@pytest.mark.parametrize("dtype,gamma,beta,ndim_opt", [
    ("float32", True, True, None),
    ("float64", True, False, None),
    ("float32", False, False, 2),
    ("float16", True, True, None),
    ("bfloat16", False, True, None),
])
def test_forward_matches_the_oracle(tmp_path, dtype, gamma, beta, ndim_opt):
    rng = np.random.default_rng(3)
    shape = (4, 3, 10)
    ndim = ndim_opt or 1
    x_s, x = storage(rng.normal(2.0, 3.0, size=shape), dtype)
    np.save(tmp_path / "x.npy", x_s)
    args = ["--x", tmp_path / "x.npy"]
    params = {}
    for name, present, mu in (("gamma", gamma, 1.0), ("beta", beta, 0.0)):
        if present:
            s, params[name] = storage(rng.normal(mu, 0.5, size=shape[-ndim:]), dtype)
            np.save(tmp_path / f"{name}.npy", s)
            args += [f"--{name}", tmp_path / f"{name}.npy"]
    if ndim_opt:
        args += ["--normalized-ndim", ndim_opt]
    if dtype == "bfloat16":
        args += ["--dtype", "bfloat16"]
    run("forward", *args, "--epsilon", 1e-5, "--out", tmp_path / "o", check_rc=0)
    u = U64 if dtype == "float64" else U32
    want = forward_oracle(x, params.get("gamma"), params.get("beta"), ndim, 1e-5, u)
    stat = "float32" if dtype in ("float16", "bfloat16") else dtype  # statistics: float32 for 16-bit x
    for name, out_dtype in (("y", dtype), ("mean", stat), ("variance", stat), ("rstd", stat)):
        got = load(tmp_path / "o" / f"{name}.npy", out_dtype)
        assert got.shape == want[name][0].shape, (name, got.shape)
        assert_close(name, got, *want[name], out_dtype)


def test_forward_then_grad_x_through_files(tmp_path):
    # The CLI's own outputs are valid inputs: forward's mean and variance feed grad-x.
    rng = np.random.default_rng(8)
    x = rng.normal(0.0, 1.0, size=(6, 32)).astype(np.float32)
    dy = rng.normal(0.0, 1.0, size=(6, 32)).astype(np.float32)
    np.save(tmp_path / "x.npy", x)
    np.save(tmp_path / "dy.npy", dy)
    run("forward", "--x", tmp_path / "x.npy", "--out", tmp_path / "f", check_rc=0)
    f = tmp_path / "f"
    run("grad-x", "--dy", tmp_path / "dy.npy", "--x", tmp_path / "x.npy", "--variance", f / "variance.npy",
        "--mean", f / "mean.npy", "--out", tmp_path / "g", check_rc=0)
    mean = np.load(f / "mean.npy").astype(np.float64)
    var = np.load(f / "variance.npy").astype(np.float64)
    want = grad_oracle(dy.astype(np.float64), x.astype(np.float64), var, mean, None, 1, 1e-12, U32)
    assert_close("pd_x", load(tmp_path / "g" / "pd_x.npy", "float32"), *want["pd_x"], "float32")


# ---- the seeds' examples ----

def seed002_files(tmp_path):
    iota = np.arange(64, dtype=np.float32).reshape(1, 8, 8)  # seed 002: dy = x = 0..63
    n, v = seed_assigned("d.variance")
    files = {"dy": iota, "x": iota, "mean": seed_values("d.mean").astype(np.float32).reshape(1, 8),
             "variance": np.full((1, n), v, np.float32), "gamma": seed_values("d.gamma").astype(np.float32)}
    args = []
    for name, arr in files.items():
        np.save(tmp_path / f"{name}.npy", arr)
        args += [f"--{name}", tmp_path / f"{name}.npy"]
    return args, files


def test_seed002_example(tmp_path):
    args, f = seed002_files(tmp_path)
    run("grad-x", *args, "--epsilon", 1e-4, "--out", tmp_path / "o", check_rc=0)
    pd_x = np.load(tmp_path / "o" / "pd_x.npy").reshape(64)
    res = np.load(tmp_path / "o" / "res_for_gamma.npy").reshape(64)
    # The listed values carry the device's float32 rounding: a float64
    # evaluation lies within 1.4e-5 of them and a float32 one about 2e-5 (the
    # row sums cancel terms near 400 to about 3); 5e-5 leaves margin.
    assert np.max(np.abs(pd_x - seed_values("d.pd_x"))) <= 5e-5
    # res_for_gamma = xhat is listed to 8 digits (5e-8 at 1.5); a float32
    # evaluation (rstd within 3u, one product) is within 4 * 2^-24 * 1.53 = 3.6e-7.
    listed_row = seed_values("const float row[8]")
    assert np.max(np.abs(res - np.tile(listed_row, 8))) <= 5e-7
    want = grad_oracle(f["dy"].astype(np.float64), f["x"].astype(np.float64), f["variance"].astype(np.float64),
                       f["mean"].astype(np.float64), f["gamma"].astype(np.float64), 1,
                       float(np.float32(1e-4)), U32)
    assert_close("pd_x", pd_x.reshape(1, 8, 8), *want["pd_x"], "float32")

    # Seed 001's op on seed 002's intermediate, against the one-pass grad.
    run("grad-beta", "--dy", tmp_path / "dy.npy", "--res-for-gamma", tmp_path / "o" / "res_for_gamma.npy",
        "--out", tmp_path / "b", check_rc=0)
    run("grad", *args, "--epsilon", 1e-4, "--mask", "pd_gamma,pd_beta", "--out", tmp_path / "g", check_rc=0)
    for name in ("pd_gamma", "pd_beta"):
        assert_close(name, np.load(tmp_path / "g" / f"{name}.npy").astype(np.float64), *want[name], "float32")
        assert_close(name, np.load(tmp_path / "b" / f"{name}.npy").astype(np.float64), *want[name], "float32")


def test_seed001_example_is_exact(tmp_path):
    iota = np.arange(64, dtype=np.float32).reshape(1, 8, 8)  # seed 001: dy = res_for_gamma = 0..63
    np.save(tmp_path / "iota.npy", iota)
    run("grad-beta", "--dy", tmp_path / "iota.npy", "--res-for-gamma", tmp_path / "iota.npy", "--out",
        tmp_path / "o", check_rc=0)
    # Integer sums below 2^24: exact in float32, whatever the order.
    assert np.array_equal(np.load(tmp_path / "o" / "pd_gamma.npy"), seed_values("d.pd_gamma").astype(np.float32))
    assert np.array_equal(np.load(tmp_path / "o" / "pd_beta.npy"), seed_values("d.pd_beta").astype(np.float32))


def test_demo_prints_the_seed_comparisons():
    proc = run("demo", "--threads", 2, check_rc=0)
    diffs = [float(line.rsplit("=", 1)[1]) for line in proc.stdout.splitlines() if line.strip().startswith("max |")]
    # pd_x, res_for_gamma, pd_gamma, pd_beta of seed 002; pd_gamma, pd_beta of seed 001.
    assert len(diffs) == 6, proc.stdout
    assert diffs[0] <= 5e-5  # pd_x vs listed: as test_seed002_example
    assert diffs[1] <= 5e-7  # res_for_gamma vs listed: as test_seed002_example
    # pd_gamma against layer_norm_grad_beta of the listed res_for_gamma: each
    # is a float32 column sum of 8 products with sum |dy * res| <= 428 (within
    # 12u * 428 = 3.1e-4 each), and the two res_for_gamma differ by <= 5e-7
    # over sum |dy| <= 280 (1.4e-4): 1e-3 covers both.
    assert diffs[2] <= 1e-3
    assert diffs[3] == 0 and diffs[4] == 0 and diffs[5] == 0  # integer sums: exact
    assert "3.0548172" in proc.stdout  # the listed pd_x[0], printed beside lngrad's
    line = [ln for ln in proc.stdout.splitlines() if ln.startswith("throughput:")]
    assert len(line) == 1 and "GB/s" in line[0] and "[8192, 1024]" in line[0], proc.stdout


# ---- bfloat16 and byte order ----

def test_bfloat16_outputs_are_uint16_and_inputs_need_the_flag(tmp_path):
    args, _ = grad_case(tmp_path, "bfloat16", (4, 16), 1)
    i = args.index("--dtype")
    plain = args[:i] + args[i + 2:]
    one_line_error(run("grad", *plain, "--out", tmp_path / "o"), "dy.npy", "uint16", "--dtype bfloat16")
    assert not (tmp_path / "o").exists()
    one_line_error(run("grad", *args, "--dtype", "float8", "--out", tmp_path / "o"), "--dtype")
    run("grad", *args, "--out", tmp_path / "o", check_rc=0)
    for name in ("pd_x", "pd_gamma", "pd_beta"):
        assert np.load(tmp_path / "o" / f"{name}.npy").dtype == np.dtype("<u2")


@pytest.mark.parametrize("code", [">f4", ">f8", ">f2"])
def test_big_endian_inputs_give_the_little_endian_results(tmp_path, code):
    rng = np.random.default_rng(4)
    x = rng.normal(1.0, 2.0, size=(5, 3, 8)).astype(code)
    gamma = rng.normal(1.0, 0.5, size=8).astype(code)
    le = code.replace(">", "<")
    for tag, t in (("be", code), ("le", le)):
        np.save(tmp_path / f"x_{tag}.npy", x.astype(t))
        np.save(tmp_path / f"g_{tag}.npy", gamma.astype(t))
        raw = (tmp_path / f"x_{tag}.npy").read_bytes()
        assert (f"'{t}'".encode() in raw[:128]), raw[:128]  # NumPy kept the byte order asked for
        run("forward", "--x", tmp_path / f"x_{tag}.npy", "--gamma", tmp_path / f"g_{tag}.npy", "--out",
            tmp_path / tag, check_rc=0)
    for name in ("y", "mean", "variance", "rstd"):
        be, le_out = np.load(tmp_path / "be" / f"{name}.npy"), np.load(tmp_path / "le" / f"{name}.npy")
        assert be.dtype.byteorder in ("<", "=") and be.tobytes() == le_out.tobytes(), name
    # compare reads either byte order: the same values, zero ULP apart.
    proc = run("compare", tmp_path / "x_be.npy", tmp_path / "x_le.npy", check_rc=0)
    assert "max ULP distance 0" in proc.stdout and "outside tolerance: 0 of 120" in proc.stdout


@pytest.mark.parametrize("version", [(1, 0), (2, 0), (3, 0)])
def test_npy_format_versions(tmp_path, version):
    from numpy.lib import format as npf
    x = np.arange(16, dtype=np.float32).reshape(2, 8)
    with open(tmp_path / "x.npy", "wb") as f:
        npf.write_array(f, x, version=version)
    assert (tmp_path / "x.npy").read_bytes()[6] == version[0]
    run("forward", "--x", tmp_path / "x.npy", "--out", tmp_path / "o", check_rc=0)
    mean = np.load(tmp_path / "o" / "mean.npy")
    assert np.array_equal(mean, np.array([3.5, 11.5], np.float32))  # exact: small integer sums over H = 8
