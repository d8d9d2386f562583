"""The expected-results gate: a run's metrics against expected values with noise margins.

The expected file is a CSV with (at least) ``name,metric,expected,noise_margin``,
the margin a fraction of ``expected``. Lines starting with ``#`` and blank
lines are comments, kept as they are. Lower values are better (instructions,
seconds): above the margin is a regression, below it an improvement that
should be recorded, never a failure.

A case whose count has several stable values (its work depends on the heap
layout the process started with: compile_time's ``symint_sum_loop`` counts
4.36e9 or 6.15e9, each to 0.2%) lists them as modes, ``expected`` written
``4360069652|6151283485``: a value within the margin of any mode is ok, one
below every mode an improvement, anything else a regression. A wide margin
covering both would be a gate that cannot fail.

``--update`` rewrites only the rows that moved by more than a third of
their margin (and appends new ones); every other line keeps its bytes, so a
refresh shows up as a small diff.
"""

from __future__ import annotations

import csv
import dataclasses
import io
import math
import shlex
from pathlib import Path

from harness.errors import UsageError
from harness.files.atomic import atomic_open
from harness.files.lock import locked
from harness.files.oserrors import owned, read_text, read_text_if_exists
from harness.records.formats.csv_format import COLUMNS as RECORD_COLUMNS
from harness.records.metrics import METRIC_COLUMNS, format_number, metric_rows

EXPECTED_COLUMNS = ("name", "metric", "expected", "noise_margin")
# A row is rewritten by --update only when it moved by more than this share of its margin.
UPDATE_FRACTION = 1 / 3
# Margin given to rows --update adds for new results; widen it from noise.py's figures.
NEW_ROW_MARGIN = 0.015

OK, REGRESSION, IMPROVED, MISSING, NEW = "ok", "REGRESSION", "improved", "missing", "new"
FAILING = (REGRESSION, MISSING)

Key = tuple[str, str]
MODE_SEPARATOR = "|"


@dataclasses.dataclass
class ExpectedRow:
    line: int  # 1-based line number in the file
    name: str
    metric: str
    modes: tuple[float, ...]  # one value, or each stable value of a multimodal case
    margin: float
    cells: list[str]  # as read, in header order

    @property
    def key(self) -> Key:
        return (self.name, self.metric)

    @property
    def expected(self) -> float:
        """The first mode (the only one of most rows)."""
        return self.modes[0]

    def nearest(self, actual: float) -> float:
        """The mode ``actual`` is closest to, relative to the mode."""
        return min(self.modes, key=lambda mode: abs(actual - mode) / mode if mode else abs(actual))


@dataclasses.dataclass
class ExpectedFile:
    path: Path
    header: list[str]
    lines: list[str]  # the raw lines, line endings included
    rows: dict[Key, ExpectedRow]

    @property
    def metrics(self) -> set[str]:
        return {metric for _, metric in self.rows}


@dataclasses.dataclass
class Verdict:
    name: str
    metric: str
    expected: float | None
    actual: float | None
    margin: float | None
    verdict: str
    mode: str = ""  # "2/2": which of a multimodal row's modes ``expected`` is

    @property
    def delta(self) -> float | None:
        """(actual - expected) / expected, or None when either is absent."""
        if self.expected is None or self.actual is None or self.expected == 0:
            return None
        return (self.actual - self.expected) / self.expected


def _parse_line(text: str, path: Path, line: int) -> list[str]:
    try:
        return next(csv.reader([text.rstrip("\r\n")]), [])
    except csv.Error as exc:
        raise UsageError(f"{path}:{line}: malformed CSV: {exc}") from None


def _number(text: str, what: str, path: Path, line: int) -> float:
    try:
        value = float(text)
    except ValueError:
        raise UsageError(f"{path}:{line}: {what} {text!r} is not a number; write it as e.g. 1234 or 0.015") from None
    if not math.isfinite(value) or value < 0:
        raise UsageError(f"{path}:{line}: {what} must be a finite number >= 0, got {text!r}")
    return value


