"""``python -m harness noise [CASE ...]``: each compile-time case counted in N fresh processes; its spread,
per phase, and the functions whose counts vary between repeats, largest first."""

from __future__ import annotations

import argparse
import dataclasses
import shlex
import signal
import sys

from rich.console import Console

from harness.cli.arguments import PATTERN_HELP
from harness.errors import UsageError
from harness.options import COUNTER_CHOICES


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    noise = subparsers.add_parser(
        "noise", help="count compile-time cases in N fresh processes each: the spread of each case and of each "
        "phase, and the functions whose counts vary between repeats (why a count is noisy)",
    )
    noise.add_argument("cases", nargs="*", metavar="CASE",
                       help="compile-time cases by name (default: every default case, or those -k selects)")
    noise.add_argument("-k", dest="pattern", help=PATTERN_HELP)
    noise.add_argument("--repeats", type=int, default=3, metavar="N", help="fresh processes per case (default 3)")
    noise.add_argument("--jobs", "-j", type=int, default=2, metavar="N", help="worker processes (default 2)")
    noise.add_argument("--counter", choices=COUNTER_CHOICES, default="auto",
                       help="instruction counter (default auto; phases and functions need callgrind)")
    noise.add_argument("--path", help="directory holding the suite (default: ./benchmarks)")
    noise.add_argument("--suite", default="compile_time", help="the suite of the cases (default compile_time)")
    noise.add_argument("--expected", metavar="FILE",
                       help="the expected file whose margins are shown beside the suggested ones (default: the "
                       "suite's expected_results.csv)")
    noise.add_argument("--timeout", type=float, default=None, metavar="SECONDS",
                       help="seconds per task (default: each case's own limit)")
    noise.add_argument("--top", type=int, default=15, metavar="N",
                       help="functions (and phases) shown per case, the widest range first (default 15)")
    noise.add_argument("--output", metavar="FILE.csv", help="write the median of the repeats as name,metric,value")
    noise.add_argument("--all", action="store_true", dest="everything", help="also the extended cases (bench --all)")
    noise.add_argument(
        "--write-expected", metavar="FILE",
        help="write FILE as the expected file: median and suggested margin per case (needs --repeats >= 2)",
    )
    noise.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from harness.define.discovery import default_root, select_suites
    from harness.define.selection import is_extended, matches
    from harness.measure.counter_choice import get_counter
    from harness.present import noise_table
    from harness.present.check import read_expected
    from harness.present.table import output_console
    from harness.run.repeats import run_repeats

    if args.repeats < 1:
        raise UsageError(f"--repeats must be >= 1, got {args.repeats}")
    if args.write_expected and args.repeats < 2:
        raise UsageError("--write-expected needs --repeats 2 or more: a margin comes from the measured spread")
    if args.top < 1:
        raise UsageError(f"--top must be >= 1, got {args.top}")
    suite = select_suites(default_root(args.path), [args.suite])[0]
    tasks = [t for t in suite.tasks()
             if t.kind == "compile_time" and t.mode == "instructions" and matches(t, args.pattern)
             and (args.everything or not is_extended(t))
             and (not args.cases or t.params.get("case") in args.cases or t.name in args.cases)]
    if not tasks:
        wanted = " ".join(args.cases) or "(every default case)"
        raise UsageError(f"noise: no compile-time case matches {wanted}" + (f" -k {args.pattern!r}" if args.pattern
                         else "") + "; `python -m harness list compile_time` names them")
    counter = get_counter("callgrind" if args.counter == "auto" else args.counter)
    detail = counter.name == "callgrind"
    if detail:
        # Phases and per-function counts: what the spread is made of.
        tasks = [dataclasses.replace(t, params={**t.params, "phases": True, "functions": True}) for t in tasks]
    console = output_console()
    err = Console(stderr=True)
    err.print(f"{len(tasks)} case(s) x {args.repeats} repeats, counter {counter.name}, --jobs {args.jobs}",
              highlight=False)
    runs: dict[str, list] = {t.name: [] for t in tasks}

    def on_result(repeat: int, result) -> None:  # noqa: ANN001 - a TaskResult
        runs[result.task.name].append(result)
        if result.ok:
            err.print(f"  {repeat + 1}: {result.extra['case']} {result.extra['actual']:,.0f}", highlight=False)
        else:
            err.print(f"FAILED {result.task.name}: {result.error}", markup=False)

    def on_repeat(repeat: int, cost) -> None:  # noqa: ANN001 - a Repeat
        err.print(f"repeat {repeat + 1}: {cost.seconds:.0f} s wall, {cost.cpu_seconds:.0f} s CPU in the workers",
                  highlight=False)

    # `kill` stops the workers too (the pool cleans up on KeyboardInterrupt).
    signal.signal(signal.SIGTERM, signal.default_int_handler)
    try:
        finished = run_repeats(tasks, counter, args.repeats, args.jobs, args.timeout, on_result, on_repeat)
    finally:
        counter.close()
    expected_path = args.expected or str(default_root(args.path) / args.suite / "expected_results.csv")
    try:
        current = read_expected(expected_path).rows
    except UsageError:  # the table is useful without the expected file
        current = {}
    summary = noise_table.spread_table(runs, args.repeats, counter.name, current)
    console.print(summary.table)
    for results in runs.values():
        ok = [r for r in results if r.ok]
        if len(ok) < 2:
            continue
        case = ok[0].extra["case"]
        for table in (
            noise_table.phase_spread_table(case, ok, args.top),
            noise_table.function_table(case, ok, args.top),
        ):
            if table is not None:
                console.print(table)
    if args.output:
        noise_table.write_medians(args.output, summary.medians)
        console.print(f"medians written to {args.output}", highlight=False)
    if not finished:
        if args.write_expected:
            console.print(f"{args.write_expected} not written: the run was interrupted", highlight=False)
        return 130
    if args.write_expected:
        failed = len(runs) - len(summary.rows)
        given = sys.argv[1:]  # `python -m harness noise ...`, or the thin benchmarks/compile_time/noise.py
        given = given[given.index("noise") + 1:] if "noise" in given else given
        command = shlex.join(["python", "-m", "harness", "noise", *given])
        noise_table.write_expected(args.write_expected, summary.rows, counter.name, args.repeats, command)
        console.print(f"{args.write_expected}: {len(summary.rows)} rows written"
                      + (f"; {failed} case(s) failed in some repeat and were left out" if failed else ""),
                      highlight=False)
        return 1 if failed else 0
    return 0
