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


def _cell(r: TaskResult | None, unit: str) -> str:
    if r is None:
        return ""
    if not r.ok:
        return "[red]failed[/red]"
    text = f"{r.median * 1e6:.3g}" if unit == "s" else f"{r.median:,.0f}"
    return text + (" [yellow]![/yellow]" if r.noisy else "")


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
    table = Table(
        title=f"{title}: {'median time per run' if time_unit else 'instructions per run'}",
        title_justify="left",
        caption="! = IQR above 10% of the median (noisy); overhead % is of the Python eager figure",
        caption_justify="left",
    )
    table.add_column("benchmark")
    for col in COLUMNS:
        table.add_column(f"{COLUMN_TITLES[col]}{' (µs)' if time_unit else ''}", justify="right")
    table.add_column(f"Python overhead{' (ns)' if time_unit else ''}", justify="right")
    table.add_column("overhead %", justify="right")
    for (group, autograd, threads), cells in rows.items():
        label = group + (" (fwd+bwd)" if autograd == "forward+backward" else "")
        if several_threads:
            label += f" [{threads} thread{'s' if threads > 1 else ''}]"
        py, cpp = cells.get(("py", "eager")), cells.get(("cpp", "eager"))
        overhead = share = ""
        if py is not None and cpp is not None and py.ok and cpp.ok:
            diff = py.median - cpp.median
            overhead = f"{diff * 1e9:,.0f}" if time_unit else f"{diff:,.0f}"
            share = f"{diff / py.median:.0%}" if py.median > 0 else ""
        table.add_row(escape(label), *(_cell(cells.get(c), unit) for c in COLUMNS), overhead, share)
    return table