def read_expected(path: str | Path, missing_ok: bool = False) -> ExpectedFile:
    """Parse the expected file; any defect is a UsageError naming the line.

    ``missing_ok``: a file that does not exist reads as a header alone (``--update`` creates it).
    """
    p = Path(path)
    # newline="": the file's own line endings are kept, so --update leaves untouched lines as they were.
    text = read_text_if_exists(p, newline="")
    if text is None:
        if missing_ok:
            return ExpectedFile(
                path=p, header=list(EXPECTED_COLUMNS), lines=[",".join(EXPECTED_COLUMNS) + "\n"], rows={}
            )
        raise UsageError(
            f"{p}: no such expected-results file; create it with "
            "`python -m harness check RESULTS --expected FILE --metric METRIC --update`"
        )
    lines = text.splitlines(keepends=True)
    header: list[str] | None = None
    rows: dict[Key, ExpectedRow] = {}
    for number, raw in enumerate(lines, start=1):
        stripped = raw.strip()
        if not stripped or stripped.startswith("#"):
            continue
        cells = _parse_line(raw, p, number)
        if header is None:
            header = [c.strip() for c in cells]
            missing = [c for c in EXPECTED_COLUMNS if c not in header]
            if missing:
                raise UsageError(
                    f"{p}:{number}: header lacks column(s) {', '.join(missing)}; "
                    f"the first line must name at least: {','.join(EXPECTED_COLUMNS)}"
                )
            if len(set(header)) != len(header):
                raise UsageError(f"{p}:{number}: header names a column twice: {','.join(header)}")
            continue
        if len(cells) != len(header):
            raise UsageError(
                f"{p}:{number}: {len(cells)} cells where the header has {len(header)} "
                f"({','.join(header)})"
            )
        values = dict(zip(header, cells, strict=True))
        name, metric = values["name"].strip(), values["metric"].strip()
        if not name or not metric:
            raise UsageError(f"{p}:{number}: empty name or metric")
        row = ExpectedRow(
            line=number,
            name=name,
            metric=metric,
            modes=tuple(_number(part.strip(), "expected value", p, number)
                        for part in values["expected"].split(MODE_SEPARATOR)),
            margin=_number(values["noise_margin"].strip(), "noise_margin", p, number),
            cells=cells,
        )
        if row.key in rows:
            raise UsageError(
                f"{p}:{number}: duplicate row for {name},{metric} (first at line {rows[row.key].line}); "
                "keep one of them"
            )
        rows[row.key] = row
    if header is None:
        raise UsageError(f"{p}:1: empty expected-results file; the first line must be {','.join(EXPECTED_COLUMNS)}")
    return ExpectedFile(path=p, header=header, lines=lines, rows=rows)


def read_results(path: str | Path) -> dict[Key, float]:
    """``(name, metric) -> value`` from a metric CSV (``name,metric,value``) or a run record (.json)."""
    p = Path(path)
    text = read_text(p, missing="no such results file; produce one with `python -m harness bench ... --output`",
                     newline="")
    # Run records in any format go through the records' reader (and its version rules); the rest is a metric CSV.
    if p.suffix in (".json", ".jsonl") or text.lstrip().startswith("{") or text.startswith(",".join(RECORD_COLUMNS)):
        from harness.records.store import load

        record = load(p)
        if not record.results:
            raise UsageError(f"{p}: its run has no results (stopped before any finished?), so there is "
                             "nothing to check; give a run with results")
        rows = [(name, metric, value, 0) for name, metric, value in metric_rows(record.results)]
    else:
        rows = _metric_csv_rows(text, p)
    out: dict[Key, float] = {}
    for name, metric, value, line in rows:
        if (name, metric) in out:
            where = f"{p}:{line}" if line else str(p)
            raise UsageError(f"{where}: {name},{metric} appears twice in the results; keep one run per case")
        out[(name, metric)] = value
    return out


def _metric_csv_rows(text: str, p: Path) -> list[tuple[str, str, float, int]]:
    from harness.files.csv_file import parse_csv

    _, parsed = parse_csv(
        text, p, METRIC_COLUMNS, hint="pass a file written by `bench --output X.csv` or a run record (.json)"
    )
    rows: list[tuple[str, str, float, int]] = []
    for line, values in parsed:
        try:
            value = float(values["value"])
        except ValueError:
            raise UsageError(f"{p}:{line}: value {values['value']!r} is not a number") from None
        rows.append((values["name"], values["metric"], value, line))
    return rows


def _within(row: ExpectedRow, mode: float, actual: float) -> bool:
    return mode * (1 - row.margin) <= actual <= mode * (1 + row.margin)


def _compared(row: ExpectedRow, actual: float) -> tuple[str, float]:
    """The verdict on ``actual`` and the mode that explains it: the one matched (ok), the lowest
    (improved), the highest one below ``actual`` (regression)."""
    matched = next((mode for mode in row.modes if _within(row, mode, actual)), None)
    if matched is not None:
        return OK, matched
    lowest = min(row.modes)
    if actual < lowest * (1 - row.margin):
        return IMPROVED, lowest
    return REGRESSION, max(mode for mode in row.modes if mode < actual)


