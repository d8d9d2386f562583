"""The kept worker for instruction counting: which one a counter borrows, and how its logs are read."""

from __future__ import annotations

from pathlib import Path

from harness.measure.callgrind.counter import CallgrindCounter
from harness.measure.callgrind.logs import valgrind_log
from harness.measure.counters.base import InstructionCounter
from harness.workers.kept import KeptWorker, runtime_dir, worker_key
from harness.workers.process import own_environment


def _valgrind_diagnostics(directory: Path, pid: int) -> str:
    return valgrind_log(directory / f"valgrind.{pid}.log")


def open_counter_worker(
    counter: InstructionCounter, idle_timeout: float, start_timeout: float, slot: int = 0
) -> KeptWorker | None:
    """The kept worker for instruction counting with ``counter``'s kind (callgrind or perf).

    ``slot`` tells apart the workers of one run with ``--jobs N``. None when
    another client holds it.
    """
    diagnostics = None
    if isinstance(counter, CallgrindCounter):
        # The directory comes from the key, so the key cannot contain it: use the options
        # of a counter pointed at a placeholder.
        options = CallgrindCounter(out_dir="/kept").worker_prefix()
        base_env = {**own_environment(), **CallgrindCounter(out_dir="/kept").worker_env()}
        directory = runtime_dir() / worker_key(options, base_env, slot)
        counter = CallgrindCounter(out_dir=str(directory))
        diagnostics = _valgrind_diagnostics
    else:
        directory = runtime_dir() / worker_key(counter.worker_prefix(), {**own_environment(), **counter.worker_env()}, slot)
    return KeptWorker.open(
        counter.worker_prefix(), {**own_environment(), **counter.worker_env()}, idle_timeout, start_timeout, directory,
        diagnostics,
    )
