"""Runner for ``compile_time`` tasks: rebuild the case, collect it, report its metrics."""

from __future__ import annotations

from typing import Any

from ..result import TaskResult
from ..task import Task
from .benchmark import load_case
from .collect import collect, wall_seconds

INSTRUCTIONS = "compile_time_instruction_count"
SECONDS = "compile_time_s"


def run_compile_time_task(task: Task, min_run_time: float) -> TaskResult:
    """``min_run_time`` does not apply: a case runs its fixed number of iterations."""
    case = load_case(dict(task.params))
    extra: dict[str, Any] = {"case": case.name(), "description": case.description()}
    if task.mode == "instructions":
        from ..counters import worker_counter

        counter = worker_counter()
        callgrind = counter.name == "callgrind"
        iterations = case.callgrind_iterations if callgrind else case.iterations
        # Under callgrind the cold iteration is a timed warm-up: counting it costs
        # about five warm iterations, and its count depends on what the worker
        # process ran before (imports, caches), so it could not be gated anyway.
        result = collect(
            case, lambda fn: float(counter.count(fn)), iterations, cold_measure=wall_seconds if callgrind else None
        )
        unit = "instructions"
        extra["counter"] = counter.name
        extra["metrics"] = {INSTRUCTIONS: result.min}
        if callgrind:
            extra["cold_unit"] = "s"
        else:
            extra["metrics"][f"{INSTRUCTIONS}_cold"] = result.cold
    else:
        iterations = case.iterations
        result = collect(case, wall_seconds, iterations)
        unit = "s"
        extra["metrics"] = {
            SECONDS: result.min,
            f"{SECONDS}_median": result.median,
            f"{SECONDS}_cold": result.cold,
        }
    extra.update(actual=result.min, cold=result.cold, iterations=iterations, calls=case.calls)
    return TaskResult(task=task, status="ok", unit=unit, samples=list(result.warm), extra=extra)
