"""Measurement: the result of timing one statement, compatible with torch's.

Field names, units (seconds), repr and warning thresholds follow
``torch.utils.benchmark.utils.common.Measurement`` so code written against
torch keeps working; statistics come from the C++ core.
"""

from __future__ import annotations

import dataclasses
import math
import textwrap
from collections.abc import Iterable
from typing import Any

from harness.model import stats
from harness.options import NOISY_IQR_FRACTION

IQR_WARN_THRESHOLD = NOISY_IQR_FRACTION
IQR_GROSS_WARN_THRESHOLD = 0.25
MAX_SIGNIFICANT_FIGURES = 4
MIN_CONFIDENCE_INTERVAL = 25e-9  # seconds; below this the clock cannot resolve


@dataclasses.dataclass(frozen=True)
class TaskSpec:
    """What was measured: the statement and how it is labelled."""

    stmt: str
    setup: str
    global_setup: str = ""
    label: str | None = None
    sub_label: str | None = None
    description: str | None = None
    env: str | None = None
    num_threads: int = 1

    @property
    def title(self) -> str:
        suffix = f": {self.sub_label}" if self.sub_label else ""
        if self.label is not None:
            return self.label + suffix
        if "\n" not in self.stmt:
            return self.stmt + suffix
        sub = f" ({self.sub_label})" if self.sub_label else ""
        return f"stmt:{sub}\n{textwrap.indent(self.stmt, '  ')}"

    def setup_str(self) -> str:
        if not self.setup or self.setup == "pass":
            return ""
        if "\n" in self.setup:
            return f"setup:\n{textwrap.indent(self.setup, '  ')}"
        return f"setup: {self.setup}"

    def summarize(self) -> str:
        sections = [self.title, self.description or "", self.setup_str()]
        return "\n".join(f"{s}\n" if "\n" in s else s for s in sections if s)


_TASKSPEC_FIELDS = tuple(f.name for f in dataclasses.fields(TaskSpec))


