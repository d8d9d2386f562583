"""A worker that outlives the process that started it, so the next run skips start-up.

The default (``HARNESS_KEEP_WORKER=SECONDS``, 900 unless ``CI`` is true, or ``bench --keep-worker SECONDS``;
``options.keep_worker_seconds``): under valgrind a worker's start-up (``import torch`` and the first
translations) costs ~10 s, the measurement of a small statement ~0.5 s, so a
script run again and again spends most of its time starting workers.

A kept worker serves one client at a time on a Unix socket in a private
directory and exits after SECONDS without a client. The directory's name is a
hash of everything the worker's results depend on (interpreter, harness and
torch files, the full environment, the working directory, the counter's
options): a run whose setting differs starts a worker of its own instead of
borrowing one that would measure something else. A client holds an exclusive
lock on the directory while it uses the worker; a second concurrent client
gets a private worker rather than waiting.

Each client's session is a ``fork()`` of the worker as it stood after
start-up (``workers.kept_server``), so a run never sees what an earlier run
left behind. Runs that need a process of their own (compile-time cases,
``fresh_worker`` tasks) never use one.
"""

from __future__ import annotations

import contextlib
import fcntl
import functools
import hashlib
import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from harness._version import __version__
from harness.model.result import TaskResult
from harness.model.task import Task
from harness.options import KEPT_ANSWER_TIMEOUT
from harness.workers.private_dir import private_directory, workers_dir
from harness.workers.process import VOLATILE_ENV, serve_args, worker_env
from harness.workers.protocol import (
    STDERR_TAIL_BYTES,
    WORKER_MODULE,
    WorkerDied,
    WorkerStartFailed,
    read_answer,
    request_line,
)
from harness.workers.registry import KEPT_PREFIX, end_server, read_info, stop_note, stop_stale, write_info

_PACKAGE_DIR = Path(__file__).resolve().parents[1]

Diagnostics = Callable[[Path, int], str]


def runtime_dir() -> Path:
    """The private per-user directory of counting workers (``workers.private_dir``)."""
    return workers_dir()


# What never runs in a worker (docs/architecture.md: nothing below them imports them), so an edit
# there does not retire kept workers.
_NOT_IN_WORKERS = ("present", "history", "cli", "pytest_plugin.py", "__main__.py")


@functools.cache
def harness_digest(package: Path = _PACKAGE_DIR) -> str:
    """The content of harness's own sources (an edited file, a pulled commit) and the size and
    time of its compiled core: a worker started from other sources never serves this run."""
    h = hashlib.sha256(__version__.encode())
    for p in sorted(package.rglob("*.py")):
        if p.relative_to(package).parts[0] in _NOT_IN_WORKERS:
            continue
        h.update(str(p.relative_to(package)).encode() + b"\0")
        with contextlib.suppress(OSError):
            h.update(hashlib.sha256(p.read_bytes()).digest())
    h.update(json.dumps(_fingerprint(sorted(package.glob("_C*")))).encode())
    return h.hexdigest()


def _fingerprint(paths: Sequence[Path]) -> list[Any]:
    out = []
    for p in paths:
        try:
            st = p.stat()
            out.append([str(p), st.st_size, st.st_mtime_ns])
        except OSError:
            out.append([str(p), None])
    return out


def fingerprint_parts(prefix_options: Sequence[str], env: dict[str, str], slot: int = 0) -> dict[str, Any]:
    """What a worker's results depend on, by name (``python -m harness workers`` shows them)."""
    torch_spec = None
    with contextlib.suppress(Exception):
        import importlib.util

        spec = importlib.util.find_spec("torch")
        torch_spec = spec.origin if spec else None
    return {
        "python": os.path.realpath(sys.executable),
        "harness": harness_digest(),
        "torch": _fingerprint([Path(torch_spec)]) if torch_spec else None,
        "env": {k: v for k, v in sorted(env.items()) if k not in VOLATILE_ENV},
        "cwd": os.getcwd(),
        "options": list(prefix_options),
        "slot": slot,
    }


