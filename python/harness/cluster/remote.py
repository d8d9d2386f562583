"""What a Ray task runs on its node: one harness task in harness's own worker process.

The Ray worker process that Ray hands the task to keeps harness's worker
(started once, under valgrind for callgrind) for the tasks Ray gives it next,
so a node pays the worker's start-up per Ray worker, not per task. The task
runs through ``WorkerPool.run_on``: a crash or a ``--timeout`` kills only
harness's worker and becomes a failed result, which Ray returns like any
other (never retried: only a lost node makes Ray run a task again).

harness's worker starts with the driver's environment variables (as they were
before the driver imported and started Ray) and working directory, not the Ray
worker's: counts move with the environment (docs/instruction-counts.md), so
only an identical start gives counts identical to a local run's.

An instruction-counting worker is a kept one (``workers.kept``), as in a local
run, when the run keeps workers (``--keep-worker``, ``HARNESS_KEEP_WORKER``):
the next Ray run on the node skips its start-up. Each Ray worker process
borrows the first kept worker of Ray's slots that no other client holds. Ray's
slots are not a local run's (``--jobs N`` uses 0 to N-1): a Ray worker process
of a cluster that stays up holds its worker between runs, and a local run on
that machine must not find its own slots taken.

Before its first task a node compares its harness, torch and Python with the
driver's; on a mismatch each of its tasks fails with both fingerprints named.
A run with ``--cache-sim`` counts in workers of their own (callgrind with the
cache simulation), at the geometry the driver's record states: a node that
would simulate another fails each of its tasks, both geometries named.
Kept profiles travel back to the driver (``cluster.profiles``).
"""

from __future__ import annotations

import atexit
import contextlib
import os
import shutil
import socket
import tempfile
import time
from collections.abc import Iterator
from typing import Any

from harness.cluster import profiles
from harness.measure.counter_choice import get_counter
from harness.measure.counters.base import InstructionCounter
from harness.measure.counters.cache import record_geometry
from harness.measure.counters.kept import open_counter_worker
from harness.model.result import TaskResult
from harness.model.task import Task
from harness.options import WORKER_START_TIMEOUT
from harness.records.environment import describe, local_fingerprint
from harness.workers.kept import KeptWorker
from harness.workers.pool import WorkerPool

# Per Ray worker process: counter key (``_key``; "" for wall time) -> (pool, its kept worker or None).
_WORKERS: dict[str, tuple[WorkerPool, Any]] = {}
_COUNTERS: dict[str, InstructionCounter] = {}
_FINGERPRINT: dict[str, str] = {}
_STARTED_AS: list[tuple[dict[str, str], str]] = []  # the driver environment and directory the held workers started with
RAY_SLOTS = 1000  # the first kept-worker slot of Ray's worker processes (a local run's are 0 to N-1)
MAX_KEPT_SLOTS = 64  # kept workers a node's Ray worker processes may hold at once, one each


def node_label(node: dict[str, Any]) -> str:
    """How progress names a node: its host, and its Ray node id where one host runs several nodes."""
    return f"{node['host']}:{node['node_id'][:6]}"


def this_node() -> dict[str, Any]:
    import ray

    context = ray.get_runtime_context()
    return {"host": socket.gethostname(), "node_id": context.get_node_id(),
            "ip": ray.util.get_node_ip_address(), "pid": os.getpid()}


def _borrow(counter: InstructionCounter, keep: float) -> KeptWorker | None:
    """The first kept worker of Ray's slots on this node that no other client holds (None: a private
    one starts)."""
    for slot in range(RAY_SLOTS, RAY_SLOTS + MAX_KEPT_SLOTS):
        worker = open_counter_worker(counter, keep, WORKER_START_TIMEOUT, slot)
        if worker is not None:
            return worker
    return None


def _key(counter_name: str, cache_sim: bool) -> str:
    """Which of this process's workers a task counts in: a cache-simulating worker is another process
    (another valgrind command line), kept apart from the plain counter's."""
    return f"{counter_name}+cache-sim" if counter_name and cache_sim else counter_name


def _pool(counter_name: str, cache_sim: bool, timeout: float | None, kinds: dict[str, Any],
          keep: float | None) -> tuple[WorkerPool, Any]:
    key = _key(counter_name, cache_sim)
    if key not in _WORKERS:
        if counter_name:
            # Its files are this node's.
            counter = _COUNTERS[key] = get_counter(counter_name, cache_sim=cache_sim)
            pool = WorkerPool(prefix=counter.worker_prefix(), env=counter.worker_env(), timeout=timeout,
                              diagnostics=counter.diagnostics, kinds=kinds, finish=counter.finish)
        else:
            pool = WorkerPool(timeout=timeout, kinds=kinds)
        _WORKERS[key] = (pool, None)
    pool, worker = _WORKERS[key]
    pool.timeout, pool.kinds = timeout, dict(kinds)
    counter = _COUNTERS.get(key)
    pool.kept = None
    if counter is not None and keep is not None:
        def kept(slot: int, counter: InstructionCounter = counter, keep: float = keep) -> KeptWorker | None:
            return _borrow(counter, keep)

        pool.kept = kept
    return pool, worker


