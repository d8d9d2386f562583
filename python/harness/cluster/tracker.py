"""The tracker: a small Ray actor on the driver's node that hears which node started which task.

Ray says where a task ran only when it returns; progress also wants what
each node is running now. Every Ray task tells the tracker when it starts
(fire and forget); the driver asks for the map now and then. A task Ray
retries on another node after its node was lost simply reports again.
"""

from __future__ import annotations

from typing import Any


class Tracker:
    def __init__(self) -> None:
        self.nodes: dict[int, str] = {}  # task index -> the node that started it last

    def started(self, index: int, node: str) -> None:
        self.nodes[index] = node

    def snapshot(self) -> dict[int, str]:
        return dict(self.nodes)


def start_tracker() -> Any:
    """The tracker actor, pinned to this (the driver's) node and taking no CPU from the tasks."""
    import ray
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

    here = ray.get_runtime_context().get_node_id()
    return ray.remote(Tracker).options(
        num_cpus=0, scheduling_strategy=NodeAffinitySchedulingStrategy(here, soft=True),
    ).remote()


def node_counts(started: dict[int, str], finished: dict[int, str], total: int) -> dict[str, dict[str, int]]:
    """Per node: tasks done and running; "(queued)": tasks no node has started yet."""
    out: dict[str, dict[str, int]] = {}
    for node in finished.values():
        out.setdefault(node, {"done": 0, "running": 0})["done"] += 1
    for index, node in started.items():
        if index not in finished:
            out.setdefault(node, {"done": 0, "running": 0})["running"] += 1
    queued = total - len(finished) - sum(1 for i in started if i not in finished)
    out["(queued)"] = {"queued": max(queued, 0)}
    return out
