"""The C++ package from outside: cmake --install, find_package, add_subdirectory, harness::torch.

Builds are session fixtures: the core build is shared with test_core_cpp.py,
each outside-project build happens once. Cost on the 2-core dev machine: the
core-only part ~10 s of CPU (~15 s wall); the harness::torch part (three
files compiled against torch's headers, two CMake configures finding torch)
~45 s of CPU, 35 s wall when the machine is quiet, ~2.5 min under a load of 7.
"""

from __future__ import annotations

import importlib.metadata
import re
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import CMake

EXAMPLE_ROWS = ("empty", "sum 1000 ints", "sort 1000 ints", "map lookup", "std::to_string")
ROW = re.compile(r"^(?P<name>.+?)\s+(?P<median>\d+\.\d)\s+(?P<iqr>\d+\.\d)\s+(?P<blocks>\d+) x (?P<runs>\d+)\s*$")


def torch_cmake_prefix() -> str:
    import torch

    return torch.utils.cmake_prefix_path


@pytest.fixture(scope="session")
def core_prefix(core_build: Path, cmake: CMake, tmp_path_factory) -> Path:
    prefix = tmp_path_factory.mktemp("core-prefix")
    cmake.install(core_build, prefix)
    return prefix


@pytest.fixture(scope="session")
def example_installed(repo: Path, cmake: CMake, core_prefix: Path, tmp_path_factory) -> Path:
    build = tmp_path_factory.mktemp("example-installed")
    cmake.configure(repo / "examples" / "cpp_embed", build, f"-DCMAKE_PREFIX_PATH={core_prefix}")
    cmake.build(build)
    return build


@pytest.fixture(scope="session")
def example_subdir(repo: Path, cmake: CMake, tmp_path_factory) -> Path:
    build = tmp_path_factory.mktemp("example-subdir")
    cmake.configure(repo / "examples" / "cpp_embed", build, f"-DHARNESS_SOURCE_DIR={repo}")
    cmake.build(build)
    return build


def run_example(exe: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(exe), *args], capture_output=True, text=True, timeout=120)


def check_example_output(stdout: str) -> None:
    lines = stdout.strip().splitlines()
    assert lines[0].split()[:3] == ["function", "median", "ns"], stdout
    rows = {}
    for line in lines[1:]:
        m = ROW.match(line)
        assert m, f"unexpected line {line!r} in\n{stdout}"
        rows[m["name"].strip()] = m
    assert tuple(rows) == EXAMPLE_ROWS
    for m in rows.values():
        assert float(m["median"]) >= 0 and float(m["iqr"]) >= 0
        assert int(m["blocks"]) >= 1 and int(m["runs"]) >= 1


def test_install_layout(core_prefix: Path):
    headers = {p.name for p in (core_prefix / "include" / "harness").iterdir()}
    assert headers == {"barrier.h", "callgrind.h", "clock.h", "harness.h", "perf_counter.h", "runner.h", "stats.h"}
    libdirs = [d for d in ("lib", "lib64") if (core_prefix / d / "libharness_core.a").exists()]
    assert libdirs, "libharness_core.a not installed"
    config = core_prefix / libdirs[0] / "cmake" / "harness"
    names = {p.name for p in config.iterdir()}
    assert {"harnessConfig.cmake", "harnessConfigVersion.cmake", "harnessTargets.cmake"} <= names
    # Built without torch: the torch targets must not be there.
    assert "harnessTorchTargets.cmake" not in names
    assert "add_library(harness::core STATIC IMPORTED)" in (config / "harnessTargets.cmake").read_text()


def test_example_against_installed_package(example_installed: Path, core_prefix: Path):
    cache = (example_installed / "CMakeCache.txt").read_text()
    harness_dir = re.search(r"^harness_DIR:PATH=(.*)$", cache, re.M)
    assert harness_dir and Path(harness_dir[1]).resolve().is_relative_to(core_prefix.resolve())
    # OPTIONAL_COMPONENTS torch on a core-only install: no torch, no torch program.
    assert "Torch_DIR" not in cache
    assert not (example_installed / "cpp_embed_torch").exists()
    r = run_example(example_installed / "cpp_embed", "0.01")
    assert r.returncode == 0, r.stderr
    check_example_output(r.stdout)


def test_example_rejects_bad_min_run_time(example_installed: Path):
    r = run_example(example_installed / "cpp_embed", "0")
    assert r.returncode == 2
    assert "min_run_time_s must be > 0" in r.stderr


def test_example_via_add_subdirectory(example_subdir: Path):
    cache = (example_subdir / "CMakeCache.txt").read_text()
    assert "harness_DIR" not in cache  # built from source, not found as a package
    assert "HARNESS_INSTALL:BOOL=OFF" in cache  # a subproject does not install itself
    r = run_example(example_subdir / "cpp_embed", "0.01")
    assert r.returncode == 0, r.stderr
    check_example_output(r.stdout)