@atexit.register
def release_workers() -> None:
    """Close harness's workers this process holds (a kept one goes back to its slot) and its counters."""
    for _, worker in _WORKERS.values():
        if worker is not None:
            worker.close()
    for counter in _COUNTERS.values():
        counter.close()
    _WORKERS.clear()
    _COUNTERS.clear()
    _STARTED_AS.clear()


def _hold_for(environ: dict[str, str], cwd: str) -> None:
    """Workers started for another driver's environment or directory never serve this one: a
    process that outlives its run (``cluster.kept_actors``) serves runs of other shells too."""
    if _STARTED_AS != [(environ, cwd)]:
        release_workers()
        _STARTED_AS.append((dict(environ), cwd))


@contextlib.contextmanager
def _driver_environment(environ: dict[str, str], cwd: str) -> Iterator[None]:
    """This process's environment and directory as the driver's, while harness's worker starts.

    Python's temporary directory too (``tempfile`` keeps the first it found): a counting worker's
    directory, a kept worker's socket, is under the driver's ``TMPDIR``, where the driver's next
    run, local or on Ray, looks for them.
    """
    saved, saved_cwd, saved_tempdir = dict(os.environ), os.getcwd(), tempfile.tempdir
    os.environ.clear()
    os.environ.update(environ)
    tempfile.tempdir = None
    with contextlib.suppress(OSError):  # a node without the driver's directory starts where it is
        os.chdir(cwd)
    try:
        yield
    finally:
        os.environ.clear()
        os.environ.update(saved)
        tempfile.tempdir = saved_tempdir
        os.chdir(saved_cwd)


def mismatch(driver: dict[str, str]) -> str | None:
    """Why this node cannot run the driver's tasks (another harness, torch or Python), or None."""
    if not _FINGERPRINT:
        _FINGERPRINT.update(local_fingerprint())
    if _FINGERPRINT == driver:
        return None
    return (f"this node runs {describe(_FINGERPRINT)} but the driver runs {describe(driver)}; "
            "install the driver's versions on every node (or run from the same environment)")


def cache_mismatch(cache_sim: dict[str, Any]) -> str | None:
    """Why this node cannot count the driver's ``--cache-sim`` tasks (it simulates another geometry), or None."""
    here = record_geometry()
    if here == cache_sim:
        return None
    return (f"this node simulates the caches as {here} but the driver's record states {cache_sim}; "
            "install the driver's harness on every node")


def run_remote(task_json: dict[str, Any], min_run_time: float, timeout: float, counter_name: str,
               kinds: dict[str, Any], driver: dict[str, str], environ: dict[str, str], cwd: str,
               tracker: Any = None, index: int = 0, keep: float | None = None,
               cache_sim: dict[str, Any] | None = None) -> dict[str, Any]:
    """The body of every Ray task: the result's JSON, with ``extra["node"]`` (host, node id, IP,
    start and end in seconds since the epoch). ``driver``: the driver's fingerprint;
    ``environ`` and ``cwd``: its environment and directory, which harness's worker starts with;
    ``keep``: the run's kept-worker idle timeout (None: counting workers are not kept);
    ``cache_sim``: for a count with callgrind's cache simulation, the geometry the driver's record
    states (``counters.cache.record_geometry``; None: no simulation)."""
    task = Task.from_json(task_json)
    node = this_node()
    if tracker is not None:
        tracker.started.remote(index, node_label(node))
    started = time.time()
    simulates = bool(counter_name) and cache_sim is not None
    why = mismatch(driver)
    if why is None and simulates:
        why = cache_mismatch(cache_sim)
    if why is not None:
        result = TaskResult(task=task, status="failed", error=f"node {node['ip']} ({node['host']}) refused: {why}")
    else:
        _hold_for(environ, cwd)
        key = _key(counter_name, simulates)
        counted, kept_in = profiles.on_node(task)  # kept profiles go to the driver (cluster.profiles)
        starting = _WORKERS.get(key, (None, None))[1] is None or bool(task.params.get("fresh_worker"))
        try:
            # A worker that starts here, and the counter's files, are where the driver's would be.
            with _driver_environment(environ, cwd) if starting else contextlib.nullcontext():
                pool, worker = _pool(counter_name, simulates, timeout, kinds, keep)
                if worker is not None and task.params.get("fresh_worker"):
                    worker.close()  # its figure depends on what the process ran before (see WorkerPool.run)
                    worker = None
                try:
                    worker, result = pool.run_on(worker, counted, min_run_time)
                except BaseException:
                    # Cancelled (Ctrl-C on the driver): harness's worker goes with the task.
                    pool.shutdown()
                    _WORKERS.pop(key, None)
                    raise
            _WORKERS[key] = (pool, worker)
            result = profiles.ship(result, task, kept_in)
        finally:
            if kept_in is not None:
                shutil.rmtree(kept_in, ignore_errors=True)
    result.extra["node"] = {**node, "started": started, "finished": time.time()}
    return result.to_json()
