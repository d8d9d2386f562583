"""The Worker protocol (workers/worker.py) against the real worker classes: their methods take what the
protocol's take, and real objects of each are Workers (a started WorkerProcess that runs a task; a
KeptWorker's client side over a real socket)."""

from __future__ import annotations

import inspect
import socket
from pathlib import Path

import pytest

from harness.model.task import Task
from harness.workers.kept import KeptWorker
from harness.workers.pool import WorkerPool
from harness.workers.process import WorkerProcess
from harness.workers.worker import KeepsItsLogs, Worker


def _members(protocol: type) -> list[str]:
    """The protocol's methods and attributes (``typing.get_protocol_members`` from Python 3.13)."""
    return sorted(name for name in {*vars(protocol), *protocol.__annotations__}
                  if not name.startswith("_") and (name in protocol.__annotations__ or callable(vars(protocol)[name])))


def _parameters(function: object) -> list[tuple[str, object, object]]:
    """Names, kinds and defaults of a function's parameters (annotations are strings under
    ``from __future__ import annotations`` and say the same)."""
    return [(p.name, p.kind, p.default) for p in inspect.signature(function).parameters.values()]


@pytest.mark.parametrize("cls", [WorkerProcess, KeptWorker])
def test_each_worker_class_takes_what_the_protocol_asks(cls):
    mismatches = []
    for name in _members(Worker):
        if name == "proc":
            continue  # an attribute set when the object is made: checked on real objects below
        if not callable(getattr(cls, name, None)):
            mismatches.append(f"{cls.__name__} has no method {name}")
        elif _parameters(getattr(cls, name)) != _parameters(getattr(Worker, name)):
            mismatches.append(f"{cls.__name__}.{name}{inspect.signature(getattr(cls, name))} is not "
                              f"Worker.{name}{inspect.signature(getattr(Worker, name))}")
    assert not mismatches


def test_the_members_are_what_the_pool_uses():
    """The protocol names what workers/pool.py calls on a worker, no more, no less."""
    assert _members(Worker) == ["close", "kill", "proc", "run", "take_stderr"]
    assert _members(KeepsItsLogs) == ["diagnostics"]
    assert _parameters(KeptWorker.diagnostics) == _parameters(KeepsItsLogs.diagnostics)


def test_a_real_worker_process_is_a_worker_and_runs_a_task():
    worker = WorkerProcess([], None, 120.0)
    try:
        assert isinstance(worker, Worker) and not isinstance(worker, KeepsItsLogs)
        assert isinstance(worker.proc.pid, int) and worker.proc.poll() is None
        pool = WorkerPool(jobs=1)
        params = {"stmt": "x + 1", "setup": "x = 1", "language": "python", "num_threads": 1, "min_run_time": 0.01}
        kept, result = pool.run_on(worker, Task(suite="t", name="add", kind="timer", params=params), 0.01)
        assert kept is worker and result.status == "ok", result.error
    finally:
        worker.close()
    assert worker.proc.poll() is not None


def test_a_real_kept_worker_client_is_a_worker_that_keeps_its_logs(tmp_path: Path):
    ours, theirs = socket.socketpair()
    worker = KeptWorker(tmp_path, -1, ours, pid=2**22 + 1, server_pid=2**22 + 2, started=True)
    try:
        assert isinstance(worker, Worker) and isinstance(worker, KeepsItsLogs)
        assert worker.proc.pid == 2**22 + 1 and worker.proc.poll() is not None  # no such process
        assert worker.diagnostics(123) == ""
    finally:
        worker.close()
        theirs.close()
