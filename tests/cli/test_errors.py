"""Malformed .npy files, refused arguments and failed runs: exit status 2, one
line naming the file or option and the problem, and no partial output."""

import os
import shutil

import numpy as np
import pytest

from cli_helpers import CLI, npy_bytes, one_line_error, run

GOOD = np.arange(32, dtype=np.float32).reshape(4, 8)
F4_DATA = GOOD.tobytes()


def saved(arr, **kw):
    import io
    buf = io.BytesIO()
    np.save(buf, arr, **kw)
    return buf.getvalue()


def good_bytes():
    return saved(GOOD)


def patched_len(n):
    b = bytearray(good_bytes())
    b[8:10] = n.to_bytes(2, "little")
    return bytes(b)


HDR = "{'descr': '<f4', 'fortran_order': False, 'shape': (4, 8), }"

MALFORMED = {
    "fortran_order": (lambda: saved(np.asfortranarray(GOOD)), "Fortran-order"),
    "object": (lambda: saved(np.array([1, "a", None], dtype=object), allow_pickle=True), "object arrays"),
    "int32": (lambda: saved(GOOD.astype(np.int32)), "int32 ('<i4') is not supported"),
    "uint8": (lambda: saved(GOOD.astype(np.uint8)), "uint8"),
    "complex64": (lambda: saved(GOOD.astype(np.complex64)), "complex64"),
    "bool": (lambda: saved(GOOD > 3), "bool"),
    "unicode": (lambda: saved(np.array(["ab", "cd"])), "'<U2'"),
    "structured": (lambda: saved(np.zeros(3, dtype=[("a", "<f4"), ("b", "<f4")])), "structured"),
    "truncated_header": (lambda: good_bytes()[:40], "truncated header"),
    "header_len_beyond_file": (lambda: patched_len(9000), "header length is 9000"),
    "header_over_limit": (lambda: npy_bytes(HDR, F4_DATA, version=(2, 0), header_len=100000), "exceeds the limit"),
    "data_short": (lambda: good_bytes()[:-4], "data shorter than the header says"),
    "data_long": (lambda: good_bytes() + b"\0" * 4, "data longer than the header says"),
    "bad_magic": (lambda: b"\x93NUMPZ" + good_bytes()[6:], "bad magic"),
    "text_file": (lambda: b"0.5 1.5 2.5\n" * 4, "bad magic"),
    "empty": (lambda: b"", "truncated: 0 bytes"),
    "preamble_only": (lambda: b"\x93NUMPY\x01", "truncated: 7 bytes"),
    "version_4": (lambda: npy_bytes(HDR, F4_DATA, version=(4, 0)), "format version 4.0"),
    "no_newline": (lambda: b"\x93NUMPY\x01\x00" + len(HDR).to_bytes(2, "little") + HDR.encode() + F4_DATA,
                   "end with a newline"),
    "missing_shape": (lambda: npy_bytes("{'descr': '<f4', 'fortran_order': False, }", F4_DATA), "lacks the key 'shape'"),
    "unknown_key": (lambda: npy_bytes(HDR[:-1] + "'extra': 1, }", F4_DATA), "unexpected key 'extra'"),
    "repeated_key": (lambda: npy_bytes(HDR[:-1] + "'shape': (4, 8), }", F4_DATA), "repeats the key 'shape'"),
    "shape_not_tuple": (lambda: npy_bytes(HDR.replace("(4, 8)", "(32)"), F4_DATA), "(n,)"),
    "negative_extent": (lambda: npy_bytes(HDR.replace("(4, 8)", "(-4, 8)"), F4_DATA), "non-negative integer"),
    "expression": (lambda: npy_bytes(HDR.replace("(4, 8)", "(2*2, 8)"), F4_DATA), "',' or ')'"),
    "order_not_bool": (lambda: npy_bytes(HDR.replace("False", "0"), F4_DATA), "True or False"),
    "trailing_text": (lambda: npy_bytes(HDR + " x", F4_DATA), "only spaces"),
    "non_ascii": (lambda: npy_bytes(HDR.replace("'<f4'", "'<f\u00e94'"), F4_DATA), "plain ASCII"),
    "pipe_order": (lambda: npy_bytes(HDR.replace("<f4", "|f4"), F4_DATA), "byte order '|'"),
    "too_many_axes": (lambda: npy_bytes(HDR.replace("(4, 8)", "(" + "1, " * 33 + ")"), b""), "more than 32 axes"),
    "huge_extent": (lambda: npy_bytes(HDR.replace("(4, 8)", "(99999999999999999999,)"), F4_DATA), "too large"),
    "overflowing_shape": (lambda: npy_bytes(HDR.replace("(4, 8)", "(4294967296, 4294967296, 4294967296)"), F4_DATA),
                          "more than 2^64"),
}


