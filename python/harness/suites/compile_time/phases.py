"""Measuring a compile per phase: torch's compile events cut the count (or the clock) at every boundary.

Every ``dynamo_timed`` and ``chromium_event_timed`` of torch (``entire_frame_compile``,
``build_guards``, ``compile_fx_inner``, ``GraphLowering.run``, ``compile_file``, ...)
reports its start and end to the chromium event logger
(``ChromiumEventLogger.log_event_start`` / ``log_event_end``). While a case is
measured with phases, those two methods are wrapped: at each boundary the
interval since the last boundary is closed and given to the innermost event
open during it (its path, ``model.phases``).

Under callgrind the boundary switches collection off (the C++ core's
``region_end``), dumps the counters (``CALLGRIND_DUMP_STATS_AT``: a dump holds
the cost since the last one), does its bookkeeping uncounted and switches
collection back on; the region markers of the compile step (``region.py``)
close an interval too. So the dumps' totals are the intervals and add up to
the region's count exactly. What a boundary adds to the count is the Python
call into the wrapper up to ``region_end`` and back from ``region_begin``:
a constant per boundary, measured in docs/compile-time.md ("What phases cost").

For wall time the boundary reads ``perf_counter_ns``; the first and last
reads are those of the total, so the intervals add up to it exactly too.
At every boundary ``os.times()`` gives the CPU time of finished child
processes (the C++ compiler): their work is kept per phase, as work done
elsewhere.
"""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Callable, Iterator
from typing import Any

from harness.errors import HarnessError
from harness.model.phases import OTHER, SEP, Phases


def _children_cpu() -> float:
    t = os.times()
    return t.children_user + t.children_system


class _Recorder:
    """The open events and the closed intervals: (path, external CPU seconds) per interval."""

    def __init__(self) -> None:
        self.stack: list[str] = []
        self.paths: list[str] = []
        self.external: list[float] = []
        self.entered: dict[str, int] = {}
        self.keys: dict[str, str] = {}
        self.boundaries = 0
        self._children = _children_cpu()

    def path(self) -> str:
        return SEP.join(self.stack) if self.stack else OTHER

    def close_interval(self) -> None:
        children = _children_cpu()
        self.paths.append(self.path())
        self.external.append(children - self._children)
        self._children = children

    def push(self, name: str, args: tuple[Any, ...]) -> None:
        # dynamo_timed(key, phase_name=...) logs the phase name and passes its key as metadata "fn_name".
        metadata = args[1] if len(args) > 1 else None
        if isinstance(metadata, dict) and isinstance(metadata.get("fn_name"), str):
            self.keys[name] = metadata["fn_name"]
        self.stack.append(name)
        path = self.path()
        self.entered[path] = self.entered.get(path, 0) + 1
        self.boundaries += 1

    def pop(self, name: str) -> None:
        self.boundaries += 1
        # An event ends out of order only if torch's own nesting is broken; take the innermost of its name.
        for i in range(len(self.stack) - 1, -1, -1):
            if self.stack[i] == name:
                del self.stack[i]
                return

    def phases(self, values: list[float], unit: str) -> Phases:
        if len(values) != len(self.paths):
            raise HarnessError(f"phases: {len(values)} measured intervals for {len(self.paths)} boundaries; "
                               "the count was cut somewhere harness did not mark")
        exclusive: dict[str, float] = {}
        external: dict[str, float] = {}
        for path, value, ext in zip(self.paths, values, self.external, strict=True):
            exclusive[path] = exclusive.get(path, 0) + value
            if ext > 0:
                external[path] = external.get(path, 0.0) + ext
        return Phases(unit=unit, exclusive=exclusive, entered=dict(self.entered), external_s=external,
                      boundaries=self.boundaries, keys=dict(self.keys))


class CallgrindCuts(_Recorder):
    """Cuts callgrind's count at each boundary met while collecting; the region markers close one too."""

    def __init__(self) -> None:
        super().__init__()
        from harness.core import native

        C = native().callgrind
        self._off, self._on, self._dump = C.region_end, C.region_begin, C.dump_stats
        self.collecting = False

    def begin(self) -> None:
        self.collecting = True  # set before collection starts: not counted
        self._on()

    def end(self) -> None:
        self._off()
        self.collecting = False
        self.close_interval()
        self._dump("harness phase")

    def enter(self, name: str, args: tuple[Any, ...]) -> None:
        if self.collecting:
            self._off()
            self.close_interval()
            self._dump("harness phase")
            self.push(name, args)
            self._on()
        else:
            self.push(name, args)

    def leave(self, name: str) -> None:
        if self.collecting:
            self._off()
            self.close_interval()
            self._dump("harness phase")
            self.pop(name)
            self._on()
        else:
            self.pop(name)


