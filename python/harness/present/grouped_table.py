"""The table of grouped definitions: a row per definition, a column per language and runtime.

Columns: Python eager, TorchScript (Python), C++ eager, TorchScript (C++),
then the Python overhead: Python eager minus C++ eager, absolute and as a
share of Python eager's figure. With layers (``bench --layers``), a line
per op under the instruction table says what Python adds, in layers. A definition with ``autograd=True`` gets a
second row for forward + backward; with several thread counts, a row per
count. Times are in µs (overhead in ns); with instruction counts, counts.
"""

from __future__ import annotations

from collections.abc import Iterable

from rich.console import Group
from rich.markup import escape
from rich.table import Table
from rich.text import Text

from harness.define.grouped import COLUMN_TITLES
from harness.model.result import TaskResult
from harness.present.layer_table import python_overhead
from harness.present.table import name_column, noise_caption

COLUMNS = (("py", "eager"), ("py", "ts"), ("cpp", "eager"), ("cpp", "ts"))
_LANG = {"python": "py", "cpp": "cpp"}
_RUNTIME = {"eager": "eager", "torchscript": "ts"}


def _column(r: TaskResult) -> tuple[str, str]:
    p = r.task.params
    lang = _LANG.get(str(p.get("language", "python")).lower(), "cpp")
    return lang, _RUNTIME.get(str(p.get("runtime", "eager")), "eager")


def _row_key(r: TaskResult) -> tuple[str, str, int]:
    p = r.task.params
    group = str(p.get("group") or r.task.name)
    return group, str(p.get("autograd", "forward")), int(p.get("num_threads", 1) or 1)


# Python eager does everything C++ eager does and more, so its overhead cannot be negative.
NEGATIVE_NOTE = (
    "(! <0): Python measured faster than C++, which it cannot be: the difference is noise; "
    "run again with a longer --min-run-time."
)


def _cell(r: TaskResult | None, unit: str) -> str:
    if r is None:
        return ""
    if not r.ok:
        return "[red]failed[/red]"
    text = f"{r.median * 1e6:.3g}" if unit == "s" else f"{r.median:,.0f}"
    return text + (f" [yellow]{escape(r.noise_mark)}[/yellow]" if r.noisy else "")


def _overhead(py: TaskResult, cpp: TaskResult, time_unit: bool) -> tuple[str, str, bool]:
    """The overhead and its share of Python eager; marked when noise made it negative."""
    diff = py.median - cpp.median
    text = f"{diff * 1e9:,.0f}" if time_unit else f"{diff:,.0f}"
    if diff < 0:
        return f"{text} [yellow]{escape('(! <0)')}[/yellow]", "", True
    return text, (f"{diff / py.median:.0%}" if py.median > 0 else ""), False


def grouped_table(title: str, results: Iterable[TaskResult]) -> Group:
    """The dispatch-overhead table of each unit the results have ("s", "instructions")."""
    results = list(results)
    units = list(dict.fromkeys(r.unit for r in results if r.ok)) or ["s"]
    parts: list[Table | Text] = []
    for unit in units:
        parts.append(unit_table(title, results, unit))
        if unit == "instructions":
            parts.extend(Text(line) for line in overhead_lines(results))
    return Group(*parts)


def overhead_lines(results: Iterable[TaskResult]) -> list[str]:
    """"op: Python adds N instructions: interpreter a, bindings b, GIL c, ..." per op with layers."""
    rows: dict[tuple[str, str, int], dict[tuple[str, str], TaskResult]] = {}
    for r in results:
        if r.ok and r.unit == "instructions":
            rows.setdefault(_row_key(r), {})[_column(r)] = r
    lines = []
    for (group, autograd, _), cells in rows.items():
        py, cpp = cells.get(("py", "eager")), cells.get(("cpp", "eager"))
        line = python_overhead(py, cpp) if py is not None and cpp is not None else None
        if line is not None:
            lines.append(f"{group}{' (fwd+bwd)' if autograd == 'forward+backward' else ''}: {line}")
    return lines


def unit_table(title: str, results: Iterable[TaskResult], unit: str = "s") -> Table:
    """Results of one unit ("s" or "instructions") as the dispatch-overhead table."""
    chosen = [r for r in results if r.unit == unit or not r.ok]
    rows: dict[tuple[str, str, int], dict[tuple[str, str], TaskResult]] = {}
    for r in chosen:
        rows.setdefault(_row_key(r), {})[_column(r)] = r
    several_threads = len({k[2] for k in rows}) > 1
    time_unit = unit == "s"
    # Columns no definition filled are left out: room for the names on a narrow terminal.
    columns = [c for c in COLUMNS if any(c in cells for cells in rows.values())] or list(COLUMNS)
    lines = []
    for (group, autograd, threads), cells in rows.items():
        label = group + (" (fwd+bwd)" if autograd == "forward+backward" else "")
        if several_threads:
            label += f" [{threads} thread{'s' if threads > 1 else ''}]"
        py, cpp = cells.get(("py", "eager")), cells.get(("cpp", "eager"))
        overhead, share, negative = "", "", False
        if py is not None and cpp is not None and py.ok and cpp.ok:
            overhead, share, negative = _overhead(py, cpp, time_unit)
        lines.append((escape(label), *(_cell(cells.get(c), unit) for c in columns), overhead, share, negative))
    notes = ["overhead % is of the Python eager figure"]
    if any(line[-1] for line in lines):
        notes.append(NEGATIVE_NOTE)
    table = Table(
        title=f"{title}: {'median time per run' if time_unit else 'instructions per run'}",
        title_justify="left",
        caption=noise_caption(chosen, *notes),
        caption_justify="left",
    )
    name_column(table)
    for col in columns:
        table.add_column(f"{COLUMN_TITLES[col]}{' (µs)' if time_unit else ''}", justify="right", overflow="fold")
    table.add_column(f"Python overhead{' (ns)' if time_unit else ''}", justify="right", overflow="fold")
    table.add_column("overhead %", justify="right", overflow="fold")
    for line in lines:
        table.add_row(*line[:-1])
    return table
