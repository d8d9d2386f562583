"""Command line: ``python -m harness {list,bench,merge,compare,report,check,history,cache,workers}`` (history: ``cli_history``; workers: ``cli_workers``)."""

from __future__ import annotations

import argparse
import signal
import sys
import threading
from collections.abc import Sequence
from typing import Any

from rich.console import Console
from rich.markup import escape

from harness._version import __version__
from harness.cli_history import add_parser as add_history_parser
from harness.cli_history import cmd_history
from harness.cli_workers import add_parser as add_workers_parser
from harness.cli_workers import cmd_workers
from harness.errors import HarnessError, Terminated, UsageError
from harness.options import (
    COUNTER_CHOICES,
    DEFAULT_ALPHA,
    DEFAULT_MIN_EFFECT,
    DEFAULT_MIN_RUN_TIME,
    DEFAULT_NOISE_MARGIN,
    DEFAULT_TIMEOUT,
    EXECUTOR_CHOICES,
    KEEP_WORKER_ENV,
    MODE_CHOICES,
)


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m harness",
        description="Microbenchmarks for PyTorch: dispatch overhead, compile time, kernel efficiency.",
    )
    p.add_argument("--version", action="version", version=f"harness {__version__}")
    sub = p.add_subparsers(dest="command", metavar="COMMAND")

    lst = sub.add_parser("list", help="list suites and their benchmarks")
    lst.add_argument(
        "suites", nargs="*", metavar="SUITE",
        help="suite names (default: every suite not marked Suite(default=False))",
    )
    lst.add_argument("-k", dest="pattern", help="only benchmarks whose name matches (substring, glob, and/or/not)")
    lst.add_argument("--path", help="directory holding the suites (default: ./benchmarks)")

    bench = sub.add_parser("bench", help="run suites and print their measurements")
    bench.add_argument(
        "suites", nargs="*", metavar="SUITE",
        help="suite names (default: every suite not marked Suite(default=False))",
    )
    bench.add_argument("-k", dest="pattern", help="only benchmarks whose name matches (substring, glob, and/or/not)")
    bench.add_argument("--path", help="directory holding the suites (default: ./benchmarks)")
    bench.add_argument("--only", action="append", metavar="NAME", help="only the benchmark named NAME (repeatable)")
    bench.add_argument(
        "--all", action="store_true", dest="everything",
        help="also run the extended benchmarks a suite leaves out by default (compile_time: the cases too slow "
        "for the gate's budget; `list` marks them)",
    )
    bench.add_argument(
        "--output", "-o", metavar="FILE",
        help="write the run record to FILE: .json (one run, replaced; an interrupted run goes beside it), "
        ".jsonl or .csv (runs appended); "
        "gpt_fast alone with .csv: its own CSV + .jsonl + .run.json",
    )
    bench.add_argument(
        "--min-run-time", type=float, default=DEFAULT_MIN_RUN_TIME, metavar="SECONDS",
        help=f"seconds per benchmark (default {DEFAULT_MIN_RUN_TIME:g})",
    )
    bench.add_argument(
        "--jobs", "-j", type=int, default=1, metavar="N",
        help="worker processes (default 1; more than one distorts wall-time measurements)",
    )
    bench.add_argument(
        "--timeout", type=float, default=None, metavar="SECONDS",
        help=f"seconds before a hung task is killed, for every task (default: a task's own limit where its "
        f"suite sets one, else {DEFAULT_TIMEOUT:g})",
    )
    bench.add_argument(
        "--in-process", action="store_true",
        help="run tasks in this process (no crash isolation or timeouts; for debugging)",
    )
    bench.add_argument(
        "--mode", choices=MODE_CHOICES, default=None,
        help="wall: time each benchmark; instructions: count its instructions per run; both: each both ways "
        "(default: the mode each suite defines, usually wall)",
    )
    bench.add_argument(
        "--counter", choices=COUNTER_CHOICES, default="auto",
        help="instruction counter: perf (hardware counter: fast, close), callgrind (valgrind: exact, slow), "
        "auto (perf where readable, else callgrind; default)",
    )
    bench.add_argument(
        "--keep-worker", type=float, default=None, metavar="SECONDS",
        help="keep the instruction-counting workers running after this run, for the next run to reuse, "
        f"until idle for SECONDS (default: ${KEEP_WORKER_ENV}, else 900, or not kept where $CI is true; "
        "0: not kept); compile-time cases and other tasks that need a fresh process never use them",
    )
    bench.add_argument(
        "--python", action="append", default=[], metavar="[LABEL=]PATH", dest="pythons",
        help="run every task under this interpreter (its own torch; harness from this checkout on its "
        "PYTHONPATH); twice (A=... B=...) for an A/B run: the sides alternate task by task and one table "
        "compares them",
    )

    bench.add_argument(
        "--layers", action="store_true",
        help="with --mode instructions: split each count into PyTorch's layers (interpreter, bindings, GIL, "
        "dispatcher, autograd, ...); counts with callgrind",
    )
    bench.add_argument(
        "--layers-rules", metavar="FILE",
        help="TOML rules that assign functions to layers, instead of the shipped ones (implies --layers)",
    )
    bench.add_argument(
        "--explain-layers", action="store_true",
        help="also list the largest functions of each layer and the rule that claimed each (implies --layers)",
    )

    bench.add_argument(
        "--shard", metavar="K/N",
        help="run only the K-th of N balanced, deterministic parts of the selection (one per CI job); "
        "join the parts' records with `merge`",
    )
    bench.add_argument(
        "--durations", metavar="FILE",
        help="with --shard: balance the parts by the durations recorded in this earlier run record "
        "(default: each kind's estimate)",
    )
    bench.add_argument(
        "--executor", choices=EXECUTOR_CHOICES, default="local",
        help="where tasks run: local (this machine; default) or ray (Ray tasks, each in harness's own "
        "worker: a local Ray of --jobs CPUs, or the cluster at --address); needs pip install -e '.[ray]'",
    )
    bench.add_argument(
        "--address", metavar="ADDR",
        help="with --executor ray: the Ray cluster to run on (e.g. ray://head:10001 or auto); "
        "its nodes need the resource {\"harness_wall\": 1} for wall-time tasks",
    )

    bench.add_argument(
        "--history", nargs="?", const="", metavar="PATH|URL",
        help="also store the run in the history database (`history show`, `history changes`): PATH, a "
        "SQLAlchemy URL, or without a value $HARNESS_HISTORY, else $XDG_DATA_HOME/harness/history.sqlite",
    )
    bench.add_argument("--label", default="", help="a free text kept with the run (its record and its history)")

    merge = sub.add_parser("merge", help="join the records of bench --shard parts into one run record")
    merge.add_argument("output", metavar="OUTPUT", help="run record to write (.json, .jsonl or .csv)")
    merge.add_argument("inputs", nargs="+", metavar="INPUT", help="the parts' run records")
    merge.add_argument(
        "--allow-mixed", action="store_true",
        help="merge parts that ran on different harness, torch or Python versions (their rows are marked)",
    )

    compare = sub.add_parser(
        "compare", help="compare two run records: change per benchmark and whether it is significant"
    )
    compare.add_argument("base", metavar="BASE", help="run record (.json, .jsonl or .csv) to compare against")
    compare.add_argument("new", metavar="NEW", nargs="?", default=None,
                         help="run record with the new measurements (left out: BASE is an A/B run "
                         "(bench --python A=... --python B=...), and its two sides are compared)")
    compare.add_argument(
        "--alpha", type=float, default=DEFAULT_ALPHA,
        help=f"significance level of the Mann-Whitney U test on wall-time samples (default {DEFAULT_ALPHA:g})",
    )
    compare.add_argument(
        "--min-effect", type=float, default=DEFAULT_MIN_EFFECT * 100, metavar="PCT",
        help=f"smallest wall-time change, in percent, reported as faster/slower (default {DEFAULT_MIN_EFFECT * 100:g})",
    )
    compare.add_argument(
        "--noise-margin", type=float, default=DEFAULT_NOISE_MARGIN * 100, metavar="PCT",
        help=f"instruction-count change, in percent, treated as jitter (default {DEFAULT_NOISE_MARGIN * 100:g})",
    )
    compare.add_argument(
        "--fail-on-regression", type=float, metavar="PCT",
        help="exit 1 when a significant regression exceeds PCT percent (for CI)",
    )
    compare.add_argument(
        "--symbols", action="store_true",
        help="show per-function instruction deltas for benchmarks with callgrind symbol counts",
    )
    compare.add_argument("--top", type=int, default=10, metavar="N", help="functions shown per benchmark with --symbols")
    compare.add_argument(
        "--layers", action="store_true",
        help="show each benchmark's change per PyTorch layer (both runs made with bench --layers)",
    )

    report = sub.add_parser("report", help="write a self-contained HTML report of one or more runs")
    report.add_argument(
        "runs", nargs="+", metavar="RUN", help="run records (.json, .jsonl, .csv); shown in order of start time"
    )
    report.add_argument("--output", "-o", default="report.html", metavar="FILE", help="HTML file to write (default report.html)")

    check = sub.add_parser(
        "check", help="gate a run's metrics against expected values (exit 1 on a regression or a missing case); "
        "or show them next to published reference values (never gates)"
    )
    check.add_argument("results", metavar="RESULTS", help="a metric CSV (bench --output X.csv) or a run record (.json)")
    check.add_argument("--expected", metavar="FILE", help="CSV of name,metric,expected,noise_margin: the gate")
    check.add_argument(
        "--reference", metavar="FILE",
        help="CSV of reference values with their counter, torch and source columns (e.g. "
        "benchmarks/compile_time/reference_pytorch.csv): prints ours, theirs and the ratio, marks what differs "
        "besides the work; never changes the exit status",
    )
    check.add_argument(
        "--update", action="store_true",
        help="rewrite FILE: rows that moved by more than a third of their margin take the new value, new rows are added",
    )
    check.add_argument(
        "--metric", action="append", metavar="METRIC",
        help="judge this metric (repeatable; default: the metrics FILE has rows for)",
    )

    add_history_parser(sub)

    cache = sub.add_parser("cache", help="inspect or clear the per-user cache")
    cache.add_argument(
        "action", choices=["info", "clear"],
        help="info: the cache's folder and the size of each kind of artefact in it; clear: empty it (rebuilt as needed)",
    )
    add_workers_parser(sub)
    # `python -m harness X --help` opens with the line the command list shows for X.
    for action in sub._choices_actions:
        sub.choices[action.dest].description = action.help
    return p