class ClockCuts(_Recorder):
    """Cuts the wall clock at each boundary."""

    def __init__(self) -> None:
        super().__init__()
        self.times: list[int] = []

    def start(self) -> int:
        start = time.perf_counter_ns()
        self.times.append(start)
        return start

    def cut(self) -> None:
        self.times.append(time.perf_counter_ns())
        self.close_interval()

    def enter(self, name: str, args: tuple[Any, ...]) -> None:
        self.cut()
        self.push(name, args)

    def leave(self, name: str) -> None:
        self.cut()
        self.pop(name)

    def seconds(self) -> list[float]:
        return [(b - a) / 1e9 for a, b in zip(self.times, self.times[1:], strict=False)]


@contextlib.contextmanager
def events_cut(recorder: CallgrindCuts | ClockCuts) -> Iterator[None]:
    """torch's compile events start and end phases in ``recorder`` while inside."""
    from torch._dynamo.utils import ChromiumEventLogger

    start, end = ChromiumEventLogger.log_event_start, ChromiumEventLogger.log_event_end
    enter, leave = recorder.enter, recorder.leave

    def log_event_start(self: Any, event_name: str, *args: Any, **kwargs: Any) -> None:
        enter(event_name, args)
        start(self, event_name, *args, **kwargs)

    def log_event_end(self: Any, event_name: str, *args: Any, **kwargs: Any) -> None:
        end(self, event_name, *args, **kwargs)
        leave(event_name)

    ChromiumEventLogger.log_event_start = log_event_start  # type: ignore[method-assign]
    ChromiumEventLogger.log_event_end = log_event_end  # type: ignore[method-assign]
    try:
        yield
    finally:
        ChromiumEventLogger.log_event_start = start  # type: ignore[method-assign]
        ChromiumEventLogger.log_event_end = end  # type: ignore[method-assign]


# What a phased measure returns for one call: its value, its phases, and its instructions per function
# (callgrind's exclusive counts, when asked for: the noise command's view of what varies), else None.
Phased = tuple[float, Phases, "dict[str, int] | None"]


class PhasedMeasure:
    """A ``collect`` measure that also keeps the phases (and functions) of each call, same order as its values."""

    def __init__(self, measure: Callable[[Callable[[], Any]], Phased]) -> None:
        self._measure = measure
        self.per_call: list[Phases] = []
        self.functions: list[dict[str, int] | None] = []

    def __call__(self, fn: Callable[[], Any]) -> float:
        value, phases, functions = self._measure(fn)
        self.per_call.append(phases)
        self.functions.append(functions)
        return value

    def of_value(self, warm: list[float], value: float) -> tuple[Phases, dict[str, int] | None]:
        """The phases and functions of the warm call that measured ``value`` (the cold one may be measured apart)."""
        skip = len(self.per_call) - len(warm)
        i = skip + warm.index(value)
        return self.per_call[i], self.functions[i]


def _read(functions: bool) -> Callable[[str], Any]:
    from harness.measure.callgrind.profile import parse_text, total_from_text

    return parse_text if functions else total_from_text


def _totals(dumps: list[Any], functions: bool) -> tuple[list[float], dict[str, int] | None]:
    if not functions:
        return [float(t) for t in dumps], None
    merged: dict[str, int] = {}
    for profile in dumps:
        for name, count in profile.exclusive.items():
            merged[name] = merged.get(name, 0) + count
    return [float(p.total) for p in dumps], merged


def wall_phases(fn: Callable[[], Any]) -> Phased:
    """Seconds of ``fn()`` (as ``collect.wall_seconds``) and their phases."""
    cuts = ClockCuts()
    with events_cut(cuts):
        cuts.start()
        fn()
        cuts.cut()
    seconds = cuts.seconds()
    return (cuts.times[-1] - cuts.times[0]) / 1e9, cuts.phases(seconds, "s"), None


def callgrind_compile_phases(counter: Any, what: str, functions: bool = False) -> Callable[[Callable[[], Any]], Phased]:
    """Instructions of the compile region of a call (as ``region.compile_counter``) and their phases."""
    # The compile region exactly as region.compile_counter marks it, with a cut at each marker.
    from harness.suites.compile_time.region import _compile_markers, _export_capture_counted, _nonzero

    def measure(fn: Callable[[], Any]) -> Phased:
        cuts = CallgrindCuts()
        with _compile_markers(cuts.begin, cuts.end), _export_capture_counted(), events_cut(cuts):
            dumps = counter.count_marked_dumps(fn, _read(functions))
        # The counter's own last dump: whatever followed the last cut (nothing, when the region ended in fn).
        cuts.close_interval()
        totals, per_function = _totals(dumps, functions)
        return _nonzero(float(sum(totals)), what), cuts.phases(totals, "instructions"), per_function

    return measure


def callgrind_work_phases(counter: Any, what: str, functions: bool = False) -> Callable[[Callable[[], Any]], Phased]:
    """Instructions of a whole call (as ``region.work_counter``) and their phases."""

    def measure(fn: Callable[[], Any]) -> Phased:
        cuts = CallgrindCuts()

        def marked() -> None:
            cuts.begin()
            fn()
            cuts.end()

        with events_cut(cuts):
            dumps = counter.count_marked_dumps(marked, _read(functions))
        cuts.close_interval()
        totals, per_function = _totals(dumps, functions)
        return float(sum(totals)), cuts.phases(totals, "instructions"), per_function

    return measure
