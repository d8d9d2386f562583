"""Terminal tables of TaskResults (rich): a kind's own table, a suite's, or the generic one.

Tables format; they never measure. Which table a result goes into is the
kind's decision (``harness.kinds``: ``Kind.table``), which a suite may
override (``Suite(table=...)``).
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from harness import kinds
from harness.errors import UsageError
from harness.model.measurement import select_unit
from harness.model.result import TaskResult

TableFunction = Callable[[str, list[TaskResult]], Any]


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


# One line under a table with marked rows: what the mark means and what to do.
NOISE_NOTE = (
    "(! XX%): the IQR is XX% of the median; (! bimodal): the samples form two clusters. "
    "Either way that median is unreliable: stop other work on the machine, pin the run "
    "(taskset -c 2 python -m harness bench ...), raise --min-run-time and run again."
)


def noise_caption(results: Iterable[TaskResult], *notes: str) -> str | None:
    """The caption of a table: ``notes``, and NOISE_NOTE when any result is marked noisy."""
    lines = [*notes, *([NOISE_NOTE] if any(r.noisy for r in results) else [])]
    return "\n".join(lines) or None


def name_column(table: Table, title: str = "benchmark") -> None:
    """The benchmark-name column: folded onto more lines on a narrow terminal, never cut."""
    table.add_column(title, overflow="fold")


def results_table(title: str, results: Iterable[TaskResult]) -> Table:
    """The generic table: a row per result with its median, IQR and block count."""
    results = list(results)
    table = Table(title=title, title_justify="left", caption=noise_caption(results), caption_justify="left")
    name_column(table)
    for column in ("median", "IQR", "runs"):
        table.add_column(column, justify="right", overflow="fold")
    table.add_column("status", overflow="fold")
    for r in results:
        if not r.ok:
            first_line = (r.error or "failed").strip().splitlines()[0]
            table.add_row(escape(r.task.name), "", "", "", f"[red]failed[/red]: {escape(first_line)}")
            continue
        median = format_value(r.median, r.unit) + (f" [yellow]{escape(r.noise_mark)}[/yellow]" if r.noisy else "")
        # A merged run's row measured on other software than the rest (merge --allow-mixed).
        mixed = r.extra.get("mixed")
        table.add_row(
            escape(r.task.name),
            median,
            format_value(r.iqr, r.unit),
            f"{len(r.samples)}x{r.number_per_run}",
            f"ok [yellow](mixed: {escape(str(mixed))})[/yellow]" if mixed else "ok",
        )
    return table


def table_function(name: str) -> TableFunction:
    """A suite's ``table=``: a kind's name (its table) or a ``module:function`` reference."""
    if ":" not in name:
        kind = kinds.get(name)
        if kind.table is None:
            raise UsageError(f"Suite(table={name!r}): kind {name!r} has no table of its own")
        return kinds.resolve(kind.table, f"the table of kind {name!r}")
    return kinds.resolve(name, f"the table {name!r}")


def output_console() -> Console:
    """stdout for result tables: the terminal's width, or 160 columns in logs and pipes
    (rich's 80 would squeeze benchmark names out of CI logs)."""
    return Console(width=None if sys.stdout.isatty() else 160)


def _kind_table(kind: str) -> TableFunction | None:
    found = kinds.find(kind)  # None: a kind this process never registered (a record from another setup)
    target = found.table if found is not None else None
    return None if target is None else kinds.resolve(target, f"the table of kind {kind!r}")


def _table_for(r: TaskResult, tables: Mapping[str, str | None]) -> tuple[tuple[str, str], TableFunction | None]:
    suite_table = tables.get(r.task.suite)
    if suite_table:
        return (r.task.suite, "suite"), table_function(suite_table)
    function = _kind_table(r.task.kind)
    if function is not None:
        return (r.task.suite, f"kind:{r.task.kind}"), function
    return (r.task.suite, r.task.mode), None


def print_results(
    results: list[TaskResult], console: Console | None = None, tables: Mapping[str, str | None] | None = None,
    generic: bool = False,
) -> None:
    """One table per suite: its own (``tables``: suite -> ``Suite.table``), else one per kind that
    has a table of its own (both modes in it), else the generic table per mode; ``generic``: the
    generic table for every suite (it marks the rows of a mixed merge)."""
    console = console or output_console()
    groups: dict[tuple[str, str], list[TaskResult]] = {}
    chosen: dict[tuple[str, str], TableFunction | None] = {}
    for r in results:
        key, function = ((r.task.suite, r.task.mode), None) if generic else _table_for(r, tables or {})
        chosen.setdefault(key, function)
        groups.setdefault(key, []).append(r)
    for (suite, mode), rs in groups.items():
        function = chosen[(suite, mode)]
        if function is not None:
            console.print(function(suite, rs))
        else:
            console.print(results_table(table_title(suite, [r for r in rs if r.ok], mode), rs))
