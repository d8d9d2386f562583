"""Atomic file writes: a reader sees the old file or the new one, never a torn one.

Where the file system supports it (Linux: ext4, xfs, btrfs, tmpfs), the new
content is written to an unnamed ``O_TMPFILE`` inode in the target's
directory and only gets a name once it is complete and synced: a writer
killed before then, even by SIGKILL, leaves nothing behind. The name it gets
is a temporary one (``.NAME.XXXXXXXX.tmp``, ``files.temporary``), renamed
over the target at once; a writer killed in that moment leaves it, and the
next write of the target sweeps it (the writer holds an ``flock`` on it, so
a live writer's file is never swept). Elsewhere the content goes to a named
temporary file from the start, removed on any Python-level failure (Ctrl-C
included) and swept after a SIGKILL the same way.

The steps, each a place where ``HARNESS_TEST_KILL_AT`` can SIGKILL the
writer for a test: ``temporary`` (before the temporary file exists),
``fsync`` (its content written and synced, not yet named), ``rename``
(named, not yet renamed over the target).
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import IO

from harness.files.temporary import create_held, kill_point, sweep, temporary_name


def _open_unnamed(directory: Path) -> int | None:
    flag = getattr(os, "O_TMPFILE", None)
    if flag is None:
        return None
    try:
        # O_RDWR so the content can be copied out if naming it fails below.
        fd = os.open(directory, flag | os.O_RDWR | os.O_CLOEXEC, 0o600)
    except OSError:
        return None
    # Held before it has a name: a sweeper never sees it unlocked.
    fcntl.flock(fd, fcntl.LOCK_EX)
    return fd


def _publish_unnamed(fd: int, directory: Path, target: Path) -> bool:
    """Give the unnamed inode ``fd`` the name ``target``; False where linking it is not possible."""
    dir_fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY)
    tmp_name = temporary_name(target)
    try:
        try:
            # With dst_dir_fd CPython uses linkat(AT_SYMLINK_FOLLOW), which
            # resolves the /proc magic link to the unnamed inode; plain link()
            # would try to hard-link the /proc symlink itself.
            os.link(f"/proc/self/fd/{fd}", tmp_name, dst_dir_fd=dir_fd, follow_symlinks=True)
        except OSError:
            return False
        try:
            kill_point("rename")
            os.replace(tmp_name, target.name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
        except BaseException:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(tmp_name, dir_fd=dir_fd)
            raise
        with contextlib.suppress(OSError):
            os.fsync(dir_fd)
        return True
    finally:
        os.close(dir_fd)


def _publish_copy(fd: int, directory: Path, target: Path, mode: int) -> None:
    """Fallback: copy finished content into a named temporary file and rename it."""
    tmp_fd, tmp = create_held(directory, target)
    try:
        with os.fdopen(tmp_fd, "wb") as out, os.fdopen(os.dup(fd), "rb") as src:
            src.seek(0)
            shutil.copyfileobj(src, out)
            out.flush()
            os.fsync(out.fileno())
            os.chmod(tmp, mode)
            kill_point("rename")
            os.replace(tmp, target)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise


def _final_mode(target: Path) -> int:
    try:
        return target.stat().st_mode & 0o777
    except FileNotFoundError:
        return 0o644


@contextlib.contextmanager
def atomic_open(path: str | os.PathLike[str], mode: str = "w", encoding: str | None = "utf-8") -> Iterator[IO]:
    """Write to a temporary file in ``path``'s directory; it replaces ``path`` only on success.

    Temporary files an earlier writer of ``path`` left when it was killed are
    removed first (``files.temporary.sweep``).
    """
    target = Path(path)
    directory = target.parent if str(target.parent) else Path(".")
    directory.mkdir(parents=True, exist_ok=True)
    sweep(target)
    text_encoding = None if "b" in mode else encoding
    kill_point("temporary")
    fd = _open_unnamed(directory)
    if fd is None:
        with _named_temporary(target, directory, mode, text_encoding) as f:
            yield f
        return
    try:
        with os.fdopen(fd, mode, encoding=text_encoding, closefd=False) as f:
            yield f
            f.flush()
        os.fsync(fd)
        kill_point("fsync")
        final_mode = _final_mode(target)
        os.fchmod(fd, final_mode)
        if not _publish_unnamed(fd, directory, target):
            _publish_copy(fd, directory, target, final_mode)
    finally:
        os.close(fd)


@contextlib.contextmanager
def _named_temporary(target: Path, directory: Path, mode: str, encoding: str | None) -> Iterator[IO]:
    fd, tmp = create_held(directory, target)
    try:
        with os.fdopen(fd, mode, encoding=encoding) as f:
            yield f
            f.flush()
            os.fsync(f.fileno())
            kill_point("fsync")
            os.chmod(tmp, _final_mode(target))
            kill_point("rename")
            # Renamed while the file is still open, so its lock is held to the end.
            os.replace(tmp, target)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise


def check_replaceable(path: str | os.PathLike[str]) -> None:
    """Raise the OSError an atomic write of ``path`` would meet in its directory (missing and
    uncreatable, read-only, another user's), now rather than after a run; writes nothing.

    An unnamed temporary file is made and dropped, which needs what the
    write needs; where there is none (no ``O_TMPFILE``), ``os.access`` says.
    """
    target = Path(path)
    directory = target.parent if str(target.parent) else Path(".")
    directory.mkdir(parents=True, exist_ok=True)
    flag = getattr(os, "O_TMPFILE", None)
    if flag is not None:
        try:
            os.close(os.open(directory, flag | os.O_RDWR | os.O_CLOEXEC, 0o600))
            return
        except OSError as exc:
            if exc.errno not in (errno.EOPNOTSUPP, errno.EISDIR, errno.EINVAL):
                raise
    if os.statvfs(directory).f_flag & os.ST_RDONLY:
        raise OSError(errno.EROFS, os.strerror(errno.EROFS), str(directory))
    if not os.access(directory, os.W_OK):
        raise PermissionError(errno.EACCES, os.strerror(errno.EACCES), str(directory))


def atomic_write_text(path: str | os.PathLike[str], text: str) -> None:
    with atomic_open(path, "w") as f:
        f.write(text)
