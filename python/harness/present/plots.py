"""Plots for the HTML report, rendered by matplotlib (Agg, no display) to inline SVG.

Each function takes plain numbers and labels and returns an ``<svg>`` element
as text; choosing what to plot from results is the report's job.
"""

from __future__ import annotations

import io
from collections.abc import Sequence

import matplotlib
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

NOISY_COLOR = "#d62728"
PALETTE = ["#4c72b0", "#dd8452", "#55a868", "#8172b3", "#937860", "#da8bc3", "#8c8c8c", "#ccb974", "#64b5cd"]


def _svg(fig: Figure, crop: bool = True) -> str:
    """``crop=False`` keeps the figure's own size, so its pixel coordinates map onto the SVG's."""
    buf = io.StringIO()
    with matplotlib.rc_context({"svg.fonttype": "none"}):  # text stays text: smaller, selectable
        fig.savefig(buf, format="svg", bbox_inches="tight" if crop else None)
    text = buf.getvalue()
    return text[text.index("<svg") :]


def _figure(width: float, height: float) -> Figure:
    # A bare Figure on an Agg canvas: no pyplot state, never a GUI backend,
    # and the process-wide backend choice of a caller is left alone.
    fig = Figure(figsize=(width, height), dpi=100)
    FigureCanvasAgg(fig)
    fig.patch.set_facecolor("white")
    return fig


def grouped_bars(
    groups: Sequence[str],
    series: Sequence[str],
    values: dict[tuple[str, str], float],
    noisy: set[tuple[str, str]],
    ylabel: str,
) -> str:
    """One cluster per group, one bar per series; noisy bars get a red edge and a "!"."""
    width = 0.8 / max(len(series), 1)
    fig = _figure(max(6.0, 0.9 * len(groups) * max(len(series), 1) * 0.45 + 2), 4.2)
    ax = fig.add_subplot()
    for i, name in enumerate(series):
        xs, hs, keys = [], [], []
        for g_index, group in enumerate(groups):
            if (group, name) in values:
                xs.append(g_index - 0.4 + width * (i + 0.5))
                hs.append(values[(group, name)])
                keys.append((group, name))
        bars = ax.bar(xs, hs, width=width * 0.95, label=name, color=PALETTE[i % len(PALETTE)])
        for bar, key in zip(bars, keys, strict=True):
            if key in noisy:
                bar.set_edgecolor(NOISY_COLOR)
                bar.set_linewidth(2)
                ax.annotate("!", (bar.get_x() + bar.get_width() / 2, bar.get_height()), ha="center",
                            va="bottom", color=NOISY_COLOR, fontweight="bold")
    ax.set_xticks(range(len(groups)))
    ax.set_xticklabels(groups, rotation=30 if len(groups) > 4 else 0, ha="right" if len(groups) > 4 else "center")
    ax.set_ylabel(ylabel)
    ax.grid(axis="y", alpha=0.3)
    ax.set_axisbelow(True)
    if len(series) > 1:
        ax.legend(frameon=False)
    return _svg(fig)


def stacked_bars(
    groups: Sequence[str],
    series: Sequence[str],
    stacks: dict[tuple[str, str], Sequence[float]],
    layers: Sequence[str],
    ylabel: str,
) -> str:
    """One cluster per group, one bar per series, each bar stacked by ``layers`` (values in that order).

    Negative parts (a layer the baseline cost more than the statement) are
    drawn as 0: a stack cannot show them; the tables have the exact figures.
    """
    width = 0.8 / max(len(series), 1)
    fig = _figure(max(6.0, 0.5 * len(groups) * max(len(series), 1) + 3), 4.8)
    ax = fig.add_subplot()
    colors = [*PALETTE, "#2ca02c", "#9467bd", "#17becf", "#bcbd22", "#7f7f7f"]
    for i, name in enumerate(series):
        keys = [(g_index, g) for g_index, g in enumerate(groups) if (g, name) in stacks]
        xs = [g_index - 0.4 + width * (i + 0.5) for g_index, _ in keys]
        bottoms = [0.0] * len(keys)
        for j, layer in enumerate(layers):
            heights = [max(stacks[(g, name)][j], 0.0) for _, g in keys]
            ax.bar(xs, heights, width=width * 0.9, bottom=bottoms, color=colors[j % len(colors)],
                   label=layer if i == 0 else None, edgecolor="white", linewidth=0.3)
            bottoms = [b + h for b, h in zip(bottoms, heights, strict=True)]
        for x, top in zip(xs, bottoms, strict=True):
            ax.annotate(name, (x, top), ha="center", va="bottom", fontsize="x-small", rotation=90)
    ax.set_xticks(range(len(groups)))
    ax.set_xticklabels(groups, rotation=30 if len(groups) > 4 else 0, ha="right" if len(groups) > 4 else "center")
    ax.set_ylabel(ylabel)
    ax.grid(axis="y", alpha=0.3)
    ax.set_axisbelow(True)
    ax.legend(frameon=False, fontsize="small", loc="center left", bbox_to_anchor=(1.01, 0.5))
    return _svg(fig)


