"""lngrad compare: the golden-data check, driven on files NumPy wrote."""

import re

import numpy as np
import pytest

from cli_helpers import one_line_error, run, to_bf16_bits


def save(path, arr):
    np.save(path, arr)
    return path


def stats(stdout):
    """The numbers of a single-tensor report."""
    m = re.search(r"max abs error (\S+) at (\[[^\]]*\]), max rel error (\S+) at (\[[^\]]*\]), "
                  r"max ULP distance (\d+)", stdout)
    w = re.search(r"worst element (\[[^\]]*\])", stdout)
    o = re.search(r"outside tolerance: (\d+) of (\d+)", stdout)
    assert m and w and o, stdout
    return dict(abs=float(m.group(1)), abs_at=m.group(2), rel=float(m.group(3)), rel_at=m.group(4),
                ulp=int(m.group(5)), worst=w.group(1), outside=int(o.group(1)), total=int(o.group(2)))


@pytest.fixture
def base():
    rng = np.random.default_rng(21)
    return rng.uniform(0.5, 2.0, size=(4, 6)).astype(np.float32)


def test_identical_files_pass(tmp_path, base):
    proc = run("compare", save(tmp_path / "e.npy", base), save(tmp_path / "a.npy", base.copy()), check_rc=0)
    s = stats(proc.stdout)
    assert (s["abs"], s["ulp"], s["outside"], s["total"]) == (0.0, 0, 0, 24)
    assert ": ok (float32 [4, 6], rtol 0.0001, atol 0.0001)" in proc.stdout


def test_one_element_outside_is_reported_with_its_index(tmp_path, base):
    actual = base.copy()
    actual[2, 3] *= np.float32(1 + 1e-3)  # 10x the float32 rtol
    actual[1, 1] *= np.float32(1 + 3e-5)  # inside tolerance
    proc = run("compare", save(tmp_path / "e.npy", base), save(tmp_path / "a.npy", actual), check_rc=1)
    s = stats(proc.stdout)
    assert s["outside"] == 1 and s["worst"] == "[2, 3]" and s["abs_at"] == "[2, 3]" and s["rel_at"] == "[2, 3]"
    want_abs = abs(float(actual[2, 3]) - float(base[2, 3]))
    assert s["abs"] == pytest.approx(want_abs, rel=1e-2)  # printed to 3 digits
    assert s["rel"] == pytest.approx(want_abs / float(base[2, 3]), rel=1e-2)
    want_ulp = abs(int(actual[2, 3].view(np.int32)) - int(base[2, 3].view(np.int32)))  # same sign: bits are ordered
    assert s["ulp"] == want_ulp
    assert "FAIL" in proc.stdout


def test_tolerance_options_replace_the_defaults(tmp_path, base):
    actual = base * np.float32(1 + 5e-5)  # inside float32's default rtol 1e-4
    e, a = save(tmp_path / "e.npy", base), save(tmp_path / "a.npy", actual)
    run("compare", e, a, check_rc=0)
    proc = run("compare", e, a, "--rtol", 1e-6, "--atol", 0, check_rc=1)
    assert stats(proc.stdout)["outside"] == 24
    run("compare", e, a, "--rtol", 0, "--atol", 1e-3, check_rc=0)
    one_line_error(run("compare", e, a, "--rtol", -1), "--rtol")
    one_line_error(run("compare", e, a, "--atol", "nan"), "--atol")


@pytest.mark.parametrize("dtype,inside,outside", [
    ("float64", 5e-13, 5e-12),  # default 1e-12
    ("float32", 5e-5, 5e-4),    # default 1e-4
    ("float16", 3e-3, 1e-2),    # default 4e-3 (+ 4e-3 atol: 8e-3 at 1.0)
])
def test_default_tolerances_per_dtype(tmp_path, dtype, inside, outside):
    e = np.full(8, 1.0, dtype)
    # Outside means beyond atol + rtol * 1.0; float16 rounds 1 + 3e-3 to
    # 1.0029 and 1 + 1e-2 to 1.0098.
    for rel, rc in ((inside, 0), (outside, 1)):
        a = np.full(8, 1.0 + rel, dtype)
        run("compare", save(tmp_path / "e.npy", e), save(tmp_path / "a.npy", a), check_rc=rc)


def test_bfloat16_compare_needs_the_flag_and_uses_its_tolerance(tmp_path):
    e = to_bf16_bits(np.full(4, 1.0, np.float32))
    a = e + np.uint16(2)  # two bfloat16 ulps at 1.0: 2^-6, above atol + rtol = 8e-3
    ef, af = save(tmp_path / "e.npy", e), save(tmp_path / "a.npy", a)
    one_line_error(run("compare", ef, af), "e.npy", "--dtype bfloat16")
    proc = run("compare", ef, af, "--dtype", "bfloat16", check_rc=1)
    s = stats(proc.stdout)
    assert s["ulp"] == 2 and s["outside"] == 4 and s["abs"] == pytest.approx(2.0 ** -6, rel=1e-2)
    assert "bfloat16 [4], rtol 0.004, atol 0.004" in proc.stdout


