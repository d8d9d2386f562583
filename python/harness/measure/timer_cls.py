"""torch's ``Timer._timer_cls`` hook: samples from a timeit-like object, in torch's order.

torch's Timer builds ``self._timer = self._timer_cls(stmt=..., setup=...,
timer=..., globals=...)`` and takes every sample as
``max(self._timer.timeit(number), 1e-9)`` seconds. A Timer subclass that sets
``_timer_cls`` to another class (torch's own tests do, with a scripted timer
whose every call draws the next number of a seeded generator) must see the
same calls, in the same order, with the same run counts, or its numbers
change. So this path keeps torch's rules step for step: the block size is
calibrated from the median of five empty samples, growing by 10x until the
overhead is at most 1e-4 of a block and the block at least a thousandth of
``min_run_time`` (or longer than ``min_run_time``); blocks are then taken
until ``min_run_time`` is spent (and, for ``adaptive_autorange``, until more
than three blocks have an IQR under ``threshold`` of their median, or
``max_run_time`` is spent). Times stay the floats the object returns.

The default ``_timer_cls`` (``timeit.Timer``) never comes here: harness's
generated block and C++ core do the timing then.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from harness.measure.threads import torch_threads
from harness.model.measurement import Measurement, TaskSpec

MIN_SAMPLE = 1e-9  # seconds: torch's floor for one sample (no real block is faster; no division by zero)
EMPTY_SAMPLES = 5
RELATIVE_OVERHEAD = 1e-4
MAX_NUMBER = 2147483647  # torch stops growing a block before it overflows a C int


class TimeitSampler:
    """Measurements from ``timer_obj.timeit(number)`` (seconds), as torch's Timer takes them."""

    def __init__(self, timer_obj: Any, task_spec: TaskSpec) -> None:
        self._timer = timer_obj
        self._task_spec = task_spec

    def _sample(self, number: int) -> float:
        return max(self._timer.timeit(number), MIN_SAMPLE)

    def _measurement(self, number: int, times: list[float]) -> Measurement:
        return Measurement(number_per_run=number, raw_times=times, task_spec=self._task_spec)

    def timeit(self, number: int) -> Measurement:
        with torch_threads(self._task_spec.num_threads):
            self._sample(max(number // 100, 2))  # warm-up, as torch's
            return self._measurement(number, [self._sample(number)])

    def block_size(self, min_run_time: float) -> int:
        with torch_threads(self._task_spec.num_threads):
            empties = sorted(self._sample(0) for _ in range(EMPTY_SAMPLES))
            overhead = empties[(EMPTY_SAMPLES - 1) // 2]  # torch.median: the lower middle
            number = 1
            while True:
                taken = self._sample(number)
                if overhead / taken <= RELATIVE_OVERHEAD and taken >= min_run_time / 1000:
                    break
                if taken > min_run_time or number * 10 > MAX_NUMBER:
                    break
                number *= 10
        return number

    def _blocks(
        self,
        number: int,
        min_run_time: float,
        max_run_time: float | None,
        callback: Callable[[int, float], None] | None,
        can_stop: Callable[[list[float]], bool],
    ) -> Measurement:
        times: list[float] = []
        total = 0.0
        stop = False
        with torch_threads(self._task_spec.num_threads):
            while total < min_run_time or not stop:
                spent = self._sample(number)
                times.append(spent)
                total += spent
                if callback:
                    callback(number, spent)
                stop = can_stop(times)
                if max_run_time and total > max_run_time:
                    break
        return self._measurement(number, times)

    def blocked_autorange(self, callback: Callable[[int, float], None] | None, min_run_time: float) -> Measurement:
        number = self.block_size(min_run_time)
        return self._blocks(number, min_run_time, None, callback, lambda times: True)

    def adaptive_autorange(
        self,
        threshold: float,
        min_run_time: float,
        max_run_time: float,
        callback: Callable[[int, float], None] | None,
    ) -> Measurement:
        number = self.block_size(0.05)  # torch calibrates against 50 ms here, whatever min_run_time is

        def can_stop(times: list[float]) -> bool:
            return len(times) > 3 and self._measurement(number, list(times)).meets_confidence(threshold)

        return self._blocks(number, min_run_time, max_run_time, callback, can_stop)
