"""Task: one concrete, runnable benchmark, the output of expanding a definition.

Tasks are plain data (JSON-able params) so they can be sent to worker
processes and written into run records; their names are stable so `-k`
patterns and comparisons across runs keep matching.
"""

from __future__ import annotations

import dataclasses
import fnmatch
import re
from collections.abc import Mapping
from typing import Any


@dataclasses.dataclass(frozen=True)
class Task:
    suite: str
    name: str  # unique within the suite, e.g. "add[threads=2]"
    kind: str  # which runner executes it: "timer", ...
    params: Mapping[str, Any]
    mode: str = "wall"  # "wall" or "instructions"

    @property
    def full_name(self) -> str:
        return f"{self.suite}/{self.name}"

    def to_json(self) -> dict[str, Any]:
        return {"suite": self.suite, "name": self.name, "kind": self.kind, "params": dict(self.params), "mode": self.mode}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Task:
        params = data["params"]
        if not isinstance(params, Mapping):
            raise TypeError(f"task params must be an object, got {type(params).__name__}")
        return cls(str(data["suite"]), str(data["name"]), str(data["kind"]), dict(params), str(data.get("mode", "wall")))


MODES = ("wall", "instructions", "both")


def with_mode(tasks: list[Task], mode: str | None) -> list[Task]:
    """Tasks measured in ``mode``: "wall" or "instructions" sets every task's mode, "both" gives
    each task a wall-time and an instruction-count twin, None keeps the modes suites defined."""
    if mode is None:
        return list(tasks)
    if mode not in MODES:
        from .errors import UsageError

        raise UsageError(f"unknown mode {mode!r}: use one of {', '.join(MODES)}")
    modes = ("wall", "instructions") if mode == "both" else (mode,)
    # A suite may already define a task in both modes, with settings of its own
    # per mode: keep that twin rather than converting the other one into a
    # duplicate. Twins named apart (the compile-time cases: `case[wall]`,
    # `case[instructions]`) say so with params["fixed_mode"]: they are only picked.
    defined = {(t.full_name, t.mode) for t in tasks}
    out: list[Task] = []
    seen: set[tuple[str, str]] = set()
    for t in tasks:
        if t.params.get("fixed_mode"):
            if t.mode in modes:
                out.append(t)
            continue
        for m in modes:
            key = (t.full_name, m)
            if key in seen or (t.mode != m and key in defined):
                continue
            seen.add(key)
            out.append(t if t.mode == m else dataclasses.replace(t, mode=m))
    return out


def matches(task: Task, pattern: str | None) -> bool:
    """pytest-style -k: a substring, or a glob when it has wildcards; `a or b`, `not a` work."""
    if not pattern:
        return True
    name = task.full_name

    def term(t: str) -> bool:
        t = t.strip()
        if t in (name, task.name):  # exact names hold brackets, which globs would read as classes
            return True
        if any(c in t for c in "*?["):
            return fnmatch.fnmatchcase(name, t) or fnmatch.fnmatchcase(task.name, t)
        return t in name

    alternatives = re.split(r"\s+or\s+", pattern.strip())
    for alt in alternatives:
        parts = re.split(r"\s+and\s+", alt)
        ok = True
        for part in parts:
            part = part.strip()
            if part.startswith("not "):
                ok = ok and not term(part[4:])
            else:
                ok = ok and term(part)
        if ok:
            return True
    return False
