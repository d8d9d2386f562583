"""Terminal table of gpt_fast results: one line per row (target, actual, per-shape values) or skip."""

from __future__ import annotations

from collections.abc import Iterable

from rich.markup import escape
from rich.table import Table

from harness.model.result import TaskResult
from harness.suites.gpt_fast.peak_check import WITHHELD, shown_value
from harness.suites.gpt_fast.runner import experiments_of, peak_note_of, skipped_of


def _num(value: float | None) -> str:
    if value is None:
        return "-"
    return f"{value:.3g}" if abs(value) < 100 else f"{value:,.0f}"


def _shown(metric: str, value: float | None) -> str:
    """The figure, or WITHHELD where it is impossible (a utilisation above 1)."""
    return WITHHELD if value is not None and shown_value(metric, value) is None else _num(value)


def _shapes(metric: str, shapes: Iterable[dict]) -> str:
    parts = []
    for s in shapes:
        key = f"D={s['D']}" if "D" in s else s.get("config", {}).get("name", "")
        value = _shown(metric, s["value"])
        parts.append(f"{key}: {value}" if key else value)
    return ", ".join(parts)


def rows_table(title: str, results: Iterable[TaskResult]) -> Table:
    """Measured rows, then one caption line per skip reason naming the rows it skipped."""
    table = Table(title=title, title_justify="left")
    for col, justify in (("row", "left"), ("dtype", "left"), ("metric", "left"), ("target", "right"),
                         ("actual", "right"), ("ratio", "right"), ("per shape", "left")):
        table.add_column(col, justify=justify)  # type: ignore[arg-type]
    skipped: dict[str, list[str]] = {}
    notes: list[str] = []
    for r in results:
        if not r.ok:
            first_line = (r.error or "failed").strip().splitlines()[0]
            table.add_row(escape(r.task.name), "", "", "", "", "", f"[red]failed[/red]: {escape(first_line)}")
            continue
        note = peak_note_of(r)
        if note and note not in notes:
            notes.append(note)
        for e in experiments_of(r):
            actual = shown_value(e.metric, e.actual)
            ratio = f"{actual / e.target:.2f}" if e.target and actual is not None else "-"
            table.add_row(escape(e.name), e.dtype, escape(e.metric), _num(e.target), _shown(e.metric, e.actual),
                          ratio, escape(_shapes(e.metric, e.shapes)))
        for s in skipped_of(r):
            skipped.setdefault(s.reason, []).append(f"{s.name} {s.dtype} {s.metric}" if s.metric.startswith(
                ("token", "compilation")) else f"{s.name} {s.dtype}")
    lines = [f"[yellow]{escape(note)}[/yellow]" for note in notes]
    lines += [
        f"skipped ({escape(reason)}): {escape(', '.join(dict.fromkeys(names)))}" for reason, names in skipped.items()
    ]
    if lines:
        table.caption = "\n".join(lines)
        table.caption_justify = "left"
    return table
