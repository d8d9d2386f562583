"""Where a series of values changed level: ruptures finds candidate change points, scipy tests each step.

``find_steps(values, min_effect)``, for one benchmark's values in run order:

1. the values are scaled by their noise (a robust spread: the median
   absolute difference of neighbours, at least a quarter of ``min_effect``
   of the level, so an instruction count that never jitters is not split on
   one instruction); over ``MAX_POINTS`` runs, medians of equal blocks of
   runs stand for them (ruptures' PELT is quadratic at worst);
2. ruptures' PELT with the l2 cost (``KernelCPD(kernel="linear")``, in C)
   and a penalty of ``PENALTY * log(n)`` on the scaled values proposes
   change points; with blocks, each is moved to the best split among the
   runs of its blocks;
3. each step is kept only when Welch's t test of the runs on its two sides
   (up to the neighbouring steps) gives p < ``alpha`` and the medians differ
   by at least ``min_effect``; the weakest failing step is dropped and the
   rest tested again, until every step left passes;
4. the newest runs, too few for a segment of their own (``MIN_SIZE``), are
   tested against the level before them: a step there is ``tentative`` until
   more runs confirm it.
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np

from harness.history.query import Benchmark, RunInfo, Trends
from harness.options import DEFAULT_MIN_EFFECT, DEFAULT_NOISE_MARGIN

ALPHA = 1e-4  # a step is real when the t test's p is below this (many benchmarks x many runs are tested)
MIN_SIZE = 3  # runs on each side of a step found in the middle of a history
MAX_POINTS = 250  # beyond this many runs, block medians go to ruptures
PENALTY = 3.0  # times log(n), on values scaled to unit noise


@dataclasses.dataclass(frozen=True)
class Step:
    """A change of level: ``at`` is the first value at the new level (an index into the values given),
    ``before`` and ``after`` the medians of the two sides, ``p_value`` Welch's test of them."""

    at: int
    before: float
    after: float
    p_value: float
    tentative: bool = False  # only the newest run(s) are at the new level

    @property
    def change(self) -> float:
        """Relative change, after / before - 1."""
        return self.after / self.before - 1 if self.before else math.inf


def _noise(x: np.ndarray, min_effect: float) -> float:
    spread = 1.4826 * float(np.median(np.abs(np.diff(x)))) / math.sqrt(2) if len(x) > 1 else 0.0
    level = abs(float(np.median(x)))
    return max(spread, min_effect * level / 4, 1e-300)


def _candidates(x: np.ndarray, min_effect: float) -> list[int]:
    n = len(x)
    block = math.ceil(n / MAX_POINTS)
    m = n // block
    y = np.median(x[: m * block].reshape(m, block), axis=1) if block > 1 else x
    size = MIN_SIZE if block == 1 else 2
    if m < 2 * size:
        return []
    import ruptures  # ~1 s of scipy imports: only where change points are asked for

    z = (y - np.median(y)) / _noise(y, min_effect)
    found = ruptures.KernelCPD(kernel="linear", min_size=size).fit(z.reshape(-1, 1)).predict(pen=PENALTY * math.log(m))
    points = [int(b) * block for b in found[:-1]]
    if block == 1:
        return points
    return _refine(x, points, block)


def _refine(x: np.ndarray, points: list[int], block: int) -> list[int]:
    """Each block boundary moved to the best l2 split of the runs within a block of it."""
    out = []
    bounds = [0, *points, len(x)]
    for i, k in enumerate(points):
        lo, hi = bounds[i], bounds[i + 2]
        seg = x[lo:hi]
        c = np.cumsum(seg)
        total, n = c[-1], len(seg)
        left = np.arange(1, n)
        gain = (c[:-1] - left * total / n) ** 2 * n / (left * (n - left))  # between-group sum of squares
        first, last = max(k - block - lo, MIN_SIZE), min(k + block - lo, n - MIN_SIZE)
        if first > last:
            out.append(k)
            continue
        out.append(lo + first + int(np.argmax(gain[first - 1:last])))
    return sorted(set(out))


