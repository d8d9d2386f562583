"""A worker that outlives the process that started it, so the next run skips start-up.

Opt-in (``HARNESS_KEEP_WORKER=SECONDS``, or ``bench --keep-worker SECONDS``):
under valgrind a worker's start-up (``import torch`` and the first
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

What it trades away: a kept worker carries the history of earlier runs
(imports, torch's caches, allocator state), which can move a statement's
count by a few instructions in ten thousand; forked repeats inside one run
stay identical. Runs that need a process of their own (compile-time cases,
``fresh_worker`` tasks) never use one.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .errors import UsageError
from .result import TaskResult
from .task import Task

if TYPE_CHECKING:
    from .counters import InstructionCounter

KEEP_ENV = "HARNESS_KEEP_WORKER"
MAX_IDLE = 24 * 3600.0
# Variables that change from one shell command to the next without changing
# what a worker measures.
_VOLATILE_ENV = ("_", "OLDPWD", "PWD", "SHLVL", "PYTEST_CURRENT_TEST", "COLUMNS", "LINES", KEEP_ENV)


def keep_seconds(value: str | float | None = None) -> float | None:
    """Idle timeout of kept workers: ``value``, else ``$HARNESS_KEEP_WORKER``; None: do not keep."""
    raw = os.environ.get(KEEP_ENV) if value is None else value
    if raw is None or raw == "":
        return None
    try:
        seconds = float(raw)
    except (TypeError, ValueError):
        raise UsageError(f"{KEEP_ENV}={raw!r}: give the idle timeout in seconds, e.g. {KEEP_ENV}=600") from None
    if not 0 <= seconds <= MAX_IDLE:
        raise UsageError(f"kept-worker idle timeout must be between 0 and {MAX_IDLE:g} seconds, got {raw!r}")
    return seconds or None  # 0: do not keep (overrides the environment)


def runtime_dir() -> Path:
    """Private per-user directory for kept workers' sockets (short: a socket path has ~100 bytes)."""
    base = Path(tempfile.gettempdir())
    uid = os.getuid()
    root = base / f"harness-{uid}"
    if len(str(root)) > 50:
        root = Path("/tmp") / f"harness-{uid}"
    root.mkdir(mode=0o700, exist_ok=True)
    st = root.lstat()
    if st.st_uid != uid or not os.path.isdir(root) or os.path.islink(root):
        raise UsageError(f"{root} belongs to another user or is not a directory; remove it or set TMPDIR")
    if st.st_mode & 0o077:
        root.chmod(0o700)
    workers = root / "workers"
    workers.mkdir(mode=0o700, exist_ok=True)
    return workers


def _fingerprint(paths: Sequence[Path]) -> list[Any]:
    out = []
    for p in paths:
        try:
            st = p.stat()
            out.append([str(p), st.st_size, st.st_mtime_ns])
        except OSError:
            out.append([str(p), None])
    return out


