"""Raw .bin files (numpy's tofile: no header, C order, host byte order), as
CANN's samples write inputs, outputs and golden data: read with --shape and
--dtype, written with --out-format bin (the default for raw inputs), checked
against the float64 oracle; sizes that do not match are refused; and the
messages for files that disagree name the flags and files."""

import numpy as np
import pytest

from cli_helpers import U32, assert_close, decode, forward_oracle, grad_oracle, one_line_error, run, storage

SHAPE = (6, 10, 48)


def tofile(path, arr):
    np.ascontiguousarray(arr).tofile(path)
    return path


def fromfile(path, dtype, shape):
    """A raw output as float64 (bfloat16 as uint16 words)."""
    raw = np.fromfile(path, dtype=np.uint16 if dtype == "bfloat16" else dtype)
    assert raw.size == int(np.prod(shape)), (path, raw.size, shape)
    return decode(raw.reshape(shape), dtype)


def raw_grad_case(tmp_path, dtype, seed=3):
    """dy, x and gamma in `dtype`, mean and variance float32 (as CANN's 16-bit
    samples store them), all as .bin; the stored mean is off the row mean so
    that seed 002's sum(-2 (x - mean)) term counts."""
    rng = np.random.default_rng(seed)
    x_s, x = storage(rng.normal(1.5, 2.0, size=SHAPE), dtype)
    dy_s, dy = storage(rng.normal(0.0, 1.0, size=SHAPE), dtype)
    g_s, gamma = storage(rng.normal(0.5, 1.0, size=SHAPE[-1:]), dtype)
    rows = x.reshape(-1, SHAPE[-1])
    m_s, mean = storage((rows.mean(axis=1) + rows.std(axis=1) / 3).reshape(SHAPE[:-1]), "float32")
    v_s, var = storage((rows.var(axis=1) * 1.1).reshape(SHAPE[:-1]), "float32")
    args = []
    for name, arr in (("dy", dy_s), ("x", x_s), ("mean", m_s), ("variance", v_s), ("gamma", g_s)):
        args += [f"--{name}", tofile(tmp_path / f"{name}.bin", arr)]
    return args, dict(dy=dy, x=x, stat=var, mean=mean, gamma=gamma)


SIXTEEN = ["--dtype", "mean=float32", "--dtype", "variance=float32"]


@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16"])
def test_grad_on_raw_files_matches_the_oracle(tmp_path, dtype):
    args, inp = raw_grad_case(tmp_path, dtype)
    out = tmp_path / "out"
    proc = run("grad", *args, "--shape", "6,10,48", "--dtype", dtype, *SIXTEEN, "--epsilon", 1e-5, "--out", out,
               check_rc=0)
    assert f"wrote {out}/pd_x.bin: {dtype} [6, 10, 48]" in proc.stdout
    assert sorted(p.name for p in out.iterdir()) == ["pd_beta.bin", "pd_gamma.bin", "pd_x.bin"]
    want = grad_oracle(inp["dy"], inp["x"], inp["stat"], inp["mean"], inp["gamma"], 1, 1e-5, U32)
    for name, shape in (("pd_x", SHAPE), ("pd_gamma", SHAPE[-1:]), ("pd_beta", SHAPE[-1:])):
        assert_close(name, fromfile(out / f"{name}.bin", dtype, shape), *want[name], dtype)


def test_raw_and_npy_outputs_hold_the_same_data(tmp_path):
    args, _ = raw_grad_case(tmp_path, "float16")
    common = [*args, "--shape", "[6, 10, 48]", "--dtype", "float16", *SIXTEEN]
    run("grad-x", *common, "--out", tmp_path / "bin", check_rc=0)
    run("grad-x", *common, "--out-format", "npy", "--out", tmp_path / "npy", check_rc=0)
    for name in ("pd_x", "res_for_gamma"):
        arr = np.load(tmp_path / "npy" / f"{name}.npy")
        assert arr.dtype == np.float16 and arr.shape == SHAPE
        assert (tmp_path / "bin" / f"{name}.bin").read_bytes() == arr.tobytes()


