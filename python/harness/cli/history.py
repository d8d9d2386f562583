"""``python -m harness history import|show|changes``: the history database of runs.

Parsing and printing only: the database is ``harness.history``,
the tables and charts ``present.history_table`` and ``present.trends``.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from rich.console import Console
from rich.markup import escape

from harness.cli.arguments import add_pattern
from harness.errors import UsageError
from harness.options import HISTORY_ENV

ACTIONS = ("import", "show", "changes")
PLOT_SUFFIXES = (".html", ".png")


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    h = subparsers.add_parser(
        "history",
        help="the history database of runs: import records, show each benchmark's values over runs, "
        "name the runs where benchmarks moved",
    )
    h.add_argument(
        "action", choices=ACTIONS, metavar="ACTION",
        help="import: store run records (.json, .jsonl, .csv; a run already kept is skipped); show: each "
        "benchmark's values over runs, a sparkline per row; changes: the steps beyond the noise, the runs on "
        "each side and the layers and functions that moved",
    )
    h.add_argument("records", nargs="*", metavar="RECORD", help="with import: the run records to store")
    h.add_argument(
        "--history", metavar="PATH|URL",
        help=f"the database: a SQLite file, or a SQLAlchemy URL (postgresql+psycopg://...) "
        f"(default: ${HISTORY_ENV}, else $XDG_DATA_HOME/harness/history.sqlite)",
    )
    add_pattern(h)
    h.add_argument(
        "--by", choices=("time", "label", "commit"), default="time",
        help="one point per run in order of start time (default), or per label (in natural order) or per "
        "commit of your repository (in order of its first run), each the median of its runs",
    )
    h.add_argument("--last", type=int, metavar="N", help="only the newest N runs")
    h.add_argument("--label", help="with import: the label of runs whose record has none")
    h.add_argument(
        "--plot", metavar="OUT", help="with show: draw every benchmark's trend to OUT.html (interactive, "
        "self-contained) or OUT.png",
    )
    h.add_argument(
        "--fail-on-regression", type=float, metavar="PCT",
        help="with changes: exit 1 when the newest run is at a level more than PCT percent worse than the one "
        "before it (a step up in time or instructions)",
    )
    h.set_defaults(handler=run)


def _keep(pattern: str | None):
    from harness.define.selection import matches
    from harness.history.query import Benchmark
    from harness.model.task import Task

    if not pattern:
        return None

    def keep(b: Benchmark) -> bool:
        return matches(Task(b.suite, b.name, b.kind, {}, b.mode, b.side), pattern)

    keep(Benchmark(0, "", "", "wall", "", "", "", False))  # a malformed -k fails now, with its message
    return keep


def _check(args: argparse.Namespace) -> None:
    wrong = [(flag, value) for flag, value, action in (
        ("RECORD", args.records, "import"), ("--label", args.label, "import"), ("--plot", args.plot, "show"),
        ("--fail-on-regression", args.fail_on_regression, "changes"),
    ) if value not in (None, []) and args.action != action]
    if wrong:
        flag, _ = wrong[0]
        owner = {"RECORD": "import", "--label": "import", "--plot": "show", "--fail-on-regression": "changes"}[flag]
        raise UsageError(f"history {args.action}: {flag} belongs to `history {owner}`")
    if args.action == "import" and not args.records:
        raise UsageError("history import: give the run records to store, e.g. history import runs/*.json")
    if args.last is not None and args.last < 1:
        raise UsageError(f"--last must be >= 1, got {args.last}")
    if args.fail_on_regression is not None and args.fail_on_regression < 0:
        raise UsageError(f"--fail-on-regression must be >= 0 (a percentage), got {args.fail_on_regression}")
    if args.plot and Path(args.plot).suffix.lower() not in PLOT_SUFFIXES:
        raise UsageError(f"--plot {args.plot}: give a file ending in .html (interactive) or .png")


def run(args: argparse.Namespace) -> int:
    from harness.history import open_history
    from harness.present.table import output_console

    _check(args)
    keep = _keep(args.pattern)
    console = output_console()
    with open_history(args.history, create=args.action == "import") as history:
        if args.action == "import":
            for path, added, kept in history.import_paths(args.records, label=args.label or ""):
                console.print(f"{escape(path)}: {added} run(s) added" + (f", {kept} already kept" if kept else ""),
                              highlight=False)
            console.print(f"history: {escape(history.location.shown)}", highlight=False)
            return 0
        from harness.history import query

        trends = query.regroup(query.load(history, keep, args.last), args.by)
        where = escape(history.location.shown)
        if not trends.runs or not len(trends.benchmarks):
            console.print(f"{where}: no runs" + (" with a benchmark matching -k" if args.pattern else "")
                          + (f" with a {args.by}" if args.by != "time" else ""), highlight=False)
            return 0
        if args.action == "show":
            return _show(history, trends, args, console)
        return _changes(history, trends, args, console)


def _show(history, trends, args: argparse.Namespace, console: Console) -> int:
    from harness.present.history_table import show_table

    title = f"{len(trends.runs)} {'runs' if args.by == 'time' else args.by + 's'} in {history.location.shown}"
    console.print(show_table(trends, title))
    if args.plot:
        _plot(trends, args.plot, title)
        console.print(f"trends drawn to {escape(args.plot)}", highlight=False)
    return 0


def _plot(trends, out: str, title: str) -> None:
    from harness.files.atomic import atomic_write_text
    from harness.history.changes import find_changes
    from harness.present import trends as charts
    from harness.present.html_report import page

    changes = find_changes(trends)
    try:
        if out.lower().endswith(".png"):
            charts.write_png(trends, changes, out)
        else:
            atomic_write_text(out, page(f"harness history: {title}", [charts.trends_section(trends, changes) or ""]))
    except OSError as exc:
        from harness.files.oserrors import path_error

        raise path_error(exc, out, "write the plot", "give --plot a path in a directory you can write") from None


def _changes(history, trends, args: argparse.Namespace, console: Console) -> int:
    from harness.history.changes import find_changes
    from harness.present.history_table import changes_table

    changes = find_changes(trends)
    unit = "runs" if args.by == "time" else args.by + "s"
    if changes:
        console.print(changes_table(history, changes, f"steps over {len(trends.runs)} {unit} in "
                                                      f"{history.location.shown}"))
    else:
        console.print(f"no step beyond the noise in {len(trends.benchmarks)} benchmark(s) over "
                      f"{len(trends.runs)} {unit}", highlight=False)
    if args.fail_on_regression is None:
        return 0
    import numpy as np

    last = {c.benchmark.id: c for c in changes}  # each benchmark's newest step (changes run oldest first)
    newest = {b.id for i, b in enumerate(trends.benchmarks) if not np.isnan(trends.values[i, -1])}
    bad = [c for c in last.values() if c.worse and abs(c.step.change) * 100 > args.fail_on_regression
           and c.benchmark.id in newest]
    if bad:
        err = Console(stderr=True)
        err.print(f"[red]{len(bad)} benchmark(s) regressed beyond {args.fail_on_regression:g}% at the newest "
                  "run's level:[/red]")
        for c in bad:
            err.print(f"  {escape(c.benchmark.full_name)}: {c.step.change * 100:+.1f}% since "
                      f"{escape(c.after.name)}", highlight=False)
        return 1
    return 0
