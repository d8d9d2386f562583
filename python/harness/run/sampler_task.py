"""Sampler tasks (kind "sampler"): benchmark a native sampler an extension module exports.

A sampler is a ``harness.sampler`` capsule (``int64_t(*)(int64_t number)``,
running its loop in C++) or a callable ``sampler(number) -> elapsed ns``.
``params["factory"]`` names a function returning one (``"module:function"``,
called with ``params["args"]``); ``params["baseline_args"]``, when given,
builds the sampler whose counts are subtracted in instruction mode. Wall
mode times it like any statement; instruction mode counts it with the
worker's counter, the region being exactly the sampler call.
"""

from __future__ import annotations

from harness.core import native
from harness.define.loading import resolve_reference
from harness.model.result import TaskResult
from harness.model.task import Task
from harness.run.instructions import count_task


def run_sampler_task(task: Task, min_run_time: float) -> TaskResult:
    p = task.params
    factory = resolve_reference(p["factory"], "the sampler factory")
    sampler = factory(*p.get("args", ()))
    if task.mode == "instructions":
        baseline = factory(*p["baseline_args"]) if p.get("baseline_args") is not None else None
        return count_task(task, sampler, clocked=False, baseline=baseline)
    n, raw = native().blocked_autorange(sampler, p.get("min_run_time") or min_run_time)
    return TaskResult(task=task, status="ok", unit="s", samples=[t / 1e9 / n for t in raw], number_per_run=n)
