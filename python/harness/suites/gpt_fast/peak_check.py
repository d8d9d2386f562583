"""A run's kernels against its peaks: a kernel faster than a measured peak proves the peak stale.

Utilisation is achieved FLOP/s over the peak FLOP/s, and a kernel's share of
the peak bandwidth is its bytes/s over the peak bytes/s, so neither can
exceed 1. When a kernel of this run did exceed a measured (or cached) peak of
either kind (``peaks.PeakKind``), the peaks were measured badly (on a busy
machine, or by an older build): they are measured again, or raised to the
kernel's rate (peaks.restate_stale_peak, cache included), every figure of
this run's rows that comes from a peak (utilisation, targets, roofline
bounds) is scored again against the new peaks, and the result says so. A
share that is still impossible (a datasheet peak beaten) is withheld
wherever figures are shown (``shown_value``, ``shown_share``).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from typing import Any

from harness.suites.gpt_fast import efficiency, targets
from harness.suites.gpt_fast.experiment import Experiment, Row
from harness.suites.gpt_fast.peaks import BANDWIDTH_PEAK, FLOP_PEAK, Observed, PeakKind, Peaks, restate_stale_peak

# A share of a peak above 1 is no figure at all.
WITHHELD = "over peak"


def shown_share(share: float | None) -> float | None:
    """A share of a peak where it is possible; None above 1 (the peak it used was wrong)."""
    return None if share is not None and share > 1.0 else share


def shown_value(metric: str, value: float | None) -> float | None:
    """``value`` where it is possible; None for a FLOP utilisation above 1 (the peak it used was wrong)."""
    return shown_share(value) if metric == targets.FLOPS_UTILIZATION else value


def _rate(metric: str, shape: dict[str, Any]) -> tuple[PeakKind, float] | None:
    """The rate a shape of a ``metric`` row reached, as the kind of peak it is measured against."""
    if metric == targets.FLOPS_UTILIZATION and shape.get("flops") and shape.get("seconds"):
        return FLOP_PEAK, efficiency.achieved_flops_per_s(float(shape["flops"]), float(shape["seconds"]))
    if metric == targets.BANDWIDTH and shape.get("value"):
        return BANDWIDTH_PEAK, float(shape["value"]) * 1e9  # GB/s, kernels' and models' alike
    return None


def _where(shape: dict[str, Any]) -> str:
    if "D" in shape:
        return f"D={shape['D']}"
    return str((shape.get("config") or {}).get("name", ""))


def fastest_rates(rows: Sequence[Row]) -> list[Observed]:
    """The highest rate of each kind of peak any shape of ``rows`` reached, and which row and shape
    (a kind no row measures is left out)."""
    best: dict[str, Observed] = {}
    for row in rows:
        if not isinstance(row, Experiment):
            continue
        for shape in row.shapes:
            found = _rate(row.metric, shape)
            if found is None:
                continue
            kind, rate = found
            if kind.field not in best or rate > best[kind.field].rate:
                best[kind.field] = Observed(kind, rate, f"{row.name} {row.dtype} ({_where(shape)})")
    return list(best.values())


def _rescored_shape(shape: dict[str, Any], metric: str, base: str, dtype: str, peaks: Peaks) -> dict[str, Any]:
    """The shape's figures that come from a peak, from ``peaks``."""
    if metric == targets.FLOPS_UTILIZATION and shape.get("flops") and shape.get("seconds"):
        flops, seconds = float(shape["flops"]), float(shape["seconds"])
        out = {**shape, "value": efficiency.flops_utilization(flops, seconds, peaks.flops_per_s)}
        if shape.get("min_bytes"):
            bound = efficiency.roofline_bound(flops, float(shape["min_bytes"]), peaks.flops_per_s, peaks.bytes_per_s)
            out["roofline_bound"] = bound
            out["target"] = targets.flops_utilization_target(base, dtype, bound)
        return out
    if metric == targets.BANDWIDTH:
        return {**shape, "target": targets.bandwidth_target(base, dtype, peaks)}
    if metric == targets.TOKENS and shape.get("bytes_per_token"):
        return {**shape, "target": targets.tokens_target(base, dtype, peaks, float(shape["bytes_per_token"]))}
    return shape


def rescore(row: Row, peaks: Peaks) -> Row:
    """A row's figures that come from a peak (utilisation, targets) scored against ``peaks``; other rows as they are."""
    if not isinstance(row, Experiment) or not row.shapes:
        return row
    base = row.name.split("[", 1)[0]
    shapes = tuple(_rescored_shape(s, row.metric, base, row.dtype, peaks) for s in row.shapes)
    values = [float(s["value"]) for s in shapes]
    goals = [s.get("target") for s in shapes]
    target = None if any(t is None for t in goals) else math.fsum(goals) / len(goals)
    return dataclasses.replace(row, shapes=shapes, actual=math.fsum(values) / len(values), target=target)


def check_against_peak(
    rows: Sequence[Row], peaks: Peaks, min_run_time: float
) -> tuple[list[Row], Peaks, str | None]:
    """(rows, peaks, note): unchanged with no note, or scored against the new peaks and the note saying so."""
    observed = fastest_rates(rows)
    stale = [o for o in observed if o.rate > o.kind.of(peaks)]
    if not stale:
        return list(rows), peaks, None
    raised = restate_stale_peak(peaks, observed, min_run_time=min_run_time)
    if raised is peaks:
        note = "; ".join(f"{o.by} ran at {o.kind.text(o.rate)}, above the {peaks.source} peak of "
                         f"{o.kind.text(o.kind.of(peaks))} ({peaks.detail}); its {o.kind.share} is withheld"
                         for o in stale)
        return list(rows), peaks, note
    return [rescore(r, raised) for r in rows], raised, raised.detail
