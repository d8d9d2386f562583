"""RunContext: what an experiment needs to know about where and how it runs."""

from __future__ import annotations

import dataclasses
from typing import Any

from harness.errors import UsageError
from harness.options import DEFAULT_MIN_RUN_TIME
from harness.suites.gpt_fast.peaks import CPU_SIZES, GPU_SIZES, MeasureSizes, Peaks, device_name, peaks_for

# "tiny": seconds per experiment, for tests; "cpu": the CPU suite (minutes);
# "gpu": the reference's shapes and 7B-class models.
SIZES = ("tiny", "cpu", "gpu")
# Peaks for tiny runs are measured small (and cached under their own key):
# tests need a peak to compute targets from, not an accurate one.
TINY_PEAK_SIZES = MeasureSizes(gemm_n=256, copy_bytes=8 * 2**20)


@dataclasses.dataclass(frozen=True)
class RunContext:
    device: str  # "cuda", "cuda:1" or "cpu"
    arch: str  # GPU name or CPU model
    size: str  # one of SIZES
    peaks: Peaks
    min_run_time: float  # seconds of timing per shape
    cuda_graph: bool  # also time the micro-kernels replayed from a CUDA graph

    @property
    def is_cuda(self) -> bool:
        return self.device.startswith("cuda")

    def to_json(self) -> dict[str, Any]:
        return {
            "device": self.device,
            "arch": self.arch,
            "size": self.size,
            "peaks": self.peaks.to_json(),
            "min_run_time": self.min_run_time,
            "cuda_graph": self.cuda_graph,
        }


def default_device() -> str:
    import torch

    return "cuda" if torch.cuda.is_available() else "cpu"


def resolve_size(size: str, device: str) -> str:
    if size == "auto":
        return "gpu" if device.startswith("cuda") else "cpu"
    if size not in SIZES:
        raise UsageError(f"gpt-fast size {size!r} is not one of auto, {', '.join(SIZES)}")
    return size


_PEAKS: dict[tuple[str, str], Peaks] = {}


def replace_peaks(ctx: RunContext, peaks: Peaks) -> RunContext:
    """``ctx`` with new peaks, which this process's later experiments use too (a raised peak)."""
    for key, known in _PEAKS.items():
        if known == ctx.peaks:
            _PEAKS[key] = peaks
    return dataclasses.replace(ctx, peaks=peaks)


def make_context(
    device: str | None = None, size: str = "auto", min_run_time: float = DEFAULT_MIN_RUN_TIME, cuda_graph: bool = True
) -> RunContext:
    """The context for this process's device, with its peaks (found once per process)."""
    device = device or default_device()
    if device.startswith("cuda"):
        import torch

        if not torch.cuda.is_available():
            raise UsageError(f"device {device!r} requested but torch sees no CUDA device")
    elif device != "cpu":
        raise UsageError(f"gpt-fast runs on 'cpu' or 'cuda[:N]', not {device!r}")
    size = resolve_size(size, device)
    key = (device, "tiny" if size == "tiny" else "full")
    if key not in _PEAKS:
        if size == "tiny":
            sizes = TINY_PEAK_SIZES
        else:
            sizes = GPU_SIZES if device.startswith("cuda") else CPU_SIZES
        _PEAKS[key] = peaks_for(device, sizes, min_run_time=min(min_run_time, DEFAULT_MIN_RUN_TIME))
    return RunContext(
        device=device,
        arch=device_name(device),
        size=size,
        peaks=_PEAKS[key],
        min_run_time=min_run_time,
        cuda_graph=cuda_graph,
    )
