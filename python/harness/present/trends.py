"""Trend charts: one per benchmark, its value in every run, steps marked, each point telling its run on hover.

matplotlib draws the chart (SVG for HTML, PNG for ``history show --plot
X.png``); the hover is plain SVG: a transparent circle over each point with
a ``<title>`` (run, label, commit, value), which every browser shows as a
tooltip, so the page needs no script and nothing from the network. The
circles sit where matplotlib drew the points: the figure is saved without
cropping, so its SVG coordinates are its pixel coordinates scaled to 72 dpi.

``trends_from_runs`` makes the same ``Trends`` the history database gives
out of run records (the estimated cycles of a ``--cache-sim`` count a series
of their own, as the history shows them by default), so the HTML report draws
trends of the files it is given.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from harness.history.changes import Change, find_changes
from harness.history.metrics import CACHE_HEADLINE, cache_figures, figure_unit
from harness.history.query import Benchmark, RunInfo, Trends
from harness.model.record import RunRecord
from harness.present import plots
from harness.present.history_table import time_unit
from harness.present.html_parts import escape

WIDTH, HEIGHT, DPI = 8.0, 2.8, 100.0
STEP_COLOR = "#c44e52"


def trends_from_runs(runs: Sequence[tuple[str, RunRecord]]) -> Trends:
    """Run records (oldest first) as the history's ``Trends``: every ok, finite value, and the estimated cycles
    of counts made with ``--cache-sim``."""
    infos, keys, rows = [], {}, []
    for j, (source, record) in enumerate(runs):
        env = record.environment
        repo = env.get("repository") if isinstance(env.get("repository"), dict) else {}
        torch = env.get("torch") if isinstance(env.get("torch"), dict) else {}
        infos.append(RunInfo(j, record.run_id or source, str(env.get("start_time") or ""), str(env.get("label") or ""),
                             str(repo.get("commit") or env.get("git_commit") or ""), str(repo.get("branch") or ""),
                             str(torch.get("version") or ""), str(env.get("harness_version") or ""),
                             str(env.get("hostname") or ""), "", record.interrupted is not None))
        for r in record.results:
            if not r.ok or not math.isfinite(r.value):
                continue
            series = [("", r.value_unit, r.higher_is_better, r.value)]
            cycles = cache_figures(r.extra).get(CACHE_HEADLINE)  # the history's default series, as its charts
            if cycles is not None:
                series.append((CACHE_HEADLINE, figure_unit(CACHE_HEADLINE), False, cycles))
            for metric, unit, higher_is_better, value in series:
                key = (r.task.suite, r.task.name, r.task.mode, r.task.side, metric)
                if key not in keys:
                    keys[key] = Benchmark(len(keys), *key[:4], r.task.kind, unit, higher_is_better, metric)
                    rows.append({})
                rows[keys[key].id].setdefault(j, value)
    values = np.full((len(keys), len(runs)), np.nan)
    for i, row in enumerate(rows):
        for j, v in row.items():
            values[i, j] = v
    return Trends(infos, list(keys.values()), values)


def _scale(unit: str, values: np.ndarray) -> tuple[float, str]:
    if unit == "s":
        name, scale = time_unit(float(np.median(values)))
        return scale, name
    return 1.0, unit


def _tooltip(run: RunInfo, value: float, unit: str) -> str:
    parts = [f"run {run.started.replace('T', ' ')[:19] or run.key}"]
    if run.label:
        parts.append(f"label {run.label}")
    if run.commit:
        parts.append(f"commit {run.commit[:12]}" + (f" ({run.branch})" if run.branch else ""))
    if run.runs > 1:
        parts.append(f"median of {run.runs} runs")
    parts.append(f"value {value:.4g} {unit}")
    return "\n".join(parts)


def _figure(trends: Trends, i: int, changes: Sequence[Change], width: float = WIDTH, height: float = HEIGHT):
    b = trends.benchmarks[i]
    points, values = trends.series(i)
    scale, unit = _scale(b.unit, values)
    fig = plots._figure(width, height)
    fig.set_dpi(DPI)
    fig.subplots_adjust(left=0.1, right=0.98, top=0.86, bottom=0.22)
    ax = fig.add_subplot()
    ax.plot(points, values / scale, marker="o", markersize=3, color=plots.PALETTE[0], linewidth=1.2)
    for c in changes:
        x = (points[c.step.at - 1] + points[c.step.at]) / 2
        ax.axvline(x, color=STEP_COLOR, linestyle="--", linewidth=1)
        ax.annotate(f"{c.step.change * 100:+.1f}%", (x, 1.0), xycoords=("data", "axes fraction"), color=STEP_COLOR,
                    ha="left", va="bottom", fontsize="small", fontweight="bold")
    ticks = points if len(points) <= 8 else points[np.linspace(0, len(points) - 1, 8).astype(int)]
    ax.set_xticks(ticks)
    ax.set_xticklabels([trends.runs[t].name[:16] for t in ticks], rotation=15, ha="right", fontsize="x-small")
    ax.set_ylabel(unit, fontsize="small")
    ax.set_title(b.full_name, loc="left", fontsize="small")
    ax.grid(alpha=0.3)
    return fig, ax, points, values, unit, scale


def trend_svg(trends: Trends, i: int, changes: Sequence[Change] = ()) -> str:
    """Benchmark ``i``'s chart as inline SVG, a ``<title>`` tooltip over every point."""
    fig, ax, points, values, unit, scale = _figure(trends, i, changes)
    fig.canvas.draw()
    pixels = ax.transData.transform(np.column_stack([points, values / scale]))
    height_px = fig.get_figheight() * fig.dpi
    to_pt = 72.0 / fig.dpi
    svg = plots._svg(fig, crop=False)
    marks = "".join(
        f'<circle class="point" cx="{x * to_pt:.2f}" cy="{(height_px - y) * to_pt:.2f}" r="4">'
        f"<title>{escape(_tooltip(trends.runs[p], v / scale, unit))}</title></circle>"
        for (x, y), p, v in zip(pixels, points, values, strict=True)
    )
    end = svg.rindex("</svg>")
    return f'{svg[:end]}<g class="hover">{marks}</g>{svg[end:]}'


