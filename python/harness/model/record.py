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
    def interrupted(self) -> dict[str, Any] | None:
        """``{"signal", "finished", "total"}`` when the run was stopped by a signal, else None.

        Kept in the environment, which every format stores whole, so version-1
        readers (and older harness versions) load an interrupted run unchanged.
        """
        mark = self.environment.get("interrupted")
        return mark if isinstance(mark, dict) else None

    def describe_interruption(self) -> str:
        """"interrupted (SIGINT) after 3 of 10 results", or "" for a complete run."""
        mark = self.interrupted
        if mark is None:
            return ""
        return (f"interrupted ({mark.get('signal', 'signal')}) after {mark.get('finished', len(self.results))} "
                f"of {mark.get('total', '?')} results")

    @property
    def run_id(self) -> str:
        """Tells runs in one multi-run file apart (older records: their start time)."""
        return str(self.environment.get("run_id") or self.environment.get("start_time") or "")


def foreign(where: str, found: str) -> UsageError:
    """The error for a file that is not a harness record; ``where`` is "file:line", ``found`` what is there."""
    line = where.rsplit(":", 1)[-1] if where.rsplit(":", 1)[-1].isdigit() else "1"
    shown = found.strip()
    shown = shown if len(shown) <= 80 else shown[:77] + "..."
    return UsageError(
        f"{where}: line {line} is not a harness record: {shown!r} (a run record starts with "
        f'{{"schema": "{SCHEMA}", "version": {VERSION}, ...}}); give a harness run record, or another file name'
    )


def check_version(data: Any, where: str, found: str | None = None) -> None:
    """Raise UsageError (``where`` is "file:line") unless ``data`` is a version-1 run header.

    ``found``: the text at ``where``, quoted when it is not a harness record at all.
    """
    if not isinstance(data, dict) or data.get("schema") != SCHEMA:
        raise foreign(where, found if found is not None else repr(data))
    version = data.get("version")
    if version != VERSION:
        newer = isinstance(version, int) and not isinstance(version, bool) and version > VERSION
        raise UsageError(
            f"{where}: run record schema version {version!r}"
            + (f", newer than version {VERSION}, which this harness reads and writes; "
               "upgrade harness to read it, or write to another file" if newer else
               f" is not supported (this harness reads and writes version {VERSION}); "
               "re-run the benchmark to record it again")
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