def horizontal_bars(labels: Sequence[str], values: Sequence[float], noisy: Sequence[bool], xlabel: str) -> str:
    fig = _figure(7.5, 0.9 + 0.32 * len(labels))
    ax = fig.add_subplot()
    ys = range(len(labels))
    colors = [NOISY_COLOR if n else PALETTE[0] for n in noisy]
    ax.barh(list(ys), list(values), color=colors)
    ax.set_yticks(list(ys))
    ax.set_yticklabels(labels)
    ax.invert_yaxis()
    ax.set_xlabel(xlabel)
    ax.grid(axis="x", alpha=0.3)
    ax.set_axisbelow(True)
    return _svg(fig)


def against_targets(
    labels: Sequence[str],
    actual: Sequence[float],
    target: Sequence[float | None],
    peak: Sequence[float | None],
    xlabel: str,
) -> str:
    """Achieved value per kernel as a bar, its target as a black tick, the peak as a grey dashed tick."""
    fig = _figure(7.5, 1.1 + 0.4 * len(labels))
    ax = fig.add_subplot()
    ys = list(range(len(labels)))
    ax.barh(ys, list(actual), color=PALETTE[0], label="achieved", height=0.6)
    t_ys = [y for y, t in zip(ys, target, strict=True) if t is not None]
    if t_ys:
        ax.scatter([t for t in target if t is not None], t_ys, marker="|", s=400, color="black",
                   linewidths=2.5, label="target", zorder=3)
    p_ys = [y for y, p in zip(ys, peak, strict=True) if p is not None]
    if p_ys:
        ax.scatter([p for p in peak if p is not None], p_ys, marker="|", s=400, color="#888888",
                   linewidths=1.5, linestyle="--", label="peak", zorder=3)
    ax.set_yticks(ys)
    ax.set_yticklabels(labels)
    ax.invert_yaxis()
    ax.set_xlabel(xlabel)
    right = max([*actual, *(t for t in target if t is not None), *(p for p in peak if p is not None), 0.0])
    ax.set_xlim(0, right * 1.05 or 1.0)
    ax.grid(axis="x", alpha=0.3)
    ax.set_axisbelow(True)
    ax.legend(frameon=False, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    return _svg(fig)


def history(
    run_labels: Sequence[str],
    lines: dict[str, list[float | None]],
    noisy: dict[str, list[bool]],
    ylabel: str,
) -> str:
    """One line per benchmark across runs; gaps where a run lacks it; noisy points hollow red."""
    fig = _figure(8.0, 4.0)
    ax = fig.add_subplot()
    xs = list(range(len(run_labels)))
    for i, (name, values) in enumerate(lines.items()):
        color = PALETTE[i % len(PALETTE)]
        pts = [(x, v) for x, v in zip(xs, values, strict=True) if v is not None]
        ax.plot([x for x, _ in pts], [v for _, v in pts], marker="o", color=color, label=name)
        bad = [(x, v) for x, v, n in zip(xs, values, noisy.get(name, [False] * len(xs)), strict=True)
               if v is not None and n]
        if bad:
            ax.scatter([x for x, _ in bad], [v for _, v in bad], s=120, facecolors="none",
                       edgecolors=NOISY_COLOR, linewidths=2, zorder=3)
    ax.set_xticks(xs)
    ax.set_xticklabels(run_labels, rotation=20, ha="right")
    ax.set_ylabel(ylabel)
    ax.grid(alpha=0.3)
    if len(lines) <= 15:
        ax.legend(frameon=False, fontsize="small", loc="center left", bbox_to_anchor=(1.01, 0.5))
    return _svg(fig)