def _test(a: np.ndarray, b: np.ndarray) -> float:
    """Welch's t test of two sides; sides that never vary differ surely (p 0) or not at all (p 1)."""
    if len(a) < 2 or len(b) < 2:
        return 1.0
    if np.ptp(a) == 0 and np.ptp(b) == 0:
        return 0.0 if a[0] != b[0] else 1.0
    from scipy import stats

    return float(stats.ttest_ind(a, b, equal_var=False).pvalue)


def _effect(before: float, after: float) -> float:
    return abs(after / before - 1) if before else math.inf


def _prune(x: np.ndarray, points: list[int], min_effect: float, alpha: float) -> list[Step]:
    points = sorted(points)
    while True:
        bounds = [0, *points, len(x)]
        steps = []
        for i, k in enumerate(points):
            a, b = x[bounds[i]:k], x[k:bounds[i + 2]]
            steps.append(Step(k, float(np.median(a)), float(np.median(b)), _test(a, b)))
        failing = [s for s in steps if s.p_value >= alpha or _effect(s.before, s.after) < min_effect]
        if not failing:
            return steps
        worst = max(failing, key=lambda s: (s.p_value, -_effect(s.before, s.after)))
        points.remove(worst.at)


def _tail(x: np.ndarray, start: int, min_effect: float, alpha: float) -> Step | None:
    """A step at the newest one or two values, against the level since ``start``."""
    for t in range(MIN_SIZE - 1, 0, -1):
        base, tail = x[start:len(x) - t], x[len(x) - t:]
        if len(base) < MIN_SIZE:
            continue
        before, after = float(np.median(base)), float(np.median(tail))
        if _effect(before, after) < min_effect or not (np.all(tail > base.max()) or np.all(tail < base.min())):
            continue
        sd = float(np.std(base, ddof=1))
        if sd == 0:
            p = 0.0
        else:
            from scipy import stats

            score = (float(np.mean(tail)) - float(np.mean(base))) / (sd * math.sqrt(1 / t + 1 / len(base)))
            p = float(2 * stats.t.sf(abs(score), df=len(base) - 1))
        if p < alpha:
            return Step(len(x) - t, before, after, p, tentative=True)
    return None


def find_steps(values: np.ndarray, min_effect: float, alpha: float = ALPHA) -> list[Step]:
    """The changes of level in ``values`` (finite, in run order) beyond their noise, oldest first."""
    x = np.asarray(values, float)
    if len(x) < MIN_SIZE + 1:
        return []
    steps = _prune(x, _candidates(x, min_effect), min_effect, alpha)
    tail = _tail(x, steps[-1].at if steps else 0, min_effect, alpha)
    return steps + ([tail] if tail is not None and (not steps or tail.at > steps[-1].at) else [])


@dataclasses.dataclass(frozen=True)
class Change:
    """A step of one benchmark, with the run on each side of it: ``before`` the last run at the old
    level, ``after`` the first at the new one."""

    benchmark: Benchmark
    step: Step
    before: RunInfo
    after: RunInfo

    @property
    def worse(self) -> bool:
        """The step goes the bad way: up for times and counts, down where higher is better."""
        return (self.step.change < 0) if self.benchmark.higher_is_better else (self.step.change > 0)


def min_effect_of(benchmark: Benchmark) -> float:
    """The smallest step reported: compare's thresholds, per instruction count or wall time."""
    counted = benchmark.mode == "instructions" or benchmark.unit == "instructions"
    return DEFAULT_NOISE_MARGIN if counted else DEFAULT_MIN_EFFECT


def find_changes(trends: Trends, alpha: float = ALPHA) -> list[Change]:
    """Every benchmark's steps, benchmark by benchmark, oldest first."""
    out = []
    for i, benchmark in enumerate(trends.benchmarks):
        points, values = trends.series(i)
        for step in find_steps(values, min_effect_of(benchmark), alpha):
            out.append(Change(benchmark, step, trends.runs[points[step.at - 1]], trends.runs[points[step.at]]))
    return out
