"""The region a count covers, and its metric: torch.compile's compile step, or all of work().

PyTorch's pr_time_benchmarks report ``compile_time_instruction_count``: the
instructions between the outermost entry into and exit from dynamo's
``convert_frame`` compile_inner (torch's ``CompileTimeInstructionCounter``),
so running the compiled code, building the ``torch.compile`` wrapper and
guard checks are left out. Cases of region "compile" count exactly that
region: with the hardware counter through torch's own counter, under
callgrind by swapping the counter torch calls for callgrind's region
markers (torch keeps the nesting logic, so the region is the same).

One gap is closed by hand: torch 2.13's strict ``torch.export`` captures its
graph through ``convert_frame.fullgraph_capture``, which never enters that
counter, so an export case's region would be empty (PyTorch's own
benchmark_base would read 0 for ``sum_floordiv_regression`` on that torch).
While a compile region is counted, that capture is bracketed by torch's
counter too: the region is then dynamo's trace of the exported function, as
it is of a ``torch.compile``'d one.
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Callable, Iterator
from typing import Any

from harness.errors import HarnessError
from harness.measure.counters.base import InstructionCounter

COMPILE_INSTRUCTIONS = "compile_time_instruction_count"
WORK_INSTRUCTIONS = "instruction_count"
COMPILE_SECONDS = "compile_time_s"
WORK_SECONDS = "work_time_s"
# PyTorch's import_time metric, in its unit.
IMPORT_MICROSECONDS = "import_time_us"


def instructions_metric(region: str) -> str:
    return COMPILE_INSTRUCTIONS if region == "compile" else WORK_INSTRUCTIONS


def seconds_metric(region: str) -> str:
    return COMPILE_SECONDS if region == "compile" else WORK_SECONDS


def wall_metric(region: str) -> tuple[str, float]:
    """The wall-time metric of a region and the factor from seconds to its unit."""
    if region == "import":
        return IMPORT_MICROSECONDS, 1e6
    return seconds_metric(region), 1.0


@contextlib.contextmanager
def pytorch_settings() -> Iterator[None]:
    """The dynamo settings PyTorch's collect_all pins while counting (C++ symbolic-shape guards off)."""
    import torch._dynamo.config as dynamo_config

    with dynamo_config.patch(enable_cpp_symbolic_shape_guards=False):
        yield


class _Markers:
    """Stands in for ``torch._C._instruction_counter``: start and end mark the region."""

    def __init__(self, begin: Callable[[], None], end: Callable[[], None]) -> None:
        self._begin, self._end = begin, end

    def start(self) -> int:
        self._begin()
        return 0

    def end(self, _id: int) -> int:
        self._end()
        return 0


@contextlib.contextmanager
def _compile_markers(begin: Callable[[], None], end: Callable[[], None]) -> Iterator[None]:
    import torch._dynamo.config as dynamo_config
    from torch._dynamo import utils

    saved = utils._instruction_counter
    utils._instruction_counter = _Markers(begin, end)
    try:
        with dynamo_config.patch(record_compile_time_instruction_count=True):
            yield
    finally:
        utils._instruction_counter = saved


@contextlib.contextmanager
def _export_capture_counted() -> Iterator[None]:
    """While counting, strict export's graph capture inside torch's compile region (see the module's doc)."""
    from torch._dynamo import convert_frame
    from torch._dynamo.utils import CompileTimeInstructionCounter

    original = getattr(convert_frame, "fullgraph_capture", None)
    if original is None:  # a torch whose export still traces through compile_inner
        yield
        return
    try:
        from torch._dynamo import functional_export
    except ImportError:
        functional_export = None  # type: ignore[assignment]

    @functools.wraps(original)
    def counted(*args: Any, **kwargs: Any) -> Any:
        with CompileTimeInstructionCounter.record():
            return original(*args, **kwargs)

    # functional_export imported the function by name: its binding is swapped too.
    holders = [m for m in (convert_frame, functional_export)
               if m is not None and getattr(m, "fullgraph_capture", None) is original]
    for m in holders:
        m.fullgraph_capture = counted  # type: ignore[union-attr]
    try:
        yield
    finally:
        for m in holders:
            m.fullgraph_capture = original  # type: ignore[union-attr]


def _nonzero(count: float, what: str) -> float:
    if count <= 0:
        raise HarnessError(
            f"{what}: no instructions were counted in torch.compile's compile step; the measured work() "
            "compiled nothing (was the compiled function cached? prepare() should call torch._dynamo.reset())"
        )
    return count


def compile_counter(counter: InstructionCounter, what: str) -> Callable[[Callable[[], None]], float]:
    """A measure of the compile region of a call, with ``counter``."""
    if counter.name == "callgrind":

        def by_callgrind(fn: Callable[[], None]) -> float:
            with _compile_markers(counter.marker_begin, counter.marker_end), _export_capture_counted():  # type: ignore[attr-defined]
                return _nonzero(float(counter.count_marked(fn)), what)  # type: ignore[attr-defined]

        return by_callgrind

    def by_torch(fn: Callable[[], None]) -> float:
        import torch._dynamo.config as dynamo_config
        from torch._dynamo.utils import CompileTimeInstructionCounter

        with dynamo_config.patch(record_compile_time_instruction_count=True), _export_capture_counted():
            CompileTimeInstructionCounter.clear()
            fn()
            value = CompileTimeInstructionCounter.value()
        # torch's counter returns -1 (as an unsigned 64-bit value) when perf_event_open fails.
        if value >= 2**63 or value < 0:
            raise HarnessError(
                f"{what}: torch's instruction counter could not read the hardware counter "
                "(perf_event_open failed; see /proc/sys/kernel/perf_event_paranoid); use --counter callgrind"
            )
        return _nonzero(float(value), what)

    return by_torch


def work_counter(counter: InstructionCounter, what: str) -> Callable[[Callable[[], Any]], float]:
    """A measure of everything a call does, with ``counter``."""
    return lambda fn: float(counter.count(fn))
