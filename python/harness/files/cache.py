"""The per-user cache root: compiled core, compiled statements, saved models, peaks."""

from __future__ import annotations

import shutil
from pathlib import Path

from harness.errors import UsageError
from harness.options import CACHE_DIR_ENV, XDG_CACHE_HOME_ENV, env


def cache_root() -> Path:
    """``$HARNESS_CACHE_DIR``, else ``$XDG_CACHE_HOME/harness``, else ``~/.cache/harness`` (unset or empty alike).

    Created with mode 0700: compiled code in it is loaded and run, so other
    users must not be able to plant files there. A root that cannot be
    created (a file, a read-only place) is a UsageError naming the variable
    it came from.
    """
    chosen = env(CACHE_DIR_ENV)
    xdg = env(XDG_CACHE_HOME_ENV)
    if chosen:
        root, source = Path(chosen), f"{CACHE_DIR_ENV}={chosen!r}"
    elif xdg:
        root, source = Path(xdg) / "harness", f"{XDG_CACHE_HOME_ENV}={xdg!r}"
    else:
        root, source = Path.home() / ".cache" / "harness", f"{CACHE_DIR_ENV} and {XDG_CACHE_HOME_ENV} unset"
    try:
        return ensure_private_dir(root)
    except OSError as exc:
        raise UsageError(f"{source}: cannot use {root} as the harness cache ({exc.strerror or exc}); "
                         f"set {CACHE_DIR_ENV} to a directory you can write") from exc


def ensure_private_dir(path: Path) -> Path:
    path.mkdir(parents=True, exist_ok=True, mode=0o700)
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
