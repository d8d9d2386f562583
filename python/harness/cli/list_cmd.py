"""``python -m harness list``: the suites and their benchmarks.

Named ``list_cmd``, not ``list``: a submodule becomes an attribute of its package, so a ``cli/list.py``
would hide the builtin ``list`` inside ``cli/__init__.py`` once imported.
"""

from __future__ import annotations

import argparse

from rich.console import Console

from harness.cli.arguments import add_selection, suites_and_tasks


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser("list", help="list suites and their benchmarks")
    add_selection(p)
    p.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from harness.define.selection import is_extended

    console = Console()
    current = None
    for t in suites_and_tasks(args)[1]:
        if t.suite != current:
            console.print(f"[bold]{t.suite}[/bold]")
            current = t.suite
        console.print(f"  {t.name}" + ("  (--all)" if is_extended(t) else ""), highlight=False, markup=False)
    return 0
