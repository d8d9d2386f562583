"""The arguments more than one command takes, each written once: which benchmarks (``list``, ``bench``,
``history show|changes``) and percentages (``compare``, ``history changes``)."""

from __future__ import annotations

import argparse

from harness.errors import UsageError

PATTERN_HELP = "only benchmarks whose name matches (substring, glob, and/or/not)"


def add_pattern(parser: argparse.ArgumentParser) -> None:
    """``-k PATTERN``: benchmarks by name."""
    parser.add_argument("-k", dest="pattern", help=PATTERN_HELP)


def add_selection(parser: argparse.ArgumentParser) -> None:
    """Which suites, where, and which of their benchmarks: ``[SUITE ...] [-k PATTERN] [--path DIR]``."""
    parser.add_argument(
        "suites", nargs="*", metavar="SUITE",
        help="suite names (default: every suite not marked Suite(default=False))",
    )
    add_pattern(parser)
    parser.add_argument("--path", help="directory holding the suites (default: ./benchmarks)")


def suites_and_tasks(args: argparse.Namespace) -> tuple[list, list]:
    """The suites and the tasks that :func:`add_selection`'s arguments (and bench's ``--only``, ``--all``) pick."""
    from harness.define.discovery import default_root, select_suites
    from harness.define.selection import select

    suites = select_suites(default_root(args.path), list(args.suites))
    tasks = select(
        [t for s in suites for t in s.tasks()], args.pattern, getattr(args, "only", None),
        everything=getattr(args, "everything", True),
    )
    return suites, tasks


def check_percentage(flag: str, value: float | None) -> None:
    """A percentage flag is left out or at least 0."""
    if value is not None and value < 0:
        raise UsageError(f"{flag} must be >= 0 (a percentage), got {value}")
