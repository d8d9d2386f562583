"""WorkerPool: runs Tasks in worker processes with per-task timeouts and crash isolation.

Each slot owns one worker process (``harness.worker``), started once and
reused for many tasks, so start-up (``import torch``; under valgrind, much
more) is paid per worker, not per task. A task that crashes its worker or
exceeds its timeout becomes a failed TaskResult carrying the worker's stderr,
and the slot starts a fresh worker for the next task. A task with
``params["fresh_worker"]`` never shares its process with an earlier task.
Ctrl-C (or SIGTERM, through the CLI) kills every worker, also one still
starting, and re-raises; results already delivered are the caller's to keep.
With ``kept=``, slots borrow kept workers that outlive the run (``kept_worker.py``).
"""

from __future__ import annotations

import collections
import json
import os
import queue
import selectors
import signal
import subprocess
import sys
import threading
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

from .result import TaskResult
from .task import Task

DEFAULT_TIMEOUT = 600.0
STDERR_TAIL_BYTES = 8192
_PYTHONPATH = str(Path(__file__).resolve().parents[1])


class WorkerDied(Exception):
    pass


class WorkerStartFailed(WorkerDied):
    """The worker died or hung before saying it was ready; carries its pid and stderr."""

    def __init__(self, message: str, pid: int) -> None:
        super().__init__(message)
        self.pid = pid


