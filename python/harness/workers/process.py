"""WorkerProcess: one worker process (``python -m harness.run.worker``) and its pipes.

Requests go in on the process's stdin, answers come back on a pipe of their
own (user statements may print to stdout, which the worker points at its
stderr); the last bytes of stderr are kept for the report of a failed task.
The process gets a session of its own, so Ctrl-C in the terminal is the
harness's to handle, and ``kill()`` takes down everything it started; it
is killed by the kernel when this process ends, however it ends
(``workers.parent_death``), so a ``kill -9`` of the harness leaves none behind.
"""

from __future__ import annotations

import collections
import contextlib
import os
import signal
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

from harness.model.result import TaskResult
from harness.model.task import Task
from harness.options import KEEP_WORKER_ENV, WORKER_START_TIMEOUT
from harness.workers.parent_death import spawn, wrapped
from harness.workers.protocol import (
    EXIT_LINE,
    STDERR_TAIL_BYTES,
    WORKER_MODULE,
    WorkerDied,
    WorkerStartFailed,
    read_answer,
    request_line,
    with_stderr,
)

# The directory holding the harness package: workers must import this same
# harness, installed or from a source checkout.
PACKAGE_PARENT = str(Path(__file__).resolve().parents[2])


# What the shell and pytest change from one command (or test) to the next without
# changing the work, and whether the caller keeps its worker: a worker starts without
# them (and a kept worker's identity ignores them). A worker's environment is read into
# its heap before any of our code runs, and the heap a count starts from moves the count
# (one variable more moved y = x * w by 0.5%), so the same statement run from another
# directory, or in another test, would count differently.
VOLATILE_ENV = ("_", "OLDPWD", "PWD", "SHLVL", "PYTEST_CURRENT_TEST", "COLUMNS", "LINES", KEEP_WORKER_ENV)


# Variables a library harness drives set in this process (Ray: `import ray` sets RAY_CLIENT_MODE,
# ray.init RAY_AUTH_MODE and more), with their values from before (None: absent). Workers start
# with the values from before, on a Ray node as here, so a run after Ray's counts what a run
# before it did (they stayed in this process's environment and moved counts by 0.2%).
_SET_BY_LIBRARIES: dict[str, str | None] = {}


@contextlib.contextmanager
def library_may_set_environment() -> Iterator[None]:
    """Around a call into a library (importing it, starting it): remember what it changed in this
    process's environment, so that workers start without it."""
    before = dict(os.environ)
    try:
        yield
    finally:
        for key in set(os.environ) | set(before):
            if os.environ.get(key) != before.get(key):
                _SET_BY_LIBRARIES.setdefault(key, before.get(key))


def own_environment() -> dict[str, str]:
    """This process's environment as it was before the libraries harness drives changed it."""
    environ = dict(os.environ)
    for key, value in _SET_BY_LIBRARIES.items():
        if value is None:
            environ.pop(key, None)
        else:
            environ[key] = value
    return environ


# Every worker's own arguments are one of two words and a value of this width (spaces after it).
SERVE_WIDTH = 200


def serve_args(spec: str) -> list[str]:
    """``--serve SPEC`` with ``SPEC`` padded to one width: ``fd:NNNNN`` (answers on that fd,
    requests on stdin) or ``listen:SOCKET idle:SECONDS`` (a kept worker).

    The command line is read into the worker's heap before any of our code runs, and the heap
    a count starts from moves the count: a run's own worker and a kept one must start with
    command lines of the same shape and length to count a statement alike.
    """
    if len(spec) > SERVE_WIDTH:
        raise ValueError(f"worker argument longer than {SERVE_WIDTH} characters: {spec!r}")
    return ["--serve", spec.ljust(SERVE_WIDTH)]


def worker_env(env: dict[str, str] | None = None) -> dict[str, str]:
    """This process's own environment less ``VOLATILE_ENV``, with ``env`` on top and harness importable."""
    full_env = {k: v for k, v in own_environment().items() if k not in VOLATILE_ENV}
    full_env["PYTHONPATH"] = os.pathsep.join(filter(None, [PACKAGE_PARENT, full_env.get("PYTHONPATH")]))
    full_env.update(env or {})
    return full_env


def _kill_unknown(proc: subprocess.Popen) -> None:
    """A worker started while its starter was interrupted: nobody else knows of it."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()


class WorkerProcess:
    """One worker process and its pipes: a ``workers.worker.Worker``."""

    def __init__(
        self,
        prefix: Sequence[str] = (),
        env: dict[str, str] | None = None,
        start_timeout: float = WORKER_START_TIMEOUT,
        on_spawn: Callable[[WorkerProcess], None] | None = None,
        python: str | None = None,
    ):
        """``on_spawn(worker)`` is called as soon as the process exists, before it is ready,
        so an owner can kill a worker that is still starting (under valgrind, ~10 s).
        ``python``: the interpreter (default this one); it imports this harness through
        ``PYTHONPATH`` and its own torch."""
        read_fd, write_fd = os.pipe()
        full_env = worker_env(env)
        # The fd's number padded to a fixed width: argv (and so the stack the worker's
        # code runs on) must not depend on which fds were free, or counts would differ
        # between workers started side by side (--jobs N).
        # -P: the working directory joins sys.path only after start-up (see run.worker).
        command = [*prefix, python or sys.executable, "-P", "-m", WORKER_MODULE, *serve_args(f"fd:{write_fd:05d}")]
        try:
            # Killed when this process goes, however it goes (workers.parent_death).
            self.proc = spawn(lambda: subprocess.Popen(
                wrapped(command),
                stdin=subprocess.PIPE,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.PIPE,
                pass_fds=(write_fd,),
                env=full_env,
                start_new_session=True,  # its own process group: Ctrl-C is ours to handle
            ), discard=_kill_unknown)
        except BaseException:
            os.close(read_fd)
            raise
        finally:
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
            raise WorkerStartFailed(with_stderr(reason, self.take_stderr()), self.proc.pid) from None
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

    def run(self, task: Task, min_run_time: float, timeout: float, kind: dict[str, Any] | None = None) -> TaskResult:
        assert self.proc.stdin is not None
        self.take_stderr()
        try:
            self.proc.stdin.write(request_line(task, min_run_time, kind))
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
                self.proc.stdin.write(EXIT_LINE)
                self.proc.stdin.close()
                self.proc.wait(timeout=30)
            except (BrokenPipeError, subprocess.TimeoutExpired):
                pass
        self.kill()
