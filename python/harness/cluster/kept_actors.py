"""Kept actors: one detached Ray actor per CPU of each node, which outlives the run that started it.

A Ray job starts Ray worker processes of its own, so on a cluster that stays up
every run paid those starts (about 0.9 s on the 2-core reference VM, against
a 5 s run of warm counting workers). A kept actor is such a process that stays:
the next run on the cluster finds it by name and hands it its tasks, which it
counts in its node's kept counting workers (``cluster.remote``). Used only for
instruction-count tasks of a run that keeps its workers (``--keep-worker``,
``HARNESS_KEEP_WORKER``) on a Ray it did not start (``--address``, a caller's
own ``ray.init``): a Ray the run starts stops with it, and keeps nothing.

Each actor asks Ray for no CPU: it would hold it while idle and starve the
cluster's other work (the next run's wall-time tasks included). The driver
gives each actor one task at a time, one actor per CPU of its node, so a run
uses the CPUs Ray's accounting would have given it; concurrent runs share the
actors, and an actor runs their tasks one after the other.

An actor's name holds the digest of harness's sources
(``workers.kept.harness_digest``), its node and its CPU: a run from edited
sources never talks to an actor that runs the old ones, and starts its own;
the old one leaves when idle. An actor lets go of its node's kept counting
worker a second after its last task (between runs, a local run's Ray workers
or another actor may borrow it; the next task borrows one again, without a
start), and leaves once it was idle for the run's keep time (the last run's),
as a kept worker does. A lost node's actors die with it; the driver gives
their tasks to others (``cluster.executor``).
"""

from __future__ import annotations

import functools
import threading
import time
from dataclasses import dataclass
from typing import Any

from harness.cluster.remote import node_label, release_workers, run_remote
from harness.workers.kept import harness_digest

NAMESPACE = "harness"
NAME_PREFIX = "harness-kept-"
WATCH_SECONDS = 0.5  # how often an actor looks at its idle time (at most)
RELEASE_SECONDS = 1.0  # idle time after which an actor lets go of its counting worker


class KeptActor:
    """What runs in the detached actor's process: ``run_remote`` for each task it is given, and the
    idle watch that lets go of its counting worker, then ends it."""

    def __init__(self, keep: float) -> None:
        self.keep = keep
        self.last = time.monotonic()  # when the last task ended (or the actor started)
        self.holding = False  # whether this process holds harness's workers (cluster.remote)
        threading.Thread(target=self._watch, name="harness-idle-watch", daemon=True).start()

    def run(self, *args: Any, keep: float, **kwargs: Any) -> dict[str, Any]:
        self.keep = keep  # the latest run's keep time is the actor's
        self.holding = True
        try:
            return run_remote(*args, keep=keep, **kwargs)
        finally:
            self.last = time.monotonic()

    def release_if_idle(self) -> None:
        """Let go of the counting worker between runs, so that other clients on the node (a local
        run's Ray workers, another actor) can borrow it; the next task borrows one again."""
        if self.holding and time.monotonic() - self.last >= RELEASE_SECONDS:
            release_workers()
            self.holding = False

    def leave_if_idle(self) -> bool:
        """Exit when idle for the keep time. Called as a method, as ``release_if_idle`` is, so it
        runs after any task queued before it, never in the middle of one."""
        if time.monotonic() - self.last < self.keep:
            return False
        import ray

        release_workers()
        ray.actor.exit_actor()
        return True  # not reached: exit_actor raises

    def _watch(self) -> None:
        import ray

        me = None
        while True:
            time.sleep(max(0.2, min(WATCH_SECONDS, self.keep / 4)))
            idle = time.monotonic() - self.last
            try:
                me = me or ray.get_runtime_context().current_actor
                if idle >= self.keep:
                    ray.get(me.leave_if_idle.remote())
                elif self.holding and idle >= RELEASE_SECONDS:
                    ray.get(me.release_if_idle.remote())
            except Exception:  # noqa: BLE001 - the actor is leaving (or its Ray is): nothing to watch
                return


@dataclass
class KeptSlot:
    """One kept actor as the driver knows it: its name, handle and how progress names its node."""

    name: str
    handle: Any
    node: str


@functools.cache
def _actor_class() -> Any:
    """The Ray actor class, made once per process: Ray exports a class's definition once per object."""
    import ray

    return ray.remote(KeptActor)


def actor_name(digest: str, node_id: str, cpu: int) -> str:
    return f"{NAME_PREFIX}{digest[:16]}-{node_id[:16]}-{cpu}"


def kept_actors(keep: float, limit: int) -> list[KeptSlot]:
    """Up to ``limit`` kept actors, at most one for each CPU of each live node (the first CPU of
    every node, then the second, ...), found by name or started there now. Empty where the
    cluster has no CPU."""
    import ray
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

    digest = harness_digest()
    places = []  # (cpu, node id, label)
    for node in ray.nodes():
        if not node.get("Alive"):
            continue
        label = node_label({"host": node.get("NodeManagerHostname", node.get("NodeManagerAddress", "?")),
                            "node_id": node["NodeID"]})
        places += [(cpu, node["NodeID"], label) for cpu in range(int(node.get("Resources", {}).get("CPU", 0)))]
    actor = _actor_class()
    found = []
    for cpu, node_id, label in sorted(places)[:limit]:
        name = actor_name(digest, node_id, cpu)
        handle = actor.options(
            name=name, namespace=NAMESPACE, lifetime="detached", get_if_exists=True, num_cpus=0,
            max_restarts=0, scheduling_strategy=NodeAffinitySchedulingStrategy(node_id, soft=False),
        ).remote(keep)
        found.append(KeptSlot(name, handle, label))
    return found