def verdict(row: ExpectedRow, actual: float | None) -> Verdict:
    """``row`` judged against ``actual``, shown against the mode that explains the verdict."""
    outcome, shown = (MISSING, row.expected) if actual is None else _compared(row, actual)
    mode = f"{row.modes.index(shown) + 1}/{len(row.modes)}" if len(row.modes) > 1 else ""
    return Verdict(row.name, row.metric, shown, actual, row.margin, outcome, mode)


def gated_metrics(expected: ExpectedFile, metrics: list[str] | None = None) -> set[str]:
    """The metrics judged: ``metrics`` when given, else those the expected file has rows for."""
    return set(metrics) if metrics else expected.metrics


def check(expected: ExpectedFile, actual: dict[Key, float], metrics: list[str] | None = None) -> list[Verdict]:
    """A verdict per expected row (file order), then ``new`` for results of gated metrics without one.

    Results of other metrics (wall time when only instructions are gated)
    are not judged.
    """
    verdicts = [verdict(row, actual.get(row.key)) for row in expected.rows.values()]
    gated = gated_metrics(expected, metrics)
    verdicts += [
        Verdict(name, metric, None, value, None, NEW)
        for (name, metric), value in actual.items()
        if metric in gated and (name, metric) not in expected.rows
    ]
    return verdicts


def moved(row: ExpectedRow, actual: float) -> float | None:
    """The mode --update rewrites with ``actual`` (its nearest), or None when ``actual`` is close
    enough to it."""
    mode = row.nearest(actual)
    return mode if abs(actual - mode) > mode * row.margin * UPDATE_FRACTION else None


def _line_ending(raw: str) -> str:
    for ending in ("\r\n", "\n", "\r"):
        if raw.endswith(ending):
            return ending
    return ""


def _csv_line(cells: list[str], ending: str) -> str:
    buf = io.StringIO()
    csv.writer(buf, lineterminator=ending).writerow(cells)
    return buf.getvalue()


@dataclasses.dataclass
class Update:
    text: str
    changed: list[Key]
    added: list[Key]


def updated(expected: ExpectedFile, actual: dict[Key, float], metrics: list[str] | None = None) -> Update:
    """The expected file's new text: moved rows rewritten, new rows appended, everything else as it was."""
    lines = list(expected.lines)
    changed: list[Key] = []
    column = expected.header.index("expected")
    for row in expected.rows.values():
        value = actual.get(row.key)
        nearest = None if value is None else moved(row, value)
        if nearest is None:
            continue
        cells = list(row.cells)
        cells[column] = MODE_SEPARATOR.join(format_number(value if m == nearest else m) for m in row.modes)
        lines[row.line - 1] = _csv_line(cells, _line_ending(lines[row.line - 1]))
        changed.append(row.key)
    gated = gated_metrics(expected, metrics)
    added: list[Key] = []
    ending = next((_line_ending(x) for x in expected.lines if _line_ending(x)), "\n")
    for (name, metric), value in actual.items():
        if metric not in gated or (name, metric) in expected.rows:
            continue
        if lines and not _line_ending(lines[-1]):
            lines[-1] += ending
        values = {"name": name, "metric": metric, "expected": format_number(value), "noise_margin": str(NEW_ROW_MARGIN)}
        lines.append(_csv_line([values.get(col, "") for col in expected.header], ending))
        added.append((name, metric))
    return Update(text="".join(lines), changed=changed, added=added)


def write_update(expected: ExpectedFile, update: Update) -> None:
    # Bytes, so the file's own line endings pass through untranslated.
    with atomic_open(expected.path, "wb") as f:
        f.write(update.text.encode("utf-8"))


def update_file(path: str | Path, actual: dict[Key, float], metrics: list[str] | None = None) -> Update:
    """``--update``: read the expected file, apply ``actual`` and replace it, all under its writers' lock.

    Two refreshes of one file at once (two CI jobs) each read the file as the
    other left it, so both keep their rows; the lock is ``files.lock``'s, as
    for run records. A failure to write leaves the file as it was, with one
    message naming it and what failed.
    """
    p = Path(path)
    with owned(p, "update the expected-results file", "it is as it was before; give --expected a file in a "
               "directory you can write", scope=p.parent):
        with locked(p):
            expected = read_expected(p, missing_ok=True)
            update = updated(expected, actual, metrics)
            if update.changed or update.added or not p.exists():
                write_update(expected, update)
    return update


def refresh_command(results: str, expected: str, metrics: list[str] | None = None) -> str:
    extra = "".join(f" --metric {shlex.quote(m)}" for m in metrics or [])
    return f"python -m harness check {shlex.quote(results)} --expected {shlex.quote(expected)}{extra} --update"
