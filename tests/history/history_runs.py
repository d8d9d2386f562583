"""Synthetic histories for the history tests: seeded runs, a known step, layers and symbols."""

from __future__ import annotations

import numpy as np

from harness.model.record import RunRecord
from harness.model.result import TaskResult
from harness.model.task import Task
from synthetic_runs import environment

STEP_AT = 37


def run(i: int, step_at: int | None = STEP_AT, seed: int = 0, label: str | None = None) -> RunRecord:
    """Run ``i`` of a history: a wall time (+10% from ``step_at``), an instruction count (+2%, the dispatcher
    layer and one function moving), a benchmark that never moves; noise seeded by ``seed`` and ``i``."""
    rng = np.random.default_rng([seed, i])
    after = step_at is not None and i >= step_at
    env = environment(f"2026-01-{1 + i // 24:02d}T{i % 24:02d}:00:00+00:00", f"run{seed}-{i}")
    env["label"] = label if label is not None else f"v{i}"
    env["repository"] = {"commit": f"c{i:07d}" + "0" * 32, "branch": "main"}
    count = 1_000_000 + (20_000 if after else 0)
    counted = TaskResult(
        Task("ops", "add", "timer", {}, "instructions"), "ok", "instructions",
        [float(count + rng.integers(0, 30))], number_per_run=100,
        extra={"counter": "callgrind",
               "layers": {"interpreter": 40_000_000, "dispatcher": (count - 400_000) * 100},
               "symbols": {"at::add": count * 0.4, "c10::Dispatcher::call": count * 0.6}},
    )
    results = [
        TaskResult(
            Task("ops", "add", "timer", {}), "ok", "s", list(rng.normal(1e-6 * (1.1 if after else 1.0), 1e-8, 5))
        ),
        counted,
        TaskResult(Task("ops", "mul", "timer", {}), "ok", "s", list(rng.normal(2e-6, 2e-8, 5))),
    ]
    return RunRecord(env, results)


def noise_run(i: int, seed: int) -> RunRecord:
    """A run of a history without any step: only seeded noise."""
    return run(i, step_at=None, seed=seed)
