"""A run's kernels against its peak: a kernel faster than a measured peak proves the peak stale.

Utilisation is achieved FLOP/s over the peak, so it cannot exceed 1. When a
kernel of this run did exceed a measured (or cached) peak, the peak was
measured badly (on a busy machine, or by an older build): it is measured
again, or raised to the kernel's rate (peaks.restate_stale_peak, cache
included), this run's utilisation rows are scored again against the new
peak, and the result says so. A
figure that is still impossible (a datasheet peak beaten) is withheld
wherever figures are shown (``shown_value``).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from typing import Any

from harness.suites.gpt_fast import efficiency, targets
from harness.suites.gpt_fast.experiment import Experiment, Row
from harness.suites.gpt_fast.peaks import Peaks, restate_stale_peak

# A value of this metric is a share of the peak; above 1 it is no figure at all.
WITHHELD = "over peak"


def shown_value(metric: str, value: float | None) -> float | None:
    """``value`` where it is possible; None for a FLOP utilisation above 1 (the peak it used was wrong)."""
    if value is not None and metric == targets.FLOPS_UTILIZATION and value > 1.0:
        return None
    return value


def fastest_kernel(rows: Sequence[Row]) -> tuple[float, str] | None:
    """(the highest FLOP/s any shape of ``rows`` achieved, which row and shape), None if none counts FLOPs."""
    best: tuple[float, str] | None = None
    for row in rows:
        if not isinstance(row, Experiment) or row.metric != targets.FLOPS_UTILIZATION:
            continue
        for shape in row.shapes:
            if shape.get("flops") and shape.get("seconds"):
                rate = efficiency.achieved_flops_per_s(float(shape["flops"]), float(shape["seconds"]))
                if best is None or rate > best[0]:
                    best = (rate, f"{row.name} {row.dtype} (D={shape.get('D')})")
    return best


def _rescored_shape(shape: dict[str, Any], base: str, dtype: str, peaks: Peaks) -> dict[str, Any]:
    flops, seconds = float(shape["flops"]), float(shape["seconds"])
    out = {**shape, "value": efficiency.flops_utilization(flops, seconds, peaks.flops_per_s)}
    if shape.get("min_bytes"):
        bound = efficiency.roofline_bound(flops, float(shape["min_bytes"]), peaks.flops_per_s, peaks.bytes_per_s)
        out["roofline_bound"] = bound
        out["target"] = targets.flops_utilization_target(base, dtype, bound)
    return out


def rescore(row: Row, peaks: Peaks) -> Row:
    """A utilisation row scored against ``peaks``; other rows as they are."""
    if not isinstance(row, Experiment) or row.metric != targets.FLOPS_UTILIZATION:
        return row
    if not all(s.get("flops") and s.get("seconds") for s in row.shapes):
        return row
    base = row.name.split("[", 1)[0]
    shapes = tuple(_rescored_shape(s, base, row.dtype, peaks) for s in row.shapes)
    values = [s["value"] for s in shapes]
    goals = [s.get("target") for s in shapes]
    target = None if any(t is None for t in goals) else math.fsum(goals) / len(goals)
    return dataclasses.replace(row, shapes=shapes, actual=math.fsum(values) / len(values), target=target)


def check_against_peak(
    rows: Sequence[Row], peaks: Peaks, min_run_time: float
) -> tuple[list[Row], Peaks, str | None]:
    """(rows, peaks, note): unchanged with no note, or scored against the new peak and the note saying so."""
    fastest = fastest_kernel(rows)
    if fastest is None or fastest[0] <= peaks.flops_per_s:
        return list(rows), peaks, None
    raised = restate_stale_peak(peaks, fastest[0], by=fastest[1], min_run_time=min_run_time)
    if raised is peaks:
        note = (f"{fastest[1]} ran at {fastest[0] / 1e9:,.1f} GFLOP/s, above the {peaks.source} peak of "
                f"{peaks.flops_per_s / 1e9:,.1f} GFLOP/s ({peaks.detail}); its utilisation is withheld")
        return list(rows), peaks, note
    return [rescore(r, raised) for r in rows], raised, raised.detail
