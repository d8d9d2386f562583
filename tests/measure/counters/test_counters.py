"""Choosing an instruction counter: perf detection against the kernel, fallbacks, missing valgrind."""

from __future__ import annotations

import ctypes
import os
import platform
import shutil
import sys
from pathlib import Path

import pytest

from harness.define.selection import with_mode
from harness.errors import HarnessError, UsageError
from harness.measure.callgrind.counter import CallgrindCounter
from harness.measure.counter_choice import get_counter
from harness.measure.counters.perf import PerfCounter, perf_status
from harness.model.task import Task

_PERF_EVENT_OPEN = {"x86_64": 298, "aarch64": 241}.get(platform.machine())


def _kernel_says_perf_opens() -> bool:
    """An independent oracle: perf_event_open(2) for user-space instructions, via ctypes."""
    attr = (ctypes.c_uint8 * 128)()
    ctypes.memmove(attr, (ctypes.c_uint32 * 2)(0, 128), 8)  # type=PERF_TYPE_HARDWARE, size
    ctypes.memmove(ctypes.byref(attr, 8), (ctypes.c_uint64 * 1)(1), 8)  # config=INSTRUCTIONS
    # flags at offset 40: disabled (bit 0), exclude_kernel (bit 5), exclude_hv (bit 6)
    ctypes.memmove(ctypes.byref(attr, 40), (ctypes.c_uint64 * 1)(1 | 1 << 5 | 1 << 6), 8)
    libc = ctypes.CDLL(None, use_errno=True)
    libc.syscall.restype = ctypes.c_long
    fd = libc.syscall(_PERF_EVENT_OPEN, attr, 0, -1, -1, 0)
    if fd < 0:
        return False
    os.close(fd)
    return True


@pytest.mark.skipif(_PERF_EVENT_OPEN is None, reason=f"no perf_event_open number known for {platform.machine()}")
def test_perf_detection_agrees_with_the_kernel():
    ok, reason = perf_status()
    if not _kernel_says_perf_opens():
        assert not ok
        assert reason  # says why: no PMU, paranoid setting, ...
    elif ok:
        assert reason == ""
    else:  # opens but does not count (a VM without a virtual PMU): we must say so
        assert "counts nothing" in reason or "multiplexed" in reason


def test_unavailable_perf_is_a_clear_error_and_auto_falls_back(capsys):
    ok, reason = perf_status()
    if ok:
        pytest.skip("this machine has a readable hardware instruction counter")
    with pytest.raises(HarnessError, match="hardware instruction counter is unavailable") as err:
        get_counter("perf")
    assert reason in str(err.value) and "--counter callgrind" in str(err.value)
    if shutil.which("valgrind") is None:
        with pytest.raises(HarnessError, match="apt-get install valgrind"):
            get_counter("auto")
        return
    import harness.measure.counter_choice as counters

    counters._told_fallback = False
    assert isinstance(get_counter("auto"), CallgrindCounter)
    assert isinstance(get_counter("auto"), CallgrindCounter)
    err_text = capsys.readouterr().err
    assert err_text.count("counting with callgrind") == 1  # said once


def test_perf_counts_where_available():
    ok, _ = perf_status()
    if not ok:
        pytest.skip("no readable hardware instruction counter here (see test_perf_detection_agrees_with_the_kernel)")
    counter = PerfCounter()
    small = counter.count(lambda: sum(range(1_000)))
    large = counter.count(lambda: sum(range(100_000)))
    assert 0 < small < large
    assert 20 < large / small < 500


def test_perf_measures_blocks_where_available():
    ok, _ = perf_status()
    if not ok:
        pytest.skip("no readable hardware instruction counter here (see test_perf_detection_agrees_with_the_kernel)")
    from harness.measure.python_block import PythonBlock

    counter = PerfCounter()
    one, ten = (
        counter.measure(PythonBlock("\n".join(["a + 1"] * k), "a = 1", clock_ns=counter.clock()).sampler(),
                        10_000, 3, clocked=True)
        for k in (1, 10)
    )
    empty = counter.measure(PythonBlock("pass", clock_ns=counter.clock()).sampler(), 10_000, 3, clocked=True)
    base = min(p.total for p in empty)
    ratio = (min(p.total for p in ten) - base) / (min(p.total for p in one) - base)
    assert 7 < ratio < 13  # close, not exact: the hardware counter sees interrupts' user-space effects


def test_unknown_counter_and_mode():
    with pytest.raises(UsageError, match="unknown instruction counter"):
        get_counter("cycles")
    t = Task("s", "a", "timer", {"stmt": "pass"})
    assert [x.mode for x in with_mode([t], "both")] == ["wall", "instructions"]
    assert [x.mode for x in with_mode([t], "instructions")] == ["instructions"]
    assert with_mode([t], None) == [t]
    with pytest.raises(UsageError, match="unknown mode"):
        with_mode([t], "cycles")


def test_mode_keeps_twins_a_suite_defined():
    """Compile-time cases come as a wall and an instruction task with settings of their own."""
    wall = Task("s", "case", "compile_time", {"iterations": 5}, mode="wall")
    count = Task("s", "case", "compile_time", {"iterations": 1}, mode="instructions")
    other = Task("s", "plain", "timer", {"stmt": "pass"})
    both = with_mode([wall, count, other], "both")
    assert [(t.name, t.mode) for t in both] == [
        ("case", "wall"), ("case", "instructions"), ("plain", "wall"), ("plain", "instructions")
    ]
    assert both[0] is wall and both[1] is count
    assert with_mode([count, wall], "wall") == [wall]
    assert with_mode([wall, count], "instructions") == [count]


def test_mode_picks_from_fixed_mode_pairs_of_the_compile_time_suite():
    """Compile-time cases are named apart per mode (`case[wall]`, `case[instructions]`)."""
    from harness.suites.compile_time.cases import standard_cases

    tasks = [t for case in standard_cases()[:2] for t in case.expand("compile_time")]
    assert len(tasks) == 4
    for mode, expected in (("instructions", ["instructions"] * 2), ("wall", ["wall"] * 2),
                           ("both", ["instructions", "wall"] * 2), (None, ["instructions", "wall"] * 2)):
        picked = with_mode(tasks, mode)
        assert [t.mode for t in picked] == expected
        assert all(t in tasks for t in picked)  # picked, never converted


def test_callgrind_counter_needs_a_valgrind_worker():
    counter = CallgrindCounter(out_dir="/nonexistent")
    with pytest.raises(HarnessError, match="started under valgrind"):
        counter.count(lambda: None)


def _path_without_valgrind(tmp_path: Path) -> str:
    # Only the directory of this Python: no valgrind on PATH.
    bindir = tmp_path / "bin"
    bindir.mkdir()
    (bindir / "python").symlink_to(sys.executable)
    return str(bindir)


def test_missing_valgrind_is_one_clear_message(cli, tmp_path: Path):
    env = {"PATH": _path_without_valgrind(tmp_path)}
    proc = cli("bench", "basic", "-k", "empty", "--mode", "instructions", "--counter", "callgrind", env=env)
    assert proc.returncode != 0
    assert "valgrind is not installed" in proc.stderr and "apt-get install valgrind" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_collect_callgrind_without_valgrind(tmp_path: Path):
    import subprocess

    code = "import harness; harness.Timer('pass').collect_callgrind()"
    proc = subprocess.run(
        [sys.executable, "-c", code], env={**os.environ, "PATH": _path_without_valgrind(tmp_path)},
        capture_output=True, text=True, timeout=300,
    )
    assert proc.returncode != 0
    assert "apt-get install valgrind" in proc.stderr