def worker_key(prefix_options: Sequence[str], env: dict[str, str], slot: int = 0) -> str:
    """Hash of what a worker's results depend on (see the module docstring)."""
    import harness

    pkg = Path(harness.__file__).resolve().parent
    files = sorted(pkg.rglob("*.py")) + sorted(pkg.glob("_C*"))
    torch_spec = None
    with contextlib.suppress(Exception):
        import importlib.util

        spec = importlib.util.find_spec("torch")
        torch_spec = spec.origin if spec else None
    material = {
        "python": os.path.realpath(sys.executable),
        "harness": _fingerprint(files),
        "torch": _fingerprint([Path(torch_spec)]) if torch_spec else None,
        "env": {k: v for k, v in sorted(env.items()) if k not in _VOLATILE_ENV},
        "cwd": os.getcwd(),
        "options": list(prefix_options),
        "slot": slot,
    }
    return hashlib.sha256(json.dumps(material, sort_keys=True).encode()).hexdigest()[:20]


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
    """A client's hold on a kept worker: same interface as ``pool.Worker``."""

    def __init__(
        self, directory: Path, lock_fd: int, sock: socket.socket, pid: int, server_pid: int,
        popen: subprocess.Popen | None,
    ):
        self.directory = directory
        self._lock_fd = lock_fd
        self._sock = sock
        self._file = sock.makefile("rwb")
        self.proc = _RemoteProcess(pid)  # this client's session (a fork of the kept worker)
        self.server_pid = server_pid
        self.reused = popen is None
        self._server = popen  # set when this client started the worker
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
    ) -> KeptWorker | None:
        """Connect to the kept worker of ``directory``, starting it if there is none.

        None when another client holds it (the caller starts a private worker).
        ``directory`` comes from ``worker_key`` and holds the socket, the lock
        and the worker's stderr; ``prefix`` may point the counter's files there.
        """
        from .pool import WorkerStartFailed

        directory.mkdir(mode=0o700, exist_ok=True)
        lock_fd = os.open(directory / "lock", os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(lock_fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(lock_fd)
            return None
        try:
            path = directory / "sock"
            for attempt in range(2):
                connected = _connect(path, timeout=30.0)
                if connected is not None:
                    return cls(directory, lock_fd, *connected, None)
                if attempt:
                    break
                popen = _start_server(prefix, env, directory, idle_timeout)
                connected = _wait_for_server(path, popen, start_timeout)
                if isinstance(connected, str):
                    raise WorkerStartFailed(connected, popen.pid)
                return cls(directory, lock_fd, *connected, popen)
            raise WorkerStartFailed(f"the kept worker in {directory} accepted no connection", -1)
        except BaseException:
            os.close(lock_fd)
            raise

    def diagnostics(self, pid: int) -> str:
        """What valgrind logged about process ``pid`` (this worker or a child it forked)."""
        from .counters import _valgrind_log

        return _valgrind_log(self.directory / f"valgrind.{pid}.log")

    # -- the Worker interface ---------------------------------------------------
    def run(self, task: Task, min_run_time: float, timeout: float) -> TaskResult:
        from .pool import WorkerDied, read_answer

        request = {"task": task.to_json(), "min_run_time": min_run_time}
        self.take_stderr()
        try:
            self._file.write((json.dumps(request) + "\n").encode())
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
        from .pool import STDERR_TAIL_BYTES

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


def open_counter_worker(
    counter: InstructionCounter, idle_timeout: float, start_timeout: float, slot: int = 0
) -> KeptWorker | None:
    """The kept worker for instruction counting with ``counter``'s kind (callgrind or perf).

    ``slot`` tells apart the workers of one run with ``--jobs N``. None when
    another client holds it.
    """
    from .counters import CallgrindCounter

    if isinstance(counter, CallgrindCounter):
        # The directory comes from the key, so the key cannot contain it: use the options
        # of a counter pointed at a placeholder.
        options = CallgrindCounter(out_dir="/kept").worker_prefix()
        base_env = {**os.environ, **CallgrindCounter(out_dir="/kept").worker_env()}
        directory = runtime_dir() / worker_key(options, base_env, slot)
        counter = CallgrindCounter(out_dir=str(directory))
    else:
        directory = runtime_dir() / worker_key(counter.worker_prefix(), {**os.environ, **counter.worker_env()}, slot)
    return KeptWorker.open(
        counter.worker_prefix(), {**os.environ, **counter.worker_env()}, idle_timeout, start_timeout, directory
    )


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return 0


def _connect(path: Path, timeout: float) -> tuple[socket.socket, int, int] | None:
    """A connection to a live server, its session's pid and the server's, or None (no server,
    or a stale socket file)."""
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
    except (OSError, ValueError, KeyError):
        sock.close()
        return None


def _start_server(prefix: Sequence[str], env: dict[str, str], directory: Path, idle_timeout: float) -> subprocess.Popen:
    from .pool import _PYTHONPATH

    _remove_stale_files(directory)
    full_env = dict(env)
    full_env["PYTHONPATH"] = os.pathsep.join(filter(None, [_PYTHONPATH, full_env.get("PYTHONPATH")]))
    with open(directory / "stderr.log", "wb") as err:
        return subprocess.Popen(
            [*prefix, sys.executable, "-m", "harness.worker", "--listen", str(directory / "sock"),
             "--idle-timeout", repr(idle_timeout)],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=err,
            env=full_env,
            cwd=os.getcwd(),
            start_new_session=True,  # not in our process group: Ctrl-C in this terminal is not for it
        )


def _wait_for_server(path: Path, popen: subprocess.Popen, start_timeout: float) -> tuple[socket.socket, int, int] | str:
    deadline = time.monotonic() + start_timeout
    while time.monotonic() < deadline:
        code = popen.poll()
        if code is not None:
            err = (path.parent / "stderr.log").read_text(errors="replace")[-4000:]
            return f"the kept worker exited with status {code} while starting\n{err}".strip()
        if path.exists():
            connected = _connect(path, timeout=30.0)
            if connected is not None:
                return connected
        time.sleep(0.05)
    with contextlib.suppress(ProcessLookupError):
        os.killpg(popen.pid, signal.SIGKILL)
    popen.wait()
    return f"the kept worker did not answer within {start_timeout:g} s"


def _remove_stale_files(directory: Path) -> None:
    """What earlier workers of this directory left (their final callgrind dump, logs, the socket).

    Called under the lock with no server answering, so none of it is in use.
    """
    for p in directory.iterdir():
        if p.name != "lock":
            with contextlib.suppress(OSError):
                p.unlink()


# --------------------------------------------------------------------------- server side


def serve_socket(path: str, idle_timeout: float, handle: Any, session_ended: Any = None) -> int:
    """Serve one client at a time on ``path``, each in a fork of this process; exit after
    ``idle_timeout`` s without one.

    Each client gets a fresh ``fork()`` of the server as it stood after start-up
    (torch imported, nothing measured): every run starts from the same state,
    so counts do not drift with the history of earlier runs, and a client's
    crash or timeout ends only its session. ``handle(line) -> dict | None``:
    the answer to one request line (None: end the session).
    ``session_ended(pid, status)``: called in the server after each session.
    """
    sock_path = Path(path)
    with contextlib.suppress(FileNotFoundError):
        sock_path.unlink()
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    old_umask = os.umask(0o177)  # the socket is the owner's alone
    try:
        server.bind(path)
    finally:
        os.umask(old_umask)
    bound_inode = sock_path.stat().st_ino
    server.listen(4)
    server.settimeout(idle_timeout)
    try:
        while True:
            try:
                conn, _ = server.accept()
            except TimeoutError:
                return 0
            pid = os.fork()
            if pid == 0:  # pragma: no cover - the session, in the child
                server.close()
                os.setpgid(0, 0)  # a group of its own: a client's kill ends it, not the server
                _serve_session(conn, handle)
            conn.close()
            _, status = os.waitpid(pid, 0)
            if session_ended is not None:
                session_ended(pid, status)
    finally:
        with contextlib.suppress(OSError):
            server.close()
        # Only our own socket file: a successor may already have bound a new one.
        with contextlib.suppress(OSError):
            if sock_path.stat().st_ino == bound_inode:
                sock_path.unlink()


def _serve_session(conn: socket.socket, handle: Any) -> None:
    code = 0
    try:
        conn.settimeout(None)
        with conn, conn.makefile("rwb") as f:
            f.write((json.dumps({"ready": os.getpid(), "server": os.getppid()}) + "\n").encode())
            f.flush()
            for line in f:
                if not line.strip():
                    continue
                answer = handle(line)
                if answer is None:
                    break
                f.write((json.dumps(answer) + "\n").encode())
                f.flush()
    except (BrokenPipeError, ConnectionResetError):
        pass  # the client went away mid-task
    except BaseException:  # noqa: BLE001 - reported on stderr, which the client reads
        import traceback

        traceback.print_exc()
        code = 1
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)  # not the server's clean-up: it is still running
