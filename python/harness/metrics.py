"""Metric rows: TaskResults flattened to ``(name, metric, value)``, the unit of metric CSVs and of the gate.

A runner that reports named metrics puts them in ``extra["metrics"]``
(metric -> value) and the row name in ``extra["case"]``; any other result
becomes one row, its task name with ``median_<unit>``.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from pathlib import Path

from .atomic import atomic_open
from .records import RunRecord
from .result import TaskResult

METRIC_COLUMNS = ("name", "metric", "value")

Row = tuple[str, str, float]


def metric_rows(results: Iterable[TaskResult]) -> list[Row]:
    """Rows of the successful results, in result order; failed results give none."""
    rows: list[Row] = []
    for r in results:
        if not r.ok:
            continue
        metrics = r.extra.get("metrics")
        if isinstance(metrics, dict):
            name = str(r.extra.get("case") or r.task.name)
            rows.extend((name, str(metric), float(value)) for metric, value in metrics.items())
        elif r.samples:
            rows.append((r.task.name, f"median_{r.unit}", r.median))
    return rows


def format_number(value: float) -> str:
    """Integers without a decimal point (instruction counts), others to 10 significant digits."""
    if math.isfinite(value) and value == int(value) and abs(value) < 2**63:
        return str(int(value))
    return f"{value:.10g}"


def write_metric_csv(path: str | Path, results: Iterable[TaskResult]) -> int:
    """Write ``name,metric,value`` rows atomically; returns how many rows.

    Once the shared CSV writer (``harness.csvfile``) is on main, this should
    become ``write_csv(path, METRIC_COLUMNS, rows)``.
    """
    import csv

    rows = metric_rows(results)
    with atomic_open(path, "w") as f:
        writer = csv.writer(f, lineterminator="\n")
        writer.writerow(METRIC_COLUMNS)
        writer.writerows((name, metric, format_number(value)) for name, metric, value in rows)
    return len(rows)


def write_outputs(path: str | Path, record: RunRecord) -> list[Path]:
    """``bench compile_time --output X.csv``: name,metric,value rows in X.csv, the run record in X.json."""
    csv_path = Path(path)
    write_metric_csv(csv_path, record.results)
    record_path = csv_path.with_suffix(".json")
    record.save(record_path)
    return [csv_path, record_path]
