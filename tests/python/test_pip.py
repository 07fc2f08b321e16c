"""Packaging: `pip wheel` builds a wheel through pyproject.toml and setup.py,
`pip install --target` installs it, and /usr/bin/python3 imports and runs the
installed package (NumPy functions, lngrad.torch.install()) with nothing of
the source or build tree on its path.

Under ctest the wheel is built from the CMake build folder the suite runs in
(LNGRAD_CMAKE_BUILD_DIR), so nothing is compiled twice; run by hand without
that variable, the same setup.py configures and compiles everything afresh,
as the README's `pip install .` does (minutes)."""

import os
import pathlib
import re
import shutil
import subprocess
import sys
import zipfile

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
BUILD = os.environ.get("LNGRAD_CMAKE_BUILD_DIR")
PIP_TIMEOUT_S = 300 if BUILD else 1800

CHECK = r"""
import pathlib, sys
import numpy as np
import lngrad, lngrad.torch, torch
target = pathlib.Path(sys.argv[1]).resolve()
assert pathlib.Path(lngrad.__file__).resolve().parent == target / "lngrad", lngrad.__file__
# Seed 001's example: integer sums, exact in float32.
iota = np.arange(64, dtype=np.float32).reshape(1, 8, 8)
pd_gamma, pd_beta = lngrad.layer_norm_grad_beta(iota, iota)
rows = iota.reshape(8, 8).astype(np.float64)
assert np.array_equal(pd_gamma, (rows * rows).sum(axis=0)) and np.array_equal(pd_beta, rows.sum(axis=0))
# The torch extension from the wheel: float16 on CPU, and bfloat16 sums exact.
with lngrad.torch.install():
    ln = torch.nn.LayerNorm(16).to(torch.bfloat16)
    x = torch.randn(65536, 16).to(torch.bfloat16).requires_grad_()
    ln(x).backward(torch.full((65536, 16), 0.5, dtype=torch.bfloat16))
    assert torch.equal(ln.bias.grad, torch.full((16,), 32768.0, dtype=torch.bfloat16)), ln.bias.grad
    torch.nn.functional.layer_norm(torch.randn(4, 8).half(), (8,))
assert not lngrad.torch.is_installed()
print("installed package ok:", lngrad.__version__, lngrad.active_target())
"""


def run(args, **kw):
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}  # nothing of the build tree
    proc = subprocess.run(args, env={**env, **kw.pop("env", {})}, capture_output=True, text=True,
                          timeout=PIP_TIMEOUT_S, **kw)
    assert proc.returncode == 0, f"{args}\n{proc.stdout}\n{proc.stderr}"
    return proc


def test_pip_wheel_then_install_then_import(tmp_path):
    # The files setup.py reads, copied so that setuptools' scratch folders stay out of the tree.
    src = tmp_path / "src"
    src.mkdir()
    if BUILD:
        for name in ("setup.py", "pyproject.toml", "CMakeLists.txt"):
            shutil.copy2(ROOT / name, src / name)
        shutil.copytree(ROOT / "python", src / "python", ignore=shutil.ignore_patterns("__pycache__"))
    else:  # the whole source tree, to compile from
        shutil.copytree(ROOT, src, dirs_exist_ok=True,
                        ignore=shutil.ignore_patterns(".git", "build*", "__pycache__", "install*"))
    dist = tmp_path / "dist"
    run([sys.executable, "-m", "pip", "wheel", "--no-build-isolation", "--no-deps", "--no-index", "-w", str(dist),
         str(src)], env={"LNGRAD_CMAKE_BUILD_DIR": BUILD} if BUILD else {}, cwd=tmp_path)
    (wheel,) = dist.glob("lngrad-*.whl")
    version = re.search(r"project\(lngrad VERSION ([0-9.]+)", (ROOT / "CMakeLists.txt").read_text()).group(1)
    assert wheel.name.startswith(f"lngrad-{version}-cp3"), wheel.name  # a platform wheel, not a pure one
    names = set(zipfile.ZipFile(wheel).namelist())
    for f in ("lngrad/__init__.py", "lngrad/torch.py", "lngrad/liblngrad.so"):
        assert f in names, sorted(names)
    for module in ("_lngrad", "_lngrad_torch"):
        assert any(re.fullmatch(rf"lngrad/{module}\.cpython-.*\.so", n) for n in names), (module, sorted(names))

    target = tmp_path / "target"
    run([sys.executable, "-m", "pip", "install", "--no-deps", "--no-index", "--target", str(target), str(wheel)],
        cwd=tmp_path)
    assert (target / f"lngrad-{version}.dist-info" / "METADATA").is_file()
    proc = run([sys.executable, "-c", CHECK, str(target)], env={"PYTHONPATH": str(target)}, cwd=tmp_path)
    assert "installed package ok" in proc.stdout, proc.stdout