def _suites_and_tasks(args: argparse.Namespace) -> tuple[list, list]:
    from harness.define.discovery import default_root, select_suites
    from harness.define.selection import select

    suites = select_suites(default_root(args.path), list(args.suites))
    tasks = select(
        [t for s in suites for t in s.tasks()], args.pattern, getattr(args, "only", None),
        everything=getattr(args, "everything", True),
    )
    return suites, tasks


def cmd_list(args: argparse.Namespace) -> int:
    from harness.define.selection import is_extended

    console = Console()
    current = None
    for t in _suites_and_tasks(args)[1]:
        if t.suite != current:
            console.print(f"[bold]{t.suite}[/bold]")
            current = t.suite
        console.print(f"  {t.name}" + ("  (--all)" if is_extended(t) else ""), highlight=False, markup=False)
    return 0


def cmd_bench(args: argparse.Namespace) -> int:
    from harness.bench import RunInterrupted, run_tasks
    from harness.options import RunOptions, parse_shard
    from harness.present.layer_table import print_layers
    from harness.present.progress import RunProgress
    from harness.present.table import output_console, print_results

    options = RunOptions(
        min_run_time=args.min_run_time, jobs=args.jobs, timeout=args.timeout, mode=args.mode,
        counter=args.counter, keep_worker=args.keep_worker, in_process=args.in_process, output=args.output,
        pythons=tuple(args.pythons),
        layers=bool(args.layers or args.layers_rules or args.explain_layers), layers_rules=args.layers_rules,
        shard=parse_shard(args.shard) if args.shard else None, durations=args.durations,
        executor=args.executor, address=args.address, history=args.history, label=args.label,
    )
    suites, tasks = _suites_and_tasks(args)
    console = Console(stderr=True)
    interrupted: RunInterrupted | None = None
    with RunProgress(console) as progress:
        try:
            record = run_tasks(tasks, options, progress.on_event)
        except RunInterrupted as exc:
            interrupted, record = exc, exc.record
    if len(options.sides) == 2:
        _print_sides(record)
    else:
        print_results(record.results, tables={s.name: s.table for s in suites if s.table})
    if options.layers:
        print_layers(record.results, output_console(), explain=args.explain_layers)
    failed = [r for r in record.results if not r.ok]
    for r in failed:
        console.print(f"[red]FAILED[/red] {escape(r.task.full_name)}: {escape(r.error or '')}", highlight=False)
    progress.print_written()
    if interrupted is not None:
        what = "terminated" if interrupted.terminated else "interrupted"
        if record.results:
            console.print(f"harness: {what}; kept {len(record.results)} of {interrupted.total} results, "
                          "stored as a run marked interrupted")
        else:
            console.print(f"harness: {what} before any result finished; nothing written")
        return interrupted.exit_code
    return 1 if failed else 0