@pytest.mark.parametrize("case", sorted(MALFORMED))
def test_malformed_input_is_refused(tmp_path, case):
    make, phrase = MALFORMED[case]
    bad = tmp_path / f"{case}.npy"
    bad.write_bytes(make())
    good = tmp_path / "good.npy"
    np.save(good, GOOD)
    out = tmp_path / "out"
    proc = run("grad-beta", "--dy", good, "--res-for-gamma", bad, "--out", out)
    one_line_error(proc, str(bad) + ": ", phrase)
    assert proc.stdout == ""
    assert not out.exists()  # nothing written, not even the folder
    one_line_error(run("compare", bad, good), str(bad) + ": ", phrase)  # the reader is shared


def test_accepted_header_spellings(tmp_path):
    # Double quotes, no trailing comma, extra spaces, '=' (native) order and
    # big-endian data are all valid .npy and read to the same values.
    variants = {
        "dq": npy_bytes('{"descr": "<f4", "fortran_order": False, "shape": (4, 8)}', F4_DATA),
        "spaces": npy_bytes("{ 'shape' : ( 4 , 8 , ) ,'fortran_order':False,'descr':'=f4' }", F4_DATA),
        "big": npy_bytes(HDR.replace("<f4", ">f4"), GOOD.astype(">f4").tobytes()),
        "v3": npy_bytes(HDR, F4_DATA, version=(3, 0)),
    }
    ref = tmp_path / "ref.npy"
    np.save(ref, GOOD)
    for name, data in variants.items():
        (tmp_path / f"{name}.npy").write_bytes(data)
        proc = run("compare", ref, tmp_path / f"{name}.npy", check_rc=0)
        assert "max ULP distance 0" in proc.stdout, (name, proc.stdout)


def test_missing_file_and_directory_inputs(tmp_path):
    good = tmp_path / "good.npy"
    np.save(good, GOOD)
    one_line_error(run("grad-beta", "--dy", good, "--res-for-gamma", tmp_path / "nope.npy", "--out", tmp_path / "o"),
                   "nope.npy: cannot open")
    one_line_error(run("grad-beta", "--dy", tmp_path, "--res-for-gamma", good, "--out", tmp_path / "o"),
                   "is a directory")


def test_empty_arrays(tmp_path):
    # The library needs every extent >= 1; compare takes empty arrays as equal.
    empty = tmp_path / "empty.npy"
    np.save(empty, np.zeros((0, 8), np.float32))
    one_line_error(run("forward", "--x", empty, "--out", tmp_path / "o"), "empty.npy", "empty array (shape [0, 8])")
    assert "no elements" in run("compare", empty, empty, check_rc=0).stdout


# ---- failed runs leave no partial output ----

def grad_inputs(tmp_path, gamma_dtype=np.float32):
    rng = np.random.default_rng(1)
    files = {"dy": rng.normal(size=(3, 8)), "x": rng.normal(size=(3, 8)), "mean": np.zeros(3),
             "variance": np.ones(3), "gamma": np.ones(8)}
    args = []
    for name, arr in files.items():
        np.save(tmp_path / f"{name}.npy", arr.astype(gamma_dtype if name == "gamma" else np.float32))
        args += [f"--{name}", tmp_path / f"{name}.npy"]
    return args