def test_a_raw_input_takes_the_shape_of_its_npy_partner(tmp_path):
    # x.npy beside dy.bin: dy takes x's shape, and outputs follow x (.npy).
    args, inp = raw_grad_case(tmp_path, "float32")
    np.save(tmp_path / "x.npy", inp["x"].astype(np.float32))
    np.save(tmp_path / "mean.npy", inp["mean"].astype(np.float32))
    args[args.index("--x") + 1] = tmp_path / "x.npy"
    args[args.index("--mean") + 1] = tmp_path / "mean.npy"
    run("grad", *args, "--dtype", "float32", "--epsilon", 1e-5, "--out", tmp_path / "o", check_rc=0)
    want = grad_oracle(inp["dy"], inp["x"], inp["stat"], inp["mean"], inp["gamma"], 1, 1e-5, U32)
    assert_close("pd_x", np.load(tmp_path / "o" / "pd_x.npy").astype(np.float64), *want["pd_x"], "float32")
    run("grad", *args, "--dtype", "float32", "--epsilon", 1e-5, "--out-format", "bin", "--out", tmp_path / "b",
        check_rc=0)
    assert (tmp_path / "b" / "pd_x.bin").read_bytes() == np.load(tmp_path / "o" / "pd_x.npy").tobytes()


def test_grad_beta_and_forward_on_raw_files(tmp_path):
    rng = np.random.default_rng(9)
    dy_s, dy = storage(rng.normal(size=SHAPE), "bfloat16")
    res_s, res = storage(rng.normal(size=SHAPE), "float32")  # float32 res_for_gamma for bfloat16 dy
    run("grad-beta", "--dy", tofile(tmp_path / "dy.bin", dy_s), "--res-for-gamma",
        tofile(tmp_path / "res.bin", res_s), "--shape", "6,10,48", "--dtype", "bfloat16", "--dtype",
        "res-for-gamma=float32", "--out", tmp_path / "b", check_rc=0)
    d2, r2 = dy.reshape(-1, 48), res.reshape(-1, 48)
    rows = d2.shape[0]
    # A column sum of `rows` products: (rows + 1) u times the magnitudes.
    assert_close("pd_gamma", fromfile(tmp_path / "b" / "pd_gamma.bin", "bfloat16", (48,)), (d2 * r2).sum(axis=0),
                 2 * (rows + 1) * U32 * np.abs(d2 * r2).sum(axis=0), "bfloat16")
    assert_close("pd_beta", fromfile(tmp_path / "b" / "pd_beta.bin", "bfloat16", (48,)), d2.sum(axis=0),
                 2 * rows * U32 * np.abs(d2).sum(axis=0), "bfloat16")

    x_s, x = storage(rng.normal(2.0, 3.0, size=(4, 3, 10)), "float16")
    g_s, gamma = storage(rng.normal(1.0, 0.5, size=(3, 10)), "float16")
    run("forward", "--x", tofile(tmp_path / "x.bin", x_s), "--gamma", tofile(tmp_path / "g.bin", g_s),
        "--normalized-ndim", 2, "--shape", "4,3,10", "--dtype", "float16", "--epsilon", 1e-5, "--out",
        tmp_path / "f", check_rc=0)
    want = forward_oracle(x, gamma, None, 2, 1e-5, U32)
    for name, dt, shape in (("y", "float16", (4, 3, 10)), ("mean", "float32", (4,)), ("rstd", "float32", (4,))):
        assert_close(name, fromfile(tmp_path / "f" / f"{name}.bin", dt, shape), *want[name], dt)


# ---- refusals ----

def test_a_size_that_does_not_match_the_file_is_refused(tmp_path):
    args, _ = raw_grad_case(tmp_path, "float16")
    out = tmp_path / "out"
    # [6, 10, 40] float16 is 4800 bytes; x.bin holds 6 * 10 * 48 * 2 = 5760.
    one_line_error(run("grad", *args, "--shape", "6,10,40", "--dtype", "float16", *SIXTEEN, "--out", out),
                   f"--dy {tmp_path / 'dy.bin'}: 5760 bytes, but float16 [6, 10, 40] is 4800 bytes")
    # The same data read as float32 would be half as many elements.
    one_line_error(run("grad", *args, "--shape", "6,10,48", "--dtype", "float32", "--out", out),
                   "--dy", "5760 bytes, but float32 [6, 10, 48] is 11520 bytes")
    # A per-tensor shape that does not fit its file.
    one_line_error(run("grad", *args, "--shape", "6,10,48", "--shape", "mean=6,11", "--dtype", "float16", *SIXTEEN,
                       "--out", out), "--mean", "240 bytes, but float32 [6, 11] is 264 bytes")
    assert not out.exists()


