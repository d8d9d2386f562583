"""Timing one kernel call: CUDA events with an L2 flush on GPU, the C++ core's loop on CPU.

GPU: each repetition flushes L2 first, then records a start event, calls the
kernel (or replays its CUDA graph) and records an end event. The flush is
enqueued before the start event, so its cost never falls inside the timed
window, and every call reads its inputs from DRAM the way a decode step
reading weights does; without it a 2 MB gemv served from a 50 MB L2 would
report L2 bandwidth. The reported figure is the median.

CPU: the C++ core times back-to-back calls (``harness._C.CallLoop`` under
``blocked_autorange``). There is no flush between calls, so callers that
measure memory bandwidth rotate through enough copies of their inputs to
overflow the last-level cache (``rotation_count``).
"""

from __future__ import annotations

import dataclasses
import math
import statistics
from collections.abc import Callable
from pathlib import Path
from typing import Any, Protocol

# Used when a device reports no L2 size: triton's do_bench flushes 256 MB.
FALLBACK_FLUSH_BYTES = 256 * 2**20
# CPUs that do not say how big their last-level cache is.
FALLBACK_LLC_BYTES = 64 * 2**20
MIN_SAMPLES = 3
# Beyond this many copies a call moves under 2 x LLC / 64 bytes (1 MB for a
# 32 MB cache): launch overhead dominates it, so evicting its data buys
# nothing and 10^4 copies of a tiny tensor would only slow the run down.
MAX_COPIES = 64
MAX_CUDA_REPS = 2000


@dataclasses.dataclass(frozen=True)
class Timing:
    samples_s: list[float]  # seconds per call, one per repetition (GPU) or block (CPU)
    method: str

    @property
    def median_s(self) -> float:
        return statistics.median(self.samples_s)

    def to_json(self) -> dict[str, Any]:
        return {"median_s": self.median_s, "samples": len(self.samples_s), "method": self.method}


class DeviceProperties(Protocol):
    """The part of ``torch.cuda.get_device_properties()`` the flush needs."""

    L2_cache_size: int


def flush_bytes(props: DeviceProperties) -> int:
    """Bytes to write between repetitions so the kernel's inputs are no longer in L2.

    Twice the L2: GPU L2s are not strict LRU (and A100/H100 split theirs in
    two partitions), so writing exactly L2-size bytes can leave part of the
    previous working set resident.
    """
    l2 = int(getattr(props, "L2_cache_size", 0) or 0)
    return 2 * l2 if l2 > 0 else FALLBACK_FLUSH_BYTES


class L2Flusher:
    """Holds the flush buffer; calling it overwrites the whole buffer."""

    def __init__(self, device: Any) -> None:
        import torch

        props = torch.cuda.get_device_properties(device)
        self.nbytes = flush_bytes(props)
        self._buffer = torch.empty(self.nbytes // 4, dtype=torch.int32, device=device)

    def __call__(self) -> None:
        self._buffer.zero_()


def last_level_cache_bytes(sysfs: Path = Path("/sys/devices/system/cpu/cpu0/cache")) -> int:
    """Size of the highest-level CPU cache (Linux sysfs), else a conservative default."""
    best_level, best_size = -1, 0
    try:
        for index in sysfs.glob("index*"):
            level = int((index / "level").read_text())
            kind = (index / "type").read_text().strip() if (index / "type").exists() else "Unified"
            if kind == "Instruction":
                continue
            size = _parse_cache_size((index / "size").read_text().strip())
            if level > best_level or (level == best_level and size > best_size):
                best_level, best_size = level, size
    except (OSError, ValueError):
        return FALLBACK_LLC_BYTES
    return best_size or FALLBACK_LLC_BYTES


def _parse_cache_size(text: str) -> int:
    """ "32768K" -> 33554432; sysfs uses K and M suffixes."""
    units = {"K": 2**10, "M": 2**20, "G": 2**30}
    if text and text[-1].upper() in units:
        return int(text[:-1]) * units[text[-1].upper()]
    return int(text)


def rotation_count(bytes_per_call: int, cache_bytes: int) -> int:
    """How many copies of a call's inputs to cycle through so that none is cache-resident when reused.

    Enough copies that the data touched between two uses of the same copy is
    at least twice the cache (caches are not strict LRU either).
    """
    if bytes_per_call <= 0:
        raise ValueError(f"bytes_per_call must be > 0, got {bytes_per_call}")
    return min(MAX_COPIES, max(1, math.ceil(2 * cache_bytes / bytes_per_call) + 1))


def time_callable(
    fn: Callable[[], Any],
    *,
    device: str,
    min_run_time: float,
    l2_flush: bool = True,
    cuda_graph: bool = False,
) -> Timing:
    """Seconds per call of ``fn`` (already compiled and warmed up) on ``device``."""
    if not min_run_time > 0:
        raise ValueError(f"min_run_time must be > 0, got {min_run_time}")
    if device.startswith("cuda"):
        return _cuda_time(fn, device, min_run_time, l2_flush, cuda_graph)
    if cuda_graph:
        raise ValueError("CUDA graphs need a CUDA device")
    return _cpu_time(fn, min_run_time)


def _cpu_time(fn: Callable[[], Any], min_run_time: float) -> Timing:
    from harness.core import native

    core = native()
    loop = core.CallLoop(fn)
    number, raw = core.blocked_autorange(loop, min_run_time)
    if len(raw) < MIN_SAMPLES:  # a slow call: a median of one or two blocks says little
        _, more = core.fixed_blocks(loop, number, MIN_SAMPLES - len(raw))
        raw = list(raw) + list(more)
    return Timing([ns / 1e9 / number for ns in raw], f"cpu: C++ core loop, {number} call(s) per sample")


def _capture_graph(fn: Callable[[], Any]) -> Callable[[], Any]:
    import torch

    # Capture needs the allocations and lazy initialisation of a few eager
    # runs done first, on a side stream (as torch.cuda.graphs documents).
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for _ in range(3):
            fn()
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        fn()
    return graph.replay


def _cuda_time(fn: Callable[[], Any], device: str, min_run_time: float, l2_flush: bool, cuda_graph: bool) -> Timing:
    import torch

    with torch.cuda.device(torch.device(device)):
        call = _capture_graph(fn) if cuda_graph else fn
        flush: Callable[[], None] = L2Flusher(device) if l2_flush else (lambda: None)

        def timed(reps: int) -> list[float]:
            starts = [torch.cuda.Event(enable_timing=True) for _ in range(reps)]
            ends = [torch.cuda.Event(enable_timing=True) for _ in range(reps)]
            torch.cuda.synchronize()
            for start, end in zip(starts, ends, strict=True):
                flush()  # enqueued before `start`: outside the timed window
                start.record()
                call()
                end.record()
            torch.cuda.synchronize()
            return [s.elapsed_time(e) / 1e3 for s, e in zip(starts, ends, strict=True)]  # ms -> s

        call()
        estimate = statistics.median(timed(5))
        reps = int(min(MAX_CUDA_REPS, max(10, min_run_time / max(estimate, 1e-7))))
        samples = timed(reps)
    parts = ["cuda events", "L2 flush" if l2_flush else "no flush", "CUDA graph" if cuda_graph else "eager launch"]
    return Timing(samples, ", ".join(parts))
