"""PerfCounter: the CPU's retired-instruction counter (``perf_event_open``), fast and close.

Used where the kernel lets this process read the counter; counts are not
bit-exact across runs (interrupts, the PMU's own skid), which is why
callgrind is the reference counter.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from harness.core import native
from harness.errors import HarnessError
from harness.measure.counters.base import CollectorOff, InstructionCounter, Sampler, fresh_code, warm_up
from harness.measure.counters.profile import Profile

_perf_status: tuple[bool, str] | None = None


def perf_status() -> tuple[bool, str]:
    """(usable, why not): whether this process can read the hardware instruction counter."""
    global _perf_status
    if _perf_status is None:
        handle = native().perf.open()
        _perf_status = (bool(handle.ok), str(handle.reason))
    return _perf_status


class PerfCounter(InstructionCounter):
    """The CPU's retired-instruction counter (perf_event_open): fast, close but not bit-exact.

    Counts user-space instructions of the calling thread; work a statement
    hands to other threads is not counted.
    """

    name = "perf"
    exact = False
    MAX_ATTEMPTS = 5

    def __init__(self) -> None:
        self._handle: Any = None

    def require_available(self) -> None:
        ok, reason = perf_status()
        if not ok:
            raise HarnessError(f"the hardware instruction counter is unavailable: {reason}; use --counter callgrind")

    def _counter(self) -> Any:
        if self._handle is None:
            self.require_available()
            self._handle = native().perf.open()
            if not self._handle.ok:
                raise HarnessError(f"the hardware instruction counter is unavailable: {self._handle.reason}")
        return self._handle

    def clock(self) -> Callable[[], int]:
        return self._counter().toggle

    def _retry(self, attempt: Callable[[], int]) -> int:
        for _ in range(self.MAX_ATTEMPTS):
            n = attempt()
            if n >= 0:
                return int(n)
        raise HarnessError(
            f"the hardware instruction counter was multiplexed with other events in {self.MAX_ATTEMPTS} attempts "
            "(another perf session is using the PMU); stop it or use --counter callgrind"
        )

    def count(self, fn: Callable[[], object]) -> int:
        handle = self._counter()
        with CollectorOff():
            return self._retry(lambda: handle.count(fn))

    def measure(
        self,
        sampler: Sampler,
        number: int,
        repeats: int,
        *,
        clocked: bool,
        detail: bool = False,
        keep_text: bool = False,
    ) -> list[Profile]:
        handle = self._counter()
        profiles = []
        for _ in range(repeats):
            with CollectorOff():
                total = self._retry(lambda: self._once(handle, fresh_code(sampler), number, clocked))
            profiles.append(Profile(total=total, exclusive={}, inclusive={}))
        return profiles

    @staticmethod
    def _once(handle: Any, run: Sampler, number: int, clocked: bool) -> int:
        warm_up(run, number)
        if clocked:
            run(number)
            return int(handle.last)
        return int(handle.count_sampler(run, number))
