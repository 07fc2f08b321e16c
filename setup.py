"""Builds the Python package with CMake: the C++ library, the module _lngrad,
and, where libtorch-dev matches the interpreter's torch, the extension
_lngrad_torch behind lngrad.torch.install(). setuptools (Debian's
python3-setuptools) is only the packaging: it runs the project's own CMake
build, so pip and `cmake --build` make the same binaries.

Environment:
  LNGRAD_CMAKE_BUILD_DIR   an already configured build folder to build and
                           install from instead of configuring a new one
  LNGRAD_CMAKE_ARGS        extra arguments for the CMake configure step
  CMAKE_BUILD_PARALLEL_LEVEL  build jobs (default: the number of cores)
"""

import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

ROOT = Path(__file__).resolve().parent


def version():
    """The one version, from CMakeLists.txt's project()."""
    text = (ROOT / "CMakeLists.txt").read_text()
    return re.search(r"project\(lngrad VERSION ([0-9.]+)", text).group(1)


def cache_value(build, name):
    m = re.search(rf"^{name}:[A-Z]+=(.*)$", (Path(build) / "CMakeCache.txt").read_text(), re.M)
    return m.group(1) if m else None


class CMakeBuild(build_ext):
    """One CMake build for the package's three binaries; the Extension below
    only tells setuptools that the wheel holds compiled code."""

    def build_extension(self, ext):
        build = os.environ.get("LNGRAD_CMAKE_BUILD_DIR")
        if build:
            build = Path(build).resolve()
        else:
            build = Path(self.build_temp).resolve() / "cmake"
            args = ["-DCMAKE_BUILD_TYPE=Release", f"-DPython_EXECUTABLE={sys.executable}",
                    "-DLNGRAD_BUILD_PYTHON=ON", "-DLNGRAD_BUILD_TESTS=OFF", "-DLNGRAD_BUILD_CLI=OFF",
                    "-DLNGRAD_BUILD_BENCH=OFF", *shlex.split(os.environ.get("LNGRAD_CMAKE_ARGS", ""))]
            subprocess.run(["cmake", "-S", str(ROOT), "-B", str(build), *args], check=True)
        jobs = os.environ.get("CMAKE_BUILD_PARALLEL_LEVEL", str(os.cpu_count() or 1))
        targets = ["lngrad_python"] + (["lngrad_python_torch"] if self._has_torch_target(build) else [])
        subprocess.run(["cmake", "--build", str(build), "-j", jobs, "--target", *targets], check=True)
        # Install the "python" component into a scratch prefix, then move the
        # package folder to where setuptools collects the wheel.
        with tempfile.TemporaryDirectory() as prefix:
            subprocess.run(["cmake", "--install", str(build), "--component", "python", "--prefix", prefix],
                           check=True, stdout=subprocess.DEVNULL)
            package = Path(prefix) / cache_value(build, "LNGRAD_PYTHON_INSTALL_DIR")
            dest = Path(self.build_lib) / "lngrad"
            dest.mkdir(parents=True, exist_ok=True)
            for f in package.iterdir():
                shutil.copy2(f, dest / f.name)

    @staticmethod
    def _has_torch_target(build):
        # CMake leaves the extension out (with a message) when libtorch-dev is
        # missing or does not match the interpreter's torch.
        return (Path(build) / "python" / "CMakeFiles" / "lngrad_python_torch.dir").is_dir()


setup(
    version=version(),
    packages=["lngrad"],
    package_dir={"lngrad": "python/lngrad"},
    ext_modules=[Extension("lngrad._lngrad", sources=[])],
    cmdclass={"build_ext": CMakeBuild},
    # setuptools' own scratch folders, away from ./build (the CMake build folder of ./run).
    options={"build": {"build_base": "build-pip"}, "egg_info": {"egg_base": "build-pip"}},
    zip_safe=False,
)
