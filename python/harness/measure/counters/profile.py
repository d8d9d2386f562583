"""Profile: what a count reports beyond its total, per function.

It lives below both counters so each imports it downward: the callgrind
counter fills it from its dumps (``measure.callgrind.profile`` parses the
file format), the hardware counter (``perf``) and the interface (``base``)
name it in their types.
"""

from __future__ import annotations

import dataclasses


@dataclasses.dataclass
class Profile:
    """One callgrind dump: instruction counts ("Ir") per function, and every other event it recorded.

    ``total``, ``exclusive`` and ``inclusive`` are instructions, whatever the
    dump recorded. A dump of a cache simulation (``--cache-sim=yes``) also
    records data reads and writes and the misses of each cache level: their
    totals are in ``totals`` and, when the dump was parsed per function,
    their costs per function in ``exclusive_events`` and ``inclusive_events``
    (event -> {function: cost}, the functions named as in ``exclusive``),
    filled only for a dump with events beyond Ir.
    """

    total: int
    exclusive: dict[str, int]
    inclusive: dict[str, int]
    trigger: str = ""  # why the dump was written, e.g. "Client Request: <reason>"
    source: str | None = None  # the file's text, when the caller asked to keep it
    events: list[str] = dataclasses.field(default_factory=lambda: ["Ir"])  # the dump's "events:" line, in order
    totals: dict[str, int] = dataclasses.field(default_factory=dict)  # event -> the dump's total
    exclusive_events: dict[str, dict[str, int]] = dataclasses.field(default_factory=dict)
    inclusive_events: dict[str, dict[str, int]] = dataclasses.field(default_factory=dict)
    # The call graph a call tree is expanded from (``measure.callgrind.call_tree``), instructions, per
    # function as a whole (inlined code included), each named ``file:function [object]`` by the file of
    # its own ``fn=`` line: its own cost, and caller -> {callee: inclusive cost of those calls}.
    functions: dict[str, int] = dataclasses.field(default_factory=dict)
    calls: dict[str, dict[str, int]] = dataclasses.field(default_factory=dict)
    # The same graph in estimated cycles (``counters.cache``), filled for a cache simulation's dump only.
    cycles_functions: dict[str, int] = dataclasses.field(default_factory=dict)
    cycles_calls: dict[str, dict[str, int]] = dataclasses.field(default_factory=dict)

    def exclusive_of(self, event: str) -> dict[str, int]:
        """{function: own cost} of ``event`` (Ir: ``exclusive``); empty when not recorded per function."""
        return self.exclusive if event == "Ir" else self.exclusive_events.get(event, {})

    def inclusive_of(self, event: str) -> dict[str, int]:
        """{function: inclusive cost} of ``event`` (Ir: ``inclusive``)."""
        return self.inclusive if event == "Ir" else self.inclusive_events.get(event, {})
