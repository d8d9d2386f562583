"""``python -m harness history import|show|changes``: the history database of runs.

Parsing and printing only: the database is ``harness.history``,
the tables and charts ``present.history_table`` and ``present.trends``.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from rich.console import Console
from rich.markup import escape

from harness.cli.arguments import (
    add_markdown,
    add_pattern,
    check_percentage,
    describe_subcommands,
    print_markdown,
)
from harness.errors import UsageError
from harness.options import HISTORY_ENV

PLOT_SUFFIXES = (".html", ".png")
BY = ("time", "label", "commit")


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    h = subparsers.add_parser(
        "history",
        help="the history database of runs: import records, show each benchmark's values over runs, "
        "name the runs where benchmarks moved",
    )
    # Subcommands, not one ACTION positional: each takes only its own options, and a subcommand's own
    # positionals and options may come in any order (`import --history H run.json`).
    actions = h.add_subparsers(dest="action", metavar="ACTION", required=True)
    imp = actions.add_parser(
        "import", help="store run records (.json, .jsonl, .csv; a run already kept is skipped)",
    )
    imp.add_argument("records", nargs="*", metavar="RECORD", help="the run records to store")
    _add_database(imp)
    imp.add_argument("--label", help="the label of runs whose record has none")
    imp.set_defaults(handler=run_import)

    show = actions.add_parser("show", help="each benchmark's values over runs, a sparkline per row")
    _add_database(show)
    _add_series(show)
    show.add_argument(
        "--plot", metavar="OUT", help="draw every benchmark's trend to OUT.html (interactive, self-contained) "
        "or OUT.png",
    )
    show.set_defaults(handler=run_show)

    changes = actions.add_parser(
        "changes", help="the steps beyond the noise, the runs on each side and the layers and functions that moved",
    )
    _add_database(changes)
    _add_series(changes)
    changes.add_argument(
        "--fail-on-regression", type=float, metavar="PCT",
        help="exit 1 when the newest run is at a level more than PCT percent worse than the one before it "
        "(a step up in time, instructions or a cache figure such as estimated_cycles)",
    )
    add_markdown(changes)
    changes.set_defaults(handler=run_changes)
    describe_subcommands(actions)


def _add_database(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--history", metavar="PATH|URL",
        help=f"the database: a SQLite file, or a SQLAlchemy URL (postgresql+psycopg://...) "
        f"(default: ${HISTORY_ENV}, else $XDG_DATA_HOME/harness/history.sqlite)",
    )


def _add_series(parser: argparse.ArgumentParser) -> None:
    """Which benchmarks' values over which runs: ``show`` and ``changes`` read the same series."""
    add_pattern(parser)
    parser.add_argument(
        "--by", choices=BY, default="time",
        help="one point per run in order of start time (default), or per label (in natural order) or per "
        "commit of your repository (in order of its first run), each the median of its runs",
    )
    parser.add_argument("--last", type=int, metavar="N", help="only the newest N runs")
    parser.add_argument(
        "--metric", action="append", metavar="METRIC",
        help="which values of each benchmark: value (its own: time or count), a cache figure of a count made "
        "under bench's cache simulation (estimated_cycles, L1_hits, LL_hits, RAM_hits, Ir, Dr, Dw, D1mr, ...), "
        "or all (repeatable; default: value and estimated_cycles)",
    )


def _metrics(asked: list[str] | None) -> set[str] | None:
    """The stored metric names ``--metric`` asks for (None: every one); an unknown name is a UsageError."""
    from harness.history import metrics
    from harness.measure.counters.cache import FIGURES

    names = asked or list(metrics.DEFAULT)
    if metrics.ALL in names:
        return None
    known = (metrics.VALUE, *FIGURES)
    unknown = [n for n in names if n not in known]
    if unknown:
        raise UsageError(f"--metric {unknown[0]}: no such metric; choose {metrics.ALL}, "
                         + ", ".join(known))
    return {metrics.stored_name(n) for n in names}


def _keep(pattern: str | None, chosen: set[str] | None):
    from harness.define.selection import matches
    from harness.history.query import Benchmark
    from harness.model.task import Task

    if not pattern and chosen is None:
        return None

    def keep(b: Benchmark) -> bool:
        return ((chosen is None or b.metric in chosen)
                and (not pattern or matches(Task(b.suite, b.name, b.kind, {}, b.mode, b.side), pattern)))

    keep(Benchmark(0, "", "", "wall", "", "", "", False))  # a malformed -k fails now, with its message
    return keep


def run_import(args: argparse.Namespace) -> int:
    from harness.history import open_history
    from harness.present.table import output_console

    if not args.records:
        raise UsageError("history import: give the run records to store, e.g. history import runs/*.json")
    console = output_console()
    with open_history(args.history, create=True) as history:
        for path, added, kept in history.import_paths(args.records, label=args.label or ""):
            console.print(f"{escape(path)}: {added} run(s) added" + (f", {kept} already kept" if kept else ""),
                          highlight=False)
        console.print(f"history: {escape(history.location.shown)}", highlight=False)
    return 0


def run_show(args: argparse.Namespace) -> int:
    if args.plot and Path(args.plot).suffix.lower() not in PLOT_SUFFIXES:
        raise UsageError(f"--plot {args.plot}: give a file ending in .html (interactive) or .png")
    return _with_series(args, _show)


def run_changes(args: argparse.Namespace) -> int:
    check_percentage("--fail-on-regression", args.fail_on_regression)
    return _with_series(args, _changes)


def _with_series(args: argparse.Namespace, then) -> int:
    """Open the database, read the series ``-k``, ``--by`` and ``--last`` ask for, and hand them to ``then``."""
    from harness.history import open_history, query
    from harness.present.table import output_console

    if args.last is not None and args.last < 1:
        raise UsageError(f"--last must be >= 1, got {args.last}")
    keep = _keep(args.pattern, _metrics(args.metric))
    console = output_console()
    with open_history(args.history, create=False) as history:
        trends = query.regroup(query.load(history, keep, args.last), args.by)
        where = escape(history.location.shown)
        if not trends.runs or not len(trends.benchmarks):
            asked = f" with --metric {' '.join(args.metric)}" if args.metric else ""
            hint = ("; cache figures come from counts made with bench --mode instructions --cache-sim"
                    if asked and set(args.metric) - {"value", "all"} else "")
            console.print(f"{where}: no runs" + (" with a benchmark matching -k" if args.pattern else "") + asked
                          + (f" with a {args.by}" if args.by != "time" else "") + hint, highlight=False)
            return 0
        return then(history, trends, args, console)


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
    benchmarks = len({b.identity for b in trends.benchmarks})  # a cache figure is a series of its benchmark
    if args.markdown:
        from harness.present.history_table import why
        from harness.present.markdown import changes_markdown

        print_markdown(changes_markdown(changes, [why(history, c) for c in changes], runs=len(trends.runs),
                                        benchmarks=benchmarks))
    elif changes:
        console.print(changes_table(history, changes, f"steps over {len(trends.runs)} {unit} in "
                                                      f"{history.location.shown}"))
    else:
        console.print(f"no step beyond the noise in {benchmarks} benchmark(s) over "
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
