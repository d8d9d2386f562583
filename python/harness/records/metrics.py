"""Metric rows: TaskResults flattened to ``(name, metric, value)``, the unit of metric CSVs and of the gate.

A runner that reports named metrics puts them in ``extra["metrics"]``
(metric -> value) and the row name in ``extra["case"]``; any other result
becomes one row, its task name with ``median_<unit>``. A count made with
``--cache-sim`` adds a row per cache figure (``extra["cache"]``, per run, its
baseline subtracted), the metric named as the figure: ``estimated_cycles``,
``L1_hits``, ``D1mr``, ...
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from pathlib import Path

from harness.files.csv_file import write_csv
from harness.model.result import TaskResult

METRIC_COLUMNS = ("name", "metric", "value")

Row = tuple[str, str, float]


def metric_rows(results: Iterable[TaskResult]) -> list[Row]:
    """Rows of the successful results, in result order; failed results give none."""
    rows: list[Row] = []
    for r in results:
        if not r.ok:
            continue
        metrics = r.extra.get("metrics")
        side = f"@{r.task.side}" if r.task.side else ""  # an A/B run's rows, one per side
        if isinstance(metrics, dict):
            name = str(r.extra.get("case") or r.task.name) + side
            rows.extend((name, str(metric), float(value)) for metric, value in metrics.items())
        elif r.samples:
            rows.append((r.task.name + side, f"median_{r.unit}", r.median))
        cache = r.extra.get("cache")
        if isinstance(cache, dict):
            name = str(r.extra.get("case") or r.task.name) + side
            rows.extend((name, str(figure), float(value)) for figure, value in cache.items()
                        if isinstance(value, int | float) and not isinstance(value, bool))
    return rows


def format_number(value: float) -> str:
    """Integers without a decimal point (instruction counts), others to 10 significant digits."""
    if math.isfinite(value) and value == int(value) and abs(value) < 2**63:
        return str(int(value))
    return f"{value:.10g}"


def write_metric_csv(path: str | Path, results: Iterable[TaskResult]) -> int:
    """Write ``name,metric,value`` rows atomically; returns how many rows."""
    rows = metric_rows(results)
    write_csv(path, METRIC_COLUMNS, [(name, metric, format_number(value)) for name, metric, value in rows])
    return len(rows)
