"""Kept profiles (``bench --keep-profiles DIR``) of a run on Ray: written on the node, landed by the driver.

A count is finished where it is counted (``measure.callgrind.details.finish``),
which on Ray is the node's Ray worker process, and ``DIR`` is a path of the
driver's machine: on another node it names another disk (or nothing
writable). So the node writes a count's files into a directory of its own,
sends their contents back with the result (``cluster.remote`` removes them), and the driver
writes them into ``DIR``, as a local run would: the record names the driver's
files. On a local Ray the files make the same trip, so one path is tested.
The node's task differs from the driver's only in that directory, which no
count sees (``run.instructions.counted_request`` drops it): the counts are
the same.
"""

from __future__ import annotations

import dataclasses
import tempfile
from pathlib import Path

from harness.errors import HarnessError
from harness.measure.callgrind.flame import KEEP_PROFILE, write_profiles
from harness.model.result import TaskResult
from harness.model.task import Task

SHIPPED = "profile_files"  # extra field, node to driver only: {file name: content}
KEPT_ON_FAILURE = ("elapsed_s", "node")  # what a result failed by its files keeps of its extra fields


def on_node(task: Task) -> tuple[Task, Path | None]:
    """``task`` as this node counts it: keeping its profiles in a new directory of the node's (None: it
    keeps none, and is returned as it is)."""
    if not task.params.get(KEEP_PROFILE):
        return task, None
    directory = Path(tempfile.mkdtemp(prefix="harness-profiles-"))
    return dataclasses.replace(task, params={**task.params, KEEP_PROFILE: str(directory)}), directory


def ship(result: TaskResult, task: Task, directory: Path | None) -> TaskResult:
    """The node's ``result`` for the driver: the driver's own ``task``, the kept files' contents in
    ``extra[SHIPPED]`` instead of their paths. The caller removes ``directory`` (whatever became of the count)."""
    if directory is None:
        return result
    try:
        paths = result.extra.pop("profiles", None) or []
        files = {Path(p).name: Path(p).read_text(encoding="utf-8") for p in paths}
    except OSError as exc:
        result = TaskResult(task=result.task, status="failed", error=f"a kept profile could not be read back: {exc}",
                            extra={k: v for k, v in result.extra.items() if k in KEPT_ON_FAILURE})
        files = {}
    if files:
        result.extra[SHIPPED] = files
    return dataclasses.replace(result, task=task)


def land(result: TaskResult) -> TaskResult:
    """On the driver: the shipped files written into the task's ``--keep-profiles`` directory and named in
    ``extra["profiles"]``, as a local count names them; one that cannot be written fails the result."""
    files = result.extra.pop(SHIPPED, None)
    if not files:
        return result
    try:
        result.extra["profiles"] = write_profiles(Path(result.task.params[KEEP_PROFILE]), files)
    except HarnessError as exc:
        return TaskResult(task=result.task, status="failed", error=str(exc),
                          extra={k: v for k, v in result.extra.items() if k in KEPT_ON_FAILURE})
    return result
