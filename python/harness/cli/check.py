"""``python -m harness check``: gate a run's metrics against expected values (exit 1 on a regression or a
missing case), rewrite them with ``--update``, or show them next to published reference values."""

from __future__ import annotations

import argparse

from rich.markup import escape

from harness.cli.arguments import add_markdown, print_markdown
from harness.errors import UsageError


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    check = subparsers.add_parser(
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
        "--update",
        action="store_true",
        help="rewrite FILE: rows that moved by more than a third of their margin take the new value, "
        "new rows are added",
    )
    check.add_argument(
        "--propose", metavar="OUT",
        help="write OUT: the expected file as it should be after this run (only rows beyond their margin "
        "changed, improvements included, margins kept; new rows added), and OUT with .md: a markdown summary "
        "of what moved and in which torch compile phases (results of bench --phases), also printed",
    )
    check.add_argument(
        "--metric", action="append", metavar="METRIC",
        help="judge this metric (repeatable; default: the metrics FILE has rows for)",
    )
    add_markdown(check)
    check.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from harness.present import check
    from harness.present.check_table import print_verdicts

    if not args.expected and not args.reference:
        raise UsageError(
            "check needs --expected FILE (gate against expected values) or --reference FILE "
            "(show published values side by side), or both"
        )
    if args.update and not args.expected:
        raise UsageError("--update rewrites the --expected file: name it with --expected FILE")
    if args.propose and not args.expected:
        raise UsageError("--propose writes the --expected file as it should be: name it with --expected FILE")
    if args.propose and args.update:
        raise UsageError("--propose writes a new file and leaves --expected as it is; --update rewrites it: "
                         "give one of them")
    actual = check.read_results(args.results)
    from harness.present.table import output_console

    console = output_console()
    if args.reference:
        from harness.present import reference

        rows = reference.compare(
            reference.read_reference(args.reference), actual, reference.provenance_of(args.results)
        )
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
    if args.markdown:
        from harness.present.markdown import check_markdown

        print_markdown(check_markdown(verdicts, expected=args.expected))
    else:
        print_verdicts(verdicts, console)
    refresh = check.refresh_command(args.results, args.expected, args.metric)
    counts = {
        v: sum(1 for x in verdicts if x.verdict == v)
        for v in (check.REGRESSION, check.MISSING, check.IMPROVED, check.NEW)
    }
    if args.propose:
        _propose(args, expected, actual, verdicts, console)
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
            f"[yellow]warning:[/yellow] {counts[check.NEW]} result(s) have no expected row; add them with:\n"
            f"  {escape(refresh)}",
            highlight=False,
            soft_wrap=True,
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
            f"{counts[check.IMPROVED]} case(s) improved beyond their margin; record the new values with:\n"
            f"  {escape(refresh)}",
            highlight=False,
            soft_wrap=True,
        )
    return 0


def _propose(args: argparse.Namespace, expected, actual, verdicts, console) -> None:  # noqa: ANN001 - check's types
    from harness.files.atomic import atomic_write_text
    from harness.files.oserrors import owned
    from harness.present.propose import markdown_path, proposed, summary

    update, moved = proposed(expected, actual, args.metric)
    text = summary(verdicts, moved, actual, args.expected, args.propose)
    md = markdown_path(args.propose)
    for path, content in ((args.propose, update.text), (md, text)):
        with owned(path, "write the proposed expected file", "give --propose a path in a directory you can write"):
            atomic_write_text(path, content)
    console.print(text, highlight=False, markup=False, soft_wrap=True)
    console.print(f"proposed {args.propose} ({len(update.changed)} row(s) changed, {len(update.added)} added) "
                  f"and {md}; {args.expected} is unchanged", highlight=False, markup=False, soft_wrap=True)
