"""GroupedVariants and parse_stmts: many one-line benchmarks from a Python block and a C++ block.

``# @label`` sections of a Python block pair line by line with ``// @label``
sections of a C++ block, each pair one ``GroupedStmts``; ``parse_stmts``
splits a two-column ``Python | C++`` table into the two statements.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from harness.define.grouped import GroupedSetup, GroupedStmts, dedent, thread_counts
from harness.errors import UsageError
from harness.model.task import Task

_LABEL = {"py": re.compile(r"^#\s*@(.+)$"), "cpp": re.compile(r"^//\s*@(.+)$")}


def _parse_block(block: str, language: str) -> tuple[dict[str, list[str]], str, str]:
    sections: dict[str, list[str]] = {}
    label: str | None = None
    comment = "#" if language == "py" else "//"
    for line in dedent(block).splitlines():
        m = _LABEL[language].match(line.strip())
        if m:
            label = m.group(1).strip()
            sections.setdefault(label, [])
            continue
        if label is None:
            if line.strip():
                raise UsageError(
                    f"GroupedVariants: {line.strip()!r} comes before any '{comment} @label' line; "
                    f"start the block with '{comment} @setup' or a variant label"
                )
            continue
        sections[label].append(line)
    setup = "\n".join(sections.pop("setup", []))
    global_setup = "\n".join(sections.pop("global_setup", []))
    cases = {
        k: [line.strip() for line in v if line.strip() and not line.strip().startswith(comment)]
        for k, v in sections.items()
    }
    return cases, setup, global_setup


class GroupedVariants:
    """One benchmark per line: ``# @label`` sections of a Python block paired line by line with ``// @label``
    C++ sections.

    ``@setup`` (both) and ``@global_setup`` (C++) sections are shared. A label
    with one line becomes ``<name>.<label>``, with several
    ``<name>.<label>.<i>`` (from 0). A label present in one block only is
    benchmarked in that language only; present in both, both must have the
    same number of lines.
    """

    def __init__(
        self,
        py_block: str = "",
        cpp_block: str = "",
        num_threads: int | Sequence[int] = (1,),
        *,
        name: str | None = None,
        min_run_time: float | None = None,
    ) -> None:
        py_cases, py_setup, py_global = _parse_block(py_block, "py")
        cpp_cases, cpp_setup, cpp_global = _parse_block(cpp_block, "cpp")
        if py_global:
            raise UsageError("GroupedVariants: '# @global_setup' is C++ only; put Python imports in '# @setup'")
        self.setup = GroupedSetup(py_setup, cpp_setup, cpp_global)
        self.num_threads = thread_counts(num_threads)
        self.name = name
        self.min_run_time = min_run_time
        self.cases: dict[str, list[tuple[str | None, str | None]]] = {}
        for label in dict.fromkeys([*py_cases, *cpp_cases]):
            py_lines, cpp_lines = py_cases.get(label), cpp_cases.get(label)
            if py_lines is not None and cpp_lines is not None and len(py_lines) != len(cpp_lines):
                raise UsageError(
                    f"GroupedVariants: @{label} has {len(py_lines)} Python line(s) but {len(cpp_lines)} C++ line(s); "
                    "lines are paired one to one"
                )
            n = len(py_lines if py_lines is not None else cpp_lines or [])
            self.cases[label] = [
                (py_lines[i] if py_lines is not None else None, cpp_lines[i] if cpp_lines is not None else None)
                for i in range(n)
            ]

    def named(self, name: str) -> GroupedVariants:
        clone = object.__new__(type(self))
        clone.__dict__.update(self.__dict__)
        clone.name = name
        return clone

    def definitions(self) -> list[GroupedStmts]:
        prefix = f"{self.name}." if self.name else ""
        out = []
        for label, lines in self.cases.items():
            for i, (py, cpp) in enumerate(lines):
                name = f"{prefix}{label}" + (f".{i}" if len(lines) > 1 else "")
                out.append(
                    GroupedStmts(
                        py, cpp, setup=self.setup, num_threads=self.num_threads, name=name,
                        min_run_time=self.min_run_time,
                    )
                )
        return out

    def expand(self, suite: str) -> list[Task]:
        return [t for d in self.definitions() for t in d.expand(suite)]


def parse_stmts(table: str) -> tuple[str, str]:
    """Split a two-column ``Python | C++`` table (header, ``---|---`` rule, rows) into (py_stmt, cpp_stmt)."""
    lines = dedent(table).splitlines()
    rule = next((i for i, line in enumerate(lines) if re.match(r"^\s*-+\s*\|\s*-+\s*$", line)), None)
    if rule is None:
        raise UsageError("parse_stmts: expected a header, a '----- | -----' rule, then 'python | c++' rows")
    column = lines[rule].index("|")
    py, cpp = [], []
    for line in lines[rule + 1 :]:
        if line.strip() and (len(line) <= column or line[column] != "|"):
            raise UsageError(f"parse_stmts: {line!r} does not have '|' in column {column + 1}")
        py.append(line[:column].rstrip())
        cpp.append(line[column + 1 :].strip() if len(line) > column else "")
    return "\n".join(py).strip("\n"), "\n".join(cpp).strip("\n")
