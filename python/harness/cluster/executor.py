"""The Ray executor: a run's tasks as Ray tasks on a local Ray started for the run, or on a cluster.

Wall-time tasks go first, each holding the resource every node offers once
(``options.WALL_RESOURCE``), so no two wall-time measurements share a
machine; then the instruction-count tasks, one CPU each, over every CPU of the
cluster (counts do not depend on what runs beside them). Each Ray task runs
the task in harness's own worker process on its node (``cluster.remote``);
results stream back as they finish and go to ``on_result`` exactly as a local
run's do, so the same writer and the same guarantees hold. A failed benchmark
is a failed result; only a lost node makes Ray retry a task (``max_retries``,
``retry_exceptions=False``). A ``--cache-sim`` run sends each count the
geometry its record states, which every node checks against its own; kept
profiles (``--keep-profiles``) come back in the results and are written here
(``cluster.profiles``). On a Ray this run did not start (``--address``,
a caller's ``ray.init``), a run that keeps its workers gives its
instruction-count tasks to kept actors instead (``cluster.kept_actors``):
processes that outlive the run, so the next one skips Ray's worker starts
too. Ctrl-C cancels what is queued and running
(gently first, so each task kills its worker, then by force), keeps what
finished, and stops a Ray this run started.
"""

from __future__ import annotations

import itertools
import logging
import os
import time
from collections import deque
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from harness import kinds
from harness.cluster.profiles import land
from harness.errors import UsageError
from harness.measure.counters.base import InstructionCounter
from harness.measure.counters.cache import record_geometry
from harness.model.result import TaskResult
from harness.model.task import Task
from harness.options import RAY_INSTALL, RAY_MAX_RETRIES, WALL_RESOURCE, RunOptions
from harness.records.environment import local_fingerprint
from harness.workers.process import library_may_set_environment, own_environment

if TYPE_CHECKING:
    from harness.cluster.kept_actors import KeptSlot

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
        ray.init(
            address="local",
            num_cpus=options.jobs,
            resources={WALL_RESOURCE: 1},
            object_store_memory=OBJECT_STORE_BYTES,
            **{**quiet, "logging_level": logging.ERROR},
        )
    return True


def _require_wall_resource(options: RunOptions) -> None:
    import ray

    if not ray.cluster_resources().get(WALL_RESOURCE):
        raise UsageError(
            f"no node of the Ray cluster at {options.address} offers the resource {WALL_RESOURCE!r}, so no "
            f"wall-time task could ever start; start each node with "
            f"`ray start ... --resources='{{\"{WALL_RESOURCE}\": 1}}'`, or run with --mode instructions"
        )


