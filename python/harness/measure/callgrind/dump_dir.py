"""The private directory a callgrind counter's workers dump into: held by its owner, swept once the owner is gone.

The owner (the harness process that made the counter) removes its directory
at exit, Ctrl-C and SIGTERM included; a process killed outright (``kill -9``,
the OOM killer, a CI runner's timeout) cannot, and its directory would stay
in the temporary directory for good. So the owner holds an ``flock`` on
``owner.lock`` inside it for as long as it lives: the kernel releases the
lock when the owner dies, however it dies, and the next counter to make a
directory removes every one whose lock it can take. A pid in the name would
not do: the pid of a process in another pid namespace sharing /tmp, or a
reused one, says nothing about this directory's owner.

The lock file is locked before it gets its name (``owner.lock.new`` renamed),
so a sweeper never finds a named lock that is free only because its owner
has not taken it yet; a directory without a named lock (being made, or left
by an older harness) is never swept.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import shutil
import tempfile
from pathlib import Path

from harness.workers.private_dir import FRESH_PREFIX, fresh_name, worker_dir, workers_dir

PREFIX = "harness-callgrind-"  # where older harnesses made them: directly in the temporary directory
LOCK_NAME = "owner.lock"


class DumpDir:
    """A new directory among the workers' private ones (``workers.private_dir``), held until ``remove()``.

    There, its path has the length of a kept worker's: a run's own worker and a
    kept one get paths of one length on their command line and in their
    environment, and so count alike.
    """

    def __init__(self) -> None:
        sweep(Path(tempfile.gettempdir()))
        sweep(workers_dir(), FRESH_PREFIX)
        self.path = worker_dir(fresh_name())
        self.path.mkdir(mode=0o700)
        pending = self.path / f"{LOCK_NAME}.new"
        self._fd: int | None = os.open(pending, os.O_WRONLY | os.O_CREAT | os.O_CLOEXEC, 0o600)
        fcntl.flock(self._fd, fcntl.LOCK_EX)
        os.rename(pending, self.path / LOCK_NAME)

    def remove(self) -> None:
        shutil.rmtree(self.path, ignore_errors=True)
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None


def sweep(parent: Path, prefix: str = PREFIX) -> list[Path]:
    """Remove the dump directories under ``parent`` whose owner is gone (this user's only); the ones removed."""
    removed = []
    uid = os.getuid()
    for path in parent.glob(f"{prefix}*"):
        with contextlib.suppress(OSError):
            if path.is_symlink() or not path.is_dir() or path.stat().st_uid != uid:
                continue
            fd = os.open(path / LOCK_NAME, os.O_RDONLY | os.O_CLOEXEC)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                continue  # its owner is alive
            else:
                shutil.rmtree(path, ignore_errors=True)
                removed.append(path)
            finally:
                os.close(fd)
    return removed
