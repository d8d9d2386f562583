"""TaskResult: what running one Task produced (samples or an error), as plain data."""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, Any

from harness.model import stats
from harness.model.task import Task
from harness.options import NOISY_IQR_FRACTION

if TYPE_CHECKING:
    from harness.model.measurement import Measurement

STATUSES = ("ok", "failed")


@dataclasses.dataclass
class TaskResult:
    task: Task
    status: str  # "ok" or "failed"
    unit: str = "s"  # unit of `samples`: "s" per run, or "instructions" per run
    samples: list[float] = dataclasses.field(default_factory=list)  # per-run values, one per block
    number_per_run: int = 1
    error: str | None = None
    extra: dict[str, Any] = dataclasses.field(default_factory=dict)  # counter used, per-symbol counts, ...

    @property
    def ok(self) -> bool:
        return self.status == "ok"

    @property
    def mode(self) -> str:
        """What was measured: "wall" time or "instructions" (an instruction counter)."""
        return self.task.mode

    @property
    def counts_instructions(self) -> bool:
        return self.task.mode == "instructions" or self.unit == "instructions"

    @property
    def value(self) -> float:
        """The headline figure: ``extra["actual"]`` when the runner set one (a min over
        iterations, a bandwidth), else the median of the samples."""
        actual = self.extra.get("actual")
        if isinstance(actual, int | float) and not isinstance(actual, bool):
            return float(actual)
        return self.median

    @property
    def value_unit(self) -> str:
        """Unit of ``value``: ``extra["actual_unit"]`` or ``extra["metric"]`` when the runner set
        ``extra["actual"]``, else the samples' unit."""
        if "actual" in self.extra:
            return str(self.extra.get("actual_unit") or self.extra.get("metric") or self.unit)
        return self.unit

    @property
    def higher_is_better(self) -> bool:
        return bool(self.extra.get("higher_is_better", False))

    @property
    def summary(self) -> stats.Summary:
        """Statistics of the samples (``harness.model.stats``: the C++ core's)."""
        return stats.summarize(self.samples)

    @property
    def relative_iqr(self) -> float:
        return stats.relative_iqr(self.summary)

    @property
    def bimodal(self) -> bool:
        return self.ok and stats.bimodal(self.samples, NOISY_IQR_FRACTION)

    @property
    def noisy(self) -> bool:
        """IQR above the threshold, or two modes: the median alone is not to be trusted."""
        return self.ok and (self.relative_iqr > NOISY_IQR_FRACTION or self.bimodal)

    @property
    def noise_mark(self) -> str:
        """torch's mark for a noisy measurement, "(! XX%)" (IQR / median), or "(! bimodal)"; "" when quiet."""
        if not self.noisy:
            return ""
        return "(! bimodal)" if self.bimodal else f"(! {self.relative_iqr * 100:.0f}%)"

    @property
    def median(self) -> float:
        return self.summary.median

    @property
    def iqr(self) -> float:
        return self.summary.iqr if len(self.samples) >= 2 else 0.0

    @classmethod
    def from_measurement(cls, task: Task, m: Measurement, **extra: Any) -> TaskResult:
        """The result of a wall-time measurement: seconds per run, one sample per block."""
        return cls(task=task, status="ok", unit="s", samples=m.times, number_per_run=m.number_per_run,
                   extra=dict(extra))

    def to_json(self) -> dict[str, Any]:
        return {
            "task": self.task.to_json(),
            "mode": self.mode,
            "status": self.status,
            "unit": self.unit,
            "samples": self.samples,
            "number_per_run": self.number_per_run,
            "error": self.error,
            "extra": self.extra,
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> TaskResult:
        """Rebuild a result from plain data; raises ValueError naming the bad field."""
        if not isinstance(data, dict):
            raise ValueError(f"a result must be a JSON object, got {type(data).__name__}")
        missing = [k for k in ("task", "status") if k not in data]
        if missing:
            raise ValueError(f"result lacks {', '.join(repr(k) for k in missing)}")
        task_data = data["task"]
        if not isinstance(task_data, dict) or not all(k in task_data for k in ("suite", "name", "kind", "params")):
            raise ValueError("'task' must be an object with suite, name, kind and params")
        task = Task.from_json(task_data)
        if "mode" in data and data["mode"] != task.mode:
            task = dataclasses.replace(task, mode=str(data["mode"]))
        if data["status"] not in STATUSES:
            raise ValueError(f"status {data['status']!r} is not one of {', '.join(STATUSES)}")
        samples = data.get("samples") or []
        if not isinstance(samples, list):
            raise ValueError("'samples' must be a list of numbers")
        extra = data.get("extra") or {}
        if not isinstance(extra, dict):
            raise ValueError("'extra' must be an object")
        error = data.get("error")
        return cls(
            task=task,
            status=data["status"],
            unit=str(data.get("unit") or "s"),
            samples=[float(x) for x in samples],
            number_per_run=int(data.get("number_per_run", 1)),
            error=None if error is None else str(error),
            extra=dict(extra),
        )
