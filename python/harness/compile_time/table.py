"""The compile-time table: a row per case with its instruction count, wall time and counter."""

from __future__ import annotations

from rich.markup import escape
from rich.table import Table

from ..result import TaskResult
from ..table import format_value


def _case(r: TaskResult) -> str:
    return str(r.extra.get("case") or r.task.params.get("case") or r.task.name)


def _cold(r: TaskResult) -> str:
    if r.extra.get("cold_unit") == "s":
        return f"({r.extra['cold']:.3g} s)"  # timed, not counted (callgrind)
    return format_value(r.extra["cold"], "instructions")


def compile_time_table(title: str, results: list[TaskResult]) -> Table:
    """Min over warm iterations, the cold (first) iteration beside it."""
    by_case: dict[str, dict[str, TaskResult]] = {}
    for r in results:
        by_case.setdefault(_case(r), {})[r.task.mode] = r
    table = Table(title=title, title_justify="left")
    table.add_column("case", no_wrap=True)
    table.add_column("instructions", justify="right", no_wrap=True)
    table.add_column("cold instr.", justify="right")
    table.add_column("wall s", justify="right")
    table.add_column("median s", justify="right")
    table.add_column("counter")
    table.add_column("status")
    for case, modes in by_case.items():
        instr, wall = modes.get("instructions"), modes.get("wall")
        # The CLI prints each failure's error below the table.
        failed = [mode for mode, r in modes.items() if not r.ok]
        ok_instr = instr is not None and instr.ok
        ok_wall = wall is not None and wall.ok
        per_call = (instr or wall).extra.get("calls", 1) if (instr or wall) else 1
        table.add_row(
            escape(case) + (" [dim](per call)[/dim]" if per_call and per_call > 1 else ""),
            format_value(instr.extra["actual"], "instructions") if ok_instr else "",
            _cold(instr) if ok_instr else "",
            f"{wall.extra['actual']:.4g}" if ok_wall else "",
            f"{wall.median:.4g}" if ok_wall else "",
            escape(str(instr.extra.get("counter", ""))) if ok_instr else "",
            f"[red]failed[/red] ({', '.join(failed)})" if failed else "ok",
        )
    return table
