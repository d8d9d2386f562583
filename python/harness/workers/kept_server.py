"""The server side of a kept worker: one client at a time on a Unix socket, each in a fork.

The worker process (``harness.run.worker --listen``) calls ``serve_socket``
with the function that answers a request line; this module knows nothing of
what is measured.
"""

from __future__ import annotations

import contextlib
import json
import os
import select
import signal
import socket
import sys
import time
from pathlib import Path
from typing import Any

from harness.workers.parent_death import die_with_parent


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
    server_pid = os.getpid()
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
                die_with_parent(server_pid)  # `workers stop` ends the server: its session goes too
                _serve_session(conn, handle)
            try:
                status, abandoned = _wait_for_session(pid, conn)
            finally:
                conn.close()
            if session_ended is not None:
                # A session ended because its client went has nobody to report a crash to.
                session_ended(pid, 0 if abandoned else status)
    finally:
        with contextlib.suppress(OSError):
            server.close()
        # Only our own socket file: a successor may already have bound a new one.
        with contextlib.suppress(OSError):
            if sock_path.stat().st_ino == bound_inode:
                sock_path.unlink()


def _wait_for_session(pid: int, conn: socket.socket) -> tuple[int, bool]:
    """The session's wait status once it ends, and whether this server ended it because its client went.

    A client killed mid-count (``kill -9``, the OOM killer) closes its end of
    the socket, but the session only reads it after the statement returns,
    which one that spins or sleeps never does: the server watches the socket
    and ends the session's process group (the session, and the zygote's child
    or the forks counting for it) ``_HANG_UP_GRACE`` s after its client went,
    unless the session, idle, ended by itself.
    """
    watch = select.poll()
    watch.register(conn, select.POLLRDHUP)
    ended = -1
    with contextlib.suppress(OSError, AttributeError):  # no pidfd (before Linux 5.3): polled
        ended = os.pidfd_open(pid)
        watch.register(ended, select.POLLIN)
    try:
        hung_up_at: float | None = None
        while True:
            done, status = os.waitpid(pid, os.WNOHANG)
            if done:
                return status, False  # ended by itself, or by its client (who may read its log)
            if hung_up_at is not None and time.monotonic() - hung_up_at >= _HANG_UP_GRACE:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(pid, signal.SIGKILL)
                return os.waitpid(pid, 0)[1], True
            events = watch.poll(_POLL_MS if ended < 0 or hung_up_at is not None else None)
            if hung_up_at is None and any(fd == conn.fileno() for fd, _ in events):
                # POLLRDHUP, POLLHUP or POLLERR: the client's end is closed. From now on only
                # the session's end is waited for (the socket would report this at once again).
                hung_up_at = time.monotonic()
                watch.unregister(conn)
    finally:
        if ended >= 0:
            os.close(ended)


_POLL_MS = 200
_HANG_UP_GRACE = 1.0


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
