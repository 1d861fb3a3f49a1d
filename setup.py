"""Builds the four shared libraries with CMake, then packages torch_accinte.

`pip install --no-build-isolation -e .` runs `build_ext`, which configures
CMake once into ./build and then rebuilds incrementally with Ninja. The
libraries are written straight into torch_accinte/ (see CMakeLists.txt), so an
editable install needs no copy step.
"""

import os
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

ROOT = Path(__file__).resolve().parent
BUILD_DIR = ROOT / "build"


def _tool(name):
    """Prefer the tool installed next to this Python (the venv's cmake/ninja)."""
    local = Path(sys.executable).parent / name
    return str(local) if local.exists() else shutil.which(name)


# LITERALINCLUDE START: BUILD CMAKE EXTENSION
class CMakeBuild(build_ext):
    """Drives CMake instead of compiling Extension sources itself."""

    def run(self):
        cmake, ninja = _tool("cmake"), _tool("ninja")
        generator = ["-G", "Ninja", f"-DCMAKE_MAKE_PROGRAM={ninja}"] if ninja else []
        if not (BUILD_DIR / "CMakeCache.txt").exists():
            subprocess.check_call(
                [cmake, "-S", str(ROOT), "-B", str(BUILD_DIR), *generator,
                 f"-DPython_EXECUTABLE={sys.executable}",
                 f"-DCMAKE_BUILD_TYPE={os.environ.get('CMAKE_BUILD_TYPE', 'Release')}",
                 *shlex.split(os.environ.get("CMAKE_ARGS", ""))])
        jobs = os.environ.get("MAX_JOBS", str(os.cpu_count() or 1))
        subprocess.check_call([cmake, "--build", str(BUILD_DIR), "-j", jobs])
        if not self.inplace:
            # A regular (non-editable) install copies what CMake produced.
            out = Path(self.build_lib) / "torch_accinte"
            (out / "lib").mkdir(parents=True, exist_ok=True)
            for so in (ROOT / "torch_accinte").glob("_C*.so"):
                shutil.copy2(so, out)
            for so in (ROOT / "torch_accinte" / "lib").glob("*.so"):
                shutil.copy2(so, out / "lib")
# LITERALINCLUDE END: BUILD CMAKE EXTENSION


setup(
    ext_modules=[Extension("torch_accinte._C", sources=[])],
    cmdclass={"build_ext": CMakeBuild},
)
