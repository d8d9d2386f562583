"""Terminal tables of TaskResults (rich). Reporters format; they never measure."""

from __future__ import annotations

import importlib
from collections.abc import Iterable

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from .measurement import select_unit
from .result import TaskResult

IQR_FLAG = 0.10

# Task kind -> "module:function(title, results) -> Table" for kinds whose
# results are rows of several metrics rather than one timed value.
KIND_TABLES: dict[str, str] = {
    "gpt_fast": "harness.gpt_fast.report:rows_table",
}


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


def print_results(results: list[TaskResult], console: Console | None = None) -> None:
    console = console or Console()
    by_suite: dict[str, list[TaskResult]] = {}
    for r in results:
        by_suite.setdefault(r.task.suite, []).append(r)
    for suite, rs in by_suite.items():
        plain = [r for r in rs if r.task.kind not in KIND_TABLES]
        if plain:
            console.print(results_table(suite, plain))
        for kind in dict.fromkeys(r.task.kind for r in rs if r.task.kind in KIND_TABLES):
            module, _, func = KIND_TABLES[kind].partition(":")
            table = getattr(importlib.import_module(module), func)
            console.print(table(suite, [r for r in rs if r.task.kind == kind]))
