"""harness: microbenchmarks for PyTorch with a C++ timing core.

``import harness as benchmark`` works where ``torch.utils.benchmark`` did for
Timer, Measurement, Compare and Language.
"""

from __future__ import annotations

__version__ = "0.1.0"

from .callgrind import CallgrindStats, FunctionCount, FunctionCounts
from .compare import Compare
from .errors import BuildError, HarnessError, StatementError, UsageError
from .measurement import Measurement, TaskSpec, select_unit
from .suite import Suite, TimerDefinition
from .task import Task
from .timer import Language, Timer

__all__ = [
    "BuildError",
    "CallgrindStats",
    "Compare",
    "FunctionCount",
    "FunctionCounts",
    "HarnessError",
    "Language",
    "Measurement",
    "StatementError",
    "Suite",
    "Task",
    "TaskSpec",
    "Timer",
    "TimerDefinition",
    "UsageError",
    "select_unit",
]
