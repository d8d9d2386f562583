"""Atomic file writes: a reader sees the old file or the new one, never a torn one.

Where the file system supports it (Linux: ext4, xfs, btrfs, tmpfs), the new
content is written to an unnamed ``O_TMPFILE`` inode in the target's
directory and only gets a name once it is complete; a writer killed even by
SIGKILL then leaves nothing behind. Elsewhere a named temporary file beside
the target is used and removed on any Python-level failure (Ctrl-C included).
"""

from __future__ import annotations

import contextlib
import os
import secrets
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import IO


def _open_unnamed(directory: Path) -> int | None:
    flag = getattr(os, "O_TMPFILE", None)
    if flag is None:
        return None
    try:
        # O_RDWR so the content can be copied out if naming it fails below.
        return os.open(directory, flag | os.O_RDWR, 0o600)
    except OSError:
        return None


def _publish_unnamed(fd: int, directory: Path, target: Path) -> bool:
    """Give the unnamed inode ``fd`` the name ``target``; False where linking it is not possible."""
    dir_fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY)
    tmp_name = f".{target.name}.{secrets.token_hex(4)}.tmp"
    try:
        try:
            # With dst_dir_fd CPython uses linkat(AT_SYMLINK_FOLLOW), which
            # resolves the /proc magic link to the unnamed inode; plain link()
            # would try to hard-link the /proc symlink itself.
            os.link(f"/proc/self/fd/{fd}", tmp_name, dst_dir_fd=dir_fd, follow_symlinks=True)
        except OSError:
            return False
        try:
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
    tmp_fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=directory)
    try:
        with os.fdopen(tmp_fd, "wb") as out, os.fdopen(os.dup(fd), "rb") as src:
            src.seek(0)
            shutil.copyfileobj(src, out)
            out.flush()
            os.fsync(out.fileno())
        os.chmod(tmp, mode)
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
    """Write to a temporary file in ``path``'s directory; it replaces ``path`` only on success."""
    target = Path(path)
    directory = target.parent if str(target.parent) else Path(".")
    directory.mkdir(parents=True, exist_ok=True)
    text_encoding = None if "b" in mode else encoding
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
        final_mode = _final_mode(target)
        os.fchmod(fd, final_mode)
        if not _publish_unnamed(fd, directory, target):
            _publish_copy(fd, directory, target, final_mode)
    finally:
        os.close(fd)


@contextlib.contextmanager
def _named_temporary(target: Path, directory: Path, mode: str, encoding: str | None) -> Iterator[IO]:
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=directory)
    try:
        with os.fdopen(fd, mode, encoding=encoding) as f:
            yield f
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, _final_mode(target))
        os.replace(tmp, target)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise


def atomic_write_text(path: str | os.PathLike[str], text: str) -> None:
    with atomic_open(path, "w") as f:
        f.write(text)
