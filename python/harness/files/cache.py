"""The per-user cache root: compiled core, compiled statements, saved models, peaks."""

from __future__ import annotations

import os
import shutil
from pathlib import Path


def cache_root() -> Path:
    """``$HARNESS_CACHE_DIR``, else ``$XDG_CACHE_HOME/harness``, else ``~/.cache/harness``.

    Created with mode 0700: compiled code in it is loaded and run, so other
    users must not be able to plant files there.
    """
    env = os.environ.get("HARNESS_CACHE_DIR")
    if env:
        root = Path(env)
    else:
        xdg = os.environ.get("XDG_CACHE_HOME")
        root = (Path(xdg) if xdg else Path.home() / ".cache") / "harness"
    return ensure_private_dir(root)


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