def _print_sides(record: Any) -> None:
    """An A/B run: one table, side A against side B, benchmark by benchmark."""
    from harness.model.record import split_sides
    from harness.present.run_comparison import compare_runs, print_comparison
    from harness.present.table import output_console

    sides = split_sides(record)
    (a, base), (b, new) = list(sides.items())[:2]
    print_comparison(compare_runs(base, new), output_console(), sides=(a, b))


def cmd_check(args: argparse.Namespace) -> int:
    from harness.present import check
    from harness.present.check_table import print_verdicts

    if not args.expected and not args.reference:
        raise UsageError(
            "check needs --expected FILE (gate against expected values) or --reference FILE "
            "(show published values side by side), or both"
        )
    if args.update and not args.expected:
        raise UsageError("--update rewrites the --expected file: name it with --expected FILE")
    actual = check.read_results(args.results)
    from harness.present.table import output_console

    console = output_console()
    if args.reference:
        from harness.present import reference

        rows = reference.compare(reference.read_reference(args.reference), actual, reference.provenance_of(args.results))
        console.print(reference.reference_table(rows, f"{args.results} next to {args.reference} (not a gate)"))
        if not args.expected:
            return 0
    expected = check.read_expected(args.expected, missing_ok=args.update)
    if not check.gated_metrics(expected, args.metric):
        raise UsageError(
            f"{args.expected} has no rows, so nothing is gated; name the metric to gate, e.g. "
            f"--metric compile_time_instruction_count"
        )
    verdicts = check.check(expected, actual, args.metric)
    print_verdicts(verdicts, console)
    refresh = check.refresh_command(args.results, args.expected, args.metric)
    counts = {v: sum(1 for x in verdicts if x.verdict == v) for v in (check.REGRESSION, check.MISSING, check.IMPROVED, check.NEW)}
    if args.update:
        update = check.update_file(args.expected, actual, args.metric)  # re-read under the writers' lock
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


