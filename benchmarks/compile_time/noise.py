"""Measure every compile-time case several times and print each one's spread.

    python benchmarks/compile_time/noise.py [--repeats 3] [--jobs 2] [-k PATTERN] [--counter auto]

Each repeat runs the selected instruction-count tasks, each case in a fresh
worker process, as `python -m harness bench compile_time` does. Under
callgrind, runs in identical environments give identical counts (to a few
hundred instructions): what moves a count is the heap layout, through
torch.compile's sets and dicts keyed by object addresses, and the layout
follows the process environment (a user's variables, paths). So each repeat
adds an environment variable of a different length, as a different user or
CI runner would. The spread of a case is (max - min) / min over the
repeats; a row's noise_margin in expected_results.csv should sit well above
it (this script suggests three times the spread, at least 1.5%) so that the
gate fails on real changes only.

`--output FILE.csv` writes the median of the repeats (a measured value: the
lower middle one for an even count) as name,metric,value rows, from which `python -m harness check FILE.csv --expected ... --update`
records expected values.

`--write-expected FILE` regenerates the expected file in one command: a row
per case measured in every repeat, its median and margin max(1.5%, 3x
spread), under a header saying on what it was recorded. A case whose values
fall into groups more than 10% apart has modes (its work follows the heap
layout: symint_sum_loop counts 4.36e9 or 6.15e9): the row gets the median of
each (``expected`` written ``a|b``, see ``harness.present.check``) and the
margin from the spread within them; a mode of the current expected file that
no repeat met is kept, and said so, since a few repeats need not meet every
mode. The lead reruns it
after a change that moves every count (how workers start, a torch upgrade):

    python benchmarks/compile_time/noise.py --repeats 3 --counter callgrind \
        --write-expected benchmarks/compile_time/expected_results.csv
"""

from __future__ import annotations

import argparse
import csv
import math
import os
import resource
import shlex
import signal
import statistics
import sys
import time
from pathlib import Path
from typing import NamedTuple

from rich import box
from rich.console import Console
from rich.table import Table

from harness.define.discovery import load_suite
from harness.define.selection import is_extended, matches
from harness.files.atomic import atomic_open
from harness.files.lock import locked
from harness.measure.counter_choice import get_counter
from harness.model.result import TaskResult
from harness.present.check import MODE_SEPARATOR, read_expected
from harness.records.metrics import METRIC_COLUMNS, format_number
from harness.workers.pool import WorkerPool

HERE = Path(__file__).resolve().parent
MIN_MARGIN = 0.015
SAFETY = 3.0
PROBE_ENV = "HARNESS_NOISE_PROBE"
PROBE_STEP = 97  # characters added to the environment per repeat
# Values of one case further apart than this are different modes (a different
# amount of work), not noise: the spread within a mode is well under 1%.
MODE_GAP = 0.10


class Recorded(NamedTuple):
    """One row of the expected file as measured: its modes (one for most cases) and the spread within them."""

    name: str
    metric: str
    modes: list[float]
    margin: float
    spread: float
    kept: tuple[float, ...] = ()  # modes of the file it replaces that no repeat met


def suggested_margin(spread: float) -> float:
    """Three times the spread, rounded up to half a percent, never under MIN_MARGIN."""
    return max(MIN_MARGIN, math.ceil(SAFETY * spread * 200) / 200)


def spread(values: list[float]) -> float:
    return (max(values) - min(values)) / min(values) if values and min(values) > 0 else float("nan")


def modes(values: list[float]) -> list[list[float]]:
    """The values grouped into modes: sorted, split where one is more than MODE_GAP above the last."""
    groups: list[list[float]] = []
    for value in sorted(values):
        if groups and value <= groups[-1][-1] * (1 + MODE_GAP):
            groups[-1].append(value)
        else:
            groups.append([value])
    return groups


