"""Phases of one compile: a count (or a time) split by torch's compile events, as a tree that sums exactly.

A compile-time result measured with ``--phases`` keeps, in ``extra["phases"]``,
the value of each *path* of torch's nested compile events (``dynamo_timed`` and
``chromium_event_timed`` names, e.g. ``entire_frame_compile/backend_compile``)
exclusive of its children; what ran outside every event is ``other``. The
exclusive values add up to the result's total exactly: each is one interval
(or the sum of several) between two event boundaries, and every interval of
the counted region belongs to exactly one path.

Work done by other processes (the C++ compiler ``compile_file`` starts, compile
workers) is not in an instruction count of this process; ``external_s`` keeps,
per path, the CPU seconds of the child processes that finished inside it, so
that work is marked, not silently missing.
"""

from __future__ import annotations

import dataclasses
from typing import Any

SEP = "/"
OTHER = "other"
# The metric of one phase: the total's metric, this infix, then the phase's path (inclusive value).
PHASE_INFIX = ":phase:"


def phase_metric(metric: str, path: str) -> str:
    """The metric name of a phase's inclusive value,
    e.g. ``compile_time_instruction_count:phase:entire_frame_compile``."""
    return f"{metric}{PHASE_INFIX}{path}"


def split_phase_metric(metric: str) -> tuple[str, str] | None:
    """(total's metric, path) of a phase metric; None for any other metric."""
    total, sep, path = metric.partition(PHASE_INFIX)
    return (total, path) if sep else None


@dataclasses.dataclass
class Phases:
    """Per path: the exclusive value (in ``unit``), how often it was entered, child processes' CPU seconds."""

    unit: str
    exclusive: dict[str, float]
    entered: dict[str, int] = dataclasses.field(default_factory=dict)
    external_s: dict[str, float] = dataclasses.field(default_factory=dict)
    boundaries: int = 0  # event boundaries crossed while measuring (the cost of marking is per boundary)
    # Event name -> torch's key where they differ (dynamo_timed(key, phase_name=NAME)):
    # inductor_compile -> compile_fx_inner.
    keys: dict[str, str] = dataclasses.field(default_factory=dict)

    @property
    def total(self) -> float:
        return sum(self.exclusive.values())

    def inclusive(self) -> dict[str, float]:
        """Per path (and every prefix of one): its value with everything nested in it."""
        out: dict[str, float] = {}
        for path, value in self.exclusive.items():
            parts = path.split(SEP)
            for i in range(1, len(parts) + 1):
                prefix = SEP.join(parts[:i])
                out[prefix] = out.get(prefix, 0) + value
        return out

    def external_inclusive(self) -> dict[str, float]:
        out: dict[str, float] = {}
        for path, value in self.external_s.items():
            parts = path.split(SEP)
            for i in range(1, len(parts) + 1):
                prefix = SEP.join(parts[:i])
                out[prefix] = out.get(prefix, 0.0) + value
        return out

    def tree(self) -> list[tuple[int, str, str]]:
        """(depth, path, name) of every node, parents before children, siblings largest first, ``other`` last."""
        inclusive = self.inclusive()
        children: dict[str, list[str]] = {}
        for path in inclusive:
            parent = path.rpartition(SEP)[0] if SEP in path else ""
            children.setdefault(parent, []).append(path)
        out: list[tuple[int, str, str]] = []

        def walk(parent: str, depth: int) -> None:
            kids = sorted(children.get(parent, []), key=lambda p: (p == OTHER, -inclusive[p], p))
            for path in kids:
                out.append((depth, path, path.rpartition(SEP)[2]))
                walk(path, depth + 1)

        walk("", 0)
        return out

    def metrics(self, metric: str) -> dict[str, float]:
        """Every node's inclusive value as a metric row (``phase_metric``): what ``check --metric`` gates."""
        return {phase_metric(metric, path): value for path, value in self.inclusive().items()}

    def scaled(self, factor: float) -> Phases:
        """Values divided by ``factor`` (a case's ``calls``), as its total is."""
        if factor == 1:
            return self
        return dataclasses.replace(self, exclusive={p: v / factor for p, v in self.exclusive.items()})

    def to_json(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def from_json(cls, data: Any) -> Phases | None:
        """The phases a result's ``extra["phases"]`` holds, or None (a result without them)."""
        if not isinstance(data, dict) or not isinstance(data.get("exclusive"), dict):
            return None
        return cls(
            unit=str(data.get("unit", "")),
            exclusive={str(k): float(v) for k, v in data["exclusive"].items()},
            entered={str(k): int(v) for k, v in (data.get("entered") or {}).items()},
            external_s={str(k): float(v) for k, v in (data.get("external_s") or {}).items()},
            boundaries=int(data.get("boundaries") or 0),
            keys={str(k): str(v) for k, v in (data.get("keys") or {}).items()},
        )

    def shown(self, name: str) -> str:
        """An event's name with torch's key beside it where they differ: ``inductor_compile (compile_fx_inner)``."""
        key = self.keys.get(name)
        return f"{name} ({key})" if key and key != name else name


def phases_of(extra: dict[str, Any]) -> Phases | None:
    return Phases.from_json(extra.get("phases"))


@dataclasses.dataclass(frozen=True)
class PhaseChange:
    """One phase between two results: inclusive and exclusive before and after."""

    path: str
    before: float
    after: float
    exclusive_delta: float

    @property
    def delta(self) -> float:
        return self.after - self.before


def phase_changes(before: Phases, after: Phases) -> list[PhaseChange]:
    """Every path of either side, the one whose own (exclusive) value moved most first.

    Ordered by the exclusive change: an inclusive change is shared by every
    ancestor of the phase that moved, so the exclusive one names that phase.
    """
    inc_a, inc_b = before.inclusive(), after.inclusive()
    paths = sorted(set(inc_a) | set(inc_b))
    changes = [
        PhaseChange(p, inc_a.get(p, 0.0), inc_b.get(p, 0.0),
                    after.exclusive.get(p, 0.0) - before.exclusive.get(p, 0.0))
        for p in paths
    ]
    return sorted(changes, key=lambda c: (-abs(c.exclusive_delta), -abs(c.delta), c.path))


def moved_phase(before: Phases, after: Phases) -> PhaseChange | None:
    """The phase whose own value moved most, or None when nothing moved."""
    changes = phase_changes(before, after)
    return changes[0] if changes and changes[0].exclusive_delta != 0 else None
