"""Collecting one compile-time case: prepare_once, then iterations of prepare + measured work."""

from __future__ import annotations

import contextlib
import dataclasses
import gc
import random
import statistics
import time
from collections.abc import Callable, Iterator

from harness.suites.compile_time.benchmark import CompileTimeBenchmark

SEED = 0

# Takes the measured callable and returns what it cost (seconds, instructions).
Measure = Callable[[Callable[[], float | None]], float]


def wall_seconds(fn: Callable[[], float | None]) -> float:
    start = time.perf_counter_ns()
    fn()
    return (time.perf_counter_ns() - start) / 1e9


def reported_seconds(fn: Callable[[], float | None]) -> float:
    """For a case that measures itself (region "import"): the seconds its work() returns."""
    value = fn()
    if value is None:
        raise TypeError("work() of a case of region 'import' must return the seconds it measured")
    return float(value)


@dataclasses.dataclass
class Collection:
    """Per-call values of one case: the cold (first) iteration and the warm ones."""

    cold: float
    warm: list[float]

    @property
    def min(self) -> float:
        return min(self.warm)

    @property
    def median(self) -> float:
        return statistics.median(self.warm)


@contextlib.contextmanager
def _gc_paused() -> Iterator[None]:
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


@contextlib.contextmanager
def _deterministic_compiler() -> Iterator[None]:
    """Inductor compiles in-process: a pool of compile workers makes the parent's
    instruction count depend on scheduling, and its work would go uncounted."""
    import torch._inductor.config as inductor_config

    with inductor_config.patch(compile_threads=1):
        yield


def collect(
    case: CompileTimeBenchmark,
    measure: Measure = wall_seconds,
    iterations: int | None = None,
    cold_measure: Measure | None = None,
) -> Collection:
    """Run ``case`` for ``iterations`` (default ``case.iterations``); the first is the cold one.

    ``cold_measure`` (default ``measure``) measures the cold iteration: under
    callgrind, counting it would cost several warm iterations for a figure
    that depends on what the worker process ran before.
    """
    n = case.iterations if iterations is None else iterations
    if n < 2:
        raise ValueError(f"iterations must be >= 2 (one cold iteration plus one measured), got {n}")
    import torch

    random.seed(SEED)
    torch.manual_seed(SEED)
    values: list[float] = []
    with _deterministic_compiler():
        case.prepare_once()
        for i in range(n):
            case.prepare()
            gc.collect()
            with _gc_paused():
                values.append((measure if i or cold_measure is None else cold_measure)(case.work) / case.calls)
    return Collection(cold=values[0], warm=values[1:])
