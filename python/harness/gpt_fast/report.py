"""Terminal table of gpt_fast results: one line per row (target, actual, per-shape values) or skip."""

from __future__ import annotations

from collections.abc import Iterable

from rich.markup import escape
from rich.table import Table

from ..result import TaskResult
from .runner import experiments_of, skipped_of


def _num(value: float | None) -> str:
    if value is None:
        return "-"
    return f"{value:.3g}" if abs(value) < 100 else f"{value:,.0f}"


def _shapes(shapes: Iterable[dict]) -> str:
    parts = []
    for s in shapes:
        key = f"D={s['D']}" if "D" in s else s.get("config", {}).get("name", "")
        parts.append(f"{key}: {_num(s['value'])}" if key else _num(s["value"]))
    return ", ".join(parts)


def rows_table(title: str, results: Iterable[TaskResult]) -> Table:
    table = Table(title=title, title_justify="left")
    for col, justify in (("row", "left"), ("metric", "left"), ("dtype", "left"), ("target", "right"),
                         ("actual", "right"), ("actual/target", "right"), ("per shape", "left")):
        table.add_column(col, justify=justify)  # type: ignore[arg-type]
    for r in results:
        if not r.ok:
            first_line = (r.error or "failed").strip().splitlines()[0]
            table.add_row(escape(r.task.name), "", "", "", "", "", f"[red]failed[/red]: {escape(first_line)}")
            continue
        for e in experiments_of(r):
            ratio = f"{e.actual / e.target:.2f}" if e.target else "-"
            table.add_row(escape(e.name), escape(e.metric), e.dtype, _num(e.target), _num(e.actual), ratio,
                          escape(_shapes(e.shapes)))
        for s in skipped_of(r):
            table.add_row(escape(s.name), escape(s.metric), s.dtype, "", "", "",
                          f"[yellow]skipped[/yellow]: {escape(s.reason)}")
    return table