def with_known_modes(measured: list[float], known: tuple[float, ...]) -> tuple[list[float], list[float]]:
    """(every mode, the known ones kept): the measured modes and each known one no measured mode is near."""
    kept = [k for k in known if all(abs(m - k) > k * MODE_GAP for m in measured)]
    return sorted(measured + kept), kept


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--jobs", "-j", type=int, default=2)
    parser.add_argument("-k", dest="pattern", help="only cases whose task name matches")
    parser.add_argument("--counter", default="auto", help="auto, callgrind or perf")
    parser.add_argument("--expected", default=str(HERE / "expected_results.csv"))
    parser.add_argument("--timeout", type=float, default=None,
                        help="seconds per task (default: each case's own limit)")
    parser.add_argument("--output", help="write the median of the repeats as name,metric,value CSV")
    parser.add_argument("--all", action="store_true", dest="everything", help="also the extended cases (bench --all)")
    parser.add_argument(
        "--write-expected", metavar="FILE",
        help="write FILE as the expected file: median and suggested margin per case (needs --repeats >= 2)",
    )
    args = parser.parse_args(argv)
    if args.write_expected and args.repeats < 2:
        parser.error("--write-expected needs --repeats 2 or more: a margin comes from the measured spread")

    tasks = [
        t
        for t in load_suite("compile_time", HERE / "suite.py").tasks()
        if t.mode == "instructions" and matches(t, args.pattern) and (args.everything or not is_extended(t))
    ]
    if not tasks:
        print(f"noise.py: no instruction-count tasks match -k {args.pattern!r}", file=sys.stderr)
        return 2
    counter = get_counter(args.counter)
    # `kill` stops the workers too (the pool cleans up on KeyboardInterrupt).
    signal.signal(signal.SIGTERM, signal.default_int_handler)
    console = Console(width=None if sys.stdout.isatty() else 160)
    console.print(f"{len(tasks)} cases x {args.repeats} repeats, counter {counter.name}, --jobs {args.jobs}")
    runs: dict[str, list[TaskResult]] = {t.name: [] for t in tasks}
    durations: list[float] = []
    cpu_seconds: list[float] = []
    interrupted = False
    for repeat in range(args.repeats):
        start = time.perf_counter()
        env = {**counter.worker_env(), PROBE_ENV: "x" * (PROBE_STEP * repeat)}
        pool = WorkerPool(
            jobs=args.jobs, prefix=counter.worker_prefix(), env=env, timeout=args.timeout,
            diagnostics=counter.diagnostics,
        )

        def report(result: TaskResult, start: float = start, repeat: int = repeat) -> None:
            runs[result.task.name].append(result)
            if result.ok:
                console.print(
                    f"  {repeat + 1}: {result.extra['case']} {result.extra['actual']:,.0f} "
                    f"(done at {time.perf_counter() - start:.0f} s)",
                    highlight=False,
                )
            else:
                console.print(f"FAILED {result.task.name}: {result.error}", markup=False)

        cpu_before = _children_cpu()
        try:
            pool.run(tasks, 0.0, on_result=report)
        except KeyboardInterrupt:
            # Keep what was measured: the summary and --output below use every finished result.
            console.print(f"interrupted in repeat {repeat + 1}; summarising the results so far", highlight=False)
            interrupted = True
        durations.append(time.perf_counter() - start)
        cpu_seconds.append(_children_cpu() - cpu_before)
        # CPU seconds do not depend on how busy the machine is; wall seconds do.
        console.print(
            f"repeat {repeat + 1}: {durations[-1]:.0f} s wall, {cpu_seconds[-1]:.0f} s CPU in the workers, "
            f"load average {os.getloadavg()[0]:.1f}",
            highlight=False,
        )
        if interrupted:
            break

    try:
        current_rows = read_expected(args.expected).rows
    except Exception:  # noqa: BLE001 - the table is useful without the expected file
        current_rows = {}
    table = Table(
        title=f"instruction-count spread over {args.repeats} runs ({counter.name})", title_justify="left",
        box=box.SIMPLE_HEAD,
    )
    for col in ("case", "median", "spread", "suggested margin", "current margin"):
        table.add_column(col, justify="left" if col == "case" else "right")
    medians = []
    expected_rows: list[Recorded] = []
    any_kept = False
    for name, results in runs.items():
        ok = [r for r in results if r.ok]
        case = ok[0].extra["case"] if ok else name
        if not ok:
            table.add_row(case, "", f"0 of {len(results)} runs ok", "", "")
            continue
        values = [r.extra["actual"] for r in ok]
        # compile_time_instruction_count or instruction_count, by the case's region
        metric = next(m for m in ok[0].extra["metrics"] if not m.endswith("_cold"))
        medians.append((case, metric, statistics.median_low(values)))
        if len(ok) < 2:
            table.add_row(case, f"{values[0]:,.0f}", f"{len(ok)} of {args.repeats} runs", "", "")
            continue
        groups = modes(values)
        s = max(spread(g) for g in groups)
        row = current_rows.get((case, metric))
        every, kept = with_known_modes([statistics.median_low(g) for g in groups], row.modes if row else ())
        expected_rows.append(Recorded(case, metric, every, suggested_margin(s), s, tuple(kept)))
        any_kept = any_kept or bool(kept)
        current = row.margin if row else None
        table.add_row(
            case,
            " | ".join(f"{statistics.median_low(g):,.0f}" for g in groups)
            + "".join(f" | {k:,.0f} (kept)" for k in kept),
            f"{s:.3%}" + (f" within each of {len(groups)} modes" if len(groups) > 1 else ""),
            f"{suggested_margin(s):.1%}",
            "" if current is None else f"{current:.1%}" + ("" if current >= suggested_margin(s) else " (too tight)"),
        )
    console.print(table)
    if any_kept:
        console.print(f"(kept): a mode of {args.expected} that no repeat met, kept in what --write-expected writes",
                      highlight=False)
    console.print(f"each repeat took {', '.join(f'{d:.0f} s' for d in durations)} with --jobs {args.jobs}")
    if args.output:
        write_csv(args.output, medians)
        console.print(f"medians written to {args.output}")
    if interrupted:
        if args.write_expected:
            console.print(f"{args.write_expected} not written: the run was interrupted", highlight=False)
        return 130
    if args.write_expected:
        failed = len(runs) - len(expected_rows)
        command = shlex.join(["python", "benchmarks/compile_time/noise.py", *(argv if argv is not None else sys.argv[1:])])
        write_expected(args.write_expected, expected_rows, counter.name, args.repeats, command)
        console.print(
            f"{args.write_expected}: {len(expected_rows)} rows written"
            + (f"; {failed} case(s) failed in some repeat and were left out" if failed else ""),
            highlight=False,
        )
        return 1 if failed else 0
    return 0


