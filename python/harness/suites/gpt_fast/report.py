"""The HTML report's section for gpt-fast results (kind ``gpt_fast``): achieved against target and peak.

Each measured row (``Experiment``) is one bar: its metric's achieved value,
the target for the device, and the device's peak in the metric's unit
(memory bandwidth against the peak bandwidth; FLOP utilisation is already a
share of the peak, whose peak is 1).
"""

from __future__ import annotations

from typing import Any

from harness.present import plots
from harness.present.html_parts import Runs, escape, latest_with, num_cell
from harness.suites.gpt_fast.experiment import Experiment
from harness.suites.gpt_fast.peak_check import WITHHELD, shown_share, shown_value
from harness.suites.gpt_fast.runner import experiments_of, peak_note_of

BANDWIDTH = "memory_bandwidth(GB/s)"
UTILIZATION = "flops_utilization"


def peak_of(metric: str, context: dict[str, Any]) -> float | None:
    """The device's peak in the unit of ``metric`` (None where the metric has no peak)."""
    peaks = context.get("peaks") or {}
    if metric == BANDWIDTH and peaks.get("bytes_per_s"):
        return float(peaks["bytes_per_s"]) / 1e9
    if metric == UTILIZATION:
        return 1.0
    return None


def kernel_section(runs: Runs) -> str | None:
    found = latest_with(runs, lambda r: r.task.kind == "gpt_fast" and bool(experiments_of(r)))
    if found is None:
        return None
    index, results = found
    out = [
        "<h2 id=\"kernels\">Kernel efficiency</h2>",
        f"<p>Achieved bandwidth / FLOP utilisation against target and peak, from run #{index + 1}. "
        "Bar: achieved; black tick: target; grey tick: the device's peak.</p>",
    ]
    by_metric: dict[str, list[tuple[Experiment, float | None]]] = {}
    for note in dict.fromkeys(n for n in map(peak_note_of, results) if n):
        out.append(f"<p><strong>Peak:</strong> {escape(note)}</p>")
    for r in results:
        context = r.extra.get("context") or {}
        for e in experiments_of(r):
            by_metric.setdefault(e.metric, []).append((e, peak_of(e.metric, context)))
    for metric, rows in by_metric.items():
        # A withheld value (a utilisation above 1) has no bar: the table row says why.
        plotted = [(e, p) for e, p in rows if shown_value(e.metric, e.actual) is not None]
        labels = [f"{e.name} {e.dtype}" for e, _ in plotted]
        actual = [e.actual for e, _ in plotted]
        target = [e.target for e, _ in plotted]
        peak = [p for _, p in plotted]
        out.append(f"<h3>{escape(metric)}</h3>")
        out.append(f'<div class="plot">{plots.against_targets(labels, actual, target, peak, metric)}</div>')
        cells = []
        for e, p in rows:
            a, t = shown_value(e.metric, e.actual), e.target
            # A share of the peak above 1 (a datasheet peak beaten) is withheld like a utilisation above 1.
            share = a / p if p and a is not None else None
            shown = shown_share(share)
            cells.append(
                f"<tr><td>{escape(e.name)}</td>"
                + num_cell(WITHHELD if a is None else f"{a:.4g}", a)
                + num_cell("" if t is None else f"{t:.4g}", t)
                + num_cell("" if not t or a is None else f"{a / t:.0%}", None if not t or a is None else a / t)
                + num_cell("" if p is None else f"{p:.4g}", p)
                + num_cell("" if share is None else WITHHELD if shown is None else f"{shown:.0%}", shown)
                + f"<td>{escape(e.dtype)}</td><td>{escape(e.device)}</td></tr>"
            )
        out.append(
            "<table class=\"sortable\"><thead><tr><th>benchmark</th><th>achieved</th><th>target</th>"
            "<th>of target</th><th>peak</th><th>of peak</th><th>dtype</th><th>device</th></tr></thead><tbody>"
            + "".join(cells) + "</tbody></table>"
        )
    return "\n".join(out)
