"""``harness._C.die_with_parent``: what a fork calls to go with its parent (a kept worker's sessions, the forks a
counting child counts each repeat in). Real forks, real signals: a grandchild of the test tethered to its parent.

Cost: a few forks of the test process; seconds.
"""

from __future__ import annotations

import contextlib
import os
import select
import signal
import time
from pathlib import Path

from harness.core import native


def _gone(pid: int) -> bool:
    """Whether ``pid`` has ended (gone, or a zombie its new parent has not reaped yet)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_bytes().rsplit(b")", 1)[1].split()[0]
    except (OSError, IndexError):
        return True
    return state in (b"Z", b"X")


def _read_all(fd: int, within: float) -> bytes:
    """What the write ends' holders send on ``fd`` until they have all closed it (or ``within`` seconds pass)."""
    out = b""
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        ready, _, _ = select.select([fd], [], [], 0.1)
        if ready:
            chunk = os.read(fd, 64)
            if not chunk:
                return out
            out += chunk
    raise AssertionError(f"the pipe stayed open for {within} s; read {out!r}")


def test_a_tethered_fork_ends_with_its_parent():
    """The grandchild sets the signal, then sleeps for ever; its parent exits: the kernel kills it."""
    C = native()
    r, w = os.pipe()
    told_r, told_w = os.pipe()  # the grandchild tells the middle process it is tethered
    middle = os.fork()
    if middle == 0:  # pragma: no cover - the middle process
        parent = os.getpid()
        if os.fork() == 0:
            C.die_with_parent(parent)
            os.write(w, f"{os.getpid()}\n".encode())
            os.write(told_w, b"t")
            while True:
                time.sleep(0.01)
        os.read(told_r, 1)
        os._exit(0)
    for fd in (w, told_r, told_w):
        os.close(fd)
    try:
        line = b""
        while not line.endswith(b"\n"):
            chunk = os.read(r, 64)
            assert chunk, "the grandchild ended before it said it was tethered"
            line += chunk
        grandchild = int(line)
    finally:
        os.close(r)
    os.waitpid(middle, 0)
    try:
        deadline = time.monotonic() + 10
        while not _gone(grandchild) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert _gone(grandchild), "the grandchild outlived its parent"
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.kill(grandchild, signal.SIGKILL)


def test_a_fork_whose_parent_is_already_gone_exits_at_once():
    """The race between fork and prctl: a parent gone before the signal was set would never send it, so the
    call ends the process itself (before: such a fork ran on, unnoticed)."""
    C = native()
    r, w = os.pipe()
    middle = os.fork()
    if middle == 0:  # pragma: no cover - the middle process
        parent = os.getpid()
        if os.fork() == 0:
            os.close(r)
            while os.getppid() == parent:  # until the middle process has exited
                time.sleep(0.01)
            C.die_with_parent(parent)
            os.write(w, b"ran on")
            os._exit(0)
        os._exit(0)
    os.close(w)
    os.waitpid(middle, 0)
    try:
        assert _read_all(r, within=30) == b""
    finally:
        os.close(r)
