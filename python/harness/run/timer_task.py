"""Running Timer tasks (kind ``timer``): one statement, timed or counted in a worker."""

from __future__ import annotations

from harness.measure.timer import Timer
from harness.model.result import TaskResult
from harness.model.task import Task
from harness.run.instructions import run_timer_instructions


def run_timer_task(task: Task, min_run_time: float) -> TaskResult:
    if task.mode == "instructions":
        return run_timer_instructions(task, min_run_time)
    p = task.params
    timer = Timer(
        stmt=p["stmt"],
        setup=p.get("setup", "pass"),
        global_setup=p.get("global_setup", ""),
        label=p.get("label"),
        sub_label=p.get("sub_label"),
        description=p.get("description"),
        num_threads=p.get("num_threads", 1),
        language=p.get("language", "python"),
        batch_setup=p.get("batch_setup"),
    )
    m = timer.blocked_autorange(min_run_time=p.get("min_run_time") or min_run_time)
    return TaskResult.from_measurement(task, m)
