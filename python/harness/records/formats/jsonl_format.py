"""``.jsonl``: a header line per run (schema, version, environment), then one line per result.

Saving appends a run, so one file can hold a series of runs.
"""

from __future__ import annotations

import json
from pathlib import Path

from harness.errors import UsageError
from harness.files.jsonl_file import append_jsonl, parse_jsonl
from harness.files.oserrors import read_text
from harness.model.record import SCHEMA, VERSION, RunRecord, check_version
from harness.model.result import TaskResult


def read(path: Path) -> list[RunRecord]:
    text = read_text(path)
    lines = text.splitlines()
    first = next((i for i, line in enumerate(lines) if line.strip()), None)
    if first is not None:
        # A foreign file is named for what it holds, before its JSON is judged.
        try:
            header = json.loads(lines[first])
        except json.JSONDecodeError:
            header = None
        check_version(header, f"{path}:{first + 1}", found=lines[first])
    runs: list[RunRecord] = []
    for line, value in parse_jsonl(text, path):
        if isinstance(value, dict) and "schema" in value:
            check_version(value, f"{path}:{line}", found=lines[line - 1])
            environment = value.get("environment") or {}
            if not isinstance(environment, dict):
                raise UsageError(f"{path}:{line}: \"environment\" must be a JSON object")
            runs.append(RunRecord(environment=dict(environment), results=[]))
            continue
        try:
            runs[-1].results.append(TaskResult.from_json(value))
        except (KeyError, TypeError, ValueError) as exc:
            raise UsageError(f"{path}:{line}: malformed result: {exc}") from None
    return runs


def write(record: RunRecord, path: Path) -> bool:
    existed = path.exists() and path.stat().st_size > 0
    header = {"schema": SCHEMA, "version": VERSION, "environment": record.environment}
    append_jsonl(path, [header, *(r.to_json() for r in record.results)])
    return existed
