"""The C++ build log: what every process built, hit in the cache, or failed to build.

``STATS`` counts this process's events; ``build.log`` beside the cache holds
one JSON line per event of every process (tests and ``benchmarks/self/cpp_build.py`` read it).
"""

from __future__ import annotations

import json
import os
import time
from collections import Counter
from pathlib import Path
from typing import Any

from harness.measure.cpp.toolchain import toolchain

STATS: Counter[str] = Counter()  # hits, misses, builds, failed_builds, pch_builds_started, pch_used_builds


def log_path() -> Path:
    return toolchain().root / "build.log"


def log_event(event: str, **fields: Any) -> None:
    STATS[event] += 1
    line = json.dumps({"time": round(time.time(), 3), "pid": os.getpid(), "event": event, **fields}) + "\n"
    # One write() of a short line with O_APPEND: lines from concurrent
    # processes never interleave.
    fd = os.open(log_path(), os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
    try:
        os.write(fd, line.encode())
    finally:
        os.close(fd)


def read_log() -> list[dict[str, Any]]:
    try:
        text = log_path().read_text()
    except FileNotFoundError:
        return []
    return [json.loads(line) for line in text.splitlines() if line.strip()]