class Worker:
    """One worker process and its pipes."""

    def __init__(
        self,
        prefix: Sequence[str] = (),
        env: dict[str, str] | None = None,
        start_timeout: float = 600.0,
        on_spawn: Callable[[Worker], None] | None = None,
    ):
        """``on_spawn(worker)`` is called as soon as the process exists, before it is ready,
        so an owner can kill a worker that is still starting (under valgrind, ~10 s)."""
        read_fd, write_fd = os.pipe()
        full_env = dict(os.environ)
        # The worker must import this same harness, installed or from source.
        full_env["PYTHONPATH"] = os.pathsep.join(filter(None, [_PYTHONPATH, full_env.get("PYTHONPATH")]))
        full_env.update(env or {})
        self.proc = subprocess.Popen(
            [*prefix, sys.executable, "-m", "harness.worker", "--result-fd", str(write_fd)],
            stdin=subprocess.PIPE,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            pass_fds=(write_fd,),
            env=full_env,
            start_new_session=True,  # its own process group: Ctrl-C is ours to handle
        )
        os.close(write_fd)
        self._results = os.fdopen(read_fd, "r", encoding="utf-8")
        self._stderr: collections.deque[bytes] = collections.deque()
        self._stderr_lock = threading.Lock()
        self._stderr_thread = threading.Thread(target=self._drain_stderr, daemon=True)
        self._stderr_thread.start()
        try:
            if on_spawn is not None:
                on_spawn(self)
            self._receive(start_timeout, what="start")
        except (TimeoutError, WorkerDied) as exc:
            reason = f"no answer in {start_timeout:g} s" if isinstance(exc, TimeoutError) else str(exc)
            self.kill()
            raise WorkerStartFailed(_with_stderr(reason, self.take_stderr()), self.proc.pid) from None
        except BaseException:  # Ctrl-C while it starts: nobody else knows this process yet
            self.kill()
            raise

    def _drain_stderr(self) -> None:
        assert self.proc.stderr is not None
        for chunk in iter(lambda: self.proc.stderr.read1(4096), b""):  # type: ignore[union-attr]
            with self._stderr_lock:
                self._stderr.append(chunk)
                while sum(map(len, self._stderr)) > STDERR_TAIL_BYTES and len(self._stderr) > 1:
                    self._stderr.popleft()

    def take_stderr(self) -> str:
        with self._stderr_lock:
            data = b"".join(self._stderr)
            self._stderr.clear()
        return data.decode("utf-8", "replace")[-STDERR_TAIL_BYTES:]

    def _receive(self, timeout: float, what: str) -> dict:
        answer = read_answer(self._results, self._results.readline, timeout, what)
        if answer is None:
            raise WorkerDied(self._death_reason())
        return answer

    def _death_reason(self) -> str:
        try:
            code = self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            return "worker closed its result pipe but did not exit"
        if code < 0:
            try:
                name = signal.Signals(-code).name
            except ValueError:
                name = f"signal {-code}"
            return f"worker crashed with {name}"
        return f"worker exited with status {code}"

    def run(self, task: Task, min_run_time: float, timeout: float) -> TaskResult:
        assert self.proc.stdin is not None
        request = {"task": task.to_json(), "min_run_time": min_run_time}
        self.take_stderr()
        try:
            self.proc.stdin.write((json.dumps(request) + "\n").encode())
            self.proc.stdin.flush()
        except BrokenPipeError:
            raise WorkerDied(self._death_reason()) from None
        return TaskResult.from_json(self._receive(timeout, what="task")["result"])

    def kill(self) -> None:
        if self.proc.poll() is None:
            try:
                os.killpg(self.proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        self.proc.wait()
        self._results.close()
        self._stderr_thread.join(timeout=2)  # so take_stderr() sees the dying words

    def close(self) -> None:
        if self.proc.poll() is None and self.proc.stdin is not None:
            try:
                self.proc.stdin.write(b'{"op": "exit"}\n')
                self.proc.stdin.close()
                self.proc.wait(timeout=30)
            except (BrokenPipeError, subprocess.TimeoutExpired):
                pass
        self.kill()


class WorkerPool:
    """Run tasks on ``jobs`` workers; ``prefix`` wraps the worker command (e.g. valgrind)."""

    def __init__(
        self,
        jobs: int = 1,
        prefix: Sequence[str] = (),
        env: dict[str, str] | None = None,
        timeout: float = DEFAULT_TIMEOUT,
        start_timeout: float = 600.0,
        diagnostics: Callable[[int], str] | None = None,
        kept: Callable[[int], Any] | None = None,
    ) -> None:
        """``diagnostics(pid)``: what the ``prefix`` tool logged about a worker that failed,
        attached to the failed result (e.g. valgrind's report of a crash). ``kept(slot)``:
        a kept worker (``kept_worker.py``) for that slot, or None to start a private one;
        tasks that need a fresh process never get one."""
        self.jobs = max(1, jobs)
        self.prefix = list(prefix)
        self.env = env
        self.timeout = timeout
        self.start_timeout = start_timeout
        self.diagnostics = diagnostics
        self.kept = kept
        self._workers: list[Any] = []
        self._lock = threading.Lock()
        self._stopping = threading.Event()

    def _start_worker(self, slot: int = 0, fresh: bool = False) -> Any:
        if self.kept is not None and not fresh:
            worker = self.kept(slot)
            if worker is not None:
                self._track(worker)
                return worker
        return Worker(self.prefix, self.env, self.start_timeout, on_spawn=self._track)

    def _track(self, worker: Worker) -> None:
        """Known to shutdown() from the moment it exists; one spawned while stopping is killed at once."""
        with self._lock:
            self._workers.append(worker)
        if self._stopping.is_set():
            raise KeyboardInterrupt

    def _drop(self, worker: Worker) -> None:
        worker.kill()
        with self._lock:
            if worker in self._workers:
                self._workers.remove(worker)

    def _notes(self, pid: int, worker: Any = None) -> str:
        # A kept worker's tool logs are in its own directory.
        diagnostics = getattr(worker, "diagnostics", None) or self.diagnostics
        if diagnostics is None:
            return ""
        try:
            notes = diagnostics(pid).strip()
        except Exception as exc:  # diagnostics must never hide the failure itself
            notes = f"(could not read diagnostics: {exc})"
        return f"\n--- {Path(self.prefix[0]).name if self.prefix else 'worker'} ---\n{notes}" if notes else ""

    def _retire(self, worker: Worker) -> None:
        worker.close()
        with self._lock:
            if worker in self._workers:
                self._workers.remove(worker)

    def _run_one(self, worker: Any, task: Task, min_run_time: float, slot: int = 0) -> tuple[Any, TaskResult]:
        try:
            if worker is None:
                worker = self._start_worker(slot, fresh=bool(task.params.get("fresh_worker")))
        except WorkerStartFailed as exc:
            return None, TaskResult(task=task, status="failed", error=f"could not start a worker: {exc}{self._notes(exc.pid)}")
        except (TimeoutError, WorkerDied, OSError) as exc:
            return None, TaskResult(task=task, status="failed", error=f"could not start a worker: {exc}")
        try:
            return worker, worker.run(task, min_run_time, task.params.get("timeout") or self.timeout)
        except TimeoutError:
            self._drop(worker)
            stderr = worker.take_stderr()
            timeout = task.params.get("timeout") or self.timeout
            message = _with_stderr(f"timed out after {timeout:g} s; the task was killed", stderr)
            return None, TaskResult(task=task, status="failed", error=message + self._notes(worker.proc.pid, worker))
        except WorkerDied as exc:
            self._drop(worker)
            if self._stopping.is_set():
                raise KeyboardInterrupt from None
            message = _with_stderr(str(exc), worker.take_stderr()) + self._notes(worker.proc.pid, worker)
            return None, TaskResult(task=task, status="failed", error=message)

    def run(
        self,
        tasks: Iterable[Task],
        min_run_time: float,
        on_result: Callable[[TaskResult], None] | None = None,
    ) -> list[TaskResult]:
        """Run every task; results come back in task order (and to ``on_result`` as they finish)."""
        tasks = list(tasks)
        todo: queue.Queue[tuple[int, Task]] = queue.Queue()
        for item in enumerate(tasks):
            todo.put(item)
        results: list[TaskResult | None] = [None] * len(tasks)
        done: queue.Queue[tuple[int, TaskResult] | BaseException] = queue.Queue()

        def slot(number: int) -> None:
            worker: Any = None
            try:
                while not self._stopping.is_set():
                    try:
                        index, task = todo.get_nowait()
                    except queue.Empty:
                        break
                    if worker is not None and task.params.get("fresh_worker"):
                        # The task's figure depends on what its process ran
                        # before (torch.compile's caches shift instruction
                        # counts by ~1%), so it gets a process of its own.
                        self._retire(worker)
                        worker = None
                    worker, result = self._run_one(worker, task, min_run_time, number)
                    done.put((index, result))
            except BaseException as exc:  # noqa: BLE001 - handed to the main thread
                done.put(exc)
            finally:
                if worker is not None:
                    worker.close()

        threads = [threading.Thread(target=slot, args=(i,), daemon=True) for i in range(min(self.jobs, len(tasks)))]
        for t in threads:
            t.start()
        try:
            received = 0
            while received < len(tasks):
                try:
                    item = done.get(timeout=0.2)
                except queue.Empty:
                    if not any(t.is_alive() for t in threads) and done.empty():
                        break
                    continue
                if isinstance(item, BaseException):
                    raise item
                index, result = item
                results[index] = result
                received += 1
                if on_result is not None:
                    on_result(result)
        except BaseException:
            self.shutdown()
            raise
        for t in threads:
            t.join()
        return [r for r in results if r is not None]

    def shutdown(self) -> None:
        """Kill every worker now (Ctrl-C)."""
        self._stopping.set()
        with self._lock:
            workers = list(self._workers)
        for w in workers:
            w.kill()


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


def _with_stderr(message: str, stderr: str) -> str:
    stderr = stderr.strip()
    return f"{message}\n--- worker stderr (last {STDERR_TAIL_BYTES} bytes) ---\n{stderr}" if stderr else message


def run_in_workers(
    tasks: Iterable[Task],
    min_run_time: float,
    jobs: int = 1,
    timeout: float = DEFAULT_TIMEOUT,
    on_result: Callable[[TaskResult], None] | None = None,
) -> list[TaskResult]:
    return WorkerPool(jobs=jobs, timeout=timeout).run(tasks, min_run_time, on_result)

