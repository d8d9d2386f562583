"""Sample statistics: the C++ core's, so a table, a record and a compare never disagree.

Median, quartiles, IQR, mean, standard deviation, minimum and maximum come
from ``harness::compute_stats`` (csrc/core/stats.cpp): quantiles by linear
interpolation between closest ranks, as ``torch.quantile`` and numpy compute
them. Python code asks here; nothing else computes a quantile.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Iterable

from harness.core import native


@dataclasses.dataclass(frozen=True)
class Summary:
    n: int
    min: float
    max: float
    mean: float
    stddev: float
    p25: float
    median: float
    p75: float

    @property
    def iqr(self) -> float:
        return self.p75 - self.p25


_NAN = float("nan")
EMPTY = Summary(0, _NAN, _NAN, _NAN, _NAN, _NAN, _NAN, _NAN)


def summarize(samples: Iterable[float]) -> Summary:
    values = [float(x) for x in samples]
    if not values:
        return EMPTY
    s = native().compute_stats(values)
    return Summary(len(values), s["min"], s["max"], s["mean"], s["stddev"], s["p25"], s["median"], s["p75"])


def median(samples: Iterable[float]) -> float:
    return summarize(samples).median


def quantile(samples: Iterable[float], q: float) -> float:
    """The ``q`` quantile (0 <= q <= 1) by the core's interpolation."""
    values = [float(x) for x in samples]
    return native().quantile(values, q) if values else _NAN


def relative_iqr(summary: Summary) -> float:
    """IQR as a share of the median (0 when the median is not positive)."""
    return summary.iqr / summary.median if summary.median > 0 and math.isfinite(summary.iqr) else 0.0