def trends_section(trends: Trends, changes: Sequence[Change] | None = None, heading: str = "Trends") -> str | None:
    """``<h2 id="trends">`` and a chart per benchmark with two or more values; None when there is none."""
    if changes is None:
        changes = find_changes(trends)
    by_benchmark: dict[int, list[Change]] = {}
    for c in changes:
        by_benchmark.setdefault(c.benchmark.id, []).append(c)
    charts = [
        f'<div class="plot trend" data-benchmark="{escape(b.full_name)}">'
        f"{trend_svg(trends, i, by_benchmark.get(b.id, []))}</div>"
        for i, b in enumerate(trends.benchmarks) if np.count_nonzero(~np.isnan(trends.values[i])) >= 2
    ]
    if not charts:
        return None
    steps = len(changes)
    return "\n".join([
        f'<h2 id="trends">{escape(heading)}</h2>',
        f"<p>Each benchmark's value in every run; hover a point for its run, label, commit and value. "
        f"Dashed red lines mark steps beyond the noise ({steps} found).</p>",
        *charts,
    ])


def write_png(trends: Trends, changes: Sequence[Change], path: str) -> None:
    """Every benchmark's chart, one under another, in one PNG (replacing ``path`` only once written)."""
    import matplotlib.image

    from harness.files.atomic import atomic_open

    images = []
    for i, b in enumerate(trends.benchmarks):
        if np.count_nonzero(~np.isnan(trends.values[i])):
            fig, *_ = _figure(trends, i, [c for c in changes if c.benchmark.id == b.id])
            fig.canvas.draw()
            images.append(np.asarray(fig.canvas.buffer_rgba()))
    with atomic_open(path, "wb") as out:
        matplotlib.image.imsave(out, np.concatenate(images, axis=0), format="png")