def worker_key(prefix_options: Sequence[str], env: dict[str, str], slot: int = 0) -> str:
    """Hash of what a worker's results depend on (see the module docstring): the directory's name."""
    return key_of(fingerprint_parts(prefix_options, env, slot))


def key_of(parts: dict[str, Any]) -> str:
    return KEPT_PREFIX + hashlib.sha256(json.dumps(parts, sort_keys=True).encode()).hexdigest()


def summary(parts: dict[str, Any]) -> dict[str, Any]:
    """``parts`` as ``info.json`` keeps them (``workers.registry``): the environment as a digest."""
    out = {k: v for k, v in parts.items() if k != "env"}
    out["env"] = hashlib.sha256(json.dumps(parts["env"], sort_keys=True).encode()).hexdigest()[:16]
    out["package"] = str(_PACKAGE_DIR)
    return out


class _RemoteProcess:
    """The parts of ``subprocess.Popen`` a pool uses, for a session process that is not our child."""

    def __init__(self, pid: int) -> None:
        self.pid = pid

    def poll(self) -> int | None:
        try:
            with open(f"/proc/{self.pid}/stat", "rb") as f:
                state = f.read().rsplit(b")", 1)[1].split()[0]
        except (OSError, IndexError):
            return -signal.SIGKILL
        return -signal.SIGKILL if state in (b"Z", b"X") else None


