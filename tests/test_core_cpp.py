"""The C++ core on its own: configure with CMake (no Python, no torch), build, run ctest."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest


def tool(name: str) -> str | None:
    """A build tool from the venv (scripts/setup.sh installs cmake/ninja there), else from PATH."""
    local = Path(sys.executable).parent / name
    return str(local) if local.exists() else shutil.which(name)


@pytest.fixture(scope="session")
def core_build(repo: Path, tmp_path_factory) -> Path:
    cmake = tool("cmake")
    if cmake is None:
        pytest.skip("cmake is not installed (scripts/setup.sh installs it into .venv)")
    build = tmp_path_factory.mktemp("core-build")
    ninja = tool("ninja")
    gen = ["-G", "Ninja", f"-DCMAKE_MAKE_PROGRAM={ninja}"] if ninja else []
    subprocess.run(
        [cmake, "-S", str(repo), "-B", str(build), *gen, "-DHARNESS_BUILD_TESTS=ON", "-DCMAKE_BUILD_TYPE=Release"],
        check=True, capture_output=True, text=True,
    )
    subprocess.run([cmake, "--build", str(build)], check=True, capture_output=True, text=True)
    return build


def test_core_builds_without_python_or_torch(core_build: Path):
    cache = (core_build / "CMakeCache.txt").read_text()
    assert "HARNESS_BUILD_PYTHON:BOOL=OFF" in cache
    assert "Torch_DIR" not in cache and "pybind11_DIR" not in cache


def test_ctest_passes(core_build: Path):
    r = subprocess.run([tool("ctest") or "ctest", "--output-on-failure", "--test-dir", str(core_build)], capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "100% tests passed" in r.stdout