@pytest.mark.parametrize("extra,phrases", [
    ([], ["--dy", "a raw file needs its dtype", "--dtype dy=D"]),
    (["--dtype", "float16"], ["--dy", "a raw file needs its shape", "--shape dy=DIMS"]),
    (["--dtype", "float8"], ["--dtype", "expected float64, float32, float16 or bfloat16, given 'float8'"]),
    (["--dtype", "float16", "--dtype", "float32"], ["--dtype", "default (no NAME=) given twice"]),
    (["--dtype", "dz=float16"], ["--dtype", "unknown tensor 'dz'", "dy, x, variance, mean, gamma"]),
    (["--dtype", "x=float16", "--dtype", "x=float16"], ["--dtype", "'x' given twice"]),
    (["--shape", "6,-10,48"], ["--shape", "extents >= 0", "'6,-10,48'"]),
    (["--shape", "6x10"], ["--shape", "'6x10'"]),
    (["--out-format", "txt"], ["--out-format", "expected npy or bin, given 'txt'"]),
])
def test_raw_usage_errors(tmp_path, extra, phrases):
    args, _ = raw_grad_case(tmp_path, "float16")
    one_line_error(run("grad", *args, *extra, "--out", tmp_path / "o"), *phrases)
    assert not (tmp_path / "o").exists()


def test_an_npy_file_is_checked_against_its_own_dtype_and_shape_entries(tmp_path):
    x = np.ones((3, 8), np.float32)
    np.save(tmp_path / "x.npy", x)
    one_line_error(run("forward", "--x", tmp_path / "x.npy", "--dtype", "x=float16", "--out", tmp_path / "o"),
                   f"--x {tmp_path / 'x.npy'}: the file holds float32, but --dtype x=float16 was given")
    one_line_error(run("forward", "--x", tmp_path / "x.npy", "--shape", "x=3,9", "--out", tmp_path / "o"),
                   "the file has shape [3, 8], but --shape x=[3, 9] was given")
    # The default --dtype describes raw files; an .npy file keeps its own.
    run("forward", "--x", tmp_path / "x.npy", "--dtype", "float16", "--out", tmp_path / "o", check_rc=0)
    assert np.load(tmp_path / "o" / "y.npy").dtype == np.float32


# ---- messages that name the flags and files ----

def save_all(tmp_path, **arrays):
    args = []
    for name, arr in arrays.items():
        path = tmp_path / f"{name}.npy"
        np.save(path, arr)
        args += [f"--{name.rstrip('_')}", path]
    return args


