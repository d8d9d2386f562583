"""The HTML report's section for grouped results (kind ``grouped``): dispatch overhead per op.

Bars grouped by benchmark, one bar per ``params["language"]`` /
``params["variant"]`` (Python eager, TorchScript, C++, ...). Results with
layers (``bench --layers``) also get one stacked bar per op and language, so
what Python adds over C++ shows as layers.
"""

from __future__ import annotations

import re

from harness.measure.callgrind.layers import title
from harness.model.result import TaskResult
from harness.options import NOISY_IQR_FRACTION
from harness.present import plots
from harness.present.html_parts import Runs, escape, latest_with, results_table, scaled
from harness.present.layer_table import result_layers

SERIES_PARAMS = ("language", "variant")


def _strip_series(name: str) -> str:
    """A task name without its language/variant parts, e.g. "add[language=cpp,threads=1]" -> "add[threads=1]"."""
    def keep(part: str) -> bool:
        key = part.split("=", 1)[0].strip()
        return key not in SERIES_PARAMS

    def repl(m: re.Match[str]) -> str:
        parts = [p for p in m.group(1).split(",") if keep(p)]
        return f"[{','.join(parts)}]" if parts else ""

    return re.sub(r"\[([^\]]*)\]", repl, name)


def dispatch_group(r: TaskResult) -> str:
    p = r.task.params
    base = str(p.get("benchmark") or p.get("sub_label") or _strip_series(r.task.name))
    threads = p.get("num_threads")
    return f"{base} ({threads} threads)" if threads not in (None, 1) else base


def dispatch_series(r: TaskResult) -> str:
    p = r.task.params
    return " / ".join(str(p[k]) for k in SERIES_PARAMS if p.get(k) not in (None, "")) or "value"


def dispatch_section(runs: Runs) -> str | None:
    found = latest_with(runs, lambda r: r.task.kind == "grouped")
    if found is None:
        return None
    index, results = found
    out = [
        "<h2 id=\"dispatch\">Dispatch overhead</h2>",
        f"<p>Cost of one call of each small op by language, from run #{index + 1}. "
        "Bars with a red edge and <span class=\"flag\">!</span> are noisy "
        f"(IQR above {NOISY_IQR_FRACTION:.0%} of the median).</p>",
    ]
    by_unit: dict[str, list[TaskResult]] = {}
    for r in results:
        by_unit.setdefault(r.value_unit, []).append(r)
    for unit, rs in by_unit.items():
        scale, label = scaled([r.value for r in rs], unit)
        groups = list(dict.fromkeys(dispatch_group(r) for r in rs))
        series = list(dict.fromkeys(dispatch_series(r) for r in rs))
        values = {(dispatch_group(r), dispatch_series(r)): r.value / scale for r in rs}
        noisy = {(dispatch_group(r), dispatch_series(r)) for r in rs if r.noisy}
        out.append(f"<h3>{escape(label)}</h3>")
        out.append(f'<div class="plot">{plots.grouped_bars(groups, series, values, noisy, label)}</div>')
        out.append(results_table(rs))
    out.extend(_layer_plot(results))
    return "\n".join(out)


def _layer_plot(results: list[TaskResult]) -> list[str]:
    layered = [(r, layers) for r in results if (layers := result_layers(r)) is not None]
    if not layered:
        return []
    names = list(dict.fromkeys(n for _, layers in layered for n in layers))
    groups = list(dict.fromkeys(dispatch_group(r) for r, _ in layered))
    series = list(dict.fromkeys(dispatch_series(r) for r, _ in layered))
    stacks = {(dispatch_group(r), dispatch_series(r)): [layers.get(n, 0.0) for n in names] for r, layers in layered}
    svg = plots.stacked_bars(groups, series, stacks, [title(n) for n in names], "instructions per call")
    return [
        '<h3 id="layers">Instructions by layer</h3>',
        "<p>One stacked bar per op and language (baseline subtracted): the part a Python bar has "
        "above its C++ neighbour is what Python adds, split into interpreter, bindings and GIL.</p>",
        f'<div class="plot">{svg}</div>',
    ]
