"""Selecting tasks: ``-k`` expressions, ``--only`` names, and ``--mode`` twins.

What ``list`` and ``bench`` run is decided here, from the tasks the suites
expanded; nothing is measured.
"""

from __future__ import annotations

import dataclasses
import fnmatch
import re
from collections.abc import Sequence

from harness.errors import UsageError
from harness.model.task import Task
from harness.options import MODE_CHOICES


def with_mode(tasks: list[Task], mode: str | None) -> list[Task]:
    """Tasks measured in ``mode``: "wall" or "instructions" sets every task's mode, "both" gives
    each task a wall-time and an instruction-count twin, None keeps the modes suites defined."""
    if mode is None:
        return list(tasks)
    if mode not in MODE_CHOICES:
        raise UsageError(f"unknown mode {mode!r}: use one of {', '.join(MODE_CHOICES)}")
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


def only(tasks: list[Task], names: Sequence[str]) -> list[Task]:
    """The tasks named exactly NAME (or SUITE/NAME); an unknown name is an error listing the choices."""
    known = {t.name for t in tasks} | {t.full_name for t in tasks}
    unknown = [n for n in names if n not in known]
    if unknown:
        available = ", ".join(dict.fromkeys(t.name for t in tasks)) or "none"
        raise UsageError(f"--only {', '.join(map(repr, unknown))}: no such benchmark; available: {available}")
    return [t for t in tasks if t.name in names or t.full_name in names]


def is_extended(task: Task) -> bool:
    """Whether a task runs only when asked for (``--all``, or by name with ``--only``)."""
    return bool(task.params.get("extended"))


def select(
    tasks: Sequence[Task], pattern: str | None = None, names: Sequence[str] | None = None, everything: bool = True
) -> list[Task]:
    """``-k PATTERN``, then ``--only NAME...``; no task left is an error.

    ``everything=False`` leaves out extended tasks (a suite's slow rest)
    unless ``--only`` names them.
    """
    chosen = [t for t in tasks if matches(t, pattern)]
    if names:
        chosen = only(chosen, names)
    elif not everything:
        chosen = [t for t in chosen if not is_extended(t)]
    if not chosen:
        what = f"-k {pattern!r}" if pattern else "the selected suites"
        hint = "" if everything else " (without --all)"
        raise UsageError(f"no benchmarks match {what}{hint}; see `python -m harness list`")
    return chosen
