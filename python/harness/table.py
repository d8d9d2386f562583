"""Terminal tables of TaskResults (rich). Reporters format; they never measure."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from .measurement import select_unit
from .result import TaskResult

IQR_FLAG = 0.10


def format_value(value: float, unit: str) -> str:
    if unit == "s":
        u, scale = select_unit(value)
        return f"{value / scale:.3g} {u}"
    return f"{value:,.0f}" if unit == "instructions" else f"{value:.4g} {unit}"


def results_table(title: str, results: Iterable[TaskResult]) -> Table:
    table = Table(title=title, title_justify="left")
    table.add_column("benchmark")
    table.add_column("median", justify="right")
    table.add_column("IQR", justify="right")
    table.add_column("runs", justify="right")
    table.add_column("status")
    for r in results:
        if not r.ok:
            first_line = (r.error or "failed").strip().splitlines()[0]
            table.add_row(escape(r.task.name), "", "", "", f"[red]failed[/red]: {escape(first_line)}")
            continue
        median, iqr = r.median, r.iqr
        noisy = median > 0 and iqr / median > IQR_FLAG
        iqr_text = format_value(iqr, r.unit) + (f" [yellow](! {iqr / median:.0%})[/yellow]" if noisy else "")
        table.add_row(
            escape(r.task.name),
            format_value(median, r.unit),
            iqr_text,
            f"{len(r.samples)}x{r.number_per_run}",
            "ok",
        )
    return table


# Suite-specific tables (Suite(table=...)): name -> "module:function" taking
# (title, results, unit) and returning a rich renderable.
TABLES: dict[str, str] = {
    "grouped": "harness.grouped_table:grouped_table",
}


def resolve_table(name: str) -> Callable[[str, list[TaskResult], str], Any]:
    import importlib

    target = TABLES.get(name, name)
    module, _, func = target.partition(":")
    return getattr(importlib.import_module(module), func)


def print_results(
    results: list[TaskResult], console: Console | None = None, tables: dict[str, str] | None = None
) -> None:
    """One table per suite: the suite's own (``tables``: suite name -> table name) or the generic one."""
    console = console or Console()
    by_suite: dict[str, list[TaskResult]] = {}
    for r in results:
        by_suite.setdefault(r.task.suite, []).append(r)
    for suite, rs in by_suite.items():
        table = (tables or {}).get(suite)
        if table:
            for unit in dict.fromkeys(r.unit for r in rs if r.ok) or ["s"]:
                console.print(resolve_table(table)(suite, rs, unit))
        else:
            console.print(results_table(suite, rs))
