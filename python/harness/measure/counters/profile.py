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
    """One callgrind dump, reduced to instruction counts ("Ir") per function."""

    total: int
    exclusive: dict[str, int]
    inclusive: dict[str, int]
    trigger: str = ""  # why the dump was written, e.g. "Client Request: <reason>"
    source: str | None = None  # the file's text, when the caller asked to keep it