def select_unit(seconds: float) -> tuple[str, float]:
    """The largest of ns/us/ms/s in which ``seconds`` is >= 1 (ns for anything smaller).

    The exponent is torch's (float32 log10), so a time on a unit boundary gets
    the unit torch gives it. Unlike torch, a time under 1 ns is shown in ns
    (torch shows "0.00 s") and zero or a non-finite time in s (torch raises).
    """
    if not seconds or not math.isfinite(seconds):
        return "s", 1.0
    exponent = int(stats.log10_f32(abs(seconds)) // 3)
    unit = {-1: "ms", -2: "us"}.get(exponent, "s" if exponent >= 0 else "ns")
    return unit, {"ns": 1e-9, "us": 1e-6, "ms": 1e-3, "s": 1.0}[unit]


def unit_to_english(unit: str) -> str:
    return {"ns": "nanosecond", "us": "microsecond", "ms": "millisecond", "s": "second"}[unit]


def ordered_unique(elements: Iterable[Any]) -> list[Any]:
    """The distinct elements in the order first seen (torch's helper)."""
    return list(dict.fromkeys(elements))


def trim_sigfig(x: float, n: int) -> float:
    """Round ``x`` to ``n`` significant figures, in torch's float32 steps (zero and NaN stay)."""
    if n != int(n):
        raise AssertionError("Number of significant figures must be an integer")
    if x == 0 or math.isnan(x):
        return x
    import torch

    scale = 10 ** (math.ceil(stats.log10_f32(abs(x))) - n)
    return float(torch.tensor(x / scale).round() * scale)


@dataclasses.dataclass(repr=False)
class Measurement:
    """Raw block times (seconds) of ``number_per_run`` runs each, plus what was run."""

    number_per_run: int
    raw_times: list[float]
    task_spec: TaskSpec
    metadata: dict[Any, Any] | None = None

    def __post_init__(self) -> None:
        self._stats: stats.Summary | None = None
        self._warnings: tuple[str, ...] = ()

    def __getattr__(self, name: str) -> Any:
        # Forward TaskSpec fields (stmt, label, num_threads, ...) as torch does.
        if name in _TASKSPEC_FIELDS:
            return getattr(self.task_spec, name)
        raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")

    def __getstate__(self) -> dict[str, Any]:
        return {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self.__post_init__()

    @property
    def times(self) -> list[float]:
        return [t / self.number_per_run for t in self.raw_times]

    def _lazy_init(self) -> stats.Summary:
        if self._stats is None:
            self._stats = stats.summarize(self.times)
            if not self.raw_times:
                return self._stats
            if not self.meets_confidence(IQR_GROSS_WARN_THRESHOLD):
                self._add_warning("This suggests significant environmental influence.")
            elif not self.meets_confidence(IQR_WARN_THRESHOLD):
                self._add_warning("This could indicate system fluctuation.")
        return self._stats

    def _add_warning(self, msg: str) -> None:
        rel_iqr = self.iqr / self.median * 100
        self._warnings += (
            f"  WARNING: Interquartile range is {rel_iqr:.1f}% of the median measurement.\n           {msg}",
        )

    @property
    def median(self) -> float:
        return self._lazy_init().median

    @property
    def mean(self) -> float:
        """torch's figure to the last bit: its float64 mean of the sorted times.

        The core sums in order; torch's vectorised sum rounds differently in
        the last bits, and scripts (torch's own tests among them) compare
        ``repr(m.mean)``. Without torch, the core's mean.
        """
        summary = self._lazy_init()
        if not self.raw_times:
            return summary.mean
        try:
            import torch
        except ImportError:  # pragma: no cover - torch is a dependency
            return summary.mean
        return float(torch.tensor(sorted(self.times), dtype=torch.float64).mean().item())

    @property
    def iqr(self) -> float:
        return self._lazy_init().iqr

    @property
    def stddev(self) -> float:
        return self._lazy_init().stddev

    @property
    def min(self) -> float:
        return self._lazy_init().min

    @property
    def max(self) -> float:
        return self._lazy_init().max

    @property
    def significant_figures(self) -> int:
        """Digits of the median that are meaningful, from the spread of the middle half."""
        if not self.raw_times:
            return 1
        return stats.significant_figures(
            sorted(self.times), self.median, floor=MIN_CONFIDENCE_INTERVAL, cap=MAX_SIGNIFICANT_FIGURES
        )

    @property
    def has_warnings(self) -> bool:
        self._lazy_init()
        return bool(self._warnings)

    def meets_confidence(self, threshold: float = IQR_WARN_THRESHOLD) -> bool:
        return self.iqr / self.median < threshold

    @property
    def title(self) -> str:
        return self.task_spec.title

    @property
    def env(self) -> str:
        return "Unspecified env" if self.task_spec.env is None else self.task_spec.env

    @property
    def as_row_name(self) -> str:
        return self.sub_label or self.stmt or "[Unknown]"

    def __repr__(self) -> str:
        self._lazy_init()
        n = len(self.raw_times)
        unit, scale = select_unit(self.median)
        lines = [
            f"<{type(self).__module__}.{type(self).__name__} object at {hex(id(self))}>",
            self.task_spec.summarize(),
            f"  {'Median: ' if n > 1 else ''}{self.median / scale:.2f} {unit}",
        ]
        if n >= 4:
            s = self._lazy_init()
            lines.append(
                f"  IQR:    {self.iqr / scale:.2f} {unit} ({s.p25 / scale:.2f} to {s.p75 / scale:.2f})"
            )
        lines.append(
            f"  {n} measurement{'s' if n > 1 else ''}, {self.number_per_run} runs "
            f"{'per measurement,' if n > 1 else ','} {self.num_threads} thread{'s' if self.num_threads > 1 else ''}"
        )
        lines.extend(self._warnings)
        return "\n".join(lines).strip()

    @staticmethod
    def merge(measurements: Iterable[Measurement]) -> list[Measurement]:
        """Pool measurements of the same task, normalising to one run per time."""
        grouped: dict[TaskSpec, list[Measurement]] = {}
        for m in measurements:
            grouped.setdefault(m.task_spec, []).append(m)
        out = []
        for spec, group in grouped.items():
            times = [t for m in group for t in m.times]
            out.append(Measurement(number_per_run=1, raw_times=times, task_spec=spec, metadata=None))
        return out
