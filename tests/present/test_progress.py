"""A run's progress in a log (not a terminal): a line per preparation step with its elapsed
time, a line per finished benchmark; on a terminal the same steps leave their line."""

from __future__ import annotations

import io
import re
from pathlib import Path

from rich.console import Console

from conftest import suite_root
from harness.model.events import Event
from harness.model.result import TaskResult
from harness.model.task import Task
from harness.present.progress import RunProgress


def _log_console() -> Console:
    return Console(file=io.StringIO(), width=100, color_system=None)  # a file: not a terminal


def test_a_log_gets_a_line_per_step_with_its_time_and_per_finished_benchmark():
    console = _log_console()
    ok = TaskResult(Task("basic", "mul[4x4]", "timer", {}), "ok", "s", [2.5e-6] * 5)
    noisy = TaskResult(Task("basic", "add", "timer", {}), "ok", "s", [1e-6, 1.5e-6, 0.7e-6, 1.4e-6, 0.6e-6])
    failed = TaskResult(Task("basic", "div", "timer", {}), "failed", error="stmt line 1 raised ZeroDivisionError\nmore")
    with RunProgress(console) as progress:
        progress.on_event(Event("status", "compiling 3 C++ statement(s) in one build"))
        progress.on_event(Event("status", "waiting for the precompiled torch header (PCH) build"))
        progress.on_event(Event("start", total=3))
        for i, r in enumerate((ok, noisy, failed), 1):
            progress.on_event(Event("result", result=r, done=i, total=3))
    lines = console.file.getvalue().splitlines()
    assert re.fullmatch(r"compiling 3 C\+\+ statement\(s\) in one build: \d+\.\d s", lines[0])
    assert re.fullmatch(r"waiting for the precompiled torch header \(PCH\) build: \d+\.\d s", lines[1])
    assert lines[2] == "benchmarking 3 tasks"
    assert re.fullmatch(r"\[1/3\] basic/mul\[4x4\]: 2\.5 us \(\d+\.\d s\)", lines[3])
    assert re.fullmatch(r"\[2/3\] basic/add: 1 us \(! \d+%\) \(\d+\.\d s\)", lines[4])
    assert re.fullmatch(r"\[3/3\] basic/div: failed: stmt line 1 raised ZeroDivisionError \(\d+\.\d s\)", lines[5])
    assert len(lines) == 6
    assert "\x1b" not in console.file.getvalue()  # no spinner or bar drawn into the log


def test_bench_into_a_pipe_logs_each_finished_benchmark(cli, tmp_path: Path):
    root = suite_root(tmp_path, "piped", """
        import harness
        suite = harness.Suite()
        suite.timer("noop", "pass", min_run_time=0.02)
        suite.timer("mul", "x * 2", setup="x = torch.ones(2)", min_run_time=0.02, num_threads=(1, 2))
    """)
    r = cli("bench", "--path", str(root))  # stdout and stderr are pipes
    assert r.returncode == 0, r.stderr
    assert re.search(r"^benchmarking 3 tasks$", r.stderr, re.M), r.stderr
    finished = re.findall(r"^\[(\d)/3\] piped/\S+: \d.* \(\d+\.\d s\)$", r.stderr, re.M)
    assert finished == ["1", "2", "3"], r.stderr
