"""CSV files for any suite: read with clear errors, write and append atomically.

Suites with their own CSV layout (gpt-fast, compile time) write it with
``append_csv(path, header, rows)`` from the same TaskResults that go into the
run record. Appending rewrites the whole file through a temporary file, so an
interrupted run never loses the rows already there; appends hold the file's
writers' lock (``files.lock``), so concurrent appenders keep every row.
"""

from __future__ import annotations

import contextlib
import csv
import io
import os
from collections.abc import Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from harness.errors import UsageError
from harness.files.atomic import atomic_open
from harness.files.lock import locked
from harness.files.oserrors import owned, read_text, read_text_if_exists

# The fix named when an output cannot be written: these files come from bench --output.
OUTPUT_FIX = "it is as it was before; give --output a path in a directory you can write"

Row = Sequence[Any] | Mapping[str, Any]

# Environment and sample columns of run records can exceed csv's default 128 KiB field limit.
_FIELD_LIMIT = 2**31 - 1


@contextlib.contextmanager
def _large_fields() -> Iterator[None]:
    previous = csv.field_size_limit(_FIELD_LIMIT)
    try:
        yield
    finally:
        csv.field_size_limit(previous)


def _cells(row: Row, header: Sequence[str], path: Path) -> list[Any]:
    if isinstance(row, Mapping):
        unknown = [k for k in row if k not in header]
        if unknown:
            raise UsageError(
                f"{path}: row has column(s) {', '.join(map(str, unknown))} not in the header {list(header)}"
            )
        return [row.get(col, "") for col in header]
    cells = list(row)
    if len(cells) != len(header):
        raise UsageError(f"{path}: row {cells!r} has {len(cells)} cells; the header has {len(header)} columns")
    return cells


def read_csv(
    path: str | os.PathLike[str], required: Sequence[str] = ()
) -> tuple[list[str], list[tuple[int, dict[str, str]]]]:
    """The header and ``(line number, row)`` pairs of a CSV file with a header line.

    A missing file, a missing ``required`` column or a row with the wrong number
    of cells raises UsageError naming the file and line.
    """
    p = Path(path)
    # newline="" keeps line breaks inside quoted cells intact for the csv module.
    return parse_csv(read_text(p, newline=""), p, required)


def parse_csv(
    text: str, path: Path, required: Sequence[str] = (), hint: str | None = None
) -> tuple[list[str], list[tuple[int, dict[str, str]]]]:
    """``read_csv`` of text already read from ``path`` (named in errors); ``hint`` replaces
    the generic advice when a required column is missing."""
    p = path
    with _large_fields():
        reader = csv.reader(io.StringIO(text, newline=""))
        try:
            header = next(reader, None)
            if not header:
                raise UsageError(f"{p}:1: empty CSV file; expected a header line")
            missing = [c for c in required if c not in header]
            if missing:
                raise UsageError(
                    f"{p}:1: CSV header lacks column(s) {', '.join(missing)} (line 1 is: {','.join(header)[:80]}); "
                    + (hint or f"expected at least: {', '.join(required)}")
                )
            rows: list[tuple[int, dict[str, str]]] = []
            line = reader.line_num + 1
            for cells in reader:
                if cells:
                    if len(cells) != len(header):
                        raise UsageError(
                            f"{p}:{line}: {len(cells)} cells where the header has {len(header)} columns"
                        )
                    rows.append((line, dict(zip(header, cells, strict=True))))
                line = reader.line_num + 1
        except csv.Error as exc:
            raise UsageError(f"{p}:{reader.line_num}: malformed CSV: {exc}") from None
    return header, rows


def _existing(path: Path, header: Sequence[str]) -> list[list[str]]:
    """Rows already in ``path`` (without its header), checking it has ``header``."""
    text = read_text_if_exists(path, "read it to append", newline="")
    if text is None or not text.strip():
        return []
    with _large_fields():
        try:
            lines = list(csv.reader(io.StringIO(text, newline="")))
        except csv.Error as exc:
            raise UsageError(f"{path}: malformed CSV, not appending to it: {exc}") from None
    if lines[0] != list(header):
        raise UsageError(
            f"{path}:1: cannot append: its header ({','.join(lines[0])}) differs from "
            f"this writer's ({','.join(header)}); write to a new file or move this one away"
        )
    return [r for r in lines[1:] if r]


def write_csv(path: str | os.PathLike[str], header: Sequence[str], rows: Iterable[Row]) -> None:
    """Replace ``path`` with a CSV of ``header`` and ``rows`` (sequences or dicts)."""
    p = Path(path)
    cells = [_cells(r, header, p) for r in rows]
    with owned(p, "write it", OUTPUT_FIX, scope=p.parent), atomic_open(p, "w", encoding="utf-8") as f:
        writer = csv.writer(f, lineterminator="\n")
        writer.writerow(header)
        writer.writerows(cells)


def append_csv(path: str | os.PathLike[str], header: Sequence[str], rows: Iterable[Row]) -> int:
    """Add ``rows`` to ``path`` (created with ``header`` when new); returns how many rows were there.

    An existing file must have exactly ``header``: silently mixing layouts would
    shift columns, so a mismatch is a UsageError.
    """
    p = Path(path)
    cells = [_cells(r, header, p) for r in rows]
    # Under the writers' lock: another appender's rows land before or after ours, never instead.
    with owned(p, "append to it", OUTPUT_FIX, scope=p.parent), locked(p):
        earlier = _existing(p, header)
        with atomic_open(p, "w", encoding="utf-8") as f:
            writer = csv.writer(f, lineterminator="\n")
            writer.writerow(header)
            writer.writerows(earlier)
            writer.writerows(cells)
    return len(earlier)