def test_library_errors_are_one_line_and_write_nothing(tmp_path):
    out = tmp_path / "out"
    proc = run("grad", *grad_inputs(tmp_path, gamma_dtype=np.float64), "--out", out)
    one_line_error(proc, "layer_norm_grad", "gamma", "expected dtype", "given float64")
    assert not out.exists()
    one_line_error(run("grad", *grad_inputs(tmp_path), "--epsilon", -1, "--out", out), "epsilon", "-1")
    assert not out.exists()


def test_a_failed_run_keeps_earlier_outputs_intact(tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    (out / "pd_x.npy").write_bytes(b"earlier result")
    (tmp_path / "bad.npy").write_bytes(good_bytes()[:-4])
    args = grad_inputs(tmp_path)
    args[args.index("--x") + 1] = tmp_path / "bad.npy"
    one_line_error(run("grad", *args, "--out", out), "bad.npy", "data shorter")
    assert (out / "pd_x.npy").read_bytes() == b"earlier result"
    assert sorted(os.listdir(out)) == ["pd_x.npy"]


def test_an_unreplaceable_output_stops_the_run_before_any_file(tmp_path):
    out = tmp_path / "out"
    (out / "pd_beta.npy").mkdir(parents=True)  # a folder where an output should go
    one_line_error(run("grad", *grad_inputs(tmp_path), "--out", out), "pd_beta.npy", "directory")
    assert sorted(os.listdir(out)) == ["pd_beta.npy"]  # no pd_x.npy, pd_gamma.npy, nor temporary files


def test_out_must_be_a_folder(tmp_path):
    (tmp_path / "file").write_text("x")
    one_line_error(run("grad", *grad_inputs(tmp_path), "--out", tmp_path / "file"), "must name a directory")


def test_successful_run_leaves_only_its_outputs(tmp_path):
    out = tmp_path / "out"
    for _ in range(2):  # the second run replaces the first's files
        run("grad", *grad_inputs(tmp_path), "--out", out, check_rc=0)
    assert sorted(os.listdir(out)) == ["pd_beta.npy", "pd_gamma.npy", "pd_x.npy"]
    raw = (out / "pd_x.npy").read_bytes()
    assert raw[6] == 1 and (10 + int.from_bytes(raw[8:10], "little")) % 64 == 0  # v1.0, data 64-byte aligned


# ---- usage ----

@pytest.mark.parametrize("argv,phrases", [
    ([], ["no command"]),
    (["frobnicate"], ["unknown command 'frobnicate'"]),
    (["grad", "--dy"], ["'--dy' needs a value"]),
    (["grad", "--foo", "1"], ["unknown option '--foo'"]),
    (["grad", "-x", "1"], ["unknown option '-x'"]),
    (["grad", "stray"], ["unexpected argument 'stray'"]),
    (["grad", "--out", "o", "--out", "p"], ["'--out' given twice"]),
    (["grad", "--rstd=yes"], ["'--rstd' takes no value"]),
    (["grad", "--threads", "-1", "--out", "o"], ["--threads", "'-1'"]),
    (["grad", "--threads", "two", "--out", "o"], ["--threads", "'two'"]),
    (["grad", "--epsilon", "1e-5x", "--out", "o"], ["--epsilon", "'1e-5x'"]),
    (["grad", "--normalized-ndim", "0", "--out", "o"], ["--normalized-ndim"]),
    (["forward", "--out", "o"], ["missing required option '--x'"]),
    (["grad-beta", "--dy", "a.npy", "--res-for-gamma", "b.npy"], ["missing required option '--out'"]),
])
def test_usage_errors(argv, phrases):
    one_line_error(run(*argv), *phrases)


def test_gamma_ndim_beyond_dy_rank(tmp_path):
    np.save(tmp_path / "a.npy", GOOD)
    one_line_error(run("grad-beta", "--dy", tmp_path / "a.npy", "--res-for-gamma", tmp_path / "a.npy",
                       "--gamma-ndim", 3, "--out", tmp_path / "o"), "--gamma-ndim 3", "[4, 8]")


@pytest.mark.parametrize("argv", [["--help"], ["help"], ["grad", "--help"], ["grad-x", "-h"], ["grad-beta", "--help"],
                                  ["forward", "--help"], ["compare", "--help"], ["demo", "--help"]])
def test_help(argv):
    proc = run(*argv, check_rc=0)
    assert "usage: lngrad" in proc.stdout and "Exit status" in proc.stdout
    assert "2  usage or input error" in proc.stdout and "3  unexpected internal error" in proc.stdout
    if argv[0] != "demo":
        assert "--dtype bfloat16" in proc.stdout and "'<u2'" in proc.stdout
    if argv[0] in ("--help", "help"):
        for cmd in ("grad", "grad-x", "grad-beta", "forward", "compare", "demo", "bench"):
            assert f"\n  {cmd} " in proc.stdout, cmd


def test_version():
    proc = run("version", check_rc=0)
    assert proc.stdout.startswith("lngrad ") and "SIMD targets:" in proc.stdout


# ---- bench: finding lngrad-bench ----

def fake_bench(path, status):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f'#!/bin/sh\necho "bench args: $*"\nexit {status}\n')
    path.chmod(0o755)


