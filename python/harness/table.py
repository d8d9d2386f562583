"""Terminal tables of TaskResults (rich). Reporters format; they never measure."""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Iterable
from typing import Any

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
    "compile_time": "harness.compile_time.table:compile_time_table",
}


def format_value(value: float, unit: str) -> str:
    if unit == "s":
        u, scale = select_unit(value)
        return f"{value / scale:.3g} {u}"
    if unit == "instructions":
        # Per-run counts of native statements can be a few instructions.
        return f"{value:,.0f}" if abs(value) >= 100 else f"{value:,.1f}"
    return f"{value:.4g} {unit}"


def table_title(suite: str, results: list[TaskResult], mode: str = "wall") -> str:
    """The suite, and what its numbers are, from the results themselves."""
    unit = results[0].unit if results else ("instructions" if mode == "instructions" else "s")
    if unit == "s":
        return f"{suite}: time per run"
    if unit == "instructions":
        counters = sorted({str(r.extra.get("counter")) for r in results if r.extra.get("counter")})
        return f"{suite}: instructions per run" + (f" ({', '.join(counters)})" if counters else "")
    return f"{suite}: {unit} per run"


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
    target = TABLES.get(name, name)
    module, _, func = target.partition(":")
    return getattr(importlib.import_module(module), func)


def _table_for(kind: str) -> Callable[[str, list[TaskResult]], Table]:
    target = KIND_TABLES.get(kind)
    if target is None:
        return results_table
    module, _, func = target.partition(":")
    return getattr(importlib.import_module(module), func)


def output_console() -> Console:
    """stdout for result tables: the terminal's width, or 160 columns in logs and pipes
    (rich's 80 would squeeze benchmark names out of CI logs)."""
    return Console(width=None if sys.stdout.isatty() else 160)


def print_results(
    results: list[TaskResult], console: Console | None = None, tables: dict[str, str] | None = None
) -> None:
    """One table per suite and mode: a task kind's own layout, the suite's own table, or the generic one."""
    console = console or output_console()
    groups: dict[tuple[str, str], list[TaskResult]] = {}
    for r in results:
        # Kinds with their own layout get one table per suite (both modes in it).
        key = r.task.kind if r.task.kind in KIND_TABLES else r.task.mode
        groups.setdefault((r.task.suite, key), []).append(r)
    for (suite, key), rs in groups.items():
        if key in KIND_TABLES:
            console.print(_table_for(key)(suite, rs))
            continue
        table = (tables or {}).get(suite)
        if table:
            for unit in dict.fromkeys(r.unit for r in rs if r.ok) or ["s"]:
                console.print(resolve_table(table)(suite, rs, unit))
            continue
        console.print(results_table(table_title(suite, [r for r in rs if r.ok], key), rs))
