"""Saving and loading run records by file suffix: the one writer and reader of records.

A record is stored as ``.json`` (one run per file), ``.jsonl`` or ``.csv``
(one or more runs per file; saving appends a run). Loading parses plain JSON
and CSV only, so a record can never execute code.
"""

from __future__ import annotations

import os
from pathlib import Path
from types import ModuleType

from harness.errors import UsageError
from harness.model.record import RunRecord
from harness.records.formats import FORMATS


def format_for(path: str | os.PathLike[str]) -> ModuleType:
    """The record format module (``write``/``read``/``preflight``) for ``path``'s suffix."""
    suffix = Path(path).suffix.lower()
    if suffix not in FORMATS:
        raise UsageError(f"{path}: unknown record format {suffix or '(no suffix)'!r}; use {', '.join(FORMATS)}")
    return FORMATS[suffix]


def save(record: RunRecord, path: str | os.PathLike[str]) -> bool:
    """Write ``record`` in the format of ``path``'s suffix; True when appended to an existing file."""
    fmt = format_for(path)
    try:
        return fmt.write(record, Path(path))
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
