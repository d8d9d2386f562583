"""Executors: where the tasks of a run execute, in this process or in a pool of worker processes.

``execute`` runs wall-time tasks first and alone (a worker under valgrind
running beside them would distort their times; counts are immune), then
instruction-count tasks in workers started for the instruction counter (under
valgrind for callgrind, possibly kept for the next run). Every result goes to
``on_result`` as it finishes; Ctrl-C propagates after the workers are killed.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Sequence

from harness import kinds
from harness.errors import UsageError
from harness.measure.counters.base import InstructionCounter
from harness.measure.counters.kept import open_counter_worker, start_counter_workers
from harness.model.result import TaskResult
from harness.model.task import Task
from harness.options import COUNTER_ENV, WORKER_START_TIMEOUT, RunOptions
from harness.run.dispatch import run_task
from harness.workers.kept import KeptWorker
from harness.workers.pool import WorkerPool

OnResult = Callable[[TaskResult], None]
# Per node of a cluster: {"done": n, "running": n}; "(queued)": {"queued": n}.
OnNodes = Callable[[dict[str, dict[str, int]]], None]


def check_in_process(options: RunOptions, counter: InstructionCounter | None) -> None:
    """``--in-process`` cannot count with a counter that needs a worker of its own (valgrind)."""
    if options.in_process and options.pythons:
        raise UsageError("--in-process cannot run tasks under another interpreter: drop --in-process or --python")
    if options.in_process and counter is not None and counter.worker_prefix():
        raise UsageError(
            f"--in-process cannot count instructions with {counter.name}: it needs its own worker process "
            "(under valgrind); drop --in-process, or use --counter perf where the hardware counter is readable"
        )


def run_here(tasks: Sequence[Task], options: RunOptions, counter: InstructionCounter | None,
             on_result: OnResult) -> None:
    """Every task in this process, one after another: no crash isolation, no timeouts."""
    if counter is not None:
        os.environ[COUNTER_ENV] = counter.name  # what worker_counter() reads in a worker
    for task in tasks:
        on_result(run_task(task, options.min_run_time))


def run_in_workers(tasks: Sequence[Task], options: RunOptions, counter: InstructionCounter | None,
                   on_result: OnResult) -> None:
    """Wall-time tasks in plain workers, then instruction-count tasks in the counter's workers."""
    refs = kinds.runner_references(tasks)
    wall = [t for t in tasks if t.mode != "instructions"]
    counted = [t for t in tasks if t.mode == "instructions"]
    if wall:
        WorkerPool(jobs=options.jobs, timeout=options.timeout, kinds=refs, pythons=options.sides).run(
            wall, options.min_run_time, on_result)
    if counted and counter is not None:
        keep = options.keep_seconds
        kept: Callable[[int], KeptWorker | None] | None = None
        if keep is not None:
            def kept(slot: int, counter: InstructionCounter = counter, keep: float = keep) -> KeptWorker | None:
                return open_counter_worker(counter, keep, WORKER_START_TIMEOUT, slot)

        WorkerPool(
            jobs=options.jobs, prefix=counter.worker_prefix(), env=counter.worker_env(),
            timeout=options.timeout, diagnostics=counter.diagnostics, kept=kept, kinds=refs, pythons=options.sides,
            finish=counter.finish,
        ).run(counted, options.min_run_time, on_result)


def _nothing() -> None:
    return None


def start_kept_workers_early(tasks: Sequence[Task], options: RunOptions,
                             counter: InstructionCounter | None) -> Callable[[], None]:
    """Start the kept counting workers this run will borrow, in threads, while the run prepares (compiles
    its C++ statements): a worker's start, ``import torch`` under valgrind on one core for ~14 s, and the
    compiler then overlap, as in ``collect_callgrind``. Returns what waits for them, to be called
    before the run asks for a worker (a slot a thread still holds would make the run start a private
    one). Only for a local run in workers that keeps them and counts instructions alone: a start beside
    a wall-time task would distort its times, and A/B sides and fresh-worker tasks never use kept ones."""
    if (counter is None or options.keep_seconds is None or options.executor != "local" or options.in_process
            or options.sides or any(t.mode != "instructions" for t in tasks) or not counter.worker_prefix()):
        return _nothing
    slots = min(options.jobs, sum(1 for t in tasks if not t.params.get("fresh_worker")))
    if slots == 0:
        return _nothing
    started = start_counter_workers(counter, options.keep_seconds, WORKER_START_TIMEOUT, slots)

    def wait() -> None:
        # A worker that cannot start is the run's to report, when its pool tries again.
        with contextlib.suppress(Exception):
            started()

    return wait


def check_executor(options: RunOptions) -> None:
    """Before preparing anything: the chosen executor can run here (Ray is installed)."""
    if options.executor == "ray":
        from harness.cluster.executor import require_ray

        require_ray()


def execute(tasks: Sequence[Task], options: RunOptions, counter: InstructionCounter | None,
            on_result: OnResult, on_nodes: OnNodes | None = None) -> None:
    """Run ``tasks`` where ``options`` say: Ray (``harness.cluster``, imported only then), this
    process, or local worker pools."""
    if options.executor == "ray":
        from harness.cluster.executor import run_on_ray

        run_on_ray(tasks, options, counter, on_result, on_nodes)
    else:
        (run_here if options.in_process else run_in_workers)(tasks, options, counter, on_result)
