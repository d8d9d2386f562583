"""Run records: the environment of one run and every result, in a versioned schema.

Schema version 1 is documented in README.md ("Run records"). A record is
stored as ``.json`` (one run per file), ``.jsonl`` or ``.csv`` (one or more
runs per file; saving appends a run). Loading parses plain JSON and CSV only,
so a record can never execute code.
"""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path
from typing import Any

from .errors import UsageError
from .result import TaskResult

SCHEMA = "harness.run"
VERSION = 1


@dataclasses.dataclass
class RunRecord:
    environment: dict[str, Any]
    results: list[TaskResult]

    def to_json(self) -> dict[str, Any]:
        return {
            "schema": SCHEMA,
            "version": VERSION,
            "environment": self.environment,
            "results": [r.to_json() for r in self.results],
        }

    @property
    def run_id(self) -> str:
        """Tells runs in one multi-run file apart (older records: their start time)."""
        return str(self.environment.get("run_id") or self.environment.get("start_time") or "")

    def save(self, path: str | os.PathLike[str]) -> bool:
        """Write in the format of ``path``'s suffix; True when appended to an existing file."""
        fmt = format_for(path)
        try:
            return fmt.write(self, Path(path))
        except OSError as exc:
            raise UsageError(f"{path}: cannot write run record: {exc.strerror or exc}") from None


def check_writable(path: str | os.PathLike[str]) -> None:
    """Before a run: fail now, not after minutes of measuring, if ``path`` cannot take a record."""
    p = Path(path)
    fmt = format_for(p)
    try:
        p.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise UsageError(f"{p}: cannot create its directory: {exc.strerror or exc}") from None
    if p.is_dir():
        raise UsageError(f"{p}: is a directory; give a file name for the run record")
    if not os.access(p.parent, os.W_OK):
        raise UsageError(f"{p}: directory {p.parent} is not writable")
    fmt.preflight(p)


def check_version(data: Any, where: str) -> None:
    """Raise UsageError (``where`` is "file:line") unless ``data`` is a version-1 run header."""
    if not isinstance(data, dict) or data.get("schema") != SCHEMA:
        raise UsageError(f"{where}: not a harness run record (no \"schema\": \"{SCHEMA}\")")
    if data.get("version") != VERSION:
        raise UsageError(
            f"{where}: run record schema version {data.get('version')!r} is not supported "
            f"(this harness reads version {VERSION}); upgrade harness or re-run the benchmark"
        )


def format_for(path: str | os.PathLike[str]):
    """The record format module (``write``/``read``) for ``path``'s suffix."""
    from .record_formats import FORMATS

    suffix = Path(path).suffix.lower()
    if suffix not in FORMATS:
        raise UsageError(f"{path}: unknown record format {suffix or '(no suffix)'!r}; use {', '.join(FORMATS)}")
    return FORMATS[suffix]


def load_runs(path: str | os.PathLike[str]) -> list[RunRecord]:
    """Every run stored in ``path``, oldest first."""
    p = Path(path)
    fmt = format_for(p)
    if p.is_dir():
        raise UsageError(f"{p}: is a directory, not a run record")
    runs = fmt.read(p)
    if not runs:
        raise UsageError(f"{p}: holds no runs")
    return runs


def load(path: str | os.PathLike[str]) -> RunRecord:
    """The run stored in ``path``; for files holding several runs, the last one."""
    return load_runs(path)[-1]