def cmd_merge(args: argparse.Namespace) -> int:
    from harness.present.table import print_results
    from harness.records.merge import MIXED, merge
    from harness.records.store import check_writable, load, save

    check_writable(args.output)
    record = merge([(path, load(path)) for path in args.inputs], allow_mixed=args.allow_mixed)
    print_results(record.results, generic=bool(record.environment.get(MIXED)))
    appended = save(record, args.output)
    print(f"merged {len(args.inputs)} record(s), {len(record.results)} results; "
          f"run record {'appended to' if appended else 'written to'} {args.output}")
    return 0


def cmd_cache(args: argparse.Namespace) -> int:
    from harness.files.cache import cache_info, cache_root, clear_cache

    if args.action == "clear":
        clear_cache()
        print(f"cleared {cache_root()}")
        return 0
    print(f"cache root: {cache_root()}")
    for kind, size in cache_info().items():
        print(f"  {kind}: {size / 1e6:.1f} MB")
    return 0


def cmd_compare(args: argparse.Namespace) -> int:
    from harness.present.run_comparison import Thresholds, compare_runs, environment_notes, print_comparison
    from harness.records.store import load_runs

    if not 0 < args.alpha < 1:
        raise UsageError(f"--alpha must be between 0 and 1, got {args.alpha}")
    for flag, value in (("--min-effect", args.min_effect), ("--noise-margin", args.noise_margin)):
        if value < 0:
            raise UsageError(f"{flag} must be >= 0 (a percentage), got {value}")
    if args.fail_on_regression is not None and args.fail_on_regression < 0:
        raise UsageError(f"--fail-on-regression must be >= 0 (a percentage), got {args.fail_on_regression}")
    if args.top < 1:
        raise UsageError(f"--top must be >= 1, got {args.top}")
    from harness.present.table import output_console

    console = output_console()
    records = []
    for path in filter(None, (args.base, args.new)):
        runs = load_runs(path)
        if len(runs) > 1:
            console.print(f"{escape(path)} holds {len(runs)} runs; comparing its last", highlight=False)
        if not runs[-1].results:
            raise UsageError(
                f"{path}: its {'last ' if len(runs) > 1 else ''}run has no results (stopped before any "
                "finished?), so there is nothing to compare; give a run with results"
            )
        if runs[-1].interrupted:
            console.print(f"{escape(path)}: {runs[-1].describe_interruption()}; benchmarks it did not reach "
                          "show as removed or added", highlight=False)
        records.append(runs[-1])
    sides = None
    if args.new is None:
        from harness.model.record import split_sides

        split = split_sides(records[0])
        if len(split) < 2:
            raise UsageError(f"{args.base} is not an A/B run (it has no two --python sides): give a second run "
                             "record to compare it with")
        (a, base), (b, new) = list(split.items())[:2]
        records, sides = [base, new], (a, b)
    thresholds = Thresholds(args.alpha, args.min_effect / 100, args.noise_margin / 100)
    comparison = compare_runs(records[0], records[1], thresholds)
    notes = environment_notes(records[0], records[1])
    print_comparison(comparison, console, symbols=args.symbols, top=args.top, notes=notes, sides=sides,
                     layers=args.layers)
    if args.fail_on_regression is not None:
        bad = comparison.regressions(beyond=args.fail_on_regression / 100)
        broken = comparison.newly_failed()
        err = Console(stderr=True)
        if bad:
            err.print(f"[red]{len(bad)} significant regression(s) beyond {args.fail_on_regression:g}%:[/red]")
            for row in bad:
                err.print(f"  {escape(row.suite)}/{escape(row.name)}: {row.change * 100:+.1f}%", highlight=False)
        if broken:
            err.print(f"[red]{len(broken)} benchmark(s) that ran in the base run fail in the new one:[/red]")
            for row in broken:
                first = (row.new.error or "").strip().splitlines()[:1]
                err.print(f"  {escape(row.suite)}/{escape(row.name)}: {escape(first[0] if first else 'failed')}",
                          highlight=False)
        if bad or broken:
            return 1
    return 0