def _children_cpu() -> float:
    """CPU seconds of the workers this process has reaped (user + system)."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def write_expected(
    path: str, rows: list[Recorded], counter: str, repeats: int, command: str
) -> None:
    """The expected file, whole: what it was recorded on, then a row per case."""
    import platform

    import torch

    spreads = [row.spread for row in rows]
    cpu = next(
        (line.split(":", 1)[1].strip() for line in Path("/proc/cpuinfo").read_text().splitlines()
         if line.startswith("model name")),
        platform.processor(),
    ) if Path("/proc/cpuinfo").exists() else platform.processor()
    header = [
        "# Expected instruction counts of the compile-time suite's default (gated) cases, gated by",
        "#   python -m harness check RESULTS --expected benchmarks/compile_time/expected_results.csv",
        f"# Written by: {command}",
        f"# Recorded on: {cpu} ({os.cpu_count()} CPUs), Linux {platform.release()}, Python {platform.python_version()},",
        f"#   torch {torch.__version__}, counter {counter}, {time.strftime('%Y-%m-%d', time.gmtime())}.",
        (
            f"# Values: the median of {repeats} runs, each case in a fresh worker; spreads measured "
            f"{min(spreads):.2%}-{max(spreads):.2%};"
            if repeats > 1 and spreads
            else "# Values: ONE run per case, each in a fresh worker: spreads not measured, margins at the floor;"
        ),
        f"#   noise_margin = max({MIN_MARGIN:.1%}, {SAFETY:g}x the case's spread). Other machines, torch versions or",
        "#   counters give other counts: record your own with the command above.",
    ]
    multimodal = [row for row in rows if len(row.modes) > 1]
    if multimodal:
        header.append(
            f"# Cases with modes (values in groups more than {MODE_GAP:.0%} apart, each gated with the row's margin;"
            ' see the suite README, "A case with two modes"):'
        )
        header += [
            f"#   {row.name}: {' | '.join(f'{m:,.0f}' for m in row.modes)}"
            + "".join(f"; {k:,.0f} kept from the file this one replaced (no repeat met it)" for k in row.kept)
            for row in multimodal
        ]
    # Under the expected file's writers' lock, as check --update writes it: one writer at a time.
    with locked(path), atomic_open(path, "w") as f:
        f.write("\n".join(header) + "\n")
        writer = csv.writer(f, lineterminator="\n")
        writer.writerow(["name", "metric", "expected", "noise_margin"])
        writer.writerows(
            (name, metric, MODE_SEPARATOR.join(map(format_number, values)), f"{margin:g}")
            for name, metric, values, margin, *_ in rows
        )


def write_csv(path: str, rows: list[tuple[str, str, float]]) -> None:
    with atomic_open(path, "w") as f:
        writer = csv.writer(f, lineterminator="\n")
        writer.writerow(METRIC_COLUMNS)
        writer.writerows((name, metric, format_number(value)) for name, metric, value in rows)


if __name__ == "__main__":
    sys.exit(main())
