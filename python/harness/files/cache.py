"""The per-user cache root: compiled core, compiled statements, saved models, peaks."""

from __future__ import annotations

import contextlib
import os
import shutil
from collections.abc import Iterator
from pathlib import Path

from harness.files.oserrors import PathError, owned, refuse_foreign
from harness.files.temporary import temporary_name
from harness.options import CACHE_DIR_ENV, XDG_CACHE_HOME_ENV, env


def configured_root() -> tuple[Path, str]:
    """The cache root the environment names (not created), and where that choice came from."""
    chosen = env(CACHE_DIR_ENV)
    xdg = env(XDG_CACHE_HOME_ENV)
    if chosen:
        return Path(chosen), f"{CACHE_DIR_ENV}={chosen!r}"
    if xdg:
        return Path(xdg) / "harness", f"{XDG_CACHE_HOME_ENV}={xdg!r}"
    return Path.home() / ".cache" / "harness", f"{CACHE_DIR_ENV} and {XDG_CACHE_HOME_ENV} unset"


def cache_fix() -> str:
    """How to move the cache, for messages about a cache that cannot be used."""
    _, source = configured_root()
    return f"set {CACHE_DIR_ENV} to a directory of yours that you can write (now: {source})"


@contextlib.contextmanager
def writing_cache(doing: str = "write to the harness cache") -> Iterator[None]:
    """Every OSError of the block on a path in the cache (or on none: a write to an open file)
    becomes one PathError naming the path, what failed and ``HARNESS_CACHE_DIR``."""
    root, _ = configured_root()
    with owned(root, doing, cache_fix()):
        yield


def cache_root() -> Path:
    """``$HARNESS_CACHE_DIR``, else ``$XDG_CACHE_HOME/harness``, else ``~/.cache/harness`` (unset or empty alike).

    Created with mode 0700: compiled code in it is loaded and run, so other
    users must not be able to plant files there, and a root that belongs to
    another user is refused. A root that cannot be created or used (a file, a
    read-only or full file system, a dangling link) is a PathError naming the
    path, what is wrong and the variable that moves it.
    """
    root, _ = configured_root()
    return ensure_private_dir(root, what="the harness cache")


def link_to_root(link: Path) -> bool:
    """Make ``link`` a symbolic link to the cache root's real path (the root created first); False where
    the root cannot be used.

    A counting worker reaches the cache through such a link
    (``workers.private_dir.cache_link``), whose path is the same for every
    worker of one cache: the cache's path is in the worker's environment and in
    every path the worker builds, and both its length and its content moved
    counts (``y = x * w`` +0.1% with the cache 24 to 32 characters further
    away, a C++ statement +2.45% in CI). The link is replaced atomically, so a
    worker starting beside this never sees it missing.
    """
    try:
        target = os.path.realpath(cache_root())
    except PathError:
        return False  # the worker reports it, with the real path, if it ever needs the cache
    with contextlib.suppress(OSError):
        if os.readlink(link) == target:
            return True
    # A random name, not one per process: workers started side by side make the same link from threads
    # of one process (``workers start --jobs 2``), and one thread moved the other's pending link away.
    pending = link.with_name(temporary_name(link))
    os.symlink(target, pending)
    try:
        os.replace(pending, link)
    except BaseException:
        pending.unlink(missing_ok=True)
        raise
    # Only as a link is made (once per cache, not at every worker start): links beside it to caches
    # since removed (a test session's) go.
    for other in link.parent.iterdir():
        if other.is_symlink() and not other.exists():
            other.unlink(missing_ok=True)
    return True


def ensure_private_dir(path: Path, fix: str | None = None, what: str = "a private harness directory") -> Path:
    """``path`` as a directory of this user's with mode 0700, made if missing.

    Any failure is a PathError (``files.oserrors``) naming the path, the
    problem and ``fix`` (by default, for a path in the cache, the variable
    that moves the cache).
    """
    if fix is None:
        root, _ = configured_root()
        if path == root or root in path.parents:
            fix = cache_fix()
    with owned(path, f"use it as {what}", fix):
        path.mkdir(parents=True, exist_ok=True, mode=0o700)
        refuse_foreign(path, what, fix)
        if path.stat().st_mode & 0o077:
            path.chmod(0o700)
    return path


def cache_dir(kind: str) -> Path:
    """A private subdirectory of the cache root for one kind of artefact."""
    return ensure_private_dir(cache_root() / kind)


def cache_info() -> dict[str, int]:
    """Bytes used per kind of artefact."""
    root = cache_root()
    info: dict[str, int] = {}
    for child in sorted(root.iterdir()):
        if child.is_dir():
            info[child.name] = sum(f.stat().st_size for f in child.rglob("*") if f.is_file())
    return info


def clear_cache() -> None:
    root = cache_root()
    with writing_cache("clear the harness cache"):
        shutil.rmtree(root)
    ensure_private_dir(root)


def truncated_library(path: Path) -> str | None:
    """Why the shared library ``path`` is visibly cut short, or None.

    Loading a truncated ``.so`` fails with "file too short" when the cut is in
    its headers but dies of SIGBUS when it is further on (the loader maps pages
    past the end of the file), so cached libraries are checked before loading.
    The linker puts the section header table last: a file ending before the
    end of that table was cut.
    """
    try:
        with open(path, "rb") as f:
            head = f.read(64)
        size = path.stat().st_size
    except OSError as exc:
        return f"unreadable: {exc.strerror or exc}"
    if len(head) < 64 or head[:4] != b"\x7fELF" or head[4] != 2 or head[5] != 1:
        return f"not a complete 64-bit ELF file ({size} bytes)"
    shoff = int.from_bytes(head[0x28:0x30], "little")
    end = shoff + int.from_bytes(head[0x3A:0x3C], "little") * int.from_bytes(head[0x3C:0x3E], "little")
    if size < end:
        return f"{size} bytes where its headers say {end}"
    return None
