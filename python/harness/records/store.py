"""Saving and loading run records by file suffix: the one writer and reader of records.

A record is stored as ``.json`` (one run per file), ``.jsonl`` or ``.csv``
(one or more runs per file; saving appends a run). Loading parses plain JSON
and CSV only, so a record can never execute code.

What saving guarantees (README, "Run records"):

- the runs already in the file are never lost: the file is read, checked
  (a foreign file or one of a newer schema version is refused, not
  appended to or replaced) and replaced atomically under the writers' lock
  of the file (``files.lock``), so concurrent writers each keep their run;
- saving a run twice (same ``run_id``) stores it once;
- an interrupted run never replaces a ``.json`` record: it is put beside it,
  in ``NAME.interrupted-RUNID.json``.
"""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path
from types import ModuleType

from harness.errors import UsageError
from harness.files.atomic import check_replaceable
from harness.files.lock import locked
from harness.files.oserrors import PathError, owned, path_error
from harness.model.record import RunRecord
from harness.records.formats import FORMATS


@dataclasses.dataclass(frozen=True)
class Saved:
    """Where a record went: ``path`` (beside the one asked for when it must not replace it),
    whether it was ``appended`` to runs already there, and a ``note`` for the reader."""

    path: Path
    appended: bool = False
    note: str = ""


OUTPUT_FIX = "give --output a path in a directory you can write"


def format_for(path: str | os.PathLike[str]) -> ModuleType:
    """The record format module (``write``/``read``) for ``path``'s suffix."""
    suffix = Path(path).suffix.lower()
    if suffix not in FORMATS:
        raise UsageError(f"{path}: unknown record format {suffix or '(no suffix)'!r}; use {', '.join(FORMATS)}")
    return FORMATS[suffix]


def _earlier_runs(fmt: ModuleType, path: Path) -> list[RunRecord]:
    """The runs in ``path`` before a write; a file we must not touch raises UsageError saying so."""
    try:
        if path.stat().st_size == 0:
            return []
    except FileNotFoundError:
        return []
    except OSError as exc:
        raise UsageError(f"{path}: cannot read it: {exc.strerror or exc}") from None
    try:
        return fmt.read(path)
    except UsageError as exc:
        verb = "replace" if getattr(fmt, "ONE_RUN", False) else "append to"
        raise UsageError(f"{exc}\n(harness will not {verb} {path}; nothing was written to it)") from None


def beside(path: Path, record: RunRecord) -> Path:
    """Where an interrupted run goes when ``path`` holds a run it must not replace."""
    return path.with_name(f"{path.stem}.interrupted-{record.run_id or 'run'}{path.suffix}")


def write_record(record: RunRecord, path: str | os.PathLike[str]) -> Saved:
    """Store ``record`` in the format of ``path``'s suffix, keeping every run already there."""
    p = Path(path)
    fmt = format_for(p)
    one_run = getattr(fmt, "ONE_RUN", False)
    try:
        with locked(p):
            earlier = _earlier_runs(fmt, p)
            if record.run_id and any(r.run_id == record.run_id for r in earlier) and not one_run:
                return Saved(p, appended=True, note="already stored")
            note = ""
            target = p
            if one_run and earlier:
                old = earlier[-1]
                if record.interrupted and old.run_id != record.run_id:
                    target = beside(p, record)
                    note = f"interrupted, so stored beside {p.name} instead of replacing its complete run"
                elif old.run_id != record.run_id:
                    started = old.environment.get("start_time")
                    note = (f"run {record.run_id} replaced run {old.run_id or '(no id)'}"
                            + (f" started {started}" if started else ""))
            appended = fmt.write(record, target)
            return Saved(target, appended, note)
    except OSError as exc:
        raise path_error(exc, p, "write run record", f"the file is as it was before; {OUTPUT_FIX}") from None
    except PathError as exc:  # a format's writer (files/) said it in its own words: the record's instead
        raise PathError(f"{p}: cannot write run record: {exc.problem}; the file is as it was before; {OUTPUT_FIX}",
                        p, exc.problem, exc.errno) from None


def save(record: RunRecord, path: str | os.PathLike[str]) -> bool:
    """Write ``record`` in the format of ``path``'s suffix; True when appended to an existing file."""
    return write_record(record, path).appended


def check_writable(path: str | os.PathLike[str]) -> None:
    """Before a run: fail now, not after minutes of measuring, if ``path`` cannot take a record."""
    p = Path(path)
    fmt = format_for(p)
    if p.is_dir():
        raise UsageError(f"{p}: is a directory; give a file name for the run record")
    check_output_directory(p)
    _earlier_runs(fmt, p)


def check_output_directory(path: str | os.PathLike[str]) -> None:
    """Before a run: a PathError now if ``path``'s directory cannot take a file (read-only,
    another user's, a file in the way), for any writer of ``--output``."""
    p = Path(path)
    with owned(p, "write it", OUTPUT_FIX, scope=p.parent):
        check_replaceable(p)


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
