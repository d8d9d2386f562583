"""Runs Tasks: each kind of task has one runner function; failures become failed results."""

from __future__ import annotations

import importlib
import traceback
from collections.abc import Callable, Iterable, Iterator

from .errors import HarnessError
from .result import TaskResult
from .task import Task

DEFAULT_MIN_RUN_TIME = 0.2


def run_timer_task(task: Task, min_run_time: float) -> TaskResult:
    if task.mode == "instructions":
        from .instructions import run_timer_instructions

        return run_timer_instructions(task, min_run_time)
    from .timer import Timer

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
    return TaskResult(task=task, status="ok", unit="s", samples=m.times, number_per_run=m.number_per_run)


# Task kind -> "module:function" running it. Imported lazily, so a run of the
# basic suite never imports the compile-time or gpt-fast machinery.
RUNNERS: dict[str, str] = {
    "timer": "harness.runner:run_timer_task",
    "gpt_fast": "harness.gpt_fast.runner:run_gpt_fast_task",
    "sampler": "harness.sampler_task:run_sampler_task",
    "grouped": "harness.definitions:run_grouped_task",
    "compile_time": "harness.compile_time.runner:run_compile_time_task",
}

# Called once, in the parent process, with every task of a run before any of
# them runs: e.g. to compile all C++ statements of a run in one build, so the
# workers find them in the cache. Each takes (tasks, status) and ignores the
# tasks it has nothing to do for.
PREPARERS: list[str] = [
    "harness.definitions:prepare_tasks",
]


def prepare_tasks(tasks: list[Task], status: Callable[[str], None] | None = None) -> None:
    for target in PREPARERS:
        module, _, func = target.partition(":")
        getattr(importlib.import_module(module), func)(tasks, status)


def resolve_runner(kind: str) -> Callable[[Task, float], TaskResult] | None:
    target = RUNNERS.get(kind)
    if target is None:
        return None
    module, _, func = target.partition(":")
    return getattr(importlib.import_module(module), func)


def run_task(task: Task, min_run_time: float = DEFAULT_MIN_RUN_TIME) -> TaskResult:
    """Run one task in this process; any failure becomes a failed result, never an exception."""
    runner = resolve_runner(task.kind)
    if runner is None:
        return TaskResult(task=task, status="failed", error=f"no runner for task kind {task.kind!r}")
    try:
        return runner(task, min_run_time)
    except HarnessError as exc:
        return TaskResult(task=task, status="failed", error=str(exc))
    except Exception as exc:  # a benchmark's own bug must not stop the run
        tb = "".join(traceback.format_exception(exc))
        return TaskResult(task=task, status="failed", error=f"{type(exc).__name__}: {exc}\n{tb}")


def run_tasks(tasks: Iterable[Task], min_run_time: float = DEFAULT_MIN_RUN_TIME) -> Iterator[TaskResult]:
    for task in tasks:
        yield run_task(task, min_run_time)
