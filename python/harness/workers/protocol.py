"""The line protocol between harness and its worker processes, and what a dead worker looks like.

A request is one JSON line: ``{"task": Task JSON, "min_run_time": s}`` (plus
``"kind"``, the runner's reference for kinds a worker cannot know by name), or
``{"op": "exit"}``. An answer is one JSON line: ``{"ready": pid}`` once at
start, then ``{"result": TaskResult JSON}`` per request. Pipe workers answer on
a dedicated fd, kept workers on their Unix socket.
"""

from __future__ import annotations

import json
import selectors
from collections.abc import Callable
from typing import Any

from harness.model.task import Task

# The module a worker process runs (``python -m WORKER_MODULE``): named, not
# imported, so this layer never depends on what the worker executes.
WORKER_MODULE = "harness.run.worker"
STDERR_TAIL_BYTES = 8192


class WorkerDied(Exception):
    pass


class WorkerStartFailed(WorkerDied):
    """The worker died or hung before saying it was ready; carries its pid and stderr."""

    def __init__(self, message: str, pid: int) -> None:
        super().__init__(message)
        self.pid = pid


def request_line(task: Task, min_run_time: float, kind: dict[str, Any] | None = None) -> bytes:
    request: dict[str, Any] = {"task": task.to_json(), "min_run_time": min_run_time}
    if kind is not None:
        request["kind"] = kind
    return (json.dumps(request) + "\n").encode()


EXIT_LINE = b'{"op": "exit"}\n'


def read_answer(
    channel: Any, readline: Callable[[], str | bytes], timeout: float, what: str
) -> dict[str, Any] | None:
    """The next JSON line a worker writes on ``channel``; None when it closed it (died).

    TimeoutError(``what``) after ``timeout`` s of silence; WorkerDied when
    another thread killed the worker and closed the channel under us.
    """
    sel = selectors.DefaultSelector()
    try:
        sel.register(channel, selectors.EVENT_READ)
        ready = sel.select(timeout)
        line = readline() if ready else None
    except (ValueError, OSError):
        raise WorkerDied("worker was killed") from None
    finally:
        sel.close()
    if line is None:
        raise TimeoutError(what)
    return json.loads(line) if line else None


def with_stderr(message: str, stderr: str) -> str:
    stderr = stderr.strip()
    return f"{message}\n--- worker stderr (last {STDERR_TAIL_BYTES} bytes) ---\n{stderr}" if stderr else message