class KeptWorker:
    """A client's hold on a kept worker: a ``workers.worker.Worker``, as ``WorkerProcess`` is (and ``KeepsItsLogs``)."""

    def __init__(
        self, directory: Path, lock_fd: int, sock: socket.socket, pid: int, server_pid: int,
        started: bool, diagnostics: Diagnostics | None = None,
    ):
        self.directory = directory
        self._diagnostics = diagnostics
        self._lock_fd = lock_fd
        self._sock = sock
        self._file = sock.makefile("rwb")
        self.proc = _RemoteProcess(pid)  # this client's session (a fork of the kept worker)
        self.server_pid = server_pid
        self.reused = not started  # False when this client started the worker
        self._stderr_offset = _size(directory / "stderr.log")

    # -- opening ----------------------------------------------------------------
    @classmethod
    def open(
        cls,
        prefix: Sequence[str],
        env: dict[str, str],
        idle_timeout: float,
        start_timeout: float,
        directory: Path,
        diagnostics: Diagnostics | None = None,
        fingerprint: dict[str, Any] | None = None,
        answer_timeout: float = KEPT_ANSWER_TIMEOUT,
    ) -> KeptWorker | None:
        """Connect to the kept worker of ``directory``, starting it if there is none.

        None when another client holds it (the caller starts a private worker).
        ``directory`` comes from ``worker_key`` and holds the socket, the lock
        and the worker's stderr; ``prefix`` may point the counter's files there.
        ``diagnostics(directory, pid)``: what the prefix's tool logged there about a process.
        ``answer_timeout``: seconds a running worker may take to greet the client (it forks a
        session); one that does not is ended and replaced.
        """
        private_directory(directory)
        lock_fd = os.open(directory / "lock", os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(lock_fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(lock_fd)
            return None
        try:
            path = directory / "sock"
            connected = _connect(path, answer_timeout)
            if isinstance(connected, tuple):
                return cls(directory, lock_fd, *connected, False, diagnostics)
            # No second try at connecting: the lock keeps any other client from starting a worker
            # here, and _wait_for_server retries the new one's socket until start_timeout.
            if connected is not None:
                # Alive but not answering (stopped with SIGSTOP, or stuck): no run can use it, and
                # its successor takes its socket's name, so nothing could reach it again.
                print(f"harness: the kept worker in {directory} {_not_answering(directory, connected)}; "
                      "ended it, starting a new one", file=sys.stderr)
            elif os.path.lexists(path):
                # A server that exits removes its socket: one left behind, or something else
                # under its name, is what a killed worker or a damaged directory leaves.
                print(f"harness: the kept worker in {directory} left a dead socket; starting a new one",
                      file=sys.stderr)
            if fingerprint is not None:
                stop_stale(fingerprint)  # replaced by this one: silently, before it takes memory
            server = _start_server(prefix, env, directory, idle_timeout)
            if fingerprint is not None:
                write_info(directory, server, idle_timeout, fingerprint)
            connected = _wait_for_server(path, server, start_timeout)
            if isinstance(connected, str):
                raise WorkerStartFailed(connected, server)
            return cls(directory, lock_fd, *connected, True, diagnostics)
        except BaseException:
            os.close(lock_fd)
            raise

    def diagnostics(self, pid: int) -> str:
        """What the worker's tool logged about process ``pid`` (this worker or a child it forked)."""
        return self._diagnostics(self.directory, pid) if self._diagnostics is not None else ""

    # -- workers.worker.Worker --------------------------------------------------
    def run(self, task: Task, min_run_time: float, timeout: float, kind: dict[str, Any] | None = None) -> TaskResult:
        self.take_stderr()
        try:
            self._file.write(request_line(task, min_run_time, kind))
            self._file.flush()
        except OSError:
            raise WorkerDied(self._death_reason()) from None
        answer = read_answer(self._sock, self._file.readline, timeout, "task")
        if answer is None:
            raise WorkerDied(self._death_reason())
        return TaskResult.from_json(answer["result"])

    def _death_reason(self) -> str:
        for _ in range(50):  # the socket closes a moment before the process is gone
            if self.proc.poll() is not None:
                stopped = stop_note(self._lock_fd) if self._lock_fd >= 0 else None
                if stopped is not None:
                    return f"kept worker {stopped} (pid {self.server_pid}) while it counted"
                return "kept worker died (a crash; its valgrind log is attached when there is one)"
            time.sleep(0.1)
        return "kept worker closed the connection"

    def take_stderr(self) -> str:
        path = self.directory / "stderr.log"
        try:
            with open(path, "rb") as f:
                f.seek(self._stderr_offset)
                data = f.read()
        except OSError:
            return ""
        self._stderr_offset += len(data)
        return data.decode("utf-8", "replace")[-STDERR_TAIL_BYTES:]

    def kill(self) -> None:
        """End this client's session (after a timeout or a crash, or on Ctrl-C); the worker stays."""
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.proc.pid, signal.SIGKILL)  # the session and the repeats it forked
        deadline = time.monotonic() + 10
        while self.proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.02)
        self._release()

    def close(self) -> None:
        """Let go of the worker; it stays up for the next client until its idle timeout."""
        self._release()

    def _release(self) -> None:
        with contextlib.suppress(OSError):
            self._file.close()
        with contextlib.suppress(OSError):
            self._sock.close()
        if self._lock_fd >= 0:
            os.close(self._lock_fd)  # releases the flock
            self._lock_fd = -1


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return 0


def _connect(path: Path, timeout: float) -> tuple[socket.socket, int, int] | float | None:
    """A connection to a live server, its session's pid and the server's; None: no server (or a
    stale socket file); ``timeout`` itself: a server took the connection but said nothing within it."""
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        sock.connect(str(path))
        sock.settimeout(timeout)
        hello = b""
        while not hello.endswith(b"\n"):
            chunk = sock.recv(1)
            if not chunk:
                raise ConnectionError("closed")
            hello += chunk
        sock.settimeout(None)
        answer = json.loads(hello)
        return sock, int(answer["ready"]), int(answer["server"])
    except TimeoutError:
        sock.close()
        return timeout
    except (OSError, ValueError, KeyError):
        sock.close()
        return None


