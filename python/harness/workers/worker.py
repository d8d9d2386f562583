"""Worker: what the pool and every other caller need of a worker, as a Protocol.

Declared as torch declares ``TimerClass`` (``torch/utils/benchmark/utils/_stubs.py``):
a ``typing.Protocol`` that the real classes satisfy by their shape, not by
inheritance. ``WorkerProcess`` (``workers.process``, one private process and
its pipes) and ``KeptWorker`` (``workers.kept``, a session of a worker that
outlives the run) are the two; ``WorkerPool`` (``workers.pool``), the Ray
task (``cluster.remote``) and ``collect_callgrind`` hold either. A test
(tests/workers/test_worker_protocol.py) checks both against it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

if TYPE_CHECKING:
    from harness.model.result import TaskResult
    from harness.model.task import Task


class WorkerProc(Protocol):
    """The parts of ``subprocess.Popen`` a caller uses: the pid (a process group's, for kill) and whether
    it has exited."""

    pid: int

    def poll(self) -> int | None: ...


@runtime_checkable
class Worker(Protocol):
    """A worker: runs tasks one at a time, each answer a TaskResult, until killed or closed."""

    proc: WorkerProc  # the process answering this client (a kept worker's: this client's session)

    def run(self, task: Task, min_run_time: float, timeout: float, kind: dict[str, Any] | None = None) -> TaskResult:
        """Run ``task`` (``kind``: its runner's reference, for a kind the worker cannot know by name). Raises
        ``WorkerDied`` when the process died or went silent for ``timeout`` seconds."""
        ...

    def take_stderr(self) -> str:
        """What the process wrote to stderr since the last call (a tail)."""
        ...

    def kill(self) -> None:
        """End the process now (a timeout, a crash, Ctrl-C); for a kept worker, this client's session only."""
        ...

    def close(self) -> None:
        """Let go in order: a private worker exits, a kept one stays up for the next client."""
        ...


@runtime_checkable
class KeepsItsLogs(Protocol):
    """A worker whose tool's logs live with it (a kept worker's directory) rather than with the pool's
    counter: the pool asks the worker, not its own ``diagnostics``."""

    def diagnostics(self, pid: int) -> str:
        """What the worker's tool logged about process ``pid`` (this worker or a child it forked)."""
        ...
