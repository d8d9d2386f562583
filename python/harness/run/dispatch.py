"""Running one task in this process: its kind's runner, and every failure turned into a failed result."""

from __future__ import annotations

import time
import traceback

from harness.errors import HarnessError
from harness.kinds import runner_for
from harness.model.result import TaskResult
from harness.model.task import Task
from harness.options import DEFAULT_MIN_RUN_TIME


def run_task(task: Task, min_run_time: float = DEFAULT_MIN_RUN_TIME) -> TaskResult:
    """Run one task in this process; any failure becomes a failed result, never an exception.

    ``extra["elapsed_s"]``: the seconds it took, what ``--durations`` balances shards by.
    """
    start = time.perf_counter()
    result = _run(task, min_run_time)
    result.extra.setdefault("elapsed_s", round(time.perf_counter() - start, 3))
    return result


def _run(task: Task, min_run_time: float) -> TaskResult:
    try:
        runner = runner_for(task.kind)
    except HarnessError as exc:
        return TaskResult(task=task, status="failed", error=str(exc))
    try:
        return runner(task, min_run_time)
    except HarnessError as exc:
        return TaskResult(task=task, status="failed", error=str(exc))
    except Exception as exc:  # a benchmark's own bug must not stop the run
        tb = "".join(traceback.format_exception(exc))
        return TaskResult(task=task, status="failed", error=f"{type(exc).__name__}: {exc}\n{tb}")
