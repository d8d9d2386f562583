"""``.json``: one run per file, the whole record as one JSON document (rewritten on save)."""

from __future__ import annotations

import json
from json.decoder import scanstring
from pathlib import Path

from harness.errors import UsageError
from harness.files.atomic import atomic_open
from harness.files.oserrors import read_text
from harness.model.record import SCHEMA, VERSION, RunRecord, check_version, foreign
from harness.model.result import TaskResult

ONE_RUN = True  # saving replaces the run in the file instead of adding one


def write(record: RunRecord, path: Path) -> bool:
    with atomic_open(path, "w", encoding="utf-8") as f:
        json.dump(record.to_json(), f, indent=1)
        f.write("\n")
    return False


def read(path: Path) -> list[RunRecord]:
    text = read_text(path, "read run record", missing="no such run record")
    if text.strip() and not text.lstrip().startswith("{"):
        raise foreign(f"{path}:1", " ".join(text.split()))
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise UsageError(f"{path}:{exc.lineno}: not a JSON run record: {exc.msg} (column {exc.colno})") from None
    if not isinstance(data, dict):
        raise foreign(f"{path}:1", " ".join(text.split()))

    # Line numbers are only worked out when something is wrong.
    def key_line(key: str) -> int:
        return _layout(text)[0].get(key, 1)

    if data.get("schema") != SCHEMA:
        check_version(data, f"{path}:1", found=" ".join(text.split()))
    if data.get("version") != VERSION:
        check_version(data, f"{path}:{key_line('version')}")
    environment = data.get("environment") or {}
    if not isinstance(environment, dict):
        raise UsageError(f"{path}:{key_line('environment')}: \"environment\" must be a JSON object")
    results_data = data.get("results")
    if not isinstance(results_data, list):
        raise UsageError(f"{path}:{key_line('results')}: \"results\" must be a list of results")
    results = []
    for i, item in enumerate(results_data):
        try:
            results.append(TaskResult.from_json(item))
        except (KeyError, TypeError, ValueError) as exc:
            elements = _layout(text)[1]
            line = elements[i] if i < len(elements) else key_line("results")
            raise UsageError(f"{path}:{line}: malformed result #{i + 1}: {exc}") from None
    return [RunRecord(environment=dict(environment), results=results)]


def _layout(text: str) -> tuple[dict[str, int], list[int]]:
    """Line of each top-level key, and of each element of the top-level "results" list.

    Only called on text that parsed as JSON, so the scan can be simple; it lets
    errors found after parsing still name a line.
    """
    keys: dict[str, int] = {}
    elements: list[int] = []
    depth, line, i, n = 0, 1, 0, len(text)
    key: str | None = None
    in_results = expecting = False
    while i < n:
        c = text[i]
        if c == "\n":
            line += 1
        elif c == '"':
            value, end = scanstring(text, i + 1)
            after = end
            while after < n and text[after] in " \t\r\n":
                after += 1
            if depth == 1 and after < n and text[after] == ":":
                key = value
                keys.setdefault(value, line)
            elif in_results and depth == 2 and expecting:
                elements.append(line)
                expecting = False
            i = end
            continue
        elif c in "{[":
            if in_results and depth == 2 and expecting:
                elements.append(line)
                expecting = False
            depth += 1
            if depth == 2 and c == "[" and key == "results":
                in_results = expecting = True
        elif c in "}]":
            depth -= 1
            if depth <= 1:
                in_results = False
        elif c == ",":
            if in_results and depth == 2:
                expecting = True
        elif not c.isspace() and in_results and depth == 2 and expecting:
            elements.append(line)
            expecting = False
        i += 1
    return keys, elements
