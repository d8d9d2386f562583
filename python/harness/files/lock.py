"""An advisory lock per output file, for read-modify-replace by several writers.

Writers of one file (``bench`` runs in several terminals, pytest-xdist
workers, Python callers) each read the file, add their part and replace it
atomically; without a lock the last replace wins and the others' runs are
lost. ``locked(path)`` serialises them through ``flock`` on a hidden
``.<name>.lock`` beside the file. The file replaced is a new inode every
time, so it cannot carry the lock itself; the lock file is never removed
(removing it would let two writers hold "the" lock on two different inodes).

The kernel releases an ``flock`` when its holder dies, ``kill -9``
included, so a lock is never left held. Local file systems honour it
between processes of one machine; see the README for network file systems.

While the lock is held, SIGINT and SIGTERM are deferred (on the main
thread): a Ctrl-C that arrives during the replace lets it finish and is
raised right after, so a run is never half-stored. Waiting for the lock
stays interruptible.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import signal
import threading
from collections.abc import Iterator
from pathlib import Path

_DEFERRED = {signal.SIGINT, signal.SIGTERM}

# Re-entrant within a thread (a format's writer calls the files helpers, which
# lock again); a second open file description in one process would deadlock on flock.
_HELD: dict[Path, tuple[threading.RLock, list[int]]] = {}
_GUARD = threading.Lock()


def lock_path(path: str | os.PathLike[str]) -> Path:
    p = Path(path)
    return p.with_name(f".{p.name}.lock")


def _entry(key: Path) -> tuple[threading.RLock, list[int]]:
    with _GUARD:
        if key not in _HELD:
            _HELD[key] = (threading.RLock(), [])
        return _HELD[key]


@contextlib.contextmanager
def locked(path: str | os.PathLike[str]) -> Iterator[None]:
    """Hold the writers' lock of ``path`` (blocking until other writers are done)."""
    target = Path(path)
    key = target.resolve()
    rlock, fds = _entry(key)
    with rlock:
        if fds:  # this thread already holds it
            yield
            return
        target.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(lock_path(target), os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
        fds.append(fd)
        previous: set[signal.Signals] | None = None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            if threading.current_thread() is threading.main_thread():
                previous = signal.pthread_sigmask(signal.SIG_BLOCK, _DEFERRED)
            yield
        finally:
            fds.clear()
            os.close(fd)  # releases the flock
            if previous is not None:
                # A signal that arrived meanwhile is delivered here and raised by its handler.
                signal.pthread_sigmask(signal.SIG_SETMASK, previous)
