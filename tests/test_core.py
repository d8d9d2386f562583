"""harness._C directly: clock, loop overhead, the C++ callable loop, and the JIT-build fallback."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from harness.core import native


def test_clock_properties():
    C = native()
    a, b = C.now_ns(), C.now_ns()
    assert b >= a
    assert 0 < C.clock_resolution_ns() <= 1000
    assert 0 < C.clock_read_cost_ns() < 10_000


def test_empty_loop_is_cheap():
    # A sanity bound, not a timing assertion: an empty body that was not
    # optimised into nothing still costs well under 10 ns per iteration.
    assert 0 < native().empty_loop_cost_ns(1_000_000) < 10


def test_call_loop_calls_exactly_number_times():
    calls = []
    loop = native().CallLoop(calls.append, (1,))
    assert loop(7) > 0
    assert calls == [1] * 7


def test_call_loop_propagates_exceptions():
    def boom():
        raise KeyError("inside")

    with pytest.raises(KeyError, match="inside"):
        native().CallLoop(boom)(3)


def test_invalid_arguments_raise_value_error():
    with pytest.raises(ValueError, match="min_run_time"):
        native().blocked_autorange(lambda n: 1, 0.0)
    with pytest.raises(ValueError, match="number must be > 0"):
        native().fixed_blocks(lambda n: 1, 0, 1)


def test_jit_build_fallback(repo: Path, tmp_path: Path):
    """A source checkout without a built _C compiles the core into the cache once, then reuses it;
    a damaged build is rebuilt."""
    site_dirs = [p for p in sys.path if p.endswith("-packages")]
    pythonpath = os.pathsep.join([str(repo / "python"), *site_dirs])
    env = dict(os.environ, HARNESS_CACHE_DIR=str(tmp_path / "cache"), PYTHONPATH=pythonpath)
    # -S: no site processing, so the editable install's import hook does not
    # supply the CMake-built _C; harness comes from the source tree.
    code = "import harness; from harness.core import native; C = native(); print(C.__file__); print(C.now_ns() > 0)"
    first = subprocess.run([sys.executable, "-S", "-c", code], env=env, capture_output=True, text=True, timeout=600)
    assert first.returncode == 0, first.stderr
    assert "building the C++ core" in first.stderr
    assert str(tmp_path / "cache") in first.stdout and "True" in first.stdout
    second = subprocess.run([sys.executable, "-S", "-c", code], env=env, capture_output=True, text=True, timeout=600)
    assert second.returncode == 0, second.stderr
    assert "building" not in second.stderr
    assert (tmp_path / "cache").stat().st_mode & 0o777 == 0o700
    # A build truncated by a full disk or a killed copy is detected and rebuilt.
    (so,) = (tmp_path / "cache").glob("core/*/_C*.so")
    with open(so, "r+b") as f:
        f.truncate(so.stat().st_size // 2)
    third = subprocess.run([sys.executable, "-S", "-c", code], env=env, capture_output=True, text=True, timeout=600)
    assert third.returncode == 0, third.stderr
    assert f"the cached C++ core {so} is damaged" in third.stderr and "building the C++ core" in third.stderr
    assert "True" in third.stdout
