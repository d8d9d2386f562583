"""Processes a test started, found by a marker in their environment (children inherit it)."""

from __future__ import annotations

import os
from pathlib import Path


def processes_with(marker: str) -> list[str]:
    """Processes whose environment holds ``marker``: what a test's driver started, and their children."""
    found = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit() or int(proc.name) == os.getpid():
            continue
        try:
            if marker.encode() in (proc / "environ").read_bytes():
                command = (proc / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
                found.append(f"{proc.name}: {command[:120]}")
        except OSError:
            continue
    return found
