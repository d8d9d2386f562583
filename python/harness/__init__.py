"""harness: microbenchmarks for PyTorch with a C++ timing core.

``import harness as benchmark`` works where ``torch.utils.benchmark`` did:
every public name of torch's module is here (``TORCH_NAMES``), behaving as
torch's. ``harness.run_tasks(tasks, harness.RunOptions(...))`` runs suites'
tasks as ``python -m harness bench`` does.

The package's floors, each importing only from those below, are the
"Layers" table of docs/architecture.md (tests/test_structure.py reads them
there); this module is the top floor, so nothing inside harness imports it.
"""

from __future__ import annotations

from numbers import Number

from harness._version import __version__
from harness.define.grouped import GroupedModules, GroupedSetup, GroupedStmts
from harness.define.grouped_variants import GroupedVariants, parse_stmts
from harness.define.suite import Suite, TimerDefinition
from harness.errors import BuildError, CallgrindFailed, HarnessError, StatementError, UsageError
from harness.measure.callable_timer import timeit
from harness.measure.callgrind.stats import CallgrindStats, FunctionCount, FunctionCounts
from harness.measure.language import Language
from harness.measure.threads import set_torch_threads
from harness.measure.timer import Timer
from harness.model.measurement import (
    Measurement,
    TaskSpec,
    ordered_unique,
    select_unit,
    trim_sigfig,
    unit_to_english,
)
from harness.model.task import Task
from harness.options import RunOptions
from harness.present.compare_table import Colorize, Compare

# The run machinery (workers, counters, records) and the names that import
# torch load on first use, so that `import harness` (and the pytest plugin,
# loaded into every pytest run) stays cheap.
_LAZY = {
    "run_tasks": "harness.bench",
    "RunInterrupted": "harness.bench",
    "CopyIfCallgrind": "torch.utils.benchmark.utils.valgrind_wrapper.timer_interface",
    "Fuzzer": "harness.define.fuzzer",
    "FuzzedParameter": "harness.define.fuzzer",
    "FuzzedSparseTensor": "harness.define.fuzzer",
    "FuzzedTensor": "harness.define.fuzzer",
    "ParameterAlias": "harness.define.fuzzer",
}

# Every public name of torch.utils.benchmark, all importable from harness.
TORCH_NAMES = (
    "CallgrindStats", "Colorize", "Compare", "CopyIfCallgrind", "FunctionCount", "FunctionCounts",
    "FuzzedParameter", "FuzzedSparseTensor", "FuzzedTensor", "Fuzzer", "Language", "Measurement", "Number",
    "ParameterAlias", "TaskSpec", "Timer", "ordered_unique", "select_unit", "set_torch_threads", "trim_sigfig",
    "unit_to_english",
)


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
    "Colorize",
    "Compare",
    "CopyIfCallgrind",
    "FunctionCount",
    "FunctionCounts",
    "FuzzedParameter",
    "FuzzedSparseTensor",
    "FuzzedTensor",
    "Fuzzer",
    "GroupedModules",
    "GroupedSetup",
    "GroupedStmts",
    "GroupedVariants",
    "HarnessError",
    "Language",
    "Measurement",
    "Number",
    "ParameterAlias",
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
    "ordered_unique",
    "parse_stmts",
    "run_tasks",
    "select_unit",
    "set_torch_threads",
    "timeit",
    "trim_sigfig",
    "unit_to_english",
]
