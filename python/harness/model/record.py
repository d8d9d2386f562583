"""RunRecord: the environment of one run and every result, in a versioned schema.

Schema version 1 is documented in README.md ("Run records"). Storing and
loading records (``.json``, ``.jsonl``, ``.csv``) is ``harness.records``'s
job; this module only says what a record is.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from harness.errors import UsageError
from harness.model.result import TaskResult

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


def check_version(data: Any, where: str) -> None:
    """Raise UsageError (``where`` is "file:line") unless ``data`` is a version-1 run header."""
    if not isinstance(data, dict) or data.get("schema") != SCHEMA:
        raise UsageError(f"{where}: not a harness run record (no \"schema\": \"{SCHEMA}\")")
    if data.get("version") != VERSION:
        raise UsageError(
            f"{where}: run record schema version {data.get('version')!r} is not supported "
            f"(this harness reads version {VERSION}); upgrade harness or re-run the benchmark"
        )


def split_sides(record: RunRecord) -> dict[str, RunRecord]:
    """An A/B record as one record per side (``--python`` label), in the order the sides ran.

    Each side's tasks lose their label, so the sides line up benchmark by
    benchmark; each side's environment is the run's, with ``side`` (the
    label) and ``side_environment`` (that interpreter's fingerprint). A record
    without sides gives {}.
    """
    labels = list(dict.fromkeys(r.task.side for r in record.results if r.task.side))
    fingerprints = record.environment.get("sides") or {}
    out = {}
    for label in labels:
        results = [dataclasses.replace(r, task=dataclasses.replace(r.task, side="")) for r in record.results
                   if r.task.side == label]
        environment = {**record.environment, "side": label, "side_environment": fingerprints.get(label)}
        out[label] = RunRecord(environment=environment, results=results)
    return out