def test_version_and_missing_component_are_checked(cmake: CMake, core_prefix: Path, tmp_path: Path):
    (tmp_path / "CMakeLists.txt").write_text(
        "cmake_minimum_required(VERSION 3.18)\nproject(probe LANGUAGES CXX)\n"
        "find_package(harness ${WANT} CONFIG REQUIRED ${COMPONENTS})\n"
    )
    too_new = cmake.configure(tmp_path, tmp_path / "a", f"-DCMAKE_PREFIX_PATH={core_prefix}", "-DWANT=9.0",
                              check=False)
    assert too_new.returncode != 0
    assert "not compatible with the version requested" in too_new.stderr and "9.0" in too_new.stderr
    no_torch = cmake.configure(tmp_path, tmp_path / "b", f"-DCMAKE_PREFIX_PATH={core_prefix}",
                               "-DCOMPONENTS=COMPONENTS;torch", check=False)
    assert no_torch.returncode != 0
    assert "-DHARNESS_BUILD_TORCH=ON" in no_torch.stderr


def test_wheel_install_carries_no_cpp_package():
    """The Python install (scikit-build-core) must not put headers, libs or CMake files into site-packages."""
    files = [str(f) for f in importlib.metadata.files("harness") or []]
    assert any(f.startswith("harness/_C") for f in files), files
    stray = [f for f in files if f.startswith(("include/", "lib/", "lib64/", "share/")) or f.endswith((".a", ".cmake"))]
    assert stray == []


# --- harness::torch ----------------------------------------------------------


@pytest.fixture(scope="session")
def torch_build(repo: Path, cmake: CMake, tmp_path_factory) -> Path:
    """harness::core + harness::torch + both ctest binaries. libtorch is found the
    documented way: CMake asks this Python for torch.utils.cmake_prefix_path."""
    build = tmp_path_factory.mktemp("torch-build")
    cmake.configure(repo, build, "-DHARNESS_BUILD_TESTS=ON", "-DHARNESS_BUILD_TORCH=ON",
                    f"-DPython_EXECUTABLE={sys.executable}")
    cmake.build(build)
    return build


@pytest.fixture(scope="session")
def torch_prefix(torch_build: Path, cmake: CMake, tmp_path_factory) -> Path:
    prefix = tmp_path_factory.mktemp("torch-prefix")
    cmake.install(torch_build, prefix)
    return prefix


@pytest.fixture(scope="session")
def example_torch(repo: Path, cmake: CMake, torch_prefix: Path, tmp_path_factory) -> Path:
    """The example against the installed package with harness::torch; libtorch via CMAKE_PREFIX_PATH."""
    build = tmp_path_factory.mktemp("example-torch")
    cmake.configure(
        repo / "examples" / "cpp_embed", build, f"-DCMAKE_PREFIX_PATH={torch_prefix};{torch_cmake_prefix()}"
    )
    cmake.build(build)
    return build


def test_torch_ctest_passes(torch_build: Path, cmake: CMake):
    r = cmake.ctest(torch_build)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "harness_torch_tests" in r.stdout and "100% tests passed" in r.stdout


def test_torch_install_layout(torch_prefix: Path):
    assert (torch_prefix / "include" / "harness" / "torch.h").is_file()
    config = next(torch_prefix.glob("lib*/cmake/harness"))
    targets = (config / "harnessTorchTargets.cmake").read_text()
    assert "add_library(harness::torch STATIC IMPORTED)" in targets
    # The core's own targets file stays loadable without libtorch.
    assert "torch" not in (config / "harnessTargets.cmake").read_text()


@pytest.mark.filterwarnings("ignore:`torch.jit.script` is deprecated:DeprecationWarning")
def test_example_times_torchscript_from_cpp(example_torch: Path, tmp_path: Path):
    import torch

    model = tmp_path / "linear.pt"
    torch.jit.script(torch.nn.Linear(4, 4)).save(str(model))
    r = run_example(example_torch / "cpp_embed_torch", str(model), "0.01")
    assert r.returncode == 0, r.stderr
    m = re.search(r"forward: median (\d+\.\d) ns, IQR (\d+\.\d) ns, (\d+) blocks x (\d+) runs", r.stdout)
    assert m, r.stdout
    assert float(m[1]) > 0 and int(m[3]) >= 1 and int(m[4]) >= 1

    missing = run_example(example_torch / "cpp_embed_torch", str(tmp_path / "missing.pt"))
    assert missing.returncode == 2
    assert "missing.pt" in missing.stderr and "no such file" in missing.stderr

    # A model whose forward fails on this input: the model's error, exit 1.
    torch.jit.script(torch.nn.Linear(3, 3)).save(str(tmp_path / "wrong_shape.pt"))
    wrong = run_example(example_torch / "cpp_embed_torch", str(tmp_path / "wrong_shape.pt"))
    assert wrong.returncode == 1
    assert "forward failed" in wrong.stderr
