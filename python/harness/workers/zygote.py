"""A zygote: a pristine copy of a worker, forked at start-up, that forks one child per request.

Counts are what instruction counting is for, and the heap a measurement
starts from moves them: a worker that answers requests (parses lines, builds
statements, runs their setup, reads sockets) is never twice in the same state,
so the same statement counted later gave another count (0.1-1% for a small
tensor op). A worker under callgrind therefore forks a zygote as soon as it
has imported everything (torch, harness), before it reads any request; the
zygote's loop is C (``harness._C.zygote_loop``) and allocates nothing between
forks, so every child it forks starts from the same bytes. Each request runs
in such a child: it reads the request from a file, answers into another and
exits; the worker only passes lines, and its own state never reaches a count.
The child does the work on a thread of its own (``_on_own_arena``), so its
allocations start from an empty malloc arena, not from the zygote's heap.

Files (in the worker's private directory): ``request.<zygote pid>`` (the
process group to join, a newline, the request line; both pids in 7 digits)
and ``answer.<child pid>`` (the answer's JSON). The zygote reports each child's start and end on
a pipe; a child that crashes or dies leaves no answer, and the caller is
told its pid and wait status.
"""

from __future__ import annotations

import _thread
import contextlib
import json
import os
import struct
import sys
import traceback
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness.core import native
from harness.workers.protocol import WorkerDied

_STATUS = struct.Struct("=iii")  # kind (0 started, 1 ended), pid, wait status
_STARTED, _ENDED = 0, 1

Handler = Callable[[bytes], "dict[str, Any] | None"]


@dataclass
class Outcome:
    """What became of one request: the child's pid, its wait status, its answer (None: no answer)."""

    pid: int
    status: int
    answer: dict[str, Any] | None


class Zygote:
    """The zygote of this process; ``run(line)`` answers a request line in a fresh child of it."""

    def __init__(self, directory: str | Path, handle: Handler) -> None:
        """Fork the zygote now: call this after start-up's imports, before any request is read.

        ``handle(line) -> answer``: what a child does with a request line.
        """
        self.directory = Path(directory)
        ctl_r, ctl_w = os.pipe()
        status_r, status_w = os.pipe()
        sys.stdout.flush()
        sys.stderr.flush()
        pid = os.fork()
        if pid == 0:  # pragma: no cover - the zygote, and (returning from the loop) its children
            os.close(ctl_w)
            os.close(status_r)
            if native().zygote_loop(ctl_r, status_w) != 0:
                os._exit(0)  # the worker went away
            os.close(ctl_r)
            os.close(status_w)
            global _parent
            self.pid = os.getppid()
            _parent = self
            _answer_one(self.directory, handle)
        os.close(ctl_r)
        os.close(status_w)
        self.pid = pid
        self._ctl = ctl_w
        self._status = status_r

    def run(self, line: bytes) -> Outcome:
        """Answer ``line`` in a fresh child of the zygote; waits for the child to end.

        The child joins this process's group, so whoever kills this process's
        group (a client ending a kept worker's session) kills the child too.
        """
        request = self.directory / f"request.{pid_text(self.pid)}"
        request.write_bytes(f"{pid_text(os.getpgrp())}\n".encode() + line)
        try:
            try:
                os.write(self._ctl, b"r")
            except BrokenPipeError:
                raise WorkerDied("the worker's zygote died") from None
            # Skip what a child of an earlier, killed session reports as it ends.
            pid = self._next(lambda kind, _: kind == _STARTED)
            if pid < 0:
                raise WorkerDied(f"the worker's zygote could not fork: {os.strerror(-pid)}")
            status = self._wait_for(pid)
        finally:
            request.unlink(missing_ok=True)
        answer_path = self.directory / f"answer.{pid}"
        answer = None
        with contextlib.suppress(FileNotFoundError):
            answer = json.loads(answer_path.read_bytes())
            answer_path.unlink()
        return Outcome(pid, status, answer)

    def _read(self) -> tuple[int, int, int]:
        data = b""
        while len(data) < _STATUS.size:
            chunk = os.read(self._status, _STATUS.size - len(data))
            if not chunk:
                raise WorkerDied("the worker's zygote died")
            data += chunk
        return _STATUS.unpack(data)

    def _next(self, wanted: Callable[[int, int], bool]) -> int:
        while True:
            kind, pid, _ = self._read()
            if kind == _ENDED and pid < 0:  # fork failed
                return pid
            if wanted(kind, pid):
                return pid

    def _wait_for(self, pid: int) -> int:
        while True:
            kind, got, status = self._read()
            if kind == _ENDED and got == pid:
                return status

    def own_file(self, name: str) -> Path:
        """A file of this zygote's in its directory (removed by ``close()``)."""
        return self.directory / f"zygote.{self.pid}.{name}"

    def close(self) -> None:
        """The zygote exits when its control pipe closes; its files go."""
        with contextlib.suppress(OSError):
            os.close(self._ctl)
        with contextlib.suppress(OSError):
            os.close(self._status)
        for path in self.directory.glob(f"zygote.{self.pid}.*"):
            path.unlink(missing_ok=True)


