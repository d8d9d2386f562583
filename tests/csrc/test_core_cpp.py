"""The C++ core on its own: configure with CMake (no Python, no torch), build, run ctest."""

from __future__ import annotations

from pathlib import Path

from conftest import CMake


def test_core_builds_without_python_or_torch(core_build: Path):
    cache = (core_build / "CMakeCache.txt").read_text()
    assert "HARNESS_BUILD_PYTHON:BOOL=OFF" in cache
    assert "Torch_DIR" not in cache and "pybind11_DIR" not in cache


def test_ctest_passes(core_build: Path, cmake: CMake):
    r = cmake.ctest(core_build)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "100% tests passed" in r.stdout
