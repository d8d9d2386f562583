"""Valgrind's logs and the files of a process under it: tails, without the banner."""

from __future__ import annotations

import signal
from pathlib import Path

LOG_TAIL_CHARS = 4000


def signal_name(sig: int) -> str:
    try:
        return signal.Signals(sig).name
    except ValueError:
        return f"signal {sig}"


def tail(path: Path, chars: int = LOG_TAIL_CHARS) -> str:
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return ""
    return text[-chars:]


def valgrind_log(path: Path) -> str:
    """The log without valgrind's banner (tool, copyright, command line)."""
    lines = tail(path, 64 * 1024).splitlines()
    body = [ln for ln in lines if not _is_banner(ln)]
    text = "\n".join(body).strip()
    return text[-LOG_TAIL_CHARS:]


def _is_banner(line: str) -> bool:
    content = line.split("== ", 1)[1] if line.startswith("==") and "== " in line else line
    return (
        not content.strip()
        or content.startswith(
            ("Callgrind, a call-graph", "Copyright (C)", "Using Valgrind", "Command:", "For interactive control")
        )
        or content.startswith(("Events    :", "Collected :", "I   refs:", "Parent PID:"))
    )