def _kept_slots(options: RunOptions, tasks: int) -> list[KeptSlot]:
    """The kept actors a run's instruction-count tasks go to (no more than there are tasks): none
    unless the run keeps its workers."""
    keep = options.keep_seconds
    if keep is None:
        return []
    from harness.cluster.kept_actors import kept_actors

    return kept_actors(keep, limit=tasks)


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

        self.options, self.on_result, self.on_nodes = options, on_result, on_nodes
        self.total = len(tasks)
        self.counter_name = counter.name if counter is not None else ""
        # What every count simulates (None: no cache simulation); the record states the same.
        self.cache_sim = record_geometry() if getattr(counter, "cache_sim", False) else None
        self.kinds = kinds.runner_references(tasks)
        self.driver = local_fingerprint()
        self.environ, self.cwd = environ, os.getcwd()  # harness's workers start as here
        self.remote = ray.remote(run_remote)
        self.tracker: Any = None  # started by the first phase of Ray tasks that shows progress
        self.started: dict[int, str] = {}  # task index -> node, for tasks given to kept actors
        self.finished: dict[int, str] = {}
        self.shown: dict[str, dict[str, int]] | None = None
        self.asked = 0.0  # when progress last asked the tracker (time.monotonic)
        self.index = itertools.count()

    def submit(self, task: Task, resources: dict[str, float]) -> tuple[Any, tuple[int, Task]]:
        i = next(self.index)
        counted = task.mode == "instructions"
        ref = self.remote.options(
            num_cpus=1, resources=resources, max_retries=RAY_MAX_RETRIES, retry_exceptions=False,
        ).remote(task.to_json(), self.options.min_run_time, self.options.timeout,
                 self.counter_name if counted else "", self.kinds, self.driver, self.environ, self.cwd,
                 self.tracker, i, self.options.keep_seconds, self.cache_sim if counted else None)
        return ref, (i, task)

    def _progress(self, force: bool = False) -> None:
        # At most once per POLL_SECONDS: each question is a call into the tracker's process,
        # and on a full node every CPU second of Ray's is taken from the benchmarks.
        if self.on_nodes is None:
            return
        now = time.monotonic()
        if not force and now - self.asked < POLL_SECONDS:
            return
        self.asked = now
        import ray

        from harness.cluster.tracker import node_counts

        started = self.started
        if self.tracker is not None:
            try:
                started = {**started, **ray.get(self.tracker.snapshot.remote(), timeout=POLL_SECONDS * 4)}
            except Exception:  # noqa: BLE001 - progress must never stop a run
                return
        counts = node_counts(started, self.finished, self.total)
        if counts != self.shown:
            self.shown = counts
            self.on_nodes(counts)

    def run(self, phase: Sequence[Task], resources: dict[str, float]) -> None:
        import ray

        from harness.cluster.tracker import start_tracker

        if self.on_nodes is not None and self.tracker is None:
            self.tracker = start_tracker()
        pending = dict(self.submit(t, resources) for t in phase)
        try:
            while pending:
                ready, _ = ray.wait(list(pending), num_returns=1, timeout=POLL_SECONDS)
                for ref in ready:
                    i, task = pending[ref]
                    try:
                        result = TaskResult.from_json(ray.get(ref))
                    except Exception as exc:  # noqa: BLE001 - Ray's errors (node lost for good, cancelled)
                        result = _lost(task, exc)
                    self._deliver(i, result)
                    del pending[ref]  # after: a signal before it is delivered leaves it to _salvage
                self._progress()
            self._progress(force=True)
        except KeyboardInterrupt:
            self._salvage({ref: i for ref, (i, _) in pending.items()})
            _cancel([ref for ref, (i, _) in pending.items() if i not in self.finished])
            raise

    def _salvage(self, refs: dict[Any, int]) -> None:
        """On Ctrl-C: deliver the results of ``refs`` (ref -> task index) that had finished, though
        this thread had not taken them yet; what still runs, or failed, is left to be cancelled."""
        import ray

        refs = {ref: i for ref, i in refs.items() if i not in self.finished}
        if not refs:
            return
        try:
            ready, _ = ray.wait(list(refs), num_returns=len(refs), timeout=0)
        except Exception:  # noqa: BLE001 - Ray going down with the signal: cancelling must still run
            return
        for ref in ready:
            try:
                result = TaskResult.from_json(ray.get(ref, timeout=CANCEL_GRACE))
            except Exception:  # noqa: BLE001 - lost or cancelled: nothing finished to keep
                continue
            self._deliver(refs[ref], result)

    def _deliver(self, i: int, result: TaskResult) -> None:
        from harness.cluster.remote import node_label

        node = result.extra.get("node")
        self.finished[i] = node_label(node) if isinstance(node, dict) else "(lost)"
        self.on_result(land(result))

    def run_kept(self, phase: Sequence[Task], slots: Sequence[KeptSlot]) -> None:
        """``phase`` on kept actors (``cluster.kept_actors``), one task each at a time. An actor that
        dies (its node lost, or killed) takes its node out of this run and its task goes to another
        (at most RAY_MAX_RETRIES times); what no actor is left for runs as Ray tasks, which Ray places.
        Ctrl-C kills the actors running this run's tasks (a running actor task cannot be cancelled);
        the next run starts new ones, their kept workers still warm."""
        import ray
        from ray.exceptions import ActorUnschedulableError, RayActorError

        keep = self.options.keep_seconds
        queue = deque((next(self.index), task, 0) for task in phase)
        idle = list(slots)
        running: dict[Any, tuple[KeptSlot, int, Task, int]] = {}
        dead: set[str] = set()  # the nodes of actors that died during this run
        try:
            while running or (queue and idle):
                while idle and queue:
                    slot, (i, task, tries) = idle.pop(0), queue.popleft()
                    ref = slot.handle.run.remote(
                        task.to_json(), self.options.min_run_time, self.options.timeout, self.counter_name,
                        self.kinds, self.driver, self.environ, self.cwd, None, i, keep=keep,
                        cache_sim=self.cache_sim)
                    running[ref] = (slot, i, task, tries)
                    self.started[i] = slot.node
                ready, _ = ray.wait(list(running), num_returns=1, timeout=POLL_SECONDS)
                for ref in ready:
                    slot, i, task, tries = running[ref]
                    try:
                        result = TaskResult.from_json(ray.get(ref))
                    except (RayActorError, ActorUnschedulableError) as exc:
                        # Its node was lost (its other actors with it), or it was killed.
                        del running[ref], self.started[i]
                        dead.add(slot.node)
                        idle = [s for s in idle if s.node not in dead]
                        if tries < RAY_MAX_RETRIES:
                            queue.appendleft((i, task, tries + 1))
                            continue
                        result = _lost(task, exc)
                    except Exception as exc:  # noqa: BLE001 - Ray's other errors: the actor lives on
                        result = _lost(task, exc)
                    if slot.node not in dead:
                        idle.append(slot)
                    self._deliver(i, result)
                    running.pop(ref, None)  # after: a signal before it is delivered leaves it to _salvage
                self._progress()
        except KeyboardInterrupt:
            self._salvage({ref: i for ref, (_, i, _, _) in running.items()})
            for slot, i, *_ in running.values():
                if i not in self.finished:
                    ray.kill(slot.handle)
            raise
        if queue:  # no actor left: Ray places the rest as tasks, and retries them where a node is lost
            self.run([task for _, task, _ in queue], {})
        else:
            self._progress(force=True)


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
        # A Ray this run started stops with it: kept actors only where it joined one that stays.
        joined = bool(options.address) or not started_here
        slots = _kept_slots(options, len(counted)) if counted and joined else []
        if slots:
            driver.run_kept(counted, slots)
        elif counted:
            driver.run(counted, {})
    finally:
        if started_here:
            ray.shutdown()
