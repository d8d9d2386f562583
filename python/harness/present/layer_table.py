"""Instructions per PyTorch layer: the table, the rule behind each symbol, Python's overhead in layers.

Everything here reads ``extra["layers"]`` of a result (counts of
``number_per_run`` runs, written by ``run.instructions``), so two results are
all that a comparison needs, whichever runs (or sides of a run) they come
from.
"""

from __future__ import annotations

from collections.abc import Iterable

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from harness.measure.callgrind.layers import PYTHON_LAYERS, ordered, title
from harness.model.result import TaskResult

# Narrow headers, so thirteen columns fit a terminal.
_SHORT = {
    "interpreter": "interp", "bindings": "bind", "gil": "GIL", "dispatcher": "disp", "autograd": "autograd",
    "aten": "ATen", "kernel": "kernel", "allocator": "alloc", "tensorimpl": "Tensor", "tls": "TLS",
    "profiler": "prof", "libc": "libc", "other": "other",
}  # fmt: skip


def result_layers(r: TaskResult) -> dict[str, float] | None:
    """Instructions per run of each layer, in display order; None when the result has no layers."""
    counts = r.extra.get("layers") if r.ok else None
    if not isinstance(counts, dict) or not counts:
        return None
    number = r.number_per_run or 1
    return {layer: c / number for layer, c in ordered(counts)}


def layer_table(results: Iterable[TaskResult]) -> Table | None:
    """A row per result with layers: its total and each layer's instructions per run."""
    rows = [(r, layers) for r in results if (layers := result_layers(r)) is not None]
    if not rows:
        return None
    names = list(dict.fromkeys(name for _, layers in rows for name in layers))
    # Layers that are zero everywhere say nothing; "other" always shows, as the coverage check.
    shown = [n for n in names if n == "other" or any(round(layers.get(n, 0)) for _, layers in rows)]
    table = Table(
        title="instructions per run by layer (baseline subtracted; the layers add up to the total)",
        title_justify="left",
        caption="layers: " + ", ".join(f"{_SHORT.get(n, n)} = {title(n)}" for n in shown),
        caption_justify="left",
    )
    table.add_column("benchmark")
    table.add_column("total", justify="right")
    for n in shown:
        table.add_column(_SHORT.get(n, n), justify="right")
    table.add_column("other %", justify="right")
    for r, layers in rows:
        total = sum(layers.values())
        other = layers.get("other", 0.0)
        share = f"{other / total:.1%}" if total > 0 else ""
        table.add_row(escape(r.task.full_name), f"{total:,.0f}", *(f"{layers.get(n, 0):,.0f}" for n in shown), share)
    return table


def explain_tables(results: Iterable[TaskResult], top: int = 5) -> list[Table]:
    """Per result: the largest functions of each layer and the line of the rule that claimed each."""
    tables = []
    for r in results:
        symbols = r.extra.get("layer_symbols") if r.ok else None
        if not isinstance(symbols, dict):
            continue
        path = r.task.params.get("layers") or "the shipped rules (harness/measure/callgrind/layers.toml)"
        table = Table(title=f"{escape(r.task.full_name)}: top functions per layer", title_justify="left",
                      caption=f"rule: line in {escape(str(path))}; 0: no rule (other)", caption_justify="left")
        table.add_column("layer")
        table.add_column("per run", justify="right")
        table.add_column("rule", justify="right")
        table.add_column("function")
        for layer, items in ordered(symbols):
            for i, (fn, per_run, line) in enumerate(items[:top]):
                table.add_row(title(layer) if i == 0 else "", f"{per_run:,.1f}", str(line), escape(str(fn)))
        tables.append(table)
    return tables


def python_overhead(py: TaskResult, cpp: TaskResult) -> str | None:
    """"Python adds N instructions: interpreter a, bindings b, GIL c" for one op, or None without layers."""
    a, b = result_layers(py), result_layers(cpp)
    if a is None or b is None:
        return None
    added = sum(a.values()) - sum(b.values())
    parts = [f"{title(n).replace('Python ', '')} {a.get(n, 0) - b.get(n, 0):,.0f}" for n in PYTHON_LAYERS]
    rest = added - sum(a.get(n, 0) - b.get(n, 0) for n in PYTHON_LAYERS)
    return f"Python adds {added:,.0f} instructions: {', '.join(parts)}, the rest {rest:,.0f}"


def layer_changes(base: TaskResult, new: TaskResult) -> list[tuple[str, float, float]]:
    """(layer, base, new) instructions per run for every layer either result has; [] without layers."""
    a, b = result_layers(base), result_layers(new)
    if a is None or b is None:
        return []
    names = [n for n, _ in ordered(dict.fromkeys([*a, *b], 0.0))]
    return [(n, a.get(n, 0.0), b.get(n, 0.0)) for n in names]


def layer_change_table(label: str, base: TaskResult, new: TaskResult) -> Table | None:
    """One benchmark's change per layer between two results (two runs, or two sides of one)."""
    changes = layer_changes(base, new)
    if not changes:
        return None
    table = Table(title=f"{escape(label)}: instructions per run by layer", title_justify="left")
    for header in ("layer", "base", "new", "change", "%"):
        table.add_column(header, justify="left" if header == "layer" else "right")
    for layer, a, b in changes:
        if not round(a) and not round(b):
            continue
        pct = f"{(b - a) / a:+.1%}" if a else ""
        style = "red" if b - a >= 1 else "green" if b - a <= -1 else "dim"
        table.add_row(title(layer), f"{a:,.0f}", f"{b:,.0f}", f"[{style}]{b - a:+,.0f}[/{style}]", pct)
    total_a, total_b = sum(a for _, a, _ in changes), sum(b for _, _, b in changes)
    table.add_row("[bold]total[/bold]", f"{total_a:,.0f}", f"{total_b:,.0f}", f"{total_b - total_a:+,.0f}",
                  f"{(total_b - total_a) / total_a:+.1%}" if total_a else "")
    return table


def print_layers(results: list[TaskResult], console: Console, *, explain: bool = False) -> None:
    """The layer table of ``bench --layers``; with ``explain``, each result's top functions per layer."""
    table = layer_table(results)
    if table is None:
        return
    console.print(table)
    if explain:
        for t in explain_tables(results):
            console.print(t)
