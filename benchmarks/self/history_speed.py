"""The history database's speed against issue 35's targets (there is no reference tool to run beside it).

    .venv/bin/python benchmarks/self/history_speed.py [--runs 10000] [--benchmarks 200]

Prints: storing one run of 200 results (median of 20 stores into the built
history; target <= 50 ms), `history show` and `history changes` over the
whole history (target <= 1 s): the command's work (``cli.main`` in a process
that has imported its modules once), and the command a user types (a fresh
process: Python's start and the imports of sqlalchemy, and of ruptures with
its ~1 s of scipy for ``changes``, come on top), and the
database's size per result without samples (target <= 2 KB). The history is
built once in a temporary folder through ``History.store_many`` (the path
``history import`` takes), 500 runs per transaction.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from harness.history import open_history, query
from harness.history.changes import find_changes
from harness.model.record import RunRecord
from harness.model.result import TaskResult
from harness.model.task import Task

TASKS = [Task("speed", f"op{j}", "timer", {}, "instructions" if j % 2 else "wall") for j in range(1000)]


def make_run(i: int, benchmarks: int, rng: np.random.Generator) -> RunRecord:
    env = {"run_id": f"speed-{i}", "start_time": f"2026-01-01T00:00:00+00:00#{i:08d}", "label": f"build-{i}",
           "harness_version": "0.1.0", "torch": {"version": "2.13.0"}, "hostname": "speed"}
    results = []
    for j, task in enumerate(TASKS[:benchmarks]):
        level = (
            (1e6 if task.mode == "instructions" else 1e-6) * (1 + j / 100) * (1.05 if i > 6000 and j % 7 == 0 else 1)
        )
        noise = 0.0 if task.mode == "instructions" else 0.01
        unit = "instructions" if task.mode == "instructions" else "s"
        results.append(
            TaskResult(task, "ok", unit, [], extra={"actual": float(level * (1 + noise * rng.standard_normal()))})
        )
    return RunRecord(env, results)


def timed(fn) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=10_000)
    parser.add_argument("--benchmarks", type=int, default=200)
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    with tempfile.TemporaryDirectory() as folder:
        db = Path(folder) / "history.sqlite"
        start = time.perf_counter()
        with open_history(db) as history:
            for first in range(0, args.runs, 500):
                history.store_many(
                    [make_run(i, args.benchmarks, rng) for i in range(first, min(first + 500, args.runs))]
                )
        print(f"built {args.runs:,} runs x {args.benchmarks} benchmarks in {time.perf_counter() - start:.0f} s")
        size = sum(p.stat().st_size for p in Path(folder).iterdir()) / (args.runs * args.benchmarks)
        with open_history(db) as history:
            extra = [make_run(args.runs + i, args.benchmarks, rng) for i in range(20)]
            store = statistics.median(timed(lambda r=r: history.store(r)) for r in extra)
            load = statistics.median(timed(lambda: query.load(history)) for _ in range(3))
            trends = query.load(history)
            detect = statistics.median(timed(lambda: find_changes(trends)) for _ in range(3))
        from harness.cli import main as cli_main

        warm = {}
        for action in ("show", "changes"):
            argv = ["history", action, "--history", str(db)]
            with contextlib.redirect_stdout(io.StringIO()):
                cli_main(argv)  # imports done once, as in a long-lived process
                warm[action] = statistics.median(timed(lambda argv=argv: cli_main(argv)) for _ in range(3))
        env = dict(os.environ)
        commands = {}
        for action in ("show", "changes"):
            cmd = [sys.executable, "-m", "harness", "history", action, "--history", str(db)]
            commands[action] = statistics.median(
                timed(lambda cmd=cmd: subprocess.run(cmd, capture_output=True, env=env, check=True)) for _ in range(3))
        startup = statistics.median(
            timed(
                lambda: subprocess.run(
                    [sys.executable, "-c", "import harness.cli, sqlalchemy, ruptures, scipy.stats"], check=True
                )
            )
            for _ in range(3)
        )
    print("no reference tool: each figure against the issue's target")
    print(f"store one run of {args.benchmarks} results   {store * 1e3:7.1f} ms   target <= 50 ms")
    print(f"history show (the command's work) {warm['show']:7.2f} s    target <= 1 s")
    print(f"history changes (the work)        {warm['changes']:7.2f} s    target <= 1 s")
    print(f"history show (a fresh process)    {commands['show']:7.2f} s")
    print(f"history changes (a fresh process) {commands['changes']:7.2f} s")
    print(f"  interpreter + imports (changes) {startup:7.2f} s    (python, harness.cli, sqlalchemy, ruptures, scipy)")
    print(f"  read {args.runs:,} runs (in process)    {load:7.2f} s")
    print(f"  change points (in process)      {detect:7.2f} s")
    print(f"database size per result          {size:7.0f} B    target <= 2048 B (no samples)")


if __name__ == "__main__":
    main()
