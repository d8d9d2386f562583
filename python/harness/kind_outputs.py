"""Task kinds that write their own files for an --output suffix (gpt_fast: its CSV, JSON lines and record)."""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterable
from pathlib import Path

from .records import RunRecord
from .task import Task

# (task kind, --output suffix) -> "module:function(path, record) -> [paths written]".
# Used only when every selected task is of that kind. Imported lazily.
WRITERS: dict[tuple[str, str], str] = {
    ("gpt_fast", ".csv"): "harness.gpt_fast.output:write_outputs",
    ("compile_time", ".csv"): "harness.metrics:write_outputs",
}


def writer_for(output: str, tasks: Iterable[Task]) -> Callable[[str, RunRecord], list[Path]] | None:
    kinds = {t.kind for t in tasks}
    if len(kinds) != 1:
        return None
    target = WRITERS.get((kinds.pop(), Path(output).suffix))
    if target is None:
        return None
    module, _, func = target.partition(":")
    return getattr(importlib.import_module(module), func)
