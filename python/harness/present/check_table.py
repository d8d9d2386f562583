"""The gate's table: a row per case with expected, actual, delta and verdict."""

from __future__ import annotations

from rich import box
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from harness.present.check import FAILING, IMPROVED, NEW, Verdict
from harness.records.metrics import format_number

_STYLE = {IMPROVED: "green", NEW: "yellow"}


def verdict_table(verdicts: list[Verdict]) -> Table:
    table = Table(title="expected results", title_justify="left", box=box.SIMPLE_HEAD)
    table.add_column("name", no_wrap=True)
    table.add_column("metric")
    for column in ("expected", "actual", "delta", "margin"):
        table.add_column(column, justify="right", overflow="fold")
    table.add_column("verdict", no_wrap=True)
    for v in verdicts:
        delta = v.delta
        style = "bold red" if v.verdict in FAILING else _STYLE.get(v.verdict, "")
        table.add_row(
            escape(v.name),
            escape(v.metric),
            "" if v.expected is None else format_number(v.expected) + (f" (mode {v.mode})" if v.mode else ""),
            "" if v.actual is None else format_number(v.actual),
            "" if delta is None else f"{delta:+.2%}",
            "" if v.margin is None else f"{v.margin:.1%}",
            f"[{style}]{v.verdict}[/{style}]" if style else v.verdict,
        )
    return table


def print_verdicts(verdicts: list[Verdict], console: Console | None = None) -> None:
    (console or Console()).print(verdict_table(verdicts))
