"""Command line: ``python -m harness {list,bench,cache}``."""

from __future__ import annotations

import argparse
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
    bench.add_argument("--only", action="append", metavar="NAME", help="only the benchmark named NAME (repeatable)")
    bench.add_argument(
        "--output", "-o", help="write the run record to FILE (.json); gpt_fast alone: FILE.csv (+ .jsonl, .run.json)"
    )
    bench.add_argument("--min-run-time", type=float, default=0.2, help="seconds per benchmark (default 0.2)")

    cache = sub.add_parser("cache", help="inspect or clear the per-user cache")
    cache.add_argument("action", choices=["info", "clear"])
    return p


def _tasks(args: argparse.Namespace):
    from .discovery import default_root, select_suites
    from .task import matches

    suites = select_suites(default_root(args.path), list(args.suites))
    tasks = [t for s in suites for t in s.tasks() if matches(t, args.pattern)]
    if getattr(args, "only", None):
        tasks = _only(tasks, args.only)
    if not tasks:
        what = f"-k {args.pattern!r}" if args.pattern else "the selected suites"
        raise UsageError(f"no benchmarks match {what}; see `python -m harness list`")
    return tasks


def _only(tasks: list, names: list[str]) -> list:
    """The tasks named exactly NAME (or SUITE/NAME); an unknown name is an error listing the choices."""
    known = {t.name for t in tasks} | {t.full_name for t in tasks}
    unknown = [n for n in names if n not in known]
    if unknown:
        available = ", ".join(dict.fromkeys(t.name for t in tasks)) or "none"
        raise UsageError(f"--only {', '.join(map(repr, unknown))}: no such benchmark; available: {available}")
    return [t for t in tasks if t.name in names or t.full_name in names]


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
    from .kind_outputs import writer_for
    from .records import RunRecord
    from .runner import run_task
    from .table import print_results

    if not args.min_run_time > 0:
        raise UsageError(f"--min-run-time must be > 0, got {args.min_run_time}")
    tasks = _tasks(args)
    kind_writer = writer_for(args.output, tasks) if args.output else None
    if args.output and kind_writer is None and Path(args.output).suffix not in (".json",):
        raise UsageError(f"--output {args.output}: use a .json file name")
    env = environment.collect()
    console = Console(stderr=True)
    results = []
    with Progress(
        TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
        console=console, transient=True,
    ) as progress:
        bar = progress.add_task("benchmarking", total=len(tasks))
        for task in tasks:
            progress.update(bar, description=task.full_name)
            results.append(run_task(task, args.min_run_time))
            progress.advance(bar)
    print_results(results)
    failed = [r for r in results if not r.ok]
    for r in failed:
        console.print(f"[red]FAILED[/red] {escape(r.task.full_name)}: {escape(r.error or '')}", highlight=False)
    if args.output and kind_writer is not None:
        for path in kind_writer(args.output, RunRecord(environment=env, results=results)):
            console.print(f"written {path}", highlight=False, markup=False)
    elif args.output:
        RunRecord(environment=env, results=results).save(args.output)
        console.print(f"run record written to {args.output}")
    return 1 if failed else 0


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


COMMANDS = {"list": cmd_list, "bench": cmd_bench, "cache": cmd_cache}


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
