"""Cache figures of counts made with ``--cache-sim``: a run's table, and the change between two results.

Everything here reads ``extra["cache"]`` of a result (every figure per run,
its baseline subtracted, written by ``measure.callgrind.details``) and, for
layers, ``extra["cycles_layers"]`` (estimated cycles of ``number_per_run``
runs per layer). The report's section has both: the newest run's figures
per benchmark and, with layers, its estimated cycles per layer against the
latest earlier run that has them (``compare --layers``'s table, in HTML).
"""

from __future__ import annotations

from collections.abc import Iterable

from rich.markup import escape
from rich.table import Table

from harness.measure.callgrind.layers import ordered, title
from harness.model.result import TaskResult
from harness.present import html_parts
from harness.present.html_parts import Runs, latest_with, num_cell, run_label

# The columns of a run's table: what a reader compares first.
SHOWN = ("Ir", "Dr", "Dw", "L1_hits", "LL_hits", "RAM_hits", "estimated_cycles")
# The figures a comparison reports, headline first.
COMPARED = ("estimated_cycles", "Ir", "L1_hits", "LL_hits", "RAM_hits")


def cache_of(r: TaskResult) -> dict[str, float] | None:
    """A result's cache figures per run, or None (not a cache simulation's, or failed)."""
    cache = r.extra.get("cache") if r.ok else None
    if not isinstance(cache, dict) or not cache:
        return None
    return {str(k): float(v) for k, v in cache.items() if isinstance(v, int | float) and not isinstance(v, bool)}


def cache_table(results: Iterable[TaskResult]) -> Table | None:
    """A row per result with cache figures: instructions, data accesses, hits per level, estimated cycles."""
    rows = [(r, c) for r in results if (c := cache_of(r)) is not None]
    if not rows:
        return None
    table = Table(title="cache simulation per run (baseline subtracted): estimated cycles = L1 hits + 5 x LL hits "
                        "+ 35 x RAM hits", title_justify="left")
    table.add_column("benchmark")
    for name in SHOWN:
        table.add_column(name.replace("_", " "), justify="right")
    for r, c in rows:
        table.add_row(escape(r.task.full_name), *(f"{c.get(name, 0):,.0f}" for name in SHOWN))
    return table


def cache_section(runs: Runs) -> str | None:
    """The report's section: the newest run's cache figures per benchmark (counts made with --cache-sim)."""
    found = latest_with(runs, lambda r: cache_of(r) is not None)
    if found is None:
        return None
    index, results = found
    source, record = runs[index]
    geometry = (record.environment.get("cache_sim") or {}).get("geometry") or {}
    shape = ", ".join(f"{level} {size // 1024:,} KiB {ways}-way {line} B lines"
                      for level, (size, ways, line) in geometry.items())
    head = "".join(f"<th>{html_parts.escape(h)}</th>" for h in ("benchmark", *(n.replace("_", " ") for n in SHOWN)))
    rows = []
    for r in results:
        c = cache_of(r) or {}
        rows.append(f"<tr><td>{html_parts.escape(r.task.full_name)}</td>"
                    + "".join(num_cell(f"{c.get(n, 0):,.0f}", c.get(n, 0)) for n in SHOWN) + "</tr>")
    parts = [
        '<h2 id="cache">Cache figures</h2>',
        f"<p>{html_parts.escape(run_label(index, record, source))}: per run, baseline subtracted, "
        f"under callgrind's cache simulation{' (' + html_parts.escape(shape) + ')' if shape else ''}; "
        "estimated cycles = L1 hits + 5 x LL hits "
        "+ 35 x RAM hits (iai-callgrind's weights).</p>",
        f'<table class="sortable"><thead><tr>{head}</tr></thead><tbody>{"".join(rows)}</tbody></table>',
    ]
    return "\n".join(parts + _cycles_layers_html(runs, index, results))


def _identity(r: TaskResult) -> tuple[str, str, str, str]:
    return (r.task.suite, r.task.name, r.task.mode, r.task.side)


