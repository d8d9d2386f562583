"""JSON-lines files: one JSON value per line, read with line numbers, appended atomically."""

from __future__ import annotations

import json
import os
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from harness.errors import UsageError
from harness.files.atomic import atomic_open
from harness.files.csv_file import OUTPUT_FIX
from harness.files.lock import locked
from harness.files.oserrors import owned, read_text, read_text_if_exists


def read_jsonl(path: str | os.PathLike[str]) -> list[tuple[int, Any]]:
    """``(line number, value)`` for every non-blank line; bad JSON raises UsageError naming the line."""
    p = Path(path)
    return parse_jsonl(read_text(p), p)


def parse_jsonl(text: str, path: Path) -> list[tuple[int, Any]]:
    """``read_jsonl`` of text already read from ``path`` (named in errors)."""
    p = path
    out = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            out.append((number, json.loads(line)))
        except json.JSONDecodeError as exc:
            raise UsageError(f"{p}:{number}: not JSON: {exc.msg} (column {exc.colno})") from None
    return out


def append_jsonl(path: str | os.PathLike[str], values: Iterable[Any]) -> None:
    """Add one line per value to ``path``, keeping what is there (rewritten through a temporary file,
    under the writers' lock of ``path``, so concurrent appenders all keep their lines)."""
    p = Path(path)
    lines = [json.dumps(v, allow_nan=True) + "\n" for v in values]
    with owned(p, "append to it", OUTPUT_FIX, scope=p.parent), locked(p):
        _append(p, lines)


def _append(p: Path, lines: list[str]) -> None:
    earlier = read_text_if_exists(p, "read it to append") or ""
    if earlier and not earlier.endswith("\n"):
        earlier += "\n"
    with atomic_open(p, "w", encoding="utf-8") as f:
        f.write(earlier)
        f.writelines(lines)
