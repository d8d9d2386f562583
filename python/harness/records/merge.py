"""Merging shard records into one run: every task of the selection exactly once, one software fingerprint.

``bench --shard K/N`` notes in its record which part it ran and the whole
selection (``environment["shard"]``); ``merge`` checks that the inputs cover
that selection exactly once and ran on the same harness, torch and Python,
and returns the run a single machine would have recorded: one environment,
the results in selection order. It writes nothing: ``python -m harness merge``
saves the result through ``records.store``, the one writer.
"""

from __future__ import annotations

import uuid
from collections import Counter
from collections.abc import Sequence
from typing import Any

from harness.errors import UsageError
from harness.model.record import RunRecord
from harness.records.environment import describe, fingerprint

MAX_NAMED = 20  # task names listed in an error before "and N more"
MIXED = "mixed"  # extra key of a result from a part whose fingerprint differs from the first part's


def _names(keys: Sequence[tuple[str, str]]) -> str:
    shown = [f"{name} ({mode})" for name, mode in keys[:MAX_NAMED]]
    more = f", and {len(keys) - MAX_NAMED} more" if len(keys) > MAX_NAMED else ""
    return ", ".join(shown) + more


def _selection(record: RunRecord) -> list[tuple[str, str]]:
    note = record.environment.get("shard")
    if isinstance(note, dict) and isinstance(note.get("selection"), list):
        return [(str(t["name"]), str(t["mode"])) for t in note["selection"]]
    return [r.task.key for r in record.results]  # an unsharded run: its own tasks are its selection


def merge(parts: Sequence[tuple[str, RunRecord]], allow_mixed: bool = False) -> RunRecord:
    """One run from ``parts`` (path, record); UsageError naming what is missing, duplicated or mixed."""
    if not parts:
        raise UsageError("merge needs at least one input record")
    first_path, first = parts[0]
    selection = _selection(first)
    for path, record in parts[1:]:
        if set(_selection(record)) != set(selection):
            raise UsageError(f"{path} was cut from another selection than {first_path}: shard the same "
                             "suites, -k, --only and --mode in every part")
    counts = Counter(r.task.key for _, record in parts for r in record.results)
    missing = [k for k in selection if counts[k] == 0]
    duplicated = [k for k, n in counts.items() if n > 1]
    extra = [k for k in counts if k not in set(selection)]
    problems = []
    if missing:
        shards_seen = {record.environment.get("shard", {}).get("index") for _, record in parts}
        count = first.environment.get("shard", {}).get("count")
        absent = [f"{k}/{count}" for k in range(1, (count or 0) + 1) if k not in shards_seen]
        hint = f" (shard {', '.join(absent)} not given)" if absent else ""
        problems.append(f"{len(missing)} task(s) of the selection are missing{hint}: {_names(missing)}")
    if duplicated:
        problems.append(f"{len(duplicated)} task(s) appear more than once (a shard given twice?): {_names(duplicated)}")
    if extra:
        problems.append(f"{len(extra)} task(s) are not in the selection: {_names(extra)}")
    if problems:
        raise UsageError("cannot merge: " + "; ".join(problems))

    base = fingerprint(first.environment)
    mixed = [(path, fingerprint(record.environment)) for path, record in parts
             if fingerprint(record.environment) != base]
    if mixed and not allow_mixed:
        lines = "; ".join(f"{path}: {describe(fp)}" for path, fp in mixed)
        raise UsageError(f"cannot merge: the parts ran on different software ({first_path}: {describe(base)}; "
                         f"{lines}); rerun them on one setup, or pass --allow-mixed to merge anyway "
                         "(the table then marks the rows that differ)")

    by_key = {}
    for _, record in parts:
        differs = fingerprint(record.environment) != base
        for r in record.results:
            if differs:
                r.extra[MIXED] = describe(fingerprint(record.environment))
            by_key[r.task.key] = r
    environment: dict[str, Any] = dict(first.environment)
    environment.pop("shard", None)
    environment["run_id"] = uuid.uuid4().hex[:12]
    starts = [str(record.environment.get("start_time")) for _, record in parts if record.environment.get("start_time")]
    if starts:
        environment["start_time"] = min(starts)
    environment["merged_from"] = [
        {"path": str(path), "run_id": record.run_id, "hostname": record.environment.get("hostname"),
         "shard": {k: v for k, v in record.environment.get("shard", {}).items() if k != "selection"} or None,
         "fingerprint": fingerprint(record.environment)}
        for path, record in parts
    ]
    if mixed:
        environment[MIXED] = True
    return RunRecord(environment=environment, results=[by_key[k] for k in selection])
