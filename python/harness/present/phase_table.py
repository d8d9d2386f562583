"""Compile phases as tables: a case's tree of torch's compile events, and which phase moved between two runs.

Reads ``extra["phases"]`` (``model.phases``), written by the compile-time
runner with ``--phases``.
"""

from __future__ import annotations

from collections.abc import Iterable

from rich.markup import escape
from rich.table import Table

from harness.model.phases import SEP, PhaseChange, Phases, phase_changes, phases_of
from harness.model.result import TaskResult


def _value(value: float, unit: str) -> str:
    if unit == "s":
        return f"{value * 1e3:,.1f} ms"
    return f"{value:,.0f}"


def phase_tree_table(result: TaskResult, phases: Phases) -> Table:
    """One case: each phase indented under its parent, with its value, its own part and its share."""
    total = phases.total
    unit = phases.unit
    what = "instructions" if unit == "instructions" else "wall time"
    table = Table(
        title=f"{escape(result.task.full_name)}: {what} by torch compile phase "
        f"(total {_value(total, unit)}; the own column adds up to it exactly)",
        title_justify="left",
        caption="own: not in a nested phase; other: outside every compile event. "
        "elsewhere: CPU time of child processes (the C++ compiler) that finished in the phase, "
        + ("not in the count" if unit == "instructions" else "included in the wall time"),
        caption_justify="left",
    )
    table.add_column("phase")
    table.add_column(unit if unit != "s" else "wall", justify="right")
    table.add_column("own", justify="right")
    table.add_column("%", justify="right")
    table.add_column("entered", justify="right")
    table.add_column("elsewhere", justify="right")
    inclusive = phases.inclusive()
    external = phases.external_inclusive()
    for depth, path, name in phases.tree():
        value = inclusive[path]
        share = f"{value / total:.1%}" if total else ""
        ext = external.get(path, 0.0)
        table.add_row(
            "  " * depth + escape(phases.shown(name)),
            _value(value, unit),
            _value(phases.exclusive.get(path, 0.0), unit),
            share,
            str(phases.entered.get(path, "")),
            f"{ext:.2f} s CPU" if ext > 0 else "",
        )
    return table


def phase_tables(results: Iterable[TaskResult]) -> list[Table]:
    """A tree per result that has phases, in result order."""
    out = []
    for r in results:
        phases = phases_of(r.extra) if r.ok else None
        if phases is not None:
            out.append(phase_tree_table(r, phases))
    return out


def moved_phases_text(before: Phases, after: Phases, limit: int = 3) -> str:
    """The phases whose own value moved most, e.g. ``GraphLowering.run +1.2e6 (+3.1%)``; "" when none moved."""
    changes = [c for c in phase_changes(before, after) if c.exclusive_delta][:limit]
    return "; ".join(change_text(c, before.total, before.unit, short=True) for c in changes)


def change_text(change: PhaseChange, total: float, unit: str, short: bool = False) -> str:
    name = short_path(change.path) if short else change.path
    delta = change.exclusive_delta
    share = f" ({delta / total:+.2%} of the total)" if total else ""
    shown = f"{delta * 1e3:+,.2f} ms" if unit == "s" else f"{delta:+,.0f}"
    return f"{name} {shown}{share}"


def short_path(path: str, keep: int = 3) -> str:
    """The last ``keep`` phases of a path, ``…/`` before them when there were more."""
    parts = path.split(SEP)
    return path if len(parts) <= keep else "…/" + SEP.join(parts[-keep:])


def phase_change_table(title: str, before: Phases, after: Phases, limit: int = 10) -> Table:
    """Per phase: its value in both runs and the change of its own part, the largest first."""
    table = Table(title=title, title_justify="left",
                  caption="ordered by the change of each phase's own part (not in a nested phase): "
                  "that names the phase that moved, while every parent of it moves as much",
                  caption_justify="left")
    table.add_column("phase")
    table.add_column("before", justify="right")
    table.add_column("after", justify="right")
    table.add_column("change", justify="right")
    table.add_column("own change", justify="right")
    unit = before.unit
    for c in phase_changes(before, after)[:limit]:
        if not c.delta and not c.exclusive_delta:
            continue
        rel = f" ({c.delta / c.before:+.1%})" if c.before else ""
        table.add_row(escape(short_path(c.path)), _value(c.before, unit), _value(c.after, unit),
                      f"{c.delta:+,.0f}{rel}" if unit != "s" else f"{c.delta * 1e3:+,.2f} ms{rel}",
                      f"{c.exclusive_delta:+,.0f}" if unit != "s" else f"{c.exclusive_delta * 1e3:+,.2f} ms")
    return table
