"""The Ray executor: a run's tasks as Ray tasks on a local Ray started for the run, or on a cluster.

Wall-time tasks go first, each holding the resource every node offers once
(``options.WALL_RESOURCE``), so no two wall-time measurements share a
machine; then the instruction-count tasks, one CPU each, over every CPU of the
cluster (counts do not depend on what runs beside them). Each Ray task runs
the task in harness's own worker process on its node (``cluster.remote``);
results stream back as they finish and go to ``on_result`` exactly as a local
run's do, so the same writer and the same guarantees hold. A failed benchmark
is a failed result; only a lost node makes Ray retry a task (``max_retries``,
``retry_exceptions=False``). Ctrl-C cancels what is queued and running
(gently first, so each task kills its worker, then by force), keeps what
finished, and stops a Ray this run started.
"""

from __future__ import annotations

import itertools
import logging
import os
import time
from collections.abc import Callable, Sequence
from typing import Any

from harness import kinds
from harness.errors import UsageError
from harness.measure.counters.base import InstructionCounter
from harness.model.result import TaskResult
from harness.model.task import Task
from harness.options import RAY_INSTALL, RAY_MAX_RETRIES, WALL_RESOURCE, RunOptions
from harness.records.environment import local_fingerprint
from harness.workers.process import library_may_set_environment, own_environment

POLL_SECONDS = 0.5  # how often progress asks the tracker what runs where
CANCEL_GRACE = 5.0  # seconds cancelled tasks get to kill their workers before Ray kills them
OBJECT_STORE_BYTES = 128 * 2**20  # a local Ray's object store: results are small JSON

OnResult = Callable[[TaskResult], None]
OnNodes = Callable[[dict[str, dict[str, int]]], None]


def require_ray() -> None:
    """UsageError, with the install command, where Ray is not installed."""
    try:
        with library_may_set_environment():  # RAY_CLIENT_MODE: harness's workers start without it
            import ray  # noqa: F401 - only asked for with --executor ray
    except ImportError:
        raise UsageError(f"--executor ray needs Ray, which is not installed; install it with: {RAY_INSTALL}") from None


def _connect(options: RunOptions) -> bool:
    """Join the cluster at ``options.address``, or start a local Ray of ``options.jobs`` CPUs;
    True when this run started (and must stop) it. A caller's own ``ray.init`` is used as it is."""
    import ray

    if ray.is_initialized():
        return False
    quiet = {"log_to_driver": False, "logging_level": logging.WARNING, "include_dashboard": False}
    if options.address:
        try:
            ray.init(address=options.address, **quiet)
        except (ConnectionError, RuntimeError, ValueError) as exc:
            raise UsageError(f"--address {options.address}: cannot join that Ray cluster ({exc}); "
                             "start it with `ray start --head` or give the head's address") from None
    else:
        # Ray's warnings about a cluster's set-up (token authentication, ...) do not concern a
        # private Ray that lives as long as this run. address="local": without it, ray.init joins
        # a cluster that `ray start` left running on this machine (or RAY_ADDRESS names), and
        # refuses num_cpus there; a run without --address gets a Ray of its own either way.
        ray.init(address="local", num_cpus=options.jobs, resources={WALL_RESOURCE: 1}, object_store_memory=OBJECT_STORE_BYTES,
                 **{**quiet, "logging_level": logging.ERROR})
    return True


def _require_wall_resource(options: RunOptions) -> None:
    import ray

    if not ray.cluster_resources().get(WALL_RESOURCE):
        raise UsageError(
            f"no node of the Ray cluster at {options.address} offers the resource {WALL_RESOURCE!r}, so no "
            f"wall-time task could ever start; start each node with "
            f"`ray start ... --resources='{{\"{WALL_RESOURCE}\": 1}}'`, or run with --mode instructions"
        )


def _lost(task: Task, exc: BaseException) -> TaskResult:
    first = str(exc).strip().splitlines()[:1]
    return TaskResult(task=task, status="failed",
                      error=f"Ray could not run the task ({type(exc).__name__}: {first[0] if first else ''}); "
                            f"a lost node is retried {RAY_MAX_RETRIES} times")


def _cancel(pending: Sequence[Any]) -> None:
    """Cancel queued and running tasks: gently (each kills its worker), then by force."""
    import ray

    for ref in pending:
        try:
            ray.cancel(ref, force=False)
        except Exception:  # noqa: BLE001 - a task that just finished cannot be cancelled
            pass
    deadline = time.monotonic() + CANCEL_GRACE
    left = list(pending)
    while left and time.monotonic() < deadline:
        _, left = ray.wait(left, num_returns=len(left), timeout=0.2)
    for ref in left:
        try:
            ray.cancel(ref, force=True)
        except Exception:  # noqa: BLE001
            pass


