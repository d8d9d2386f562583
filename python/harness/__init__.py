"""harness: microbenchmarks for PyTorch with a C++ timing core.

``import harness as benchmark`` works where ``torch.utils.benchmark`` did for
Timer, Measurement, Compare and Language. ``harness.run_tasks(tasks,
harness.RunOptions(...))`` runs suites' tasks as ``python -m harness bench``
does.

The package's layers, bottom to top (each imports only from those below):
``errors``, ``options``, ``core``, ``_version`` and ``files/``; ``model/``;
``workers/``; ``measure/``; ``define/``; ``kinds``; ``records/``; ``run/``;
``bench``; ``present/``, ``cli``, ``pytest_plugin``; ``suites/``.
docs/architecture.md walks through them.
"""

from __future__ import annotations

from harness._version import __version__
from harness.define.grouped import GroupedModules, GroupedSetup, GroupedStmts
from harness.define.grouped_variants import GroupedVariants, parse_stmts
from harness.define.suite import Suite, TimerDefinition
from harness.errors import BuildError, CallgrindFailed, HarnessError, StatementError, UsageError
from harness.measure.callable_timer import timeit
from harness.measure.callgrind.stats import CallgrindStats, FunctionCount, FunctionCounts
from harness.measure.language import Language
from harness.measure.timer import Timer
from harness.model.measurement import Measurement, TaskSpec, select_unit
from harness.model.task import Task
from harness.options import RunOptions
from harness.present.compare_table import Compare

# The run machinery (workers, counters, records) loads on first use, so that
# `import harness` (and the pytest plugin, loaded into every pytest run) stays cheap.
_LAZY = {"run_tasks": "harness.bench", "RunInterrupted": "harness.bench"}


def __getattr__(name: str) -> object:
    if name in _LAZY:
        import importlib

        value = getattr(importlib.import_module(_LAZY[name]), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'harness' has no attribute {name!r}")

__all__ = [
    "BuildError",
    "CallgrindFailed",
    "CallgrindStats",
    "Compare",
    "FunctionCount",
    "FunctionCounts",
    "GroupedModules",
    "GroupedSetup",
    "GroupedStmts",
    "GroupedVariants",
    "HarnessError",
    "Language",
    "Measurement",
    "RunInterrupted",
    "RunOptions",
    "StatementError",
    "Suite",
    "Task",
    "TaskSpec",
    "Timer",
    "TimerDefinition",
    "UsageError",
    "__version__",
    "parse_stmts",
    "run_tasks",
    "select_unit",
    "timeit",
]
