"""Running grouped tasks (kind ``grouped``): the Timer of a variant, and probing its output.

A grouped task carries its final stmt/setup/global_setup/language, so it is
timed like a Timer task and counted like one in instruction mode; a
TorchScript variant scripts its model first (``define.torchscript``).
"""

from __future__ import annotations

import os
from typing import Any

from harness.define.torchscript import ensure_scripted
from harness.errors import StatementError
from harness.measure.timer import Timer
from harness.model.result import TaskResult
from harness.model.task import Task
from harness.options import CACHE_DIR_ENV
from harness.run.instructions import run_timer_instructions
from harness.run.prepare import cpp_block


def grouped_timer(task: Task) -> Any:
    """The Timer for a grouped task (scripting its TorchScript model first if needed)."""

    p = task.params
    ts = p.get("torchscript")
    if ts:
        path = ensure_scripted(ts["source"], ts["kind"])
        # The setup loads the file by its name from this process's cache (define.torchscript.load),
        # a C++ setup from $HARNESS_CACHE_DIR: set here where unset (a counting worker has its own).
        if ts["file"] != path.name:
            raise StatementError(
                f"the TorchScript file for this task is now {path.name}, not {ts['file']}: "
                "the torch version changed since the suite was expanded; run again"
            )
        if p["language"] == "cpp" and not os.environ.get(CACHE_DIR_ENV):
            os.environ[CACHE_DIR_ENV] = str(path.parent.parent)
    timer = Timer(
        stmt=p["stmt"], setup=p.get("setup") or "pass", global_setup=p.get("global_setup", ""),
        label=p.get("label"), sub_label=p.get("sub_label"), description=p.get("description"),
        num_threads=p.get("num_threads", 1), language=p["language"],
    )
    if p["language"] == "cpp":
        # Same statement as prepare_tasks compiled (with the probe of the signature's output).
        timer._block = cpp_block(task)
    return timer


def run_grouped_task(task: Task, min_run_time: float) -> TaskResult:
    timer = grouped_timer(task)  # also makes sure its TorchScript model is scripted
    if task.mode == "instructions":
        # Grouped params carry stmt/setup/global_setup/language/num_threads
        # like Timer tasks, so the instruction runner counts them the same way.
        return run_timer_instructions(task, min_run_time)
    m = timer.blocked_autorange(min_run_time=task.params.get("min_run_time") or min_run_time)
    return TaskResult.from_measurement(task, m)


def probe(task: Task) -> list[Any]:
    """Run a grouped task's setup and stmt once: [output, grad of each signature input] (None where undefined).

    Gradients are cleared before the run, so they are those of one backward.
    """
    p = task.params
    timer = grouped_timer(task)
    if p["language"] == "cpp":
        return timer._block.probe()
    import torch

    ns: dict[str, Any] = {"torch": torch}
    exec(compile(p.get("setup") or "pass", "<setup>", "exec"), ns)
    for name in p.get("inputs") or ():
        value = ns.get(name)
        if isinstance(value, torch.Tensor):
            value.grad = None
    exec(compile(p["stmt"], "<stmt>", "exec"), ns)
    output = ns.get(p["output"]) if p.get("output") else None
    grads = [getattr(ns.get(name), "grad", None) for name in p.get("inputs") or ()]
    return [output, *grads]
