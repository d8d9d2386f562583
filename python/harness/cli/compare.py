"""``python -m harness compare``: two run records (or an A/B run's sides), change per benchmark and whether
it is significant; with ``--fail-on-regression``, a CI gate."""

from __future__ import annotations

import argparse

from rich.console import Console
from rich.markup import escape

from harness.cli.arguments import add_markdown, check_percentage, print_markdown
from harness.errors import UsageError
from harness.options import DEFAULT_ALPHA, DEFAULT_MIN_EFFECT, DEFAULT_NOISE_MARGIN


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    compare = subparsers.add_parser(
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
    compare.add_argument(
        "--top", type=int, default=10, metavar="N", help="functions shown per benchmark with --symbols"
    )
    compare.add_argument(
        "--layers", action="store_true",
        help="show each benchmark's change per PyTorch layer (both runs made with bench --layers)",
    )
    compare.add_argument(
        "--phases", action="store_true",
        help="compile-time cases: name the torch compile phase that moved and show each phase's change "
        "(both runs made with bench --phases)",
    )
    add_markdown(compare)
    compare.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from harness.present.run_comparison import Thresholds, compare_runs, environment_notes, print_comparison
    from harness.records.store import load_runs

    if not 0 < args.alpha < 1:
        raise UsageError(f"--alpha must be between 0 and 1, got {args.alpha}")
    for flag, value in (("--min-effect", args.min_effect), ("--noise-margin", args.noise_margin),
                        ("--fail-on-regression", args.fail_on_regression)):
        check_percentage(flag, value)
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
    if args.markdown:
        from harness.present.markdown import comparison_markdown

        base_label, new_label = sides or ("base", "new")
        print_markdown(comparison_markdown(comparison, base_label=base_label, new_label=new_label,
                                           noise_margin=args.noise_margin / 100))
    else:
        print_comparison(comparison, console, symbols=args.symbols, top=args.top, notes=notes, sides=sides,
                         layers=args.layers, phases=args.phases)
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
