"""WorkerPool: runs Tasks in worker processes with per-task timeouts and crash isolation.

Each slot owns one worker process (``WorkerProcess``), started once and
reused for many tasks, so start-up (``import torch``; under valgrind, much
more) is paid per worker, not per task. A task that crashes its worker or
exceeds its timeout becomes a failed TaskResult carrying the worker's stderr,
and the slot starts a fresh worker for the next task. A task with
``params["fresh_worker"]`` never shares its process with an earlier task.
Ctrl-C (or SIGTERM, through the CLI) kills every worker, also one still
starting, and re-raises, after handing ``on_result`` every result a worker had
finished, also one the signal reached before this thread took it.
With ``kept=``, slots borrow kept workers that outlive the run (``workers.kept``).
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from harness.model.result import TaskResult
from harness.model.task import Task
from harness.options import DEFAULT_TIMEOUT, WORKER_START_TIMEOUT
from harness.workers.process import WorkerProcess
from harness.workers.protocol import WorkerDied, WorkerStartFailed, with_stderr
from harness.workers.worker import KeepsItsLogs, Worker


class WorkerPool:
    """Run tasks on ``jobs`` workers; ``prefix`` wraps the worker command (e.g. valgrind)."""

    def __init__(
        self,
        jobs: int = 1,
        prefix: Sequence[str] = (),
        env: dict[str, str] | None = None,
        timeout: float | None = None,
        start_timeout: float = WORKER_START_TIMEOUT,
        diagnostics: Callable[[int], str] | None = None,
        kept: Callable[[int], Worker | None] | None = None,
        kinds: Mapping[str, dict[str, Any]] | None = None,
        pythons: Mapping[str, str] | None = None,
        finish: Callable[[TaskResult], TaskResult] | None = None,
    ) -> None:
        """``diagnostics(pid)``: what the ``prefix`` tool logged about a worker that failed,
        attached to the failed result (e.g. valgrind's report of a crash). ``kept(slot)``:
        a kept worker (``workers.kept``) for that slot, or None to start a private one;
        tasks that need a fresh process never get one. ``kinds``: task kind -> the reference
        of its runner, sent with each task of a kind a worker cannot know by name. ``pythons``:
        side label -> interpreter; a task with a ``side`` runs in a worker of that interpreter
        (each slot keeps one per side, so sides can alternate task by task). ``finish``: what
        completes each answer here, outside the worker (the counter's part that is cheaper in
        this process than under its tool)."""
        self.jobs = max(1, jobs)
        self.prefix = list(prefix)
        self.env = env
        self.timeout = timeout
        self.start_timeout = start_timeout
        self.diagnostics = diagnostics
        self.kept = kept
        self.kinds = dict(kinds or {})
        self.pythons = dict(pythons or {})
        self.finish = finish
        self._workers: list[Worker] = []
        self._lock = threading.Lock()
        self._stopping = threading.Event()

    def _start_worker(self, slot: int = 0, fresh: bool = False, side: str = "") -> Worker:
        # A kept worker is keyed by this interpreter: another side's never is one.
        if self.kept is not None and not fresh and not side:
            worker = self.kept(slot)
            if worker is not None:
                self._track(worker)
                return worker
        return WorkerProcess(self.prefix, self.env, self.start_timeout, on_spawn=self._track,
                             python=self.pythons.get(side) if side else None)

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

    def _notes(self, pid: int, worker: Worker | None = None) -> str:
        # A kept worker's tool logs are in its own directory.
        diagnostics = worker.diagnostics if isinstance(worker, KeepsItsLogs) else self.diagnostics
        if diagnostics is None:
            return ""
        try:
            notes = diagnostics(pid).strip()
        except Exception as exc:  # diagnostics must never hide the failure itself
            notes = f"(could not read diagnostics: {exc})"
        # The tool is the first word of the prefix that is not setarch (which only sets the layout).
        tools = [Path(word).name for word in self.prefix if not Path(word).name.startswith("setarch")]
        return f"\n--- {tools[0] if tools else 'worker'} ---\n{notes}" if notes else ""

    def _retire(self, worker: Worker) -> None:
        worker.close()
        with self._lock:
            if worker in self._workers:
                self._workers.remove(worker)

    def limit(self, task: Task) -> float:
        """Seconds ``task`` may run: the pool's timeout when one was given (the user's
        ``--timeout``), else the task's own, else DEFAULT_TIMEOUT."""
        if self.timeout is not None:
            return self.timeout
        return task.params.get("timeout") or DEFAULT_TIMEOUT

    def _run_one(
        self, worker: Worker | None, task: Task, min_run_time: float, slot: int = 0
    ) -> tuple[Worker | None, TaskResult]:
        try:
            if worker is None:
                worker = self._start_worker(slot, fresh=bool(task.params.get("fresh_worker")), side=task.side)
        except WorkerStartFailed as exc:
            return None, TaskResult(
                task=task, status="failed", error=f"could not start a worker: {exc}{self._notes(exc.pid)}"
            )
        except (TimeoutError, WorkerDied, OSError) as exc:
            return None, TaskResult(task=task, status="failed", error=f"could not start a worker: {exc}")
        try:
            result = worker.run(task, min_run_time, self.limit(task), self.kinds.get(task.kind))
        except TimeoutError:
            self._drop(worker)
            stderr = worker.take_stderr()
            message = with_stderr(
                f"timed out after {self.limit(task):g} s; the task was killed (rerun with --timeout SECONDS "
                "for a longer limit)", stderr,
            )
            return None, TaskResult(task=task, status="failed", error=message + self._notes(worker.proc.pid, worker))
        except WorkerDied as exc:
            self._drop(worker)
            if self._stopping.is_set():
                raise KeyboardInterrupt from None
            message = with_stderr(str(exc), worker.take_stderr()) + self._notes(worker.proc.pid, worker)
            return None, TaskResult(task=task, status="failed", error=message)
        return worker, self.finish(result) if self.finish is not None else result

    def run_on(self, worker: Worker | None, task: Task, min_run_time: float) -> tuple[Worker | None, TaskResult]:
        """One task on ``worker`` (None: start one), for callers that keep workers across runs
        (a Ray task): the worker to reuse (None when it was killed) and the result."""
        return self._run_one(worker, task, min_run_time)

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
            workers: dict[str, Worker] = {}  # side -> its worker
            try:
                while not self._stopping.is_set():
                    try:
                        index, task = todo.get_nowait()
                    except queue.Empty:
                        break
                    worker = workers.pop(task.side, None)
                    if worker is not None and task.params.get("fresh_worker"):
                        # The task's figure depends on what its process ran
                        # before (torch.compile's caches shift instruction
                        # counts by ~1%), so it gets a process of its own.
                        self._retire(worker)
                        worker = None
                    worker, result = self._run_one(worker, task, min_run_time, number)
                    if worker is not None:
                        workers[task.side] = worker
                    # Kept before it is announced: a signal that reaches the main thread
                    # before it takes this from ``done`` must not lose a finished task.
                    results[index] = result
                    done.put((index, result))
            except BaseException as exc:  # noqa: BLE001 - handed to the main thread
                done.put(exc)
            finally:
                for worker in workers.values():
                    worker.close()

        threads = [threading.Thread(target=slot, args=(i,), daemon=True) for i in range(min(self.jobs, len(tasks)))]
        for t in threads:
            t.start()
        delivered: set[int] = set()

        def deliver(index: int) -> None:
            # Marked first: a signal inside on_result must not hand the caller the result twice.
            delivered.add(index)
            if on_result is not None:
                on_result(results[index])

        try:
            while len(delivered) < len(tasks):
                try:
                    item = done.get(timeout=0.2)
                except queue.Empty:
                    if not any(t.is_alive() for t in threads) and done.empty():
                        break
                    continue
                if isinstance(item, BaseException):
                    raise item
                deliver(item[0])
        except KeyboardInterrupt:
            self.shutdown()
            # What a slot finished before the stop, though this thread had not taken it yet
            # (a signal lands while it waits for ``done``, or before it wakes).
            for index, result in enumerate(results):
                if result is not None and index not in delivered:
                    deliver(index)
            raise
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
