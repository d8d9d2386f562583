"""The arguments more than one command takes, each written once: which benchmarks (``list``, ``bench``,
``history show|changes``) and percentages (``compare``, ``history changes``); and what every command's
parser shares: each subcommand's description, the message for an option given to the wrong subcommand."""

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


def describe_subcommands(subparsers: argparse._SubParsersAction) -> None:
    """`python -m harness X --help` (and `X Y --help`) opens with the line X's (Y's) list of commands shows."""
    for action in subparsers._choices_actions:
        subparsers.choices[action.dest].description = action.help


def misplaced(parser: argparse.ArgumentParser, args: argparse.Namespace, extra: list[str]) -> str | None:
    """Where the first argument no parser took belongs, when the subcommand given has sibling subcommands
    (``history show --label``: ``--label`` is ``history import``'s): a message to show instead of argparse's
    "unrecognized arguments"; None where no sibling takes it, or the command has no second level."""
    words: list[str] = []
    siblings: dict[str, argparse.ArgumentParser] = {}
    while (sub := next((a for a in parser._actions if isinstance(a, argparse._SubParsersAction)), None)) is not None:
        chosen = getattr(args, sub.dest, None)
        if chosen is None:
            break
        words.append(chosen)
        siblings = {name: p for name, p in sub.choices.items() if name != chosen}
        parser = sub.choices[chosen]
    if len(words) < 2:
        return None
    first = extra[0]
    if first.startswith("-"):
        name = first.split("=", 1)[0]
        owners = [n for n, p in siblings.items() if name in p._option_string_actions]
    else:
        takes = {n: [a for a in p._actions if not a.option_strings] for n, p in siblings.items()}
        owners = [n for n, positionals in takes.items() if positionals]
        name = next((a.metavar or a.dest for n in owners for a in takes[n]), first)
    if not owners:
        return None
    where = " and ".join(f"`{' '.join(words[:-1])} {owner}`" for owner in owners)
    return f"{' '.join(words)}: {name} belongs to {where}"


def add_markdown(parser: argparse.ArgumentParser) -> None:
    """``--markdown``: the summary as GitHub-flavoured markdown (``compare``, ``check``, ``history changes``)."""
    parser.add_argument(
        "--markdown", action="store_true",
        help="print GitHub-flavoured markdown instead of tables (the changes beyond the noise, what moved most, "
        "a one-line verdict), and append it to $GITHUB_STEP_SUMMARY when that names a file; exit status unchanged",
    )


def print_markdown(text: str) -> None:
    """``text`` on standard output, and appended to ``$GITHUB_STEP_SUMMARY`` when that names a file."""
    import sys

    from harness.present.markdown import step_summary

    sys.stdout.write(text + "\n")  # a blank line: what the command prints next does not join the last table
    sys.stdout.flush()
    step_summary(text)


def check_percentage(flag: str, value: float | None) -> None:
    """A percentage flag is left out or at least 0."""
    if value is not None and value < 0:
        raise UsageError(f"{flag} must be >= 0 (a percentage), got {value}")
