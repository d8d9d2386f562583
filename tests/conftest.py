"""Shared fixtures: real compiler, real torch; expensive builds happen once per session."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="session")
def repo() -> Path:
    return REPO


# One Python statement: the cheapest suite `bench` can run (tests of where results go).
TINY_SUITE = "import harness\nsuite = harness.Suite()\nsuite.timer('noop', 'pass')\n"


def suite_root(tmp_path: Path, name: str, source: str) -> Path:
    """A benchmarks/ folder in ``tmp_path`` holding one suite file, ``name/suite.py``; its path for --path."""
    root = tmp_path / "benchmarks"
    (root / name).mkdir(parents=True)
    (root / name / "suite.py").write_text(textwrap.dedent(source))
    return root


def run_cli(*args: str, cwd: Path | None = None, env: dict[str, str] | None = None, timeout: float = 600):
    """Run `python -m harness ...` in a fresh interpreter, as a user would."""
    full_env = dict(os.environ)
    full_env.update(env or {})
    return subprocess.run(
        [sys.executable, "-m", "harness", *args],
        cwd=cwd or REPO,
        env=full_env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


@pytest.fixture
def cli():
    return run_cli


def build_tool(name: str) -> str | None:
    """A build tool from this interpreter's environment (setup.sh installs cmake
    and ninja into .venv/bin, which need not be on PATH), else from PATH."""
    local = Path(sys.executable).parent / name
    if local.is_file() and os.access(local, os.X_OK):
        return str(local)
    return shutil.which(name)


class CMake:
    """Configure, build, install and ctest real CMake projects; failures show CMake's output."""

    def __init__(self, cmake: str) -> None:
        self.cmake = cmake
        self.ctest_exe = build_tool("ctest") or str(Path(cmake).with_name("ctest"))
        ninja = build_tool("ninja")
        self.generator = ["-G", "Ninja", f"-DCMAKE_MAKE_PROGRAM={ninja}"] if ninja else []
        self.seconds: dict[str, float] = {}  # what each step cost, for the report

    def _run(self, what: str, cmd: list[str], check: bool = True) -> subprocess.CompletedProcess[str]:
        t0 = time.perf_counter()
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=900)
        self.seconds[what] = self.seconds.get(what, 0.0) + time.perf_counter() - t0
        if check and r.returncode != 0:
            pytest.fail(f"{what} failed ({r.returncode}): {' '.join(cmd)}\n{r.stdout}\n{r.stderr}", pytrace=False)
        return r

    def configure(self, source: Path, build: Path, *definitions: str, check: bool = True):
        return self._run(
            f"configure {source.name}",
            [self.cmake, "-S", str(source), "-B", str(build), *self.generator, "-DCMAKE_BUILD_TYPE=Release",
             *definitions],
            check=check,
        )

    def build(self, build: Path):
        return self._run(f"build {build.name}", [self.cmake, "--build", str(build)])

    def install(self, build: Path, prefix: Path):
        return self._run(f"install {build.name}", [self.cmake, "--install", str(build), "--prefix", str(prefix)])

    def ctest(self, build: Path):
        return self._run(f"ctest {build.name}", [self.ctest_exe, "--output-on-failure", "--test-dir", str(build)],
                         check=False)


@pytest.fixture(scope="session")
def cmake() -> CMake:
    exe = build_tool("cmake")
    if exe is None:
        pytest.skip("cmake is not installed (scripts/setup.sh installs it into .venv)")
    return CMake(exe)


@pytest.fixture(scope="session")
def core_build(repo: Path, cmake: CMake, tmp_path_factory) -> Path:
    """harness::core and its ctest binary, configured without Python or torch (built once per session)."""
    build = tmp_path_factory.mktemp("core-build")
    cmake.configure(repo, build, "-DHARNESS_BUILD_TESTS=ON")
    cmake.build(build)
    return build
