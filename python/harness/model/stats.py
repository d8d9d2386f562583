"""Sample statistics: the C++ core's, so a table, a record and a compare never disagree.

Median, quartiles, IQR, mean, standard deviation, minimum and maximum come
from ``harness::compute_stats`` (csrc/core/stats.cpp): quantiles by linear
interpolation between closest ranks, as ``torch.quantile`` and numpy compute
them. Python code asks here; nothing else computes a quantile.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Iterable, Sequence

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



def bimodal(samples: Iterable[float], separation: float) -> bool:
    """Whether the samples fall into two clusters apart by more than ``separation`` x the median.

    A small IQR can hide a second mode (a quarter of the blocks on another core,
    another clock speed): split at the widest gap between neighbouring sorted
    samples; it is two modes when each side holds at least two samples and a
    tenth of them, and the gap is wider than ``separation`` x the median and than
    the spread within either side.
    """
    values = sorted(float(x) for x in samples)
    n = len(values)
    if n < 4:
        return False
    middle = values[n // 2] if n % 2 else (values[n // 2 - 1] + values[n // 2]) / 2
    least = max(2, math.ceil(n / 10))
    for i in range(least, n - least + 1):
        gap = values[i] - values[i - 1]
        spread = max(values[i - 1] - values[0], values[-1] - values[i])
        if gap > separation * abs(middle) and gap > spread:
            return True
    return False


# -- torch's display arithmetic ------------------------------------------------
# torch.utils.benchmark picks units, digits and significant figures with
# float32 tensor arithmetic. Tables and reprs are meant to be byte-for-byte
# torch's, so these few steps are computed the same way (near a power of ten,
# float32 and float64 disagree about the number of digits).


def log10_f32(x: float) -> float:
    """log10 of ``x`` whose floor and ceiling are those of torch's float32 ``tensor(x).log10()``.

    Only near an integer can float32 rounding move a floor or ceiling, so only
    there is torch asked (importing it takes seconds; plain tables need not).
    """
    value = math.log10(x) if x > 0 else math.nan
    if math.isfinite(value) and abs(value - round(value)) > 1e-4:
        return value
    import torch

    return torch.tensor(x).log10().item()


def significant_figures(sorted_samples: Sequence[float], median: float, *, floor: float, cap: int) -> int:
    """Digits of ``median`` that the middle half of the samples justifies, as torch estimates them.

    The spread of the middle half gives a rough 90% confidence interval (z = 1.645,
    no smaller than ``floor``); the figures are how many powers of ten the median
    is above it, between 1 and ``cap``.
    """
    import torch

    n = len(sorted_samples)
    middle = sorted_samples[n // 4 : int(math.ceil(3 * n / 4))]
    std = torch.tensor(middle).std(unbiased=False).item()
    sqrt_n = torch.tensor(len(middle)).sqrt().item()
    ci = max(1.645 * std / sqrt_n, floor)
    figures = math.floor(log10_f32(median / ci))
    return min(max(figures, 1), cap)
