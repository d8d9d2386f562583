"""Task: one concrete, runnable benchmark, the output of expanding a definition.

Tasks are plain data (JSON-able params) so they can be sent to worker
processes and written into run records; their names are stable so `-k`
patterns and comparisons across runs keep matching.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

# What a task measures: wall time, or instructions with an instruction counter.
MODES = ("wall", "instructions")


@dataclasses.dataclass(frozen=True)
class Task:
    suite: str
    name: str  # unique within the suite, e.g. "add[threads=2]"
    kind: str  # which kind of benchmark it is (harness.kinds): "timer", "grouped", ...
    params: Mapping[str, Any]
    mode: str = "wall"  # one of MODES
    # The interpreter it runs under, by its ``--python`` label ("": the run's own). Part of the
    # task's identity: an A/B run holds each benchmark once per side.
    side: str = ""

    @property
    def full_name(self) -> str:
        return f"{self.suite}/{self.name}" + (f"@{self.side}" if self.side else "")

    @property
    def key(self) -> tuple[str, str]:
        """What tells tasks of a selection apart (shards, merge, a run's order): name and mode."""
        return (self.full_name, self.mode)

    def to_json(self) -> dict[str, Any]:
        data = {
            "suite": self.suite,
            "name": self.name,
            "kind": self.kind,
            "params": dict(self.params),
            "mode": self.mode,
        }
        if self.side:
            data["side"] = self.side
        return data

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Task:
        params = data["params"]
        if not isinstance(params, Mapping):
            raise TypeError(f"task params must be an object, got {type(params).__name__}")
        return cls(
            str(data["suite"]),
            str(data["name"]),
            str(data["kind"]),
            dict(params),
            str(data.get("mode", "wall")),
            str(data.get("side", "")),
        )
