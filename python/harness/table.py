"""Terminal tables of TaskResults (rich). Reporters format; they never measure."""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterable

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


# Task kind -> "module:function(title, results) -> Table" for kinds with their own layout.
KIND_TABLES: dict[str, str] = {
    "compile_time": "harness.compile_time.table:compile_time_table",
}


def _table_for(kind: str) -> Callable[[str, list[TaskResult]], Table]:
    target = KIND_TABLES.get(kind)
    if target is None:
        return results_table
    module, _, func = target.partition(":")
    return getattr(importlib.import_module(module), func)


def print_results(results: list[TaskResult], console: Console | None = None) -> None:
    console = console or Console()
    groups: dict[tuple[str, str], list[TaskResult]] = {}
    for r in results:
        kind = r.task.kind if r.task.kind in KIND_TABLES else ""
        groups.setdefault((r.task.suite, kind), []).append(r)
    for (suite, kind), rs in groups.items():
        console.print(_table_for(kind)(suite, rs))