def _cycles_layers_html(runs: Runs, index: int, results: list[TaskResult]) -> list[str]:
    """Per benchmark of the newest run counted with --cache-sim --layers: its estimated cycles per layer and,
    where an earlier run counted it so too, the change since the latest such run (what compare --layers
    prints)."""
    layered = [(r, layers) for r in results if (layers := cycles_layers(r)) is not None]
    if not layered:
        return []
    out = ['<h3 id="cache-layers">Estimated cycles by layer</h3>',
           "<p>Per run, baseline subtracted (<code>bench --mode instructions --cache-sim --layers</code>): each "
           "layer's estimated cycles, adding up to the benchmark's; where an earlier run of this report counted "
           "the benchmark so too, the change since the latest one, as <code>compare --layers</code> shows it.</p>"]
    for r, new in layered:
        name = html_parts.escape(r.task.full_name)
        found = next(((i, base) for i in range(index - 1, -1, -1) for old in runs[i][1].results
                      if _identity(old) == _identity(r) and (base := cycles_layers(old)) is not None), None)
        if found is None:
            head = ("layer", "estimated cycles", "share")
            total = sum(new.values())
            body = [f"<tr><td>{html_parts.escape(title(layer))}</td>" + num_cell(f"{c:,.0f}", c)
                    + num_cell(f"{c / total:.1%}" if total else "", c / total if total else None) + "</tr>"
                    for layer, c in new.items() if round(c)]
            caption = f"{name}: estimated cycles per run by layer"
        else:
            at, base = found
            head = ("layer", "base", "new", "change", "%")
            body = []
            for layer, _ in ordered(dict.fromkeys([*base, *new], 0.0)):
                x, y = base.get(layer, 0.0), new.get(layer, 0.0)
                if round(x) or round(y):
                    pct = (y - x) / x if x else None
                    body.append(f"<tr><td>{html_parts.escape(title(layer))}</td>" + num_cell(f"{x:,.0f}", x)
                                + num_cell(f"{y:,.0f}", y) + num_cell(f"{y - x:+,.0f}", y - x)
                                + num_cell("" if pct is None else f"{pct:+.1%}", pct) + "</tr>")
            caption = (f"{name}: estimated cycles per run by layer, "
                       f"{html_parts.escape(run_label(at, runs[at][1], runs[at][0]))} (base) → "
                       f"{html_parts.escape(run_label(index, runs[index][1], runs[index][0]))} (new)")
        out.append(f'<table class="sortable cache-layers"><caption>{caption}</caption><thead><tr>'
                   + "".join(f"<th>{h}</th>" for h in head) + f'</tr></thead><tbody>{"".join(body)}</tbody></table>')
    return out


def cache_changes(base: TaskResult, new: TaskResult) -> list[tuple[str, float, float]]:
    """(figure, base, new) per run of the compared figures; [] unless both results have them."""
    a, b = cache_of(base), cache_of(new)
    if a is None or b is None:
        return []
    return [(name, a.get(name, 0.0), b.get(name, 0.0)) for name in COMPARED]


def cycles_layers(r: TaskResult) -> dict[str, float] | None:
    """Estimated cycles per run of each layer, in display order; None without them."""
    counts = r.extra.get("cycles_layers") if r.ok else None
    if not isinstance(counts, dict) or not counts:
        return None
    number = r.number_per_run or 1
    return {layer: c / number for layer, c in ordered(counts)}


def cache_change_table(rows: Iterable[tuple[str, TaskResult, TaskResult]]) -> Table | None:
    """Per benchmark (label, base, new) with cache figures on both sides: each compared figure's change."""
    shown = [(label, changes) for label, base, new in rows if (changes := cache_changes(base, new))]
    if not shown:
        return None
    table = Table(title="cache simulation per run: base -> new (change)", title_justify="left")
    table.add_column("benchmark")
    for name in COMPARED:
        table.add_column(name.replace("_", " "), justify="right")
    for label, changes in shown:
        table.add_row(escape(label), *(_change_cell(a, b) for _, a, b in changes))
    return table


def cycles_layer_change_table(label: str, base: TaskResult, new: TaskResult) -> Table | None:
    """One benchmark's change of estimated cycles per layer (both results counted with --cache-sim --layers)."""
    a, b = cycles_layers(base), cycles_layers(new)
    if a is None or b is None:
        return None
    table = Table(title=f"{escape(label)}: estimated cycles per run by layer", title_justify="left")
    for header in ("layer", "base", "new", "change", "%"):
        table.add_column(header, justify="left" if header == "layer" else "right")
    for layer, _ in ordered(dict.fromkeys([*a, *b], 0.0)):
        x, y = a.get(layer, 0.0), b.get(layer, 0.0)
        if round(x) or round(y):
            table.add_row(title(layer), f"{x:,.0f}", f"{y:,.0f}", f"{y - x:+,.0f}", f"{(y - x) / x:+.1%}" if x else "")
    return table


def _change_cell(a: float, b: float) -> str:
    pct = f" ({(b - a) / a:+.1%})" if a else ""
    return f"{a:,.0f} -> {b:,.0f}{pct}"