def test_disagreeing_files_are_named_by_flag_and_file(tmp_path):
    f32 = np.float32
    dy = np.ones(SHAPE, f32)
    np.save(tmp_path / "short.npy", np.ones((6, 10, 40), f32))
    np.save(tmp_path / "dy.npy", dy)
    stats = save_all(tmp_path, mean=np.zeros((6, 10), f32), variance=np.ones((6, 10), f32))
    dy_path, short = tmp_path / "dy.npy", tmp_path / "short.npy"
    proc = run("grad", "--dy", dy_path, "--x", short, *stats, "--out", tmp_path / "o")
    assert one_line_error(proc) == f"lngrad: --dy {dy_path} has shape [6, 10, 48], --x {short} has [6, 10, 40]"

    np.save(tmp_path / "x.npy", dy)
    x = tmp_path / "x.npy"
    np.save(tmp_path / "g40.npy", np.ones(40, f32))
    one_line_error(run("grad", "--dy", dy_path, "--x", x, *stats, "--gamma", tmp_path / "g40.npy",
                       "--out", tmp_path / "o"),
                   f"--gamma {tmp_path / 'g40.npy'} has shape [40], --x {x} has [6, 10, 48], whose trailing axes")
    np.save(tmp_path / "g.npy", np.ones(48, f32))
    np.save(tmp_path / "m11.npy", np.zeros((6, 11), f32))
    np.save(tmp_path / "v11.npy", np.zeros((6, 11), f32))
    one_line_error(run("grad-x", "--dy", dy_path, "--x", x, "--mean", tmp_path / "m11.npy", "--variance",
                       tmp_path / "v11.npy", "--gamma", tmp_path / "g.npy", "--out", tmp_path / "o"),
                   f"--mean {tmp_path / 'm11.npy'} has shape [6, 11], --x {x} has [6, 10, 48]",
                   "x's leading axes, [6, 10] or [6, 10, 1]")
    one_line_error(run("grad", "--dy", dy_path, "--x", x, "--mean", tmp_path / "mean.npy", "--variance",
                       tmp_path / "v11.npy", "--out", tmp_path / "o"),
                   f"--mean {tmp_path / 'mean.npy'} has shape [6, 10], --variance {tmp_path / 'v11.npy'} has [6, 11]")
    np.save(tmp_path / "x16.npy", dy.astype(np.float16))
    one_line_error(run("grad", "--dy", dy_path, "--x", tmp_path / "x16.npy", *stats, "--out", tmp_path / "o"),
                   f"--dy {dy_path} holds float32, --x {tmp_path / 'x16.npy'} holds float16")
    one_line_error(run("grad-beta", "--dy", dy_path, "--res-for-gamma", short, "--out", tmp_path / "o"),
                   f"--dy {dy_path} has shape [6, 10, 48], --res-for-gamma {short} has [6, 10, 40]")
    one_line_error(run("forward", "--x", x, "--gamma", tmp_path / "g.npy", "--beta", tmp_path / "g40.npy",
                       "--out", tmp_path / "o"), f"--beta {tmp_path / 'g40.npy'} has shape [40], --x {x}")
    assert not (tmp_path / "o").exists()


# ---- compare with raw golden data ----

def test_compare_folders_of_bin_files(tmp_path):
    rng = np.random.default_rng(2)
    golden, device = tmp_path / "golden", tmp_path / "device"
    golden.mkdir()
    device.mkdir()
    pd_x = rng.normal(size=SHAPE).astype(np.float16)
    pd_gamma = rng.normal(size=48).astype(np.float32)
    tofile(golden / "pd_x.bin", pd_x)
    tofile(golden / "pd_gamma.bin", pd_gamma)
    bad = pd_x.copy()
    bad[2, 7, 5] += np.float16(0.5)
    tofile(device / "pd_x.bin", bad)
    np.save(device / "pd_gamma.bin.npy", pd_gamma)  # not a counterpart: a different name
    tofile(device / "pd_gamma.bin", pd_gamma)
    proc = run("compare", golden, device, "--dtype", "float16", "--dtype", "pd_gamma=float32", "--shape",
               "pd_x=6,10,48", check_rc=1)
    assert "pd_x.bin: FAIL (float16 [6, 10, 48]" in proc.stdout
    assert "worst element [2, 7, 5]" in proc.stdout and "outside tolerance: 1 of 2880" in proc.stdout
    assert "pd_gamma.bin: ok (float32 [48]" in proc.stdout  # no shape given: one axis
    assert "2 compared: 1 ok, 1 outside tolerance" in proc.stdout
    # Without a dtype for the raw files: exit 2, naming the file.
    proc = run("compare", golden, device)
    assert proc.returncode == 2 and "a raw file needs its dtype" in proc.stderr
    # A NAME that is no file's: refused, with the names there are.
    one_line_error(run("compare", golden, device, "--dtype", "pd_gama=float32"),
                   "unknown tensor 'pd_gama' (expected one of pd_gamma, pd_x)")


def test_compare_a_bin_file_with_its_npy_counterpart(tmp_path):
    x = np.arange(24, dtype=np.float32).reshape(4, 6)
    np.save(tmp_path / "e.npy", x)
    tofile(tmp_path / "a.bin", x)
    proc = run("compare", tmp_path / "e.npy", tmp_path / "a.bin", check_rc=0)  # shape and dtype of e.npy
    assert "ok (float32 [4, 6]" in proc.stdout and "max ULP distance 0" in proc.stdout
    tofile(tmp_path / "odd.bin", np.zeros(5, np.uint8))
    one_line_error(run("compare", tmp_path / "odd.bin", tmp_path / "odd.bin", "--dtype", "float32"),
                   "odd.bin: 5 bytes is not a whole number of float32 elements")
