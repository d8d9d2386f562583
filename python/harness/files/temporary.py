"""harness's temporary files: one naming, held by their writer while it lives, swept by the next write.

Every temporary file harness gives a name beside a file it replaces is
``.NAME.XXXXXXXX.tmp`` (``NAME`` the target's name, eight random
characters). Its writer holds an ``flock`` on it from before it has that
name until it is renamed over the target, and the kernel drops the lock when
the writer dies, however it dies. A writer killed between naming its
temporary file and the rename (``kill -9``, the OOM killer, a CI timeout)
leaves the complete new content there; the next write of the same target
removes every such file whose lock it can take (``sweep``): this user's
only, of that exact naming only, never one a live writer holds.

``TEST_KILL_POINTS`` are the steps of an atomic write where
``HARNESS_TEST_KILL_AT`` makes the writer SIGKILL itself (tests only).
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import re
import secrets
import signal
from pathlib import Path

from harness.options import TEST_KILL_AT_ENV, TEST_KILL_POINTS, env_choice

SUFFIX = ".tmp"
# secrets.token_hex(4) (now), mkstemp's eight characters or a pid (older harness versions).
_RANDOM = r"(?:[a-z0-9_]{8}|[0-9]{1,10})"


def temporary_name(target: Path) -> str:
    return f".{target.name}.{secrets.token_hex(4)}{SUFFIX}"


def is_temporary_of(name: str, target: Path) -> bool:
    return re.fullmatch(rf"\.{re.escape(target.name)}\.{_RANDOM}{re.escape(SUFFIX)}", name) is not None


def kill_point(step: str) -> None:
    """SIGKILL this process when ``HARNESS_TEST_KILL_AT`` names ``step`` (a test hook; unset in real use)."""
    if env_choice(TEST_KILL_AT_ENV, TEST_KILL_POINTS) == step:
        os.kill(os.getpid(), signal.SIGKILL)


def create_held(directory: Path, target: Path) -> tuple[int, Path]:
    """A new, empty temporary file for ``target`` in ``directory``, opened read-write and locked.

    A sweeper may take the lock in the moment between creating the file and
    locking it, and remove it: then the name no longer leads to our file, and
    another is made.
    """
    while True:
        path = directory / temporary_name(target)
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600)
        fcntl.flock(fd, fcntl.LOCK_EX)
        try:
            if os.stat(path).st_ino == os.fstat(fd).st_ino:
                return fd, path
        except FileNotFoundError:
            pass
        os.close(fd)


def sweep(target: Path, held: bool = False) -> list[Path]:
    """Remove the temporary files of ``target`` no live writer holds; the ones removed.

    ``held``: the caller holds the lock that every writer of ``target``
    takes (a file written by a tool that cannot lock its output, such as
    the compiler writing a PCH), so every temporary file of it is a
    leftover.
    """
    directory = target.parent if str(target.parent) else Path(".")
    removed: list[Path] = []
    try:
        entries = [e.name for e in os.scandir(directory) if is_temporary_of(e.name, target)]
    except OSError:
        return removed
    uid = os.geteuid()
    for name in entries:
        path = directory / name
        with contextlib.suppress(OSError):
            fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
            try:
                info = os.fstat(fd)
                if info.st_uid != uid:
                    continue
                if not held:
                    try:
                        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    except BlockingIOError:
                        continue  # its writer is alive
                if os.stat(path, follow_symlinks=False).st_ino == info.st_ino:
                    os.unlink(path)
                    removed.append(path)
            finally:
                os.close(fd)
    return removed
