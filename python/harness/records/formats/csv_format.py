"""``.csv``: one row per result, readable in a spreadsheet and loadable without loss.

Scalar fields get their own columns (median and IQR are derived, for people
reading the sheet, and ignored on load); samples, task params, extra data and
the run's environment are JSON in their cells. Rows of one run share the
``run`` id, and saving appends a run to an existing file.
"""

from __future__ import annotations

import contextlib
import csv
import io
import json
import math
from pathlib import Path
from typing import Any

from harness.errors import UsageError
from harness.files.csv_file import append_csv, parse_csv
from harness.files.oserrors import read_text
from harness.model.record import SCHEMA, VERSION, RunRecord, check_version, foreign
from harness.model.result import TaskResult

COLUMNS = [
    "version", "run", "suite", "name", "kind", "mode", "status", "unit", "median", "iqr",
    "number_per_run", "samples", "params", "extra", "error", "environment",
]
REQUIRED = [c for c in COLUMNS if c not in ("median", "iqr")]


def _json(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"))


def _number(x: float) -> str:
    return "" if math.isnan(x) else repr(x)


def write(record: RunRecord, path: Path) -> bool:
    env = _json(record.environment)
    rows = []
    for r in record.results:
        rows.append({
            "version": VERSION,
            "run": record.run_id,
            "suite": r.task.suite,
            "name": r.task.name,
            "kind": r.task.kind,
            "mode": r.mode,
            "status": r.status,
            "unit": r.unit,
            "median": _number(r.median) if r.ok else "",
            "iqr": _number(r.iqr) if r.ok else "",
            "number_per_run": r.number_per_run,
            "samples": _json(r.samples),
            "params": _json(dict(r.task.params)),
            "extra": _json(r.extra),
            "error": r.error or "",
            "environment": env,
        })
    return append_csv(path, COLUMNS, rows) > 0


def _cell_json(row: dict[str, str], column: str, where: str) -> Any:
    try:
        return json.loads(row[column])
    except json.JSONDecodeError as exc:
        raise UsageError(f"{where}: column {column!r} is not JSON: {exc.msg}") from None


def read(path: Path) -> list[RunRecord]:
    # newline="" keeps line breaks inside quoted cells intact for the csv module.
    text = read_text(path, newline="")
    with contextlib.suppress(csv.Error):
        header = next(csv.reader(io.StringIO(text, newline="")), None)
        if header is not None and any(c not in header for c in REQUIRED):
            raise foreign(f"{path}:1", text.splitlines()[0])
    _, rows = parse_csv(text, path, REQUIRED)
    runs: dict[str, RunRecord] = {}
    for line, row in rows:
        where = f"{path}:{line}"
        try:
            version = int(row["version"])
        except ValueError:
            version = row["version"]
        check_version({"schema": SCHEMA, "version": version}, where)
        run = runs.get(row["run"])
        if run is None:
            environment = _cell_json(row, "environment", where)
            if not isinstance(environment, dict):
                raise UsageError(f"{where}: column 'environment' must hold a JSON object")
            run = runs[row["run"]] = RunRecord(environment=environment, results=[])
        data = {
            "task": {
                "suite": row["suite"], "name": row["name"], "kind": row["kind"],
                "params": _cell_json(row, "params", where), "mode": row["mode"],
            },
            "mode": row["mode"],
            "status": row["status"],
            "unit": row["unit"],
            "samples": _cell_json(row, "samples", where),
            "number_per_run": row["number_per_run"],
            "error": row["error"] or None,
            "extra": _cell_json(row, "extra", where),
        }
        try:
            run.results.append(TaskResult.from_json(data))
        except (KeyError, TypeError, ValueError) as exc:
            raise UsageError(f"{where}: malformed result: {exc}") from None
    return list(runs.values())