_parent: Zygote | None = None


def pid_text(pid: int) -> str:
    """A pid as a child reads it before it counts: always 7 digits (Linux's largest pid_max is 2**22).

    The length of every string a child holds when its count starts moves the
    heap the count starts from, so a pid of 5 digits and one of 6 would count
    the same work differently.
    """
    return f"{pid:07d}"


def zygote_of_this_child() -> Zygote | None:
    """In a child forked by a zygote, that zygote (its ``pid`` and ``directory``); else None."""
    return _parent


def parked_threads() -> int:
    """Threads of this process that hold nothing and run nothing while the work runs: a zygote
    child's first thread, waiting for the work's thread (forking beside it is safe)."""
    return _parked


_parked = 0


def _on_own_arena(handle: Handler, line: bytes) -> dict[str, Any] | None:
    """``handle(line)`` on a new thread, which glibc gives a new malloc arena and an empty tcache.

    The zygote's own heap (the main arena) is what its start-up left, and that
    differs with everything before the fork: the environment's size, the
    command line, a kept worker's socket and imports. Where a statement's
    allocations land in it decides which path malloc and free take (torch's
    64-byte aligned blocks split or not): ``y = x * w`` counted 9,556 in a kept
    worker and 9,505 in a fresh one, all of it in ``_int_free``. A new arena
    starts empty at an aligned address, so the same work lands the same way.
    The calling thread must never run beside it: it starts the thread with
    the GIL hand-over off and waits on a plain lock, never asking for the GIL
    again before the answer. (With the usual 5 ms hand-over it ran a few steps
    of its own as often as the clock allowed, between the work's allocations,
    and two workers started side by side counted one statement differently;
    a thread waiting for the GIL also makes every hand-over in the work dearer.)
    """
    out: dict[str, Any] = {}
    done = _thread.allocate_lock()
    done.acquire()

    def run() -> None:
        # This thread got the GIL only when the first one released it to wait, and that one
        # never asks for it again before the answer: Python's usual hand-over is back on.
        sys.setswitchinterval(interval)
        try:
            out["answer"] = handle(line)
        except BaseException as exc:  # noqa: BLE001 - raised again on the calling thread
            out["error"] = exc
        finally:
            done.release()

    global _parked
    _parked = 1
    # Until this thread waits, it must not hand the GIL over (the other would run a
    # little, as often as the clock allowed, and allocate between its steps).
    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e6)
    _thread.start_new_thread(run, ())
    done.acquire()
    if "error" in out:
        raise out["error"]
    return out.get("answer")


def _answer_one(directory: Path, handle: Handler) -> None:
    """In a child: read the request, answer it into a file, exit without Python's clean-up."""
    code = 0
    try:
        request = directory / f"request.{pid_text(os.getppid())}"
        group, line = request.read_bytes().split(b"\n", 1)
        request.unlink()  # not left behind when the worker is killed while this child runs
        with contextlib.suppress(OSError):
            os.setpgid(0, int(group))
        answer = _on_own_arena(handle, line)
        if answer is not None:
            path = directory / f"answer.{os.getpid()}"
            partial = path.with_name(path.name + ".partial")
            partial.write_text(json.dumps(answer), encoding="utf-8")
            partial.rename(path)
    except BaseException:  # noqa: BLE001 - on stderr, which the caller shows with the failure
        traceback.print_exc()
        code = 1
    finally:
        with contextlib.suppress(Exception):
            sys.stdout.flush()
            sys.stderr.flush()
        os._exit(code)
