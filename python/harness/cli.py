"""Command line: ``python -m harness {list,bench,check,cache}``."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from pathlib import Path

from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from . import __version__
from .errors import HarnessError, UsageError


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m harness",
        description="Microbenchmarks for PyTorch: dispatch overhead, compile time, kernel efficiency.",
    )
    p.add_argument("--version", action="version", version=f"harness {__version__}")
    sub = p.add_subparsers(dest="command", metavar="COMMAND")

    lst = sub.add_parser("list", help="list suites and their benchmarks")
    lst.add_argument("suites", nargs="*", metavar="SUITE")
    lst.add_argument("-k", dest="pattern", help="only benchmarks whose name matches (substring, glob, and/or/not)")
    lst.add_argument("--path", help="directory holding the suites (default: ./benchmarks)")

    bench = sub.add_parser("bench", help="run suites and print their measurements")
    bench.add_argument("suites", nargs="*", metavar="SUITE", help="suite names (default: all)")
    bench.add_argument("-k", dest="pattern", help="only benchmarks whose name matches (substring, glob, and/or/not)")
    bench.add_argument("--path", help="directory holding the suites (default: ./benchmarks)")
    bench.add_argument(
        "--output", "-o",
        help="write the run record to FILE (.json); with a .csv name, write name,metric,value rows "
        "there and the run record beside it (same name, .json)",
    )
    bench.add_argument("--min-run-time", type=float, default=0.2, help="seconds per benchmark (default 0.2)")
    bench.add_argument(
        "--jobs", "-j", type=int, default=1,
        help="worker processes (default 1; more than one distorts wall-time measurements)",
    )
    bench.add_argument(
        "--timeout", type=float, default=600.0, help="seconds before a hung task is killed (default 600)"
    )
    bench.add_argument(
        "--in-process", action="store_true",
        help="run tasks in this process (no crash isolation or timeouts; for debugging)",
    )
    bench.add_argument(
        "--mode", choices=["wall", "instructions", "both"], default=None,
        help="wall: time each benchmark; instructions: count its instructions per run; both: each both ways "
        "(default: the mode each suite defines, usually wall)",
    )
    bench.add_argument(
        "--counter", choices=["auto", "callgrind", "perf"], default="auto",
        help="instruction counter: perf (hardware counter: fast, close), callgrind (valgrind: exact, slow), "
        "auto (perf where readable, else callgrind; default)",
    )

    check = sub.add_parser(
        "check", help="gate a run's metrics against expected values (exit 1 on a regression or a missing case)"
    )
    check.add_argument("results", metavar="RESULTS", help="a metric CSV (bench --output X.csv) or a run record (.json)")
    check.add_argument("--expected", required=True, metavar="FILE", help="CSV of name,metric,expected,noise_margin")
    check.add_argument(
        "--update", action="store_true",
        help="rewrite FILE: rows that moved by more than a third of their margin take the new value, new rows are added",
    )
    check.add_argument(
        "--metric", action="append", metavar="METRIC",
        help="judge this metric (repeatable; default: the metrics FILE has rows for)",
    )

    cache = sub.add_parser("cache", help="inspect or clear the per-user cache")
    cache.add_argument("action", choices=["info", "clear"])
    return p


def _tasks(args: argparse.Namespace):
    from .discovery import default_root, select_suites
    from .task import matches

    suites = select_suites(default_root(args.path), list(args.suites))
    tasks = [t for s in suites for t in s.tasks() if matches(t, args.pattern)]
    if not tasks:
        what = f"-k {args.pattern!r}" if args.pattern else "the selected suites"
        raise UsageError(f"no benchmarks match {what}; see `python -m harness list`")
    return tasks


def cmd_list(args: argparse.Namespace) -> int:
    console = Console()
    current = None
    for t in _tasks(args):
        if t.suite != current:
            console.print(f"[bold]{t.suite}[/bold]")
            current = t.suite
        console.print(f"  {t.name}", highlight=False, markup=False)
    return 0


def cmd_bench(args: argparse.Namespace) -> int:
    from . import environment
    from .records import RunRecord
    from .table import print_results

    if not args.min_run_time > 0:
        raise UsageError(f"--min-run-time must be > 0, got {args.min_run_time}")
    if args.jobs < 1:
        raise UsageError(f"--jobs must be >= 1, got {args.jobs}")
    if not args.timeout > 0:
        raise UsageError(f"--timeout must be > 0, got {args.timeout}")
    if args.output and Path(args.output).suffix not in (".json", ".csv"):
        raise UsageError(f"--output {args.output}: use a .json (run record) or .csv (metric rows) file name")
    from .task import with_mode

    tasks = with_mode(_tasks(args), args.mode)
    wall_tasks = [t for t in tasks if t.mode != "instructions"]
    instruction_tasks = [t for t in tasks if t.mode == "instructions"]
    counter = None
    if instruction_tasks:
        from .counters import get_counter

        counter = get_counter(args.counter)  # fails here, before anything runs, when it cannot count
        if args.in_process and counter.worker_prefix():
            counter.close()
            raise UsageError(
                f"--in-process cannot count instructions with {counter.name}: it needs its own worker process "
                "(under valgrind); drop --in-process, or use --counter perf where the hardware counter is readable"
            )
    env = environment.collect()
    console = Console(stderr=True)
    if args.jobs > 1 and any(t.mode == "wall" for t in tasks):
        console.print(
            f"[yellow]warning:[/yellow] --jobs {args.jobs} runs wall-time benchmarks concurrently; "
            "they compete for cores and caches, so their times are distorted"
        )
    results = []
    interrupted = False
    with Progress(
        TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
        console=console, transient=True,
    ) as progress:
        bar = progress.add_task("benchmarking", total=len(tasks))

        def done(result) -> None:
            results.append(result)
            progress.update(bar, advance=1, description=result.task.full_name)

        try:
            if args.in_process:
                from .runner import run_task

                if counter is not None:
                    from .counters import COUNTER_ENV

                    os.environ[COUNTER_ENV] = counter.name
                for task in tasks:
                    done(run_task(task, args.min_run_time))
            else:
                from .pool import WorkerPool

                # Wall-time tasks first, alone: valgrind'ed workers running
                # beside them would distort their times (counts are immune).
                if wall_tasks:
                    WorkerPool(jobs=args.jobs, timeout=args.timeout).run(wall_tasks, args.min_run_time, on_result=done)
                if instruction_tasks and counter is not None:
                    WorkerPool(
                        jobs=args.jobs, prefix=counter.worker_prefix(), env=counter.worker_env(),
                        timeout=args.timeout, diagnostics=counter.diagnostics,
                    ).run(instruction_tasks, args.min_run_time, on_result=done)
        except KeyboardInterrupt:
            interrupted = True
        finally:
            if counter is not None:
                counter.close()  # its temporary files, also on Ctrl-C
    order = {(t.full_name, t.mode): i for i, t in enumerate(tasks)}
    results.sort(key=lambda r: order.get((r.task.full_name, r.task.mode), len(order)))
    print_results(results)
    failed = [r for r in results if not r.ok]
    for r in failed:
        console.print(f"[red]FAILED[/red] {escape(r.task.full_name)}: {escape(r.error or '')}", highlight=False)
    if args.output:
        record_path = Path(args.output)
        if record_path.suffix == ".csv":
            from .metrics import write_metric_csv

            rows = write_metric_csv(record_path, results)
            console.print(f"{rows} metric rows written to {record_path}")
            record_path = record_path.with_suffix(".json")
        RunRecord(environment=env, results=results).save(record_path)
        console.print(f"run record written to {record_path}")
    if interrupted:
        console.print(f"harness: interrupted; kept {len(results)} of {len(tasks)} results")
        return 130
    return 1 if failed else 0


def cmd_check(args: argparse.Namespace) -> int:
    from . import check
    from .check_report import print_verdicts

    expected = check.read_expected(args.expected, missing_ok=args.update)
    actual = check.read_results(args.results)
    if not check.gated_metrics(expected, args.metric):
        raise UsageError(
            f"{args.expected} has no rows, so nothing is gated; name the metric to gate, e.g. "
            f"--metric compile_time_instruction_count"
        )
    verdicts = check.check(expected, actual, args.metric)
    # Logs (CI) get the whole table rather than an 80-column squeeze.
    console = Console(width=None if sys.stdout.isatty() else 160)
    print_verdicts(verdicts, console)
    refresh = check.refresh_command(args.results, args.expected, args.metric)
    counts = {v: sum(1 for x in verdicts if x.verdict == v) for v in (check.REGRESSION, check.MISSING, check.IMPROVED, check.NEW)}
    if args.update:
        update = check.updated(expected, actual, args.metric)
        if update.changed or update.added or not expected.path.exists():
            check.write_update(expected, update)
        console.print(
            f"updated {args.expected}: {len(update.changed)} row(s) changed, {len(update.added)} added, "
            f"the rest unchanged (rows move only beyond a third of their margin)",
            highlight=False, markup=False, soft_wrap=True,
        )
        if counts[check.MISSING]:
            console.print(
                f"{counts[check.MISSING]} expected row(s) have no result and were kept; "
                "delete them by hand if those cases are gone",
                highlight=False, markup=False, soft_wrap=True,
            )
            return 1
        return 0
    if counts[check.NEW]:
        console.print(
            f"[yellow]warning:[/yellow] {counts[check.NEW]} result(s) have no expected row; add them with:\n  {escape(refresh)}",
            highlight=False, soft_wrap=True,
        )
    if counts[check.REGRESSION] or counts[check.MISSING]:
        console.print(
            f"[red]FAILED[/red]: {counts[check.REGRESSION]} regression(s), {counts[check.MISSING]} missing result(s). "
            f"If the change is intended, refresh the expected values with:\n  {escape(refresh)}",
            highlight=False, soft_wrap=True,
        )
        return 1
    if counts[check.IMPROVED]:
        console.print(
            f"{counts[check.IMPROVED]} case(s) improved beyond their margin; record the new values with:\n  {escape(refresh)}",
            highlight=False, soft_wrap=True,
        )
    return 0


def cmd_cache(args: argparse.Namespace) -> int:
    from .cache import cache_info, cache_root, clear_cache

    if args.action == "clear":
        clear_cache()
        print(f"cleared {cache_root()}")
        return 0
    print(f"cache root: {cache_root()}")
    for kind, size in cache_info().items():
        print(f"  {kind}: {size / 1e6:.1f} MB")
    return 0


COMMANDS = {"list": cmd_list, "bench": cmd_bench, "check": cmd_check, "cache": cmd_cache}


def main(argv: Sequence[str] | None = None) -> int:
    parser = _parser()
    args = parser.parse_args(argv)
    if args.command is None:
        parser.print_help()
        return 2
    try:
        return COMMANDS[args.command](args)
    except HarnessError as exc:
        print(f"harness: error: {exc}", file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        print("harness: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
