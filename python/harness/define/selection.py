"""Selecting tasks: ``-k`` expressions, ``--only`` names, and ``--mode`` twins.

What ``list`` and ``bench`` run is decided here, from the tasks the suites
expanded; nothing is measured.
"""

from __future__ import annotations

import dataclasses
import fnmatch
import functools
import re
from collections.abc import Callable, Sequence

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



# The kinds whose runner splits a measurement into torch's compile phases (``--phases``).
PHASED_KINDS = ("compile_time",)


def with_phases(tasks: list[Task]) -> list[Task]:
    """``--phases``: every compile-time task also measures each phase of its compile (``params["phases"]``).

    Other tasks run as they are; a selection with no compile-time task is refused (nothing would be split).
    """
    if not any(t.kind in PHASED_KINDS for t in tasks):
        raise UsageError("--phases splits compile-time cases into torch's compile phases: select some "
                         "(e.g. `bench compile_time -k CASE --phases`)")
    return [dataclasses.replace(t, params={**t.params, "phases": True}) if t.kind in PHASED_KINDS else t
            for t in tasks]


def with_sides(tasks: list[Task], sides: Sequence[str]) -> list[Task]:
    """Each task once per side (``--python`` label), the sides alternating task by task.

    Interleaved so that whatever drifts during a run (the machine's load, its
    temperature) falls on both sides alike.
    """
    if not sides:
        return list(tasks)
    return [dataclasses.replace(t, side=side) for t in tasks for side in sides]


def matches(task: Task, pattern: str | None) -> bool:
    """pytest-style -k: a substring, or a glob when it has wildcards; `and`, `or`, `not` and
    parentheses combine them. A malformed expression is a UsageError saying what and where."""
    if not pattern or not pattern.strip():
        return True
    return parse_keyword_expression(pattern)(task)


Predicate = Callable[[Task], bool]


def _term(text: str) -> Predicate:
    def match(task: Task) -> bool:
        name = task.full_name
        if text in (name, task.name):  # exact names hold brackets, which globs would read as classes
            return True
        if any(c in text for c in "*?["):
            return fnmatch.fnmatchcase(name, text) or fnmatch.fnmatchcase(task.name, text)
        return text in name

    return match


_TOKEN = re.compile(r"\s*(?:(?P<paren>[()])|(?P<word>[^\s()]+))")


@functools.lru_cache(maxsize=64)
def parse_keyword_expression(pattern: str) -> Predicate:
    """The predicate of a -k expression: ``expr := and_expr ("or" and_expr)*``,
    ``and_expr := unary ("and" unary)*``, ``unary := "not" unary | "(" expr ")" | NAME``."""
    tokens: list[tuple[str, int]] = []
    pos = 0
    while pos < len(pattern) and pattern[pos:].strip():
        m = _TOKEN.match(pattern, pos)
        assert m is not None  # every non-blank character starts a parenthesis or a word
        tokens.append((m.group("paren") or m.group("word"), m.start("paren") if m.group("paren") else m.start("word")))
        pos = m.end()
    at = 0

    def fail(what: str, column: int) -> UsageError:
        return UsageError(
            f"-k {pattern!r}: {what} at column {column + 1}\n  {pattern}\n  {' ' * column}^\n"
            "  -k takes names (substrings or globs) joined by and, or, not and parentheses, "
            "e.g. -k 'mul and not 64x64'"
        )

    def peek() -> str | None:
        return tokens[at][0] if at < len(tokens) else None

    def take() -> tuple[str, int]:
        nonlocal at
        if at >= len(tokens):
            last = tokens[-1] if tokens else ("", 0)
            raise fail(f"expected a name after {last[0]!r}" if tokens else "empty expression", len(pattern))
        at += 1
        return tokens[at - 1]

    def chain(operator: str, operand: Callable[[], Predicate], combine: Callable[..., bool]) -> Predicate:
        parts = [operand()]
        while peek() == operator:
            take()
            parts.append(operand())
        return parts[0] if len(parts) == 1 else (lambda t: combine(p(t) for p in parts))

    def expr() -> Predicate:
        return chain("or", lambda: chain("and", unary, all), any)

    def unary() -> Predicate:
        word, column = take()
        if word == "not":
            inner = unary()
            return lambda t: not inner(t)
        if word == "(":
            inner = expr()
            if peek() != ")":
                raise fail("'(' is never closed", column)
            take()
            return inner
        if word in (")", "and", "or"):
            raise fail(f"expected a name, got {word!r}", column)
        return _term(word)

    predicate = expr()
    if at < len(tokens):
        word, column = tokens[at]
        if word == ")":
            raise fail("')' without a matching '('", column)
        raise fail(f"expected 'and' or 'or' before {word!r}", column)
    return predicate


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
    if pattern and pattern.strip():
        parse_keyword_expression(pattern)  # a malformed expression is reported even with no tasks
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
