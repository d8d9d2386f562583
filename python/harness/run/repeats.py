"""Tasks run several times, each repeat in fresh worker processes with a different environment: the noise command.

Each repeat gets its own worker pool (``--jobs`` workers) and adds an
environment variable of a different length (``NOISE_PROBE_ENV``), as a
different user or CI runner would: under callgrind that is what moves a count
(the heap layout follows the environment), so the repeats show the spread a
gate meets.
"""

from __future__ import annotations

import dataclasses
import resource
import time
from collections.abc import Callable, Sequence

from harness.measure.counters.base import InstructionCounter
from harness.model.result import TaskResult
from harness.model.task import Task
from harness.workers.pool import WorkerPool

NOISE_PROBE_ENV = "HARNESS_NOISE_PROBE"
PROBE_STEP = 97  # characters added to the environment per repeat


@dataclasses.dataclass
class Repeat:
    """One repeat's cost: wall seconds and the CPU seconds of its workers."""

    seconds: float
    cpu_seconds: float


def _children_cpu() -> float:
    """CPU seconds of the workers this process has reaped (user + system)."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def run_repeats(
    tasks: Sequence[Task],
    counter: InstructionCounter,
    repeats: int,
    jobs: int,
    timeout: float | None,
    on_result: Callable[[int, TaskResult], None],
    on_repeat: Callable[[int, Repeat], None],
) -> bool:
    """Run ``tasks`` ``repeats`` times; False when interrupted (what finished was handed to ``on_result``)."""
    for repeat in range(repeats):
        start, cpu_before = time.perf_counter(), _children_cpu()
        env = {**counter.worker_env(), NOISE_PROBE_ENV: "x" * (PROBE_STEP * repeat)}
        pool = WorkerPool(jobs=jobs, prefix=counter.worker_prefix(), env=env, timeout=timeout,
                          diagnostics=counter.diagnostics)
        interrupted = False
        try:
            pool.run(list(tasks), 0.0, on_result=lambda result, repeat=repeat: on_result(repeat, result))
        except KeyboardInterrupt:
            interrupted = True
        on_repeat(repeat, Repeat(time.perf_counter() - start, _children_cpu() - cpu_before))
        if interrupted:
            return False
    return True
