"""The per-user private directory counting workers live in, checked on every step of the way.

``$TMPDIR/harness-$UID/workers/`` (``/tmp/harness-$UID/workers/`` where
``$TMPDIR`` is long: a socket's path has room for ~100 bytes) holds one
directory per counting worker: a kept worker's socket, lock and logs, or a
run's own worker's dumps. A socket there is as good as the user's shell to
whoever can reach it (it runs the statements it is sent), so every directory
from ``harness-$UID`` down to the worker's own is checked before it is used:
a real directory, not a symbolic link, owned by this user, mode 0700; and
every directory above it (``$TMPDIR``, its parents) must not be writable by
others unless it is sticky (``/tmp``), where a stranger could swap a
directory on the way. Anything else is refused with one message naming the
path, what is wrong and the fix; nothing there is ever followed or repaired
silently.

Every worker directory's path has one length (``worker_dir``): the path is
on the worker's command line and in its environment, and the length of each
moves the heap a count starts from, so a run's own worker and a kept one, or
two users with home directories of different lengths, would count the same
statement differently.
"""

from __future__ import annotations

import hashlib
import os
import secrets
import stat
import tempfile
from pathlib import Path

from harness.errors import UsageError
from harness.files.oserrors import owned, problem

# The length of every worker directory's path: the longest root (50) + "/workers/" + a name of 13 or more.
WORKER_DIR_LENGTH = 72
_ROOT_MAX = 50
_FIX = "or set TMPDIR to a directory of your own"


def root_dir() -> Path:
    """``harness-$UID`` under the temporary directory (not created)."""
    root = Path(tempfile.gettempdir()) / f"harness-{os.getuid()}"
    if len(str(root)) > _ROOT_MAX:
        root = Path("/tmp") / f"harness-{os.getuid()}"
    return root


def workers_dir() -> Path:
    """``harness-$UID/workers``, created 0700 where missing, every step checked (see the module docstring)."""
    root = root_dir()
    for parent in reversed(root.parents):
        _check_above(parent)
    workers = root / "workers"
    for path in (root, workers):
        private_directory(path)
    return workers


def private_directory(path: Path) -> Path:
    """``path`` as a directory of this user's alone: created 0700, or refused with the reason and the fix."""
    try:
        st = path.lstat()
    except FileNotFoundError:
        with owned(path, "create a private directory for harness's workers", fix=_FIX):
            try:
                path.mkdir(mode=0o700)
            except FileExistsError:
                pass  # made by a concurrent run: checked below like any other
        st = path.lstat()
    except OSError as exc:
        raise _refused(path, problem(exc, path), "remove it") from None
    if stat.S_ISLNK(st.st_mode):
        target = os.readlink(path)
        what = "a dangling symbolic link" if not path.exists() else "a symbolic link"
        raise _refused(path, f"it is {what} (to {target}); harness does not follow links to its workers' "
                             "sockets", f"remove the link (rm {path})")
    if not stat.S_ISDIR(st.st_mode):
        raise _refused(path, "it is not a directory", f"remove it (rm {path})")
    if st.st_uid != os.getuid():
        raise _refused(path, f"it belongs to another user (uid {st.st_uid})", "remove it as that user")
    if st.st_mode & 0o077:
        raise _refused(path, f"its mode is {stat.S_IMODE(st.st_mode):04o}, so other users may change what is "
                             "in it", f"remove it (rm -r {path}) or make it private (chmod 700 {path})")
    return path


def _check_above(path: Path) -> None:
    """A directory above the private one: others may not write to it unless it is sticky (``/tmp``)."""
    try:
        st = path.stat()
    except OSError:
        return  # its child's mkdir says what is wrong
    if st.st_mode & 0o022 and not st.st_mode & stat.S_ISVTX and st.st_uid not in (0, os.getuid()):
        raise _refused(path, "other users may write to it (and it is not sticky), so they could replace "
                             "the directory harness keeps its workers' sockets in", "set TMPDIR to a directory "
                             "of your own")


def _refused(path: Path, why: str, fix: str) -> UsageError:
    return UsageError(f"{path}: will not keep harness's workers here: {why}; {fix}, {_FIX}")


def worker_dir(name: str) -> Path:
    """The path of worker directory ``name`` (a hex key or ``fresh_name()``), padded to one length."""
    return _padded(workers_dir(), name, WORKER_DIR_LENGTH)


def _padded(base: Path, name: str, length: int) -> Path:
    """``base / name``, ``name`` repeated or cut so that the whole path is ``length`` characters."""
    room = length - len(str(base)) - 1
    return base / (name * (1 + room // max(1, len(name))))[:room]


# A counting worker's HARNESS_CACHE_DIR: a symbolic link to the cache root in
# ``harness-$UID/caches/``, named for the cache's real path (``cache_link``). Its path is as long as
# the ``<worker dir>/cache`` link it replaced: the length moves counts, and this keeps them as they were.
_CACHE_LINK_LENGTH = WORKER_DIR_LENGTH + len("/cache")


def cache_link(cache: str | os.PathLike[str]) -> Path:
    """Where counting workers reach cache ``cache`` through a symbolic link (``files.cache.link_to_root``
    makes it): one link per cache, named for the cache's real path and padded to one length.

    The cache's path is in a worker's environment and in every path it builds
    there, and both its length and its content move the heap a count starts
    from: the length through the sizes of the strings, the content through
    the hashes of them (``y = x * w`` 9,584.56 or 9,593.95 instructions a run
    as a run's own worker's random directory name changed; a TorchScript
    statement from Python 34,198.66 or 34,222.02 in CI). So every worker of
    one cache, a run's own or a kept one, whatever the cache's path is called
    by, sees the same path.
    """
    base = private_directory(workers_dir().parent / "caches")
    return _padded(base, hashlib.sha256(os.path.realpath(cache).encode()).hexdigest(), _CACHE_LINK_LENGTH)


FRESH_PREFIX = "f"  # a run's own worker's directory; a kept worker's name is its key, "k..."


def fresh_name() -> str:
    """A new worker directory's name: ``f`` and random hex."""
    return FRESH_PREFIX + secrets.token_hex(32)
