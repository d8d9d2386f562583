"""The events of a run: what ``bench.run_tasks`` reports as it goes, and what presenters render.

They live in the model, below both the run function that sends them and the
progress display (``present.progress``) that renders them, as google/benchmark
keeps its reporter interface below the runner: a presenter depends on the
shape of an event, never on the run machinery.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping

from harness.model.result import TaskResult


@dataclasses.dataclass(frozen=True)
class Event:
    """Progress of a run. ``kind``: "status" (a preparation step), "warning", "start" (``total``
    tasks about to run), "result" (``result``, the ``done``-th of ``total``), "written" (``path``;
    ``message`` "run record" for the record itself, ``appended`` when it was added to runs already
    in the file, ``note`` e.g. which run it replaced; else a file of the kind's own layout), "nodes"
    (``nodes``: per node of a cluster, its tasks done and running, and under "(queued)" the tasks no
    node has started yet)."""

    kind: str
    message: str = ""
    result: TaskResult | None = None
    done: int = 0
    total: int = 0
    path: str = ""
    appended: bool = False
    note: str = ""  # for "written": what else the reader should know (stored beside, run replaced)
    nodes: Mapping[str, Mapping[str, int]] | None = None


OnEvent = Callable[[Event], None]
