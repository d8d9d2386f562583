"""An OSError on a path harness owns, as one message: which path, what failed, and the fix.

A failure to create, write or lock one of harness's files or directories
(docs/files.md lists them) is the user's to fix, not a bug: the message names
the path, says in words what is wrong with it (read-only, full, permission,
not a directory, a dangling link, another user's) and how to move it (the
variable or option that chose the location). ``path_error`` builds that
message from the OSError; ``owned`` turns every OSError of a block into it;
the CLI prints it and exits 2 like any bad input, without a traceback.

    with owned(root, "create the C++ cache directory", fix=cache_fix()):
        root.mkdir(...)

``problem(exc, path)`` alone gives the words for a message of the caller's
own (the kept workers' start, say).

Reading a file the user named (a run record, a CSV, an expected-results
file) fails the same way everywhere: ``read_text`` says ``PATH: no such
file`` (or the caller's words for it) or ``PATH: cannot read: why``, and
``read_text_if_exists`` gives None for a missing file (one about to be
created or appended to).
"""

from __future__ import annotations

import contextlib
import errno
import os
import pwd
from collections.abc import Iterator
from pathlib import Path

from harness.errors import UsageError


class PathError(UsageError):
    """A path harness owns cannot be created, written, read or locked.

    ``path`` is the path named, ``problem`` the words for what is wrong
    with it (``problem()``), ``errno`` the OSError's number (None for a
    refusal of harness's own, such as another user's directory).
    """

    def __init__(self, message: str, path: Path, problem: str, errno_: int | None = None) -> None:
        super().__init__(message)
        self.path = path
        self.problem = problem
        self.errno = errno_


def _owner(uid: int) -> str:
    try:
        return f"uid {uid} ({pwd.getpwuid(uid).pw_name})"
    except KeyError:
        return f"uid {uid}"


def _dangling(path: Path) -> tuple[Path, str] | None:
    """The first component of ``path`` (itself included) that is a symbolic link to nothing, and its target."""
    for candidate in reversed([path, *path.parents]):
        try:
            if candidate.is_symlink() and not candidate.exists():
                return candidate, os.readlink(candidate)
        except OSError:
            return None
    return None


def _not_directory(path: Path) -> Path | None:
    """The first existing component of ``path``'s directories that is not a directory."""
    for candidate in reversed([path, *path.parents]):
        try:
            if candidate.exists() and not candidate.is_dir():
                return candidate
        except OSError:
            return None
    return None


def _existing(path: Path) -> Path:
    """``path``, or its nearest ancestor that exists."""
    for candidate in [path, *path.parents]:
        with contextlib.suppress(OSError):
            if os.path.lexists(candidate):
                return candidate
    return Path("/")


def foreign_owner(path: Path) -> str | None:
    """Whose ``path`` (or its nearest existing ancestor) is when it is not this user's: "uid N (name)"."""
    where = _existing(path)
    try:
        uid = where.lstat().st_uid
    except OSError:
        return None
    return None if uid == os.geteuid() else _owner(uid)


def problem(exc: OSError, path: str | os.PathLike[str] | None = None) -> str:
    """What is wrong, in words: read-only, full, permission, not a directory, a dangling link, another user's."""
    p = Path(path if path is not None else exc.filename or ".")
    code = exc.errno
    if code == errno.EROFS:
        return "the file system is read-only"
    if code == errno.ENOSPC:
        return "the file system is full (no space left on the device)"
    if code == errno.EDQUOT:
        return "your disk quota there is used up"
    if code == errno.EFBIG:
        return "the file would pass the file-size limit (ulimit -f)"
    if code in (errno.EEXIST, errno.ENOENT, errno.ELOOP):
        dangling = _dangling(p)
        if dangling is not None:
            link, target = dangling
            return f"{link} is a dangling symbolic link (to {target}, which does not exist)"
    if code in (errno.ENOTDIR, errno.EEXIST):
        blocker = _not_directory(p)
        if blocker is not None:
            return f"{blocker} is a file, not a directory"
    if code in (errno.EACCES, errno.EPERM):
        owner = foreign_owner(p)
        where = _existing(p)
        if owner is not None:
            return f"permission denied: {where} belongs to another user, {owner}"
        return f"permission denied on {where}"
    if code == errno.EISDIR:
        return "it is a directory"
    return exc.strerror or str(exc)


def path_error(exc: OSError, path: str | os.PathLike[str], doing: str, fix: str | None = None) -> PathError:
    """``PATH: cannot DOING: PROBLEM; FIX`` as a PathError (raise it ``from exc``)."""
    p = Path(path)
    words = problem(exc, p)
    return PathError(f"{p}: cannot {doing}: {words}" + (f"; {fix}" if fix else ""), p, words, exc.errno)


@contextlib.contextmanager
def owned(path: str | os.PathLike[str], doing: str, fix: str | None = None,
          scope: str | os.PathLike[str] | None = None) -> Iterator[None]:
    """Any OSError in the block about ``scope`` (default ``path``) becomes ``path_error(exc, ..., doing, fix)``.

    ``path`` is the location the user chose (or harness chose for them); an
    OSError naming a path under it names that one, one naming another path
    in ``scope`` (a file's directory: its lock, its temporary file) or none
    names ``path``, and one naming a path outside ``scope`` passes through
    unchanged (a compiler that does not run, a file the user named).
    """
    where = Path(path)
    within = Path(scope) if scope is not None else where
    try:
        yield
    except PathError:
        raise
    except OSError as exc:
        named = Path(os.fsdecode(exc.filename)) if isinstance(exc.filename, (str, bytes, os.PathLike)) else None
        if named is not None and not _under(named, within):
            raise
        raise path_error(exc, named if named is not None and _under(named, where) else where, doing, fix) from exc


def _under(path: Path, root: Path) -> bool:
    try:
        return os.path.commonpath([os.path.abspath(path), os.path.abspath(root)]) == os.path.abspath(root)
    except ValueError:
        return False


def refuse_foreign(path: Path, what: str, fix: str | None = None) -> None:
    """A PathError unless ``path`` (which exists) belongs to this user: a location whose files
    harness loads and runs (the cache), or whose sockets it trusts, must not be another user's."""
    owner = foreign_owner(path)
    if owner is not None:
        words = f"it belongs to another user, {owner}, not to uid {os.geteuid()}"
        raise PathError(f"{path}: will not use it as {what}: {words}" + (f"; {fix}" if fix else ""), path, words)


def read_text_if_exists(path: str | os.PathLike[str], doing: str = "read", newline: str | None = None) -> str | None:
    """The UTF-8 text of ``path``, None when there is no such file; any other failure (permission, a
    directory, bytes that are not UTF-8) is a UsageError ``PATH: cannot DOING: why``.

    ``newline`` is ``open``'s: "" keeps line endings as they are (csv cells, a file rewritten line by line).
    """
    p = Path(path)
    try:
        with open(p, encoding="utf-8", newline=newline) as f:
            return f.read()
    except FileNotFoundError:
        return None
    except (OSError, UnicodeDecodeError) as exc:
        raise UsageError(f"{p}: cannot {doing}: {getattr(exc, 'strerror', None) or exc}") from None


def read_text(path: str | os.PathLike[str], doing: str = "read", missing: str = "no such file",
              newline: str | None = None) -> str:
    """``read_text_if_exists``, where a missing file is a UsageError ``PATH: MISSING``."""
    text = read_text_if_exists(path, doing, newline)
    if text is None:
        raise UsageError(f"{Path(path)}: {missing}")
    return text
