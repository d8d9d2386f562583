"""``.jsonl``: a header line per run (schema, version, environment), then one line per result.

Saving appends a run, so one file can hold a series of runs.
"""

from __future__ import annotations

import json
from pathlib import Path

from harness.errors import UsageError
from harness.files.jsonl_file import append_jsonl, read_jsonl
from harness.model.record import SCHEMA, VERSION, RunRecord, check_version
from harness.model.result import TaskResult


def preflight(path: Path) -> None:
    """Before a run: an existing file must be a run record we can append to."""
    try:
        with open(path, encoding="utf-8") as f:
            first = f.readline()
    except FileNotFoundError:
        return
    except (OSError, UnicodeDecodeError) as exc:
        raise UsageError(f"{path}: cannot read it to append: {getattr(exc, 'strerror', None) or exc}") from None
    if not first.strip():
        return
    try:
        header = json.loads(first)
    except json.JSONDecodeError:
        header = None
    check_version(header, f"{path}:1")


def write(record: RunRecord, path: Path) -> bool:
    existed = path.exists() and path.stat().st_size > 0
    header = {"schema": SCHEMA, "version": VERSION, "environment": record.environment}
    append_jsonl(path, [header, *(r.to_json() for r in record.results)])
    return existed


def read(path: Path) -> list[RunRecord]:
    runs: list[RunRecord] = []
    for line, value in read_jsonl(path):
        if isinstance(value, dict) and "schema" in value:
            check_version(value, f"{path}:{line}")
            environment = value.get("environment") or {}
            if not isinstance(environment, dict):
                raise UsageError(f"{path}:{line}: \"environment\" must be a JSON object")
            runs.append(RunRecord(environment=dict(environment), results=[]))
            continue
        if not runs:
            raise UsageError(
                f"{path}:{line}: a result before any run header; the first line of a run must be "
                f'{{"schema": "{SCHEMA}", "version": {VERSION}, "environment": {{...}}}}'
            )
        try:
            runs[-1].results.append(TaskResult.from_json(value))
        except (KeyError, TypeError, ValueError) as exc:
            raise UsageError(f"{path}:{line}: malformed result: {exc}") from None
    return runs
