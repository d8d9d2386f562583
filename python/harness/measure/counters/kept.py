"""The kept worker for instruction counting: which one a counter borrows, how its logs are read, and
starting them ahead of the runs that will borrow them (``python -m harness workers start``)."""

from __future__ import annotations

import threading
from collections.abc import Callable

from harness.files.cache import configured_root
from harness.measure.counters.base import InstructionCounter
from harness.workers.kept import KeptWorker, fingerprint_parts, key_of, summary
from harness.workers.private_dir import worker_dir
from harness.workers.process import own_environment


def open_counter_worker(
    counter: InstructionCounter, idle_timeout: float, start_timeout: float, slot: int = 0
) -> KeptWorker | None:
    """The kept worker for instruction counting with ``counter``'s kind (callgrind or perf).

    ``slot`` tells apart the workers of one run with ``--jobs N``. None when
    another client holds it.
    """
    environment = own_environment()
    keyed = counter.kept_in(None)
    parts = fingerprint_parts(keyed.worker_prefix(), {**environment, **keyed.worker_env()}, slot)
    # The worker reaches the cache through the cache's link (``workers.private_dir.cache_link``), named
    # for the cache's real path: the key names the cache as this environment calls it.
    parts["cache"] = str(configured_root()[0])
    directory = worker_dir(key_of(parts))
    kept = counter.kept_in(directory)
    # The worker starts as a run's own would (``worker_env`` adds this environment, less what is
    # volatile): given the whole environment again, it got the shell's bookkeeping back and lost
    # harness from its PYTHONPATH, and counted differently from a run's own worker.
    return KeptWorker.open(
        kept.worker_prefix(), kept.worker_env(), idle_timeout, start_timeout, directory,
        lambda _directory, pid: kept.diagnostics(pid), summary(parts),
    )


def start_counter_workers(counter: InstructionCounter, idle_timeout: float, start_timeout: float,
                          jobs: int = 1) -> Callable[[], list[tuple[int, str, int | None]]]:
    """Start the kept workers of slots 0 to ``jobs``-1 (the ones ``collect_callgrind`` and ``bench --jobs N``
    borrow from this directory and environment), each in a thread of its own, and let go of each once it
    is ready. Returns what waits for them: ``(slot, "started" | "running" | "busy", server pid or None)``
    for each, or the first start's error. "busy": another client holds that slot's worker, so it runs
    already. The threads are daemons: a caller interrupted before it waits leaves the workers to finish
    starting on their own, for the next run."""
    outcomes: dict[int, tuple[int, str, int | None] | BaseException] = {}

    def one(slot: int) -> None:
        try:
            worker = open_counter_worker(counter, idle_timeout, start_timeout, slot)
            if worker is None:
                outcomes[slot] = (slot, "busy", None)
                return
            worker.close()
            outcomes[slot] = (slot, "running" if worker.reused else "started", worker.server_pid)
        except BaseException as exc:  # noqa: BLE001 - the waiter raises it
            outcomes[slot] = exc

    threads = [threading.Thread(target=one, args=(slot,), name=f"harness-worker-start-{slot}", daemon=True)
               for slot in range(jobs)]
    for thread in threads:
        thread.start()

    def wait() -> list[tuple[int, str, int | None]]:
        for thread in threads:
            thread.join()
        for slot in range(jobs):
            if isinstance(outcomes[slot], BaseException):
                raise outcomes[slot]
        return [outcomes[slot] for slot in range(jobs)]  # type: ignore[misc]

    return wait
