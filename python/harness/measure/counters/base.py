"""InstructionCounter: what every instruction counter does, and the rules of a clean count.

An ``InstructionCounter`` says how to start a worker process in which it
works (``worker_prefix()``, ``worker_env()``) and, inside that process,
counts the instructions of a function (``count(fn)``) or of a sampler's runs
(``measure``). The counters are ``measure.callgrind.counter.CallgrindCounter``
(exact, slow) and ``measure.counters.perf.PerfCounter`` (the hardware counter:
fast, approximate); ``measure.counter_choice`` picks one.

Determinism (the point of counting instructions), for every counter:
- workers run with ``PYTHONHASHSEED=0`` (dict and set layouts, hence lookup
  costs, are the same in every run) and ``OPENBLAS_NUM_THREADS=1`` (numpy's
  OpenBLAS, which torch imports, otherwise starts a thread of its own whose
  start-up interleaves with the worker's, moving where the worker's heap
  lands from one start to the next);
- the garbage collector is collected before and disabled during a region
  (``CollectorOff``);
- a warm-up run precedes counting (CPython's specialising interpreter and
  torch's lazy initialisation settle before the region).
"""

from __future__ import annotations

import gc
import types
from collections.abc import Callable
from pathlib import Path
from typing import Any

from harness.core import native
from harness.measure.counters.profile import Profile
from harness.model.result import TaskResult
from harness.options import COUNTER_ENV

Sampler = Callable[[int], Any]


class InstructionCounter:
    """How to count instructions: in which worker process, and how inside it."""

    name = ""
    exact = False  # bit-exact across runs (callgrind) or close (hardware counter)

    def worker_prefix(self) -> list[str]:
        """Command prefix starting a worker process in which ``count()`` works."""
        return []

    def worker_env(self) -> dict[str, str]:
        """Environment of such a worker: what removes run-to-run jitter, and which counter it uses."""
        return {"PYTHONHASHSEED": "0", "OPENBLAS_NUM_THREADS": "1", COUNTER_ENV: self.name}

    def count(self, fn: Callable[[], object]) -> int:
        """Instructions executed by ``fn()`` in this process."""
        raise NotImplementedError

    def clock(self) -> Callable[[], int]:
        """A stand-in for the clock of a generated Python block: its two reads bracket the region."""
        raise NotImplementedError

    def measure(
        self, sampler: Sampler, number: int, repeats: int, *, clocked: bool, detail: bool = False
    ) -> list[Profile]:
        """Count ``repeats`` runs of ``sampler(number)`` after a warm-up.

        ``clocked``: the sampler brackets its own region through ``clock()``
        (a generated Python block, whose loop is then exactly the region);
        otherwise the region is the whole call (a native sampler). ``detail``
        asks for per-function counts where the counter has them.
        """
        raise NotImplementedError

    def diagnostics(self, pid: int) -> str:
        """What the counter's tool said about worker ``pid`` (for failed tasks)."""
        return ""

    def kept_in(self, directory: Path | None) -> InstructionCounter:
        """This counter as the kept worker in ``directory`` runs it (``counters.kept``). None: the stand-in
        whose prefix and environment key that worker, for a counter whose directory comes from the key."""
        return self

    def finish(self, result: TaskResult) -> TaskResult:
        """A worker's answer completed in the process that receives it (the worker pool's ``finish``)."""
        return result

    def close(self) -> None:
        """Remove what ``worker_prefix()`` created (temporary files)."""


def warmup_runs(number: int) -> int:
    return max(1, min(number, 10))


def fresh_code(sampler: Sampler) -> Sampler:
    """A copy of a Python function with a new, unspecialised code object.

    CPython 3.11+ specialises bytecode as it runs and backs off failed
    specialisations exponentially; reusing one code object across repeats
    makes each repeat start from a different specialisation state.
    """
    if isinstance(sampler, types.FunctionType):
        code = sampler.__code__.replace()
        return types.FunctionType(
            code, sampler.__globals__, sampler.__name__, sampler.__defaults__, sampler.__closure__
        )
    return sampler


def warm_up(sampler: Sampler, number: int) -> None:
    """Run ``warmup_runs(number)`` runs (a capsule sampler only the core can call)."""
    runs = warmup_runs(number)
    if callable(sampler):
        sampler(runs)
    else:
        native().fixed_blocks(sampler, runs, 1)


class CollectorOff:
    """Collect now, keep the collector off inside (a collection inside a region is noise).

    Survivors are frozen (moved out of the collector's sight; reference
    counting still frees them): a worker holds torch's hundreds of thousands
    of objects, and walking them all before every measurement costs ~0.3 s
    under valgrind.
    """

    def __enter__(self) -> None:
        gc.collect()
        gc.freeze()
        self._was_enabled = gc.isenabled()
        gc.disable()

    def __exit__(self, *exc: object) -> None:
        if self._was_enabled:
            gc.enable()