@pytest.mark.parametrize("dtype", ["float16", "float32", "float64"])
def test_ulp_distance_in_the_files_own_dtype(tmp_path, dtype):
    e = np.array([1.0, -2.5, 0.0, 1e-3], dtype)
    a = e.copy()
    for _ in range(3):
        a[1] = np.nextafter(a[1], np.array(-np.inf, dtype))
    a[2] = -np.nextafter(np.array(0, dtype), np.array(1, dtype))  # -smallest subnormal: one step across zero
    proc = run("compare", save(tmp_path / "e.npy", e), save(tmp_path / "a.npy", a), "--atol", 1, "--rtol", 0)
    assert stats(proc.stdout)["ulp"] == 3, proc.stdout


def test_ulp_distance_across_zero(tmp_path):
    tiny = np.nextafter(np.float32(0), np.float32(1))
    proc = run("compare", save(tmp_path / "e.npy", np.array([tiny], np.float32)),
               save(tmp_path / "a.npy", np.array([-tiny], np.float32)), check_rc=0)
    assert stats(proc.stdout)["ulp"] == 2  # +tiny -> +0 (== -0) -> -tiny


def test_nan_and_infinity(tmp_path):
    e = np.array([np.nan, 1.0, np.inf, -np.inf, 2.0], np.float32)
    run("compare", save(tmp_path / "e.npy", e), save(tmp_path / "a.npy", e.copy()), check_rc=0)  # NaN == NaN
    a = e.copy()
    a[1] = np.nan
    proc = run("compare", tmp_path / "e.npy", save(tmp_path / "a.npy", a), check_rc=1)
    s = stats(proc.stdout)
    assert s["outside"] == 1 and s["worst"] == "[1]" and "1 NaN against a number" in proc.stdout
    a = e.copy()
    a[0] = 0.0  # a number where NaN is expected
    assert stats(run("compare", tmp_path / "e.npy", save(tmp_path / "a.npy", a), check_rc=1).stdout)["outside"] == 1
    a = e.copy()
    a[2] = np.finfo(np.float32).max  # infinities must match exactly
    proc = run("compare", tmp_path / "e.npy", save(tmp_path / "a.npy", a), check_rc=1)
    assert stats(proc.stdout)["worst"] == "[2]"


def test_shape_or_dtype_mismatch_is_a_difference(tmp_path, base):
    e = save(tmp_path / "e.npy", base)
    proc = run("compare", e, save(tmp_path / "a.npy", base.reshape(6, 4)), check_rc=1)
    assert "expected float32 [4, 6], actual float32 [6, 4]" in proc.stdout
    proc = run("compare", e, save(tmp_path / "a.npy", base.astype(np.float64)), check_rc=1)
    assert "expected float32 [4, 6], actual float64 [4, 6]" in proc.stdout


def test_folders_compare_by_file_name(tmp_path, base):
    exp, act = tmp_path / "exp", tmp_path / "act"
    exp.mkdir()
    act.mkdir()
    for name in ("a", "b"):
        save(exp / f"{name}.npy", base)
        save(act / f"{name}.npy", base)
    save(act / "extra.npy", base)
    proc = run("compare", exp, act, check_rc=0)
    assert "2 compared: 2 ok, 0 outside tolerance, 0 missing, 0 unreadable" in proc.stdout
    assert "extra.npy: not in" in proc.stdout
    bad = base.copy()
    bad[0, 0] += 1
    save(act / "b.npy", bad)
    proc = run("compare", exp, act, check_rc=1)
    assert "a.npy: ok" in proc.stdout and "b.npy: FAIL" in proc.stdout
    save(act / "b.npy", base)
    (act / "a.npy").unlink()
    proc = run("compare", exp, act, check_rc=1)
    assert "a.npy: FAIL: missing from" in proc.stdout
    (act / "a.npy").write_bytes(b"\x93NUMPY\x01\x00")  # truncated: unreadable is exit 2
    proc = run("compare", exp, act)
    one_line_error(proc, "a.npy", "truncated")
    assert "b.npy: ok" in proc.stdout  # the readable pairs are still reported
    one_line_error(run("compare", exp, act / "b.npy"), "both")
    empty = tmp_path / "empty"
    empty.mkdir()
    one_line_error(run("compare", empty, act), "no .npy or .bin files")


def test_compare_usage(tmp_path, base):
    e = save(tmp_path / "e.npy", base)
    one_line_error(run("compare", e), "two paths")
    one_line_error(run("compare", e, e, e), "too many arguments")
    one_line_error(run("compare", e, tmp_path / "missing.npy"), "missing.npy", "cannot open")
    proc = run("compare", "--help", check_rc=0)
    for text in ("float64   rtol 1e-12", "float32   rtol 1e-4", "float16   rtol 4e-3", "bfloat16  rtol 4e-3",
                 "Exit status", "NaN"):
        assert text in proc.stdout, text