def cmd_report(args: argparse.Namespace) -> int:
    from harness.present.html_report import write_report

    count = write_report(args.runs, args.output)
    print(f"report of {count} run(s) written to {args.output}")
    return 0


COMMANDS = {
    "list": cmd_list, "bench": cmd_bench, "compare": cmd_compare, "report": cmd_report, "check": cmd_check,
    "cache": cmd_cache, "workers": cmd_workers, "merge": cmd_merge, "history": cmd_history,
}


def _interrupted_exit_code(exc: KeyboardInterrupt) -> int:
    return Terminated.exit_code if isinstance(exc, Terminated) else 130


def _on_sigterm(signum: int, frame: object) -> None:
    raise Terminated()


def main(argv: Sequence[str] | None = None) -> int:
    parser = _parser()
    args = parser.parse_args(argv)
    if args.command is None:
        parser.print_help()
        return 2
    # A SIGTERM (a CI job cancelled, `kill`) cleans up as Ctrl-C does: without
    # this, Python dies at once and leaves its (valgrind'ed) workers running.
    previous = signal.signal(signal.SIGTERM, _on_sigterm) if threading.current_thread() is threading.main_thread() else None
    try:
        return COMMANDS[args.command](args)
    except HarnessError as exc:
        print(f"harness: error: {exc}", file=sys.stderr)
        return exc.exit_code
    except OSError as exc:
        if exc.filename is None:
            raise
        # A file-system failure no writer turned into a message of its own: still one line, naming the path.
        from harness.files.oserrors import path_error

        print(f"harness: error: {path_error(exc, str(exc.filename), 'use it')}", file=sys.stderr)
        return 2
    except KeyboardInterrupt as exc:
        print(f"harness: {'terminated' if isinstance(exc, Terminated) else 'interrupted'}", file=sys.stderr)
        return _interrupted_exit_code(exc)
    finally:
        if previous is not None:
            signal.signal(signal.SIGTERM, previous)


if __name__ == "__main__":
    sys.exit(main())
