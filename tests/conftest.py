"""Shared fixtures: real compiler, real torch; expensive builds happen once per session."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

import pytest

from parallel import assign_groups, machine_share

REPO = Path(__file__).resolve().parents[1]


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Each file one unit of work for the xdist workers, slowest first (tests/parallel.py)."""
    assign_groups(items, REPO)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None):
    """Beside the other xdist worker's test, or alone when marked ``alone`` (tests/parallel.py)."""
    run = os.environ.get("PYTEST_XDIST_TESTRUNUID")
    if run is None:
        return (yield)
    directory = Path(tempfile.gettempdir()) / f"harness-tests-{run}"
    directory.mkdir(mode=0o700, exist_ok=True)
    with machine_share(directory, alone=item.get_closest_marker("alone") is not None):
        return (yield)


# Counting workers are kept after a run by default (docs/instruction-counts.md): a test suite must
# leave none behind (CI has 2 cores) nor let one test's worker serve another's. Every process the
# tests start inherits this; the tests of kept workers ask for them, in a TMPDIR of their own.
os.environ["HARNESS_KEEP_WORKER"] = "0"


@pytest.fixture(scope="session")
def repo() -> Path:
    return REPO


# One Python statement: the cheapest suite `bench` can run (tests of where results go).
TINY_SUITE = "import harness\nsuite = harness.Suite()\nsuite.timer('noop', 'pass')\n"


def suite_root(tmp_path: Path, name: str, source: str, folder: str = "benchmarks") -> Path:
    """A ``folder`` in ``tmp_path`` (default benchmarks/; "" for ``tmp_path`` itself) holding the suite file
    ``name/suite.py`` with ``source`` (dedented); the folder's path, for --path. Call it again to add
    another suite to the same folder."""
    root = tmp_path / folder
    (root / name).mkdir(parents=True)
    (root / name / "suite.py").write_text(textwrap.dedent(source))
    return root


def run_cli(*args: str, cwd: Path | None = None, env: dict[str, str] | None = None, timeout: float = 600,
            unset: tuple[str, ...] = ()):
    """Run `python -m harness ...` in a fresh interpreter, as a user would (``unset``: variables
    it starts without)."""
    full_env = {k: v for k, v in os.environ.items() if k not in unset}
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


# Statements whose layers tests check (tests/measure/callgrind/test_layers_torch.py,
# tests/present/test_layer_table.py): `y = x * w` from Python and C++ (a grouped
# definition, so the dispatch table's summary shows), and Python statements with
# a known extra cost (a pure-Python wrapper, autograd, a profiler range).
LAYERS_SUITES = {
    "layers_ops": '''
import harness
from harness import GroupedSetup, GroupedStmts

suite = harness.Suite(description="y = x * w in layers", table="grouped")
SQUARE = GroupedSetup(
    py_setup="x = torch.ones(4, 4)\\nw = torch.ones(4, 4)",
    cpp_setup="auto x = torch::ones({4, 4});\\nauto w = torch::ones({4, 4});",
)
suite.add(GroupedStmts("y = x * w", "auto y = x * w;", setup=SQUARE, name="mul"))
''',
    "layers_causes": '''
import harness

suite = harness.Suite(description="known causes, known layers")
SETUP = "import torch\\nx = torch.ones(4, 4)\\nw = torch.ones(4, 4)"
suite.timer("wrapped", "y = mul(x, w)", setup=SETUP + "\\ndef mul(a, b):\\n    return a * b")
suite.timer("grad", "y = x * w", setup=SETUP + "\\nw.requires_grad_()")
suite.timer("profiled", "with torch.autograd.profiler.record_function('mul'):\\n    y = x * w", setup=SETUP)
''',
}


@pytest.fixture(scope="session")
def layers_run(tmp_path_factory):
    """One `bench --mode instructions --layers` of LAYERS_SUITES under real callgrind (~1 minute):
    (suites directory, record path, the CLI's completed process)."""
    if shutil.which("valgrind") is None:
        pytest.skip("valgrind is not installed: layers come from callgrind")
    root = tmp_path_factory.mktemp("layers")
    for name, text in LAYERS_SUITES.items():
        suite_root(root, name, text, folder="")
    record = root / "run.json"
    done = run_cli("bench", "--path", str(root), *LAYERS_SUITES, "--mode", "instructions", "--layers",
                   "--explain-layers", "--output", str(record))
    assert done.returncode == 0, done.stdout + done.stderr
    return root, record, done


# One gather, its indices contiguous or strided (F1_STRIDE): the same instructions, other cache misses.
# Both strides are two characters, in the environment and in the setup ("01", "*  1"; "64", "* 64"): the
# length of every string a worker holds moves the heap a count starts from, and so the instructions.
GATHER_STRIDES = ("01", "64")
GATHER_SUITE = '''
import os
import harness
suite = harness.Suite(description="one gather, contiguous or strided indices ($F1_STRIDE)")
suite.timer("gather", "torch.take(src, idx)", setup=(
    "import torch\\nsrc = torch.zeros(1 << 22)\\n"
    f"idx = torch.arange(1 << 16) * {int(os.environ.get('F1_STRIDE', '1')):2d}"))
'''


@pytest.fixture(scope="session")
def cache_runs(tmp_path_factory) -> tuple[Path, Path]:
    """Two real `bench --mode instructions --cache-sim --layers` runs of the gather (~40 s each on 2 cores):
    the record of its contiguous indices, then of indices 64 floats apart."""
    if shutil.which("valgrind") is None:
        pytest.skip("valgrind is not installed: cache figures come from callgrind")
    root = suite_root(tmp_path_factory.mktemp("cache_runs"), "gathers", GATHER_SUITE, folder="")
    records = (root / "contiguous.json", root / "strided.json")
    for record, stride in zip(records, GATHER_STRIDES, strict=True):
        done = run_cli("bench", "--path", str(root), "gathers", "--mode", "instructions", "--cache-sim", "--layers",
                       "--output", str(record), cwd=root, env={"F1_STRIDE": stride})
        assert done.returncode == 0, done.stdout + done.stderr
    return records
