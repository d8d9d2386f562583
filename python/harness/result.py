"""TaskResult: what running one Task produced (samples or an error), as plain data."""

from __future__ import annotations

import dataclasses
import statistics
from typing import Any

from .task import Task


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
    def median(self) -> float:
        return statistics.median(self.samples) if self.samples else float("nan")

    @property
    def iqr(self) -> float:
        if len(self.samples) < 2:
            return 0.0
        q = statistics.quantiles(self.samples, n=4, method="inclusive")
        return q[2] - q[0]

    def to_json(self) -> dict[str, Any]:
        return {
            "task": self.task.to_json(),
            "status": self.status,
            "unit": self.unit,
            "samples": self.samples,
            "number_per_run": self.number_per_run,
            "error": self.error,
            "extra": self.extra,
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> TaskResult:
        return cls(
            task=Task.from_json(data["task"]),
            status=data["status"],
            unit=data.get("unit", "s"),
            samples=[float(x) for x in data.get("samples", [])],
            number_per_run=int(data.get("number_per_run", 1)),
            error=data.get("error"),
            extra=dict(data.get("extra") or {}),
        )
