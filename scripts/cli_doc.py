"""Writes the generated blocks of docs/cli.md from the command line's own parser.

    .venv/bin/python scripts/cli_doc.py           # rewrite docs/cli.md
    .venv/bin/python scripts/cli_doc.py --check   # exit 1, with a diff, when it is out of date

Only the text between ``<!-- BEGIN generated: COMMAND -->`` and ``<!-- END
generated -->`` is replaced, so the prose around each block is kept as written.
A subcommand the page lacks gets a section at the end (its one-line help as
the prose, to be edited), a subcommand's subcommand (``history show``) one
after its parent's block; a block naming a subcommand that is gone stops the
script, since the prose about it needs a person to remove it.
tests/test_cli_doc.py fails when the page and the parser disagree.
"""

from __future__ import annotations

import argparse
import difflib
import re
import sys
from pathlib import Path

from harness.cli import build_parser

ROOT = Path(__file__).resolve().parents[1]
PAGE = ROOT / "docs" / "cli.md"
REGENERATE = ".venv/bin/python scripts/cli_doc.py"
PROG = "python -m harness"
# argparse wraps help at the terminal's width; a fixed one makes the page the
# same on every machine.
WIDTH = 100
# Python 3.11 and 3.12 print this parser's help byte for byte alike; 3.13
# changed the layout (`--output, -o FILE` instead of `--output FILE, -o FILE`),
# so a page written there would fail the byte-exact test on the supported ones.
HELP_LAYOUT_PYTHONS = ((3, 11), (3, 12))
BLOCK = re.compile(
    r"<!-- BEGIN generated: (?P<command>[^>]*?) --help -->\n(?P<body>.*?)<!-- END generated -->", re.S
)


def _subcommands(parser: argparse.ArgumentParser) -> argparse._SubParsersAction | None:
    return next((a for a in parser._actions if isinstance(a, argparse._SubParsersAction)), None)


def parsers() -> dict[str, argparse.ArgumentParser]:
    """The parser of each command the page documents, by the command's words: '' is the top level,
    'history show' a subcommand's subcommand; a command comes before its own subcommands."""
    found = {"": build_parser()}
    pending = [""]
    while pending:
        name = pending.pop(0)
        sub = _subcommands(found[name])
        for word, parser in (sub.choices.items() if sub else ()):
            found[f"{name} {word}".strip()] = parser
            pending.append(f"{name} {word}".strip())
    return found


def summaries() -> dict[str, str]:
    """Each subcommand's one-line help, as its parent's help lists it."""
    out = {}
    for name, parser in parsers().items():
        sub = _subcommands(parser)
        out.update({f"{name} {a.dest}".strip(): a.help or "" for a in (sub._choices_actions if sub else ())})
    return out


def help_text(parser: argparse.ArgumentParser) -> str:
    parser.formatter_class = lambda prog: argparse.HelpFormatter(prog, width=WIDTH)
    if hasattr(parser, "color"):  # 3.14 colours help on a terminal
        parser.color = False
    return parser.format_help()


def command_of(name: str) -> str:
    return f"{PROG} {name}".strip()


def block(name: str, parser: argparse.ArgumentParser) -> str:
    return (f"<!-- BEGIN generated: {command_of(name)} --help -->\n"
            f"```text\n{help_text(parser).rstrip()}\n```\n<!-- END generated -->")


def render(page: str) -> str:
    """``page`` with every generated block rewritten and a section added for each subcommand it lacks."""
    by_command = {command_of(name): (name, p) for name, p in parsers().items()}
    stale = [m["command"] for m in BLOCK.finditer(page) if m["command"] not in by_command]
    if stale:
        raise SystemExit(f"{PAGE.relative_to(ROOT)} documents {', '.join(stale)}, which the parser no longer "
                         "has: remove those sections by hand, then run this again")
    seen = set()

    def replace(m: re.Match[str]) -> str:
        seen.add(m["command"])
        return block(*by_command[m["command"]])

    page = BLOCK.sub(replace, page)
    lines = summaries()
    for command, (name, p) in by_command.items():
        if command in seen:
            continue
        prose = (lines.get(name) or p.description or "").rstrip(".")
        level = "#" * (2 + name.count(" "))
        section = f"{level} {name or PROG}\n\n{prose[:1].upper()}{prose[1:]}.\n\n{block(name, p)}\n"
        # A subcommand's subcommand goes after its parent's block and its siblings' already there.
        parent = command.rsplit(" ", 1)[0] if " " in name else None
        ends = [m.end() for m in BLOCK.finditer(page) if parent and (m["command"] + " ").startswith(parent + " ")]
        if ends:
            page = f"{page[:ends[-1]]}\n\n{section.rstrip()}{page[ends[-1]:]}"
        else:
            page = page.rstrip("\n") + f"\n\n{section}"
        seen.add(command)
    return page


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description="Write docs/cli.md's help blocks from the parser.")
    ap.add_argument("--check", action="store_true", help="write nothing; exit 1 with a diff when out of date")
    args = ap.parse_args(argv)
    if sys.version_info[:2] not in HELP_LAYOUT_PYTHONS:
        supported = " or ".join(f"{a}.{b}" for a, b in HELP_LAYOUT_PYTHONS)
        raise SystemExit(f"argparse lays help out differently on Python {sys.version_info[0]}.{sys.version_info[1]}; "
                         f"run this with Python {supported}")
    current = PAGE.read_text() if PAGE.exists() else ""
    wanted = render(current)
    if args.check:
        if wanted == current:
            return 0
        sys.stdout.writelines(difflib.unified_diff(current.splitlines(True), wanted.splitlines(True),
                                                   "docs/cli.md", "from the parser"))
        print(f"\ndocs/cli.md is out of date; run: {REGENERATE}")
        return 1
    if wanted != current:
        PAGE.write_text(wanted)
        print(f"wrote {PAGE.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
