"""Run records: one versioned JSON document per run (environment + every result).

Loading never executes code (plain JSON). Schema (version 1):
  {"schema": "harness.run", "version": 1, "environment": {...},
   "results": [TaskResult.to_json(), ...]}
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

from .atomic import atomic_write_text
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

    def save(self, path: str | Path) -> None:
        atomic_write_text(path, json.dumps(self.to_json(), indent=1) + "\n")


def load(path: str | Path) -> RunRecord:
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except OSError as exc:
        raise UsageError(f"cannot read run record {p}: {exc.strerror or exc}") from None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise UsageError(f"{p}:{exc.lineno}: not a JSON run record: {exc.msg}") from None
    if not isinstance(data, dict) or data.get("schema") != SCHEMA:
        raise UsageError(f"{p}:1: not a harness run record (no \"schema\": \"{SCHEMA}\")")
    if data.get("version") != VERSION:
        raise UsageError(
            f"{p}:1: run record schema version {data.get('version')!r} is not supported "
            f"(this harness reads version {VERSION}); upgrade harness or re-run the benchmark"
        )
    try:
        results = [TaskResult.from_json(r) for r in data["results"]]
    except (KeyError, TypeError, ValueError) as exc:
        raise UsageError(f"{p}: malformed result entry: {exc}") from None
    return RunRecord(environment=dict(data.get("environment") or {}), results=results)
