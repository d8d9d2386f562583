"""``python -m harness bench``: run suites and print their measurements (or an A/B run's comparison)."""

from __future__ import annotations

import argparse
from typing import Any

from rich.console import Console
from rich.markup import escape

from harness.cli.arguments import add_selection, suites_and_tasks
from harness.options import (
    COUNTER_CHOICES,
    DEFAULT_MIN_RUN_TIME,
    DEFAULT_TIMEOUT,
    EXECUTOR_CHOICES,
    KEEP_WORKER_ENV,
    MODE_CHOICES,
)


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    bench = subparsers.add_parser("bench", help="run suites and print their measurements")
    add_selection(bench)
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
        "--cache-sim", action="store_true",
        help="with --mode instructions: count under callgrind's cache simulation at a fixed geometry (I1, D1 "
        "32 KiB 8-way, LL 8 MiB 16-way, 64 B lines): data reads and writes, misses, L1/LL/RAM hits and "
        "estimated cycles per benchmark; counts with callgrind",
    )
    bench.add_argument(
        "--flame", action="store_true",
        help="with --mode instructions: keep each count's call tree in the record, for the flame graphs of "
        "`report` (a differential one against an earlier run); counts with callgrind",
    )
    bench.add_argument(
        "--keep-profiles", metavar="DIR",
        help="with --mode instructions: write each count's callgrind.out (for KCachegrind/QCachegrind) and "
        "its call tree as speedscope JSON (speedscope.app) into DIR; counts with callgrind",
    )

    bench.add_argument(
        "--phases", action="store_true",
        help="compile-time cases: also split each measurement by torch's compile phases (dynamo_timed events: "
        "entire_frame_compile, build_guards, compile_fx_inner, GraphLowering.run, ...) and print each case's "
        "tree; the phases add up to the total exactly; instructions count with callgrind",
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
    bench.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
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
        cache_sim=args.cache_sim,
        phases=args.phases,
        flame=args.flame, keep_profiles=args.keep_profiles,
        shard=parse_shard(args.shard) if args.shard else None, durations=args.durations,
        executor=args.executor, address=args.address, history=args.history, label=args.label,
    )
    suites, tasks = suites_and_tasks(args)
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
    if options.cache_sim:
        from harness.present.cache_table import cache_table

        if (table := cache_table(record.results)) is not None:
            output_console().print(table)
    if options.phases:
        from harness.present.phase_table import phase_tables

        for table in phase_tables(record.results):
            output_console().print(table)
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