def _not_answering(directory: Path, timeout: float) -> str:
    """What became of a kept worker that took a connection and did not answer within ``timeout``;
    it is ended (its successor takes its place)."""
    info = read_info(directory) or {}
    pid = int(info.get("server", -1))
    try:
        state = Path(f"/proc/{pid}/stat").read_bytes().rsplit(b")", 1)[1].split()[0]
    except (OSError, IndexError):
        state = b""
    why = {b"T": "it is stopped (SIGSTOP or Ctrl-Z)", b"t": "it is stopped by a debugger"}.get(state, "")
    end_server(directory, pid)
    return f"(pid {pid}) is not answering within {timeout:g} s" + (f": {why}" if why else "")


# Starts the worker and the ``cat`` that drains its stderr into the log, prints the worker's pid and
# exits at once: neither is the client's child (``_start_server``). Only the standard library, no site.
_LAUNCH = """
import os, subprocess, sys
log, command = sys.argv[1], sys.argv[2:]
read_end, write_end = os.pipe()
with open(log, "wb") as err:
    subprocess.Popen(["cat"], stdin=read_end, stdout=err, stderr=subprocess.DEVNULL, start_new_session=True)
worker = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=write_end,
                          start_new_session=True)
os.close(read_end)
os.close(write_end)
worker.stdin.close()
print(worker.pid, flush=True)
"""


def _start_server(prefix: Sequence[str], env: dict[str, str], directory: Path, idle_timeout: float) -> int:
    """The kept worker's pid, started with standard streams of the kinds a run's own worker has: pipes.

    Python's start-up treats a pipe and a file differently (a file is
    seekable), and what it allocates for them is part of the heap every count
    starts from: with ``/dev/null`` and a log file, a kept worker counted
    ``y = x * w + 7`` 3,110,534 against a run's own worker's 3,107,656; with
    pipes, 3,107,656 both. Its stderr pipe is drained into ``stderr.log`` by a
    ``cat`` of its own, which ends when the worker (and all it forked) has
    closed the pipe.

    Neither is the client's child: a short-lived launcher starts both and exits,
    so they belong to init, as a daemon does. A client that ends takes nothing
    with it, even where its parent kills every child it leaves (a Ray worker
    process, on exit, kills its direct children).
    """
    _remove_stale_files(directory)
    command = [*prefix, sys.executable, "-P", "-m", WORKER_MODULE,
               *serve_args(f"listen:{directory / 'sock'} idle:{idle_timeout!r}")]
    launched = subprocess.run(
        [sys.executable, "-P", "-S", "-c", _LAUNCH, str(directory / "stderr.log"), *command],
        stdin=subprocess.DEVNULL, capture_output=True, text=True, env=worker_env(env), cwd=os.getcwd(), check=False,
        start_new_session=True,  # not in our process group: Ctrl-C in this terminal is not for it
    )
    try:
        return int(launched.stdout.strip())
    except ValueError:
        raise WorkerStartFailed(f"the kept worker could not be started: {launched.stderr.strip()[-2000:]}",
                                -1) from None


def _wait_for_server(path: Path, pid: int, start_timeout: float) -> tuple[socket.socket, int, int] | str:
    deadline = time.monotonic() + start_timeout
    server = _RemoteProcess(pid)
    while time.monotonic() < deadline:
        if server.poll() is not None:
            err = (path.parent / "stderr.log").read_text(errors="replace")[-4000:]
            return f"the kept worker exited while starting\n{err}".strip()
        if path.exists():
            connected = _connect(path, KEPT_ANSWER_TIMEOUT)
            if isinstance(connected, tuple):
                return connected
        time.sleep(0.05)
    with contextlib.suppress(ProcessLookupError):
        os.killpg(pid, signal.SIGKILL)
    return f"the kept worker did not answer within {start_timeout:g} s"


def _remove_stale_files(directory: Path) -> None:
    """What earlier workers of this directory left (their final callgrind dump, logs, the socket).

    Called under the lock with no server answering, so none of it is in use. The lock stays. (A
    ``cache`` link an older harness made here goes too: workers now reach the cache through
    ``private_dir.cache_link``; unlinking a link leaves its target alone.)
    """
    for p in directory.iterdir():
        if p.name != "lock":
            with contextlib.suppress(OSError):
                p.unlink()