def copy_cli(folder):
    folder.mkdir(parents=True, exist_ok=True)
    shutil.copy(CLI, folder / "lngrad")
    return folder / "lngrad"


def test_bench_not_found(tmp_path):
    cli = copy_cli(tmp_path / "solo")
    (tmp_path / "empty").mkdir()
    proc = run_cli(cli, ["bench", "--x"], PATH=str(tmp_path / "empty"))
    one_line_error(proc, "lngrad-bench was not found")


@pytest.mark.parametrize("layout", ["beside", "build_tree", "path"])
def test_bench_runs_the_driver_with_the_arguments(tmp_path, layout):
    if layout == "beside":
        cli = copy_cli(tmp_path / "bin")
        fake_bench(tmp_path / "bin" / "lngrad-bench", 7)
        path = str(tmp_path / "nowhere")
    elif layout == "build_tree":
        cli = copy_cli(tmp_path / "build" / "cli")
        fake_bench(tmp_path / "build" / "bench" / "lngrad-bench", 7)
        path = str(tmp_path / "nowhere")
    else:
        cli = copy_cli(tmp_path / "solo")
        fake_bench(tmp_path / "tools" / "lngrad-bench", 7)
        path = f"{tmp_path / 'nowhere'}:{tmp_path / 'tools'}"
    proc = run_cli(cli, ["bench", "--problem", "8x8", "--help"], PATH=path)
    assert proc.returncode == 7, (proc.returncode, proc.stderr)  # the driver's own status
    assert proc.stdout.strip() == "bench args: --problem 8x8 --help"


def run_cli(cli, argv, **env):
    import subprocess
    return subprocess.run([str(cli), *argv], capture_output=True, text=True, env={**os.environ, **env}, timeout=60)


def test_corrupted_files_never_crash_the_reader(tmp_path):
    # Deterministic corruptions of a valid file (bytes overwritten in the
    # preamble and header, truncations, insertions): every run must end in a
    # verdict (0 or 1) or a one-line refusal (2), never a signal or exit 3.
    rng = np.random.default_rng(99)
    base = saved(GOOD)
    ref = tmp_path / "ref.npy"
    ref.write_bytes(base)
    bad = tmp_path / "bad.npy"
    for i in range(150):
        b = bytearray(base)
        if i % 3 == 0:
            for _ in range(1 + i % 4):
                b[int(rng.integers(0, 128))] = int(rng.integers(0, 256))
        elif i % 3 == 1:
            del b[int(rng.integers(0, len(b))):]
        else:
            pos = int(rng.integers(0, 128))
            b[pos:pos] = bytes(rng.integers(0, 256, size=int(rng.integers(1, 9))).astype(np.uint8))
        bad.write_bytes(bytes(b))
        proc = run("compare", ref, bad)
        assert proc.returncode in (0, 1, 2), (i, proc.returncode, proc.stderr, bytes(b[:128]))
        if proc.returncode == 2:
            one_line_error(proc, str(bad) + ": ")
        else:
            assert proc.stderr == "", (i, proc.stderr)