class _Driver:
    """One run's submissions, results and per-node progress."""

    def __init__(self, tasks: Sequence[Task], options: RunOptions, counter: InstructionCounter | None,
                 on_result: OnResult, on_nodes: OnNodes | None, environ: dict[str, str]) -> None:
        import ray

        from harness.cluster.remote import run_remote
        from harness.cluster.tracker import start_tracker

        self.options, self.on_result, self.on_nodes = options, on_result, on_nodes
        self.total = len(tasks)
        self.counter_name = counter.name if counter is not None else ""
        self.kinds = kinds.runner_references(tasks)
        self.driver = local_fingerprint()
        self.environ, self.cwd = environ, os.getcwd()  # harness's workers start as here
        self.remote = ray.remote(run_remote)
        self.tracker = start_tracker() if on_nodes is not None else None
        self.finished: dict[int, str] = {}
        self.shown: dict[str, dict[str, int]] | None = None
        self.asked = 0.0  # when progress last asked the tracker (time.monotonic)
        self.index = itertools.count()

    def submit(self, task: Task, resources: dict[str, float]) -> tuple[Any, tuple[int, Task]]:
        i = next(self.index)
        counter = self.counter_name if task.mode == "instructions" else ""
        ref = self.remote.options(
            num_cpus=1, resources=resources, max_retries=RAY_MAX_RETRIES, retry_exceptions=False,
        ).remote(task.to_json(), self.options.min_run_time, self.options.timeout, counter, self.kinds,
                 self.driver, self.environ, self.cwd, self.tracker, i, self.options.keep_seconds)
        return ref, (i, task)

    def _progress(self, force: bool = False) -> None:
        # At most once per POLL_SECONDS: each question is a call into the tracker's process,
        # and on a full node every CPU second of Ray's is taken from the benchmarks.
        if self.on_nodes is None or self.tracker is None:
            return
        now = time.monotonic()
        if not force and now - self.asked < POLL_SECONDS:
            return
        self.asked = now
        import ray

        from harness.cluster.tracker import node_counts

        try:
            started = ray.get(self.tracker.snapshot.remote(), timeout=POLL_SECONDS * 4)
        except Exception:  # noqa: BLE001 - progress must never stop a run
            return
        counts = node_counts(started, self.finished, self.total)
        if counts != self.shown:
            self.shown = counts
            self.on_nodes(counts)

    def run(self, phase: Sequence[Task], resources: dict[str, float]) -> None:
        import ray

        from harness.cluster.remote import node_label

        pending = dict(self.submit(t, resources) for t in phase)
        try:
            while pending:
                ready, _ = ray.wait(list(pending), num_returns=1, timeout=POLL_SECONDS)
                for ref in ready:
                    i, task = pending.pop(ref)
                    try:
                        result = TaskResult.from_json(ray.get(ref))
                    except Exception as exc:  # noqa: BLE001 - Ray's errors (node lost for good, cancelled)
                        result = _lost(task, exc)
                    node = result.extra.get("node")
                    self.finished[i] = node_label(node) if isinstance(node, dict) else "(lost)"
                    self.on_result(result)
                self._progress()
            self._progress(force=True)
        except KeyboardInterrupt:
            _cancel(list(pending))
            raise


def run_on_ray(tasks: Sequence[Task], options: RunOptions, counter: InstructionCounter | None,
               on_result: OnResult, on_nodes: OnNodes | None = None) -> None:
    """Run ``tasks`` on Ray: wall-time tasks one per node, then instruction-count tasks on every CPU."""
    require_ray()
    import ray

    # harness's workers on the nodes start with this environment, as a local run's workers do
    # (without what Ray set in it): counts move with the environment (docs/instruction-counts.md).
    environ = own_environment()
    wall = [t for t in tasks if t.mode != "instructions"]
    counted = [t for t in tasks if t.mode == "instructions"] if counter is not None else []
    with library_may_set_environment():
        started_here = _connect(options)
    try:
        if wall:
            _require_wall_resource(options)
        driver = _Driver(tasks, options, counter, on_result, on_nodes, environ)
        if wall:
            driver.run(wall, {WALL_RESOURCE: 1})
        if counted:
            driver.run(counted, {})
    finally:
        if started_here:
            ray.shutdown()
