"""The compile-time table: a row per case with its instruction count, wall time and counter.

Cold iterations and medians are in the CSV and the run record; the table
keeps to what fits an 80-column log: the minimum over warm iterations.
"""

from __future__ import annotations

from rich import box
from rich.markup import escape
from rich.table import Table

from harness.model.result import TaskResult


def _case(r: TaskResult) -> str:
    return str(r.extra.get("case") or r.task.params.get("case") or r.task.name)


def _cell(r: TaskResult | None, text: str) -> str:
    if r is None:
        return ""
    return text if r.ok else "[red]failed[/red]"


def compile_time_table(title: str, results: list[TaskResult]) -> Table:
    by_case: dict[str, dict[str, TaskResult]] = {}
    for r in results:
        by_case.setdefault(_case(r), {})[r.task.mode] = r
    counters = sorted({str(r.extra.get("counter")) for r in results if r.ok and r.task.mode == "instructions"})
    # One counter (the usual case) goes in the title, so the table fits 80 columns.
    per_row_counter = len(counters) > 1
    heading = f"{title}: min over warm iterations" + (f", instructions by {counters[0]}" if len(counters) == 1 else "")
    table = Table(title=heading, title_justify="left", box=box.SIMPLE_HEAD)
    table.add_column("case", no_wrap=True)
    table.add_column("instructions", justify="right", no_wrap=True)
    table.add_column("wall s", justify="right", no_wrap=True)
    if per_row_counter:
        table.add_column("counter", no_wrap=True)
    per_call = False
    for case, modes in by_case.items():
        instr, wall = modes.get("instructions"), modes.get("wall")
        calls = next((r.extra.get("calls", 1) for r in modes.values() if r.ok), 1)
        per_call = per_call or calls > 1
        row = [
            escape(case) + ("*" if calls > 1 else ""),
            _cell(instr, f"{instr.extra['actual']:,.0f}" if instr and instr.ok else ""),
            _cell(wall, f"{wall.extra['actual']:.4g}" if wall and wall.ok else ""),
        ]
        if per_row_counter:
            row.append(escape(str(instr.extra.get("counter", ""))) if instr and instr.ok else "")
        table.add_row(*row)
    if per_call:
        table.caption = "* per call"
        table.caption_justify = "left"
    return table
