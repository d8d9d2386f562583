"""The history's tables: each benchmark's values over runs with a sparkline, and the steps found in them.

``show_table`` is ``history show``: per benchmark its runs, first and latest
value, the latest against the first and against the run before, the range,
and a sparkline of every value (medians of equal bins when there are more
runs than characters). ``changes_table`` is ``history changes``: each step
with its size, the runs on each side (label, commit) and, where both runs
recorded them, the layers and functions whose instructions moved most (and,
for a step of a cache figure, the layers whose estimated cycles moved most).
A series is a benchmark's own value or one of its cache figures
(``history.metrics``); the figures' counts are shown in full, with their unit.
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np
from rich.table import Table
from rich.text import Text

from harness.history import query
from harness.history.changes import Change
from harness.history.database import History
from harness.history.metrics import COUNT_UNITS
from harness.model.phases import phases_of
from harness.model.result import TaskResult
from harness.model.task import Task
from harness.present.cache_table import cycles_layers
from harness.present.layer_table import layer_changes
from harness.present.phase_table import moved_phases_text
from harness.present.run_comparison import symbol_deltas
from harness.present.table import format_value

BARS = "▁▂▃▄▅▆▇█"
SPARK_WIDTH = 40
SPARK_FLOOR = 0.01  # the smallest range, as a share of the median, that a sparkline's bars span
TOP_MOVED = 3  # layers and functions shown per step


def sparkline(values: np.ndarray, width: int = SPARK_WIDTH) -> str:
    """Unicode bars, lowest to highest value; more values than ``width``: the mean of each of
    ``width`` consecutive bins (one pass: 10,000 runs x 200 benchmarks in milliseconds, where a
    median per bin took a sort of each)."""
    v = np.asarray(values, float)
    if len(v) == 0:
        return ""
    if len(v) > width:
        starts = np.arange(width) * len(v) // width
        v = np.add.reduceat(v, starts) / np.diff(np.append(starts, len(v)))
    low, high = float(v.min()), float(v.max())
    # Bars span at least SPARK_FLOOR of the level: a count's jitter of a few instructions stays flat.
    span = max(high - low, SPARK_FLOOR * abs(float(np.median(v))))
    if span <= 0:
        return BARS[0] * len(v)
    scaled = np.rint((v - low) / span * (len(BARS) - 1)).astype(int)
    return "".join(BARS[i] for i in scaled)


def time_unit(seconds: float) -> tuple[str, float]:
    """The unit a time reads best in. Not ``model.measurement.select_unit``: that one matches torch's
    float32 rounding by importing torch, 1-3 s that ``history show`` need not spend."""
    for name, scale in (("s", 1.0), ("ms", 1e-3), ("us", 1e-6)):
        if abs(seconds) >= scale * 0.9995:  # 999.7 ns reads 1 us at 3 digits, not 1e+03 ns
            return name, scale
    return "ns", 1e-9


def value_text(value: float, unit: str) -> str:
    """A value of a series: a time in its unit, a count (instructions, a cache figure) in full."""
    if unit == "s":
        name, scale = time_unit(value)
        return f"{value / scale:.3g} {name}"
    if unit == "instructions":
        return format_value(value, unit)
    if unit in COUNT_UNITS:
        return f"{value:,.0f} {unit}"
    return f"{value:.4g} {unit}".strip()


def _change(change: float, worse: bool) -> Text:
    if not math.isfinite(change):
        return Text("")
    style = "" if abs(change) < 0.005 else ("red" if worse else "green")
    return Text(f"{change * 100:+.1f}%", style=style)


def _worse(benchmark: query.Benchmark, change: float) -> bool:
    return change < 0 if benchmark.higher_is_better else change > 0


def show_table(trends: query.Trends, title: str) -> Table:
    """One row per benchmark with a value in any run."""
    table = Table(title=title, title_justify="left")
    table.add_column("benchmark", overflow="fold")
    for column in ("runs", "first", "latest", "vs first", "vs previous", "min", "max"):
        table.add_column(column, justify="right", no_wrap=True)
    table.add_column("trend (oldest to newest)", no_wrap=True)
    for i, b in enumerate(trends.benchmarks):
        points, values = trends.series(i)
        if not len(values):
            continue
        first, latest = float(values[0]), float(values[-1])
        previous = float(values[-2]) if len(values) > 1 else math.nan
        vs_first = latest / first - 1 if first else math.nan
        vs_previous = latest / previous - 1 if previous else math.nan
        table.add_row(
            Text(b.full_name), str(len(values)), value_text(first, b.unit), value_text(latest, b.unit),
            _change(vs_first, _worse(b, vs_first)), _change(vs_previous, _worse(b, vs_previous)),
            value_text(float(values.min()), b.unit), value_text(float(values.max()), b.unit), sparkline(values),
        )
    return table


@dataclasses.dataclass(frozen=True)
class Why:
    """What moved with a step: (layer, before, after) and (function, before, after), per run."""

    layers: list[tuple[str, float, float]]
    symbols: list[tuple[str, float, float]]
    phases: str = ""  # the torch compile phases whose own part moved most (results measured with --phases)
    cycles: list[tuple[str, float, float]] = dataclasses.field(default_factory=list)  # layers by estimated cycles


def _result(benchmark: query.Benchmark, extra: dict, number: int) -> TaskResult:
    task = Task(benchmark.suite, benchmark.name, benchmark.kind, {}, benchmark.mode, benchmark.side)
    return TaskResult(task=task, status="ok", unit=benchmark.unit, extra=extra, number_per_run=number)


def why(history: History, change: Change) -> Why:
    """The layers and functions that moved between the runs on the two sides of a step; for a step of a
    cache figure, the layers whose estimated cycles moved too (a count made with --cache-sim --layers)."""
    own = query.own_id(history, change.benchmark)
    found = query.details(history, own, [change.before.id, change.after.id]) if own is not None else {}
    if change.before.id not in found or change.after.id not in found:
        return Why([], [])
    before, after = (_result(change.benchmark, *found[r.id]) for r in (change.before, change.after))
    cycles: list[tuple[str, float, float]] = []
    if change.benchmark.metric:
        a, b = cycles_layers(before) or {}, cycles_layers(after) or {}
        cycles = sorted(((n, a.get(n, 0.0), b.get(n, 0.0)) for n in dict.fromkeys([*a, *b])
                         if round(b.get(n, 0.0) - a.get(n, 0.0))), key=lambda t: -abs(t[2] - t[1]))[:TOP_MOVED]
    layers = sorted(layer_changes(before, after), key=lambda t: -abs(t[2] - t[1]))
    symbols = sorted(symbol_deltas(before, after), key=lambda t: -abs(t[3]))
    phases_before, phases_after = phases_of(before.extra), phases_of(after.extra)
    phases = ""
    if phases_before is not None and phases_after is not None and phases_before.unit == phases_after.unit:
        phases = moved_phases_text(phases_before, phases_after)
    return Why([t for t in layers if t[2] != t[1]][:TOP_MOVED],
               [(s, a, b) for s, a, b, d in symbols if d][:TOP_MOVED], phases, cycles)


def _side(run: query.RunInfo) -> str:
    parts = [run.label, run.commit[:10], run.started.replace("T", " ")[:16]]
    return " ".join(p for p in parts if p)


def _moved(items: list[tuple[str, float, float]]) -> str:
    return "; ".join(f"{name} {b - a:+,.0f}" for name, a, b in items)


def changes_table(history: History, changes: list[Change], title: str) -> Table:
    table = Table(title=title, title_justify="left")
    table.add_column("benchmark", overflow="fold")
    table.add_column("step", justify="right", no_wrap=True)
    table.add_column("before", justify="right", no_wrap=True)
    table.add_column("after", justify="right", no_wrap=True)
    table.add_column("last run before", overflow="fold")
    table.add_column("first run after", overflow="fold")
    table.add_column("what moved (instructions per run; estimated cycles per run)", overflow="fold")
    for c in changes:
        b = c.benchmark
        reason = why(history, c)
        moved = "; ".join(filter(None, [
            f"phases: {reason.phases}" if reason.phases else "",
            f"layers: {_moved(reason.layers)}" if reason.layers else "",
            f"functions: {_moved(reason.symbols)}" if reason.symbols else "",
            f"layers by estimated cycles: {_moved(reason.cycles)}" if reason.cycles else "",
        ]))
        step = _change(c.step.change, c.worse)
        if c.step.tentative:
            step.append(" (newest runs only)")
        table.add_row(Text(b.full_name), step, value_text(c.step.before, b.unit), value_text(c.step.after, b.unit),
                      Text(_side(c.before)), Text(_side(c.after)), Text(moved))
    return table
