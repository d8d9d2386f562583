"""Shards: the K-th of N balanced, deterministic parts of a run's tasks, and what a record notes of them.

Parts are balanced by longest-task-first scheduling: tasks in order of
decreasing duration (the seconds an earlier run recorded, ``extra["elapsed_s"]``,
else the kind's estimate), each to the part with the least work so far, ties
broken by task name and part number. Nothing random and nothing of the machine
enters, so the same selection, durations and N give the same parts on every
CI job. ``schedule`` is the same rule for any number of workers, which
``benchmarks/self/scale.py`` uses to predict wall times.
"""

from __future__ import annotations

import heapq
from collections.abc import Mapping, Sequence
from typing import Any

from harness import kinds
from harness.errors import UsageError
from harness.model.record import RunRecord
from harness.model.task import Task
from harness.options import RunOptions
from harness.records import store

Key = tuple[str, str]


def durations_of(records: Sequence[RunRecord]) -> dict[Key, float]:
    """Seconds each task took in ``records`` (the last record wins), where they recorded it."""
    out: dict[Key, float] = {}
    for record in records:
        for r in record.results:
            seconds = r.extra.get("elapsed_s")
            if isinstance(seconds, int | float) and not isinstance(seconds, bool) and seconds >= 0:
                out[r.task.key] = float(seconds)
    return out


def read_durations(path: str) -> dict[Key, float]:
    """The durations recorded in the run record(s) at ``path`` (``--durations FILE``)."""
    found = durations_of(store.load_runs(path))
    if not found:
        raise UsageError(f"--durations {path}: its results record no durations (elapsed_s); "
                         "give the record of a run made with this harness")
    return found


def costs(tasks: Sequence[Task], durations: Mapping[Key, float] | None = None) -> list[float]:
    """Each task's expected seconds: recorded, else its kind's estimate."""
    durations = durations or {}
    return [durations.get(t.key, kinds.estimated_seconds(t)) for t in tasks]


def schedule(costs: Sequence[float], workers: int, names: Sequence[Any] | None = None) -> list[list[int]]:
    """Longest-task-first onto ``workers``: the indexes of the tasks each one gets, in input order."""
    names = list(names) if names is not None else list(range(len(costs)))
    order = sorted(range(len(costs)), key=lambda i: (-costs[i], names[i]))
    loads = [(0.0, w) for w in range(workers)]
    parts: list[list[int]] = [[] for _ in range(workers)]
    for i in order:
        load, w = heapq.heappop(loads)
        parts[w].append(i)
        heapq.heappush(loads, (load + costs[i], w))
    return [sorted(p) for p in parts]


def makespan(costs: Sequence[float], workers: int) -> float:
    """Predicted wall time of longest-task-first on ``workers``: the busiest worker's total."""
    return max((sum(costs[i] for i in part) for part in schedule(costs, workers)), default=0.0)


def shard(tasks: Sequence[Task], k: int, n: int, durations: Mapping[Key, float] | None = None) -> list[Task]:
    """The K-th (1-based) of N balanced parts of ``tasks``, in selection order."""
    parts = schedule(costs(tasks, durations), n, [t.key for t in tasks])
    return [tasks[i] for i in parts[k - 1]]


def note(selection: Sequence[Task], k: int, n: int) -> dict[str, Any]:
    """What a shard's record says of it (``environment["shard"]``): which part, and the whole selection."""
    return {"index": k, "count": n, "selection": [{"name": t.full_name, "mode": t.mode} for t in selection]}


def pick(selection: Sequence[Task], options: RunOptions) -> tuple[list[Task], dict[str, Any] | None]:
    """The tasks this run executes (``options.shard``'s part, else all) and the record's shard note."""
    if options.shard is None:
        return list(selection), None
    k, n = options.shard
    durations = read_durations(options.durations) if options.durations else None
    return shard(selection, k, n, durations), note(selection, k, n)
