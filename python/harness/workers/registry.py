"""The kept workers on this machine: what each is, listed and stopped; a stale one replaced.

Each kept worker's directory (``workers.private_dir``) holds ``info.json``,
written by the client that started it: the server's pid, when it started, its
idle timeout and its fingerprint (interpreter, harness sources' digest, torch,
working directory, slot, a digest of the environment). ``python -m harness
workers`` lists them with their memory; ``workers stop`` ends them. A client
that starts a worker stops the stale ones first: workers of the same
interpreter and harness checkout started from other harness sources or
another torch, which no run of this checkout can use again (an edit or an
upgrade would otherwise leave one behind per version until its idle timeout).

A process is only ever signalled after its command line is seen to name its
directory, so a pid reused by another process is left alone.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import shutil
import signal
import time
from pathlib import Path
from typing import Any

from harness.files.atomic import atomic_write_text
from harness.workers.private_dir import workers_dir

INFO = "info.json"
KEPT_PREFIX = "k"  # a kept worker's directory; a run's own worker's starts with "f"
# What makes a worker another's successor: the same of these, another harness or torch.
_SAME_PLACE = ("python", "package")
_VERSION = ("harness", "torch")


def write_info(directory: Path, server_pid: int, idle_timeout: float, fingerprint: dict[str, Any]) -> None:
    """``info.json``, replaced whole (``files.atomic``): a lister never reads half of it, and a
    client killed while writing it leaves no temporary file that the next write does not sweep."""
    info = {"server": server_pid, "started": time.time(), "idle_timeout": idle_timeout, **fingerprint}
    atomic_write_text(directory / INFO, json.dumps(info, sort_keys=True))


def read_info(directory: Path) -> dict[str, Any] | None:
    """The ``info.json`` of a kept worker's directory; None when there is none (or it is unreadable)."""
    try:
        return json.loads((directory / INFO).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def _alive(pid: int, directory: Path) -> bool:
    """``pid`` runs and is this directory's worker (its command line names the directory)."""
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            cmdline = f.read()
        with open(f"/proc/{pid}/stat", "rb") as f:
            state = f.read().rsplit(b")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state not in (b"Z", b"X") and os.fsencode(directory) in cmdline


def _group(pgid: int) -> list[int]:
    """The processes of process group ``pgid`` (a worker, its zygote, the zygote's children)."""
    pids = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            with contextlib.suppress(OSError, IndexError, ValueError):
                with open(f"/proc/{entry}/stat", "rb") as f:
                    if int(f.read().rsplit(b")", 1)[1].split()[2]) == pgid:
                        pids.append(int(entry))
    return pids


def _pss_bytes(pid: int) -> int:
    """Proportional set size: pages shared with the zygote (a fork) are counted once across the group."""
    with contextlib.suppress(OSError, ValueError):
        with open(f"/proc/{pid}/smaps_rollup") as f:
            for line in f:
                if line.startswith("Pss:"):
                    return int(line.split()[1]) * 1024
    return 0


def kept_workers() -> list[dict[str, Any]]:
    """This user's kept workers: each one's info, its directory, age (s), memory (bytes, the whole
    group's proportional set size) and whether it runs. Directories of workers that are gone
    are removed (a killed worker leaves its own)."""
    found = []
    try:
        directories = sorted(workers_dir().iterdir())
    except FileNotFoundError:
        return []
    for directory in directories:
        if not directory.name.startswith(KEPT_PREFIX) or directory.is_symlink() or not directory.is_dir():
            continue
        info = read_info(directory)
        if info is None:
            continue  # starting, or from a harness before info files
        pid = int(info.get("server", -1))
        if not _alive(pid, directory):
            _remove_unused(directory)
            continue
        found.append({**info, "directory": str(directory), "age": time.time() - float(info.get("started", 0)),
                      "memory": sum(_pss_bytes(p) for p in _group(pid))})
    return found


# Why a kept worker was ended, as the failed count of a client using it at that moment says it.
STOPPED_BY_USER = "stopped by `python -m harness workers stop`"
STOPPED_AS_STALE = "stopped as stale: a worker of other harness sources or another torch replaced it"


def stop(worker: dict[str, Any], why: str = STOPPED_BY_USER) -> None:
    """End a kept worker (its zygote, sessions and their children with it) and remove its directory.

    A client counting on it at that moment gets a failed count that says ``why``; the next run
    starts a new worker.
    """
    directory = Path(worker["directory"])
    pid = int(worker["server"])
    if _alive(pid, directory):
        _leave_note(directory, why)
        end_server(directory, pid)
    _remove(directory)


def end_server(directory: Path, pid: int) -> None:
    """Kill the kept worker ``pid`` of ``directory`` and its process group, if it is that worker
    (``_alive``), and wait up to 10 s for it to be gone."""
    if not _alive(pid, directory):
        return
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, signal.SIGKILL)
    deadline = time.monotonic() + 10
    while _alive(pid, directory) and time.monotonic() < deadline:
        time.sleep(0.05)


def _leave_note(directory: Path, why: str) -> None:
    """``why`` into the directory's lock file, for the client holding it (``stop_note``).

    The lock file, because a client holds it open while it uses the worker: the
    directory is removed next, and only a file the client already has open is
    still there to read. Written in place, not replaced (a new file would be one
    the client never opened); nothing else is ever in it.
    """
    with contextlib.suppress(OSError):
        fd = os.open(directory / "lock", os.O_WRONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
        try:
            os.ftruncate(fd, 0)
            os.write(fd, json.dumps({"stopped": why, "by_pid": os.getpid(), "time": time.time()}).encode())
        finally:
            os.close(fd)


def stop_note(lock_fd: int) -> str | None:
    """Why the kept worker whose lock file ``lock_fd`` is was stopped (``stop``); None when it was not."""
    try:
        note = json.loads(os.pread(lock_fd, 4096, 0) or b"null")
    except (OSError, ValueError):
        return None
    return note.get("stopped") if isinstance(note, dict) else None


def stop_all() -> list[dict[str, Any]]:
    """Stop every kept worker of this user's; the ones stopped."""
    workers = kept_workers()
    for worker in workers:
        stop(worker)
    return workers


def stop_stale(fingerprint: dict[str, Any]) -> list[dict[str, Any]]:
    """Stop the workers that ``fingerprint``'s worker replaces (see the module docstring)."""
    stale = [w for w in kept_workers()
             if all(w.get(k) == fingerprint.get(k) for k in _SAME_PLACE)
             and any(w.get(k) != fingerprint.get(k) for k in _VERSION)]
    for worker in stale:
        stop(worker, STOPPED_AS_STALE)
    return stale


def _remove(directory: Path) -> None:
    shutil.rmtree(directory, ignore_errors=True)


def _remove_unused(directory: Path) -> None:
    """A dead worker's directory, unless a client holds its lock (it may be starting a successor there)."""
    try:
        fd = os.open(directory / "lock", os.O_RDWR | os.O_CLOEXEC)
    except OSError:
        return
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return
    else:
        _remove(directory)
    finally:
        os.close(fd)
