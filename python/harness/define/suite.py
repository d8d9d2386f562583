"""Suite: a named collection of benchmark definitions that expand into Tasks.

A suite module (``benchmarks/<name>/suite.py`` or ``benchmarks/bench_<name>.py``)
creates a ``Suite`` at module level and adds definitions to it. Any object
with ``expand(suite_name) -> list[Task]`` is a definition, so new kinds
(``harness.kinds``) plug in without changing anything that runs them.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any, Protocol

from harness.errors import UsageError
from harness.model.task import Task


class Definition(Protocol):
    def expand(self, suite: str) -> list[Task]: ...


@dataclasses.dataclass
class TimerDefinition:
    """One statement, timed once per thread count."""

    name: str
    stmt: str
    setup: str = "pass"
    global_setup: str = ""
    language: str = "python"
    num_threads: Sequence[int] = (1,)
    batch_setup: str | None = None
    description: str | None = None
    min_run_time: float | None = None

    def expand(self, suite: str) -> list[Task]:
        tasks = []
        for threads in self.num_threads:
            name = self.name if len(self.num_threads) == 1 else f"{self.name}[threads={threads}]"
            params: dict[str, Any] = {
                "stmt": self.stmt,
                "setup": self.setup,
                "global_setup": self.global_setup,
                "language": self.language,
                "num_threads": threads,
                "batch_setup": self.batch_setup,
                "label": suite,
                "sub_label": self.name,
                "description": self.description or self.language,
                "min_run_time": self.min_run_time,
            }
            tasks.append(Task(suite=suite, name=name, kind="timer", params=params))
        return tasks


class Suite:
    """Holds definitions; ``tasks()`` expands them, checking names are unique."""

    def __init__(
        self, name: str | None = None, description: str = "", default: bool = True, table: str | None = None
    ) -> None:
        self.name = name
        self.description = description
        # How `bench` prints this suite's results: the name of a kind whose table
        # to use (harness.kinds), or "module:function" taking (title, results)
        # and returning a rich renderable; None: each kind's own table.
        self.table = table
        # Suites that take many minutes (compile time under callgrind, model
        # decoding) set default=False: `bench` with no names skips them.
        self.default = default
        self.definitions: list[Any] = []

    def add(self, definition: Any) -> Any:
        if not callable(getattr(definition, "expand", None)):
            raise UsageError(f"suite {self.name!r}: {definition!r} is not a definition (it has no expand())")
        self.definitions.append(definition)
        return definition

    def timer(self, name: str, stmt: str, setup: str = "pass", **kwargs: Any) -> TimerDefinition:
        return self.add(TimerDefinition(name=name, stmt=stmt, setup=setup, **kwargs))

    def tasks(self) -> list[Task]:
        if not self.name:
            raise UsageError("a Suite needs a name (discovery sets it from the file name)")
        out: list[Task] = []
        seen: set[str] = set()
        for definition in self.definitions:
            for task in definition.expand(self.name):
                if task.name in seen:
                    raise UsageError(
                        f"suite {self.name!r} defines {task.name!r} twice; give each benchmark its own name"
                    )
                seen.add(task.name)
                out.append(task)
        return out
