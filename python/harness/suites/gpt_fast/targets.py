"""Targets: what each row should reach on the device it ran on.

Source: pytorch/benchmarks/gpt_fast (benchmark.py for the micro-kernels,
generate.py for the models). Its figures were measured on an A100-SXM4-40GB
(the models' comment says so; the micro-kernels divide by the A100 40GB's
312 TFLOPS). On that device a row's target is the reference figure itself.
On any other device a bandwidth target is the same *fraction of peak
bandwidth* the reference reached on its A100 (figure / 1555 GB/s): a kernel
that streams its weights is bounded by DRAM bandwidth, so the fraction, not
the GB/s, carries over between devices.

Differences from the reference, and why:
- flops_utilization: the reference's 0.8 is scaled by the roofline bound of
  the shape (efficiency.roofline_bound). A single-vector MLP reads 2 bytes per
  2 FLOPs; at 1555 GB/s against 312 TFLOPS it cannot exceed ~0.005
  utilisation, so an unscaled 0.8 could never be met (the reference only
  appeared to meet it because its formula multiplied time by work).
- token_per_sec: derived from the bandwidth target and the bytes a token
  reads (target GB/s / GB per token) on every device; for the 7B shapes on
  the A100 this reproduces the reference's 94 tokens/s.
- compilation_time(s): host-side work, no fraction of a device peak; the
  reference's seconds are the target on CUDA devices and there is none on
  CPU.
- No reference exists for Mixtral in bf16 (it did not fit on the 40 GB
  A100): that row has no target.
"""

from __future__ import annotations

import dataclasses

from harness.suites.gpt_fast.peaks import Peaks, datasheet_entry

REFERENCE_DEVICE = "NVIDIA A100-SXM4-40GB"
REFERENCE_PEAK_FLOPS = 312e12
REFERENCE_PEAK_BYTES = 1555e9

FLOPS_UTILIZATION = "flops_utilization"
BANDWIDTH = "memory_bandwidth(GB/s)"
TOKENS = "token_per_sec"
COMPILE = "compilation_time(s)"


@dataclasses.dataclass(frozen=True)
class Reference:
    experiment: str
    metric: str
    dtype: str
    value: float  # on REFERENCE_DEVICE

    @property
    def fraction_of_peak(self) -> float:
        """The reference's share of its device's peak for the metric's resource."""
        if self.metric == BANDWIDTH:
            return self.value * 1e9 / REFERENCE_PEAK_BYTES
        if self.metric == FLOPS_UTILIZATION:
            return self.value
        raise ValueError(f"{self.metric} is not a fraction of a peak")


# The one table of reference figures.
REFERENCES: tuple[Reference, ...] = (
    Reference("mlp_layer_norm_gelu", FLOPS_UTILIZATION, "bfloat16", 0.8),
    Reference("layer_norm", BANDWIDTH, "bfloat16", 950),
    Reference("gather_gemv", BANDWIDTH, "int8", 990),
    Reference("gather_gemv", BANDWIDTH, "bfloat16", 1060),
    Reference("gemv", BANDWIDTH, "int8", 870),
    Reference("gemv", BANDWIDTH, "bfloat16", 990),
    Reference("llama", BANDWIDTH, "bfloat16", 1253),
    Reference("llama", COMPILE, "bfloat16", 133),
    Reference("llama", BANDWIDTH, "int8", 957),
    Reference("llama", COMPILE, "int8", 136),
    Reference("mixtral_moe", BANDWIDTH, "int8", 1130),
    Reference("mixtral_moe", COMPILE, "int8", 133),
)


def reference(experiment: str, metric: str, dtype: str) -> Reference | None:
    for r in REFERENCES:
        if (r.experiment, r.metric, r.dtype) == (experiment, metric, dtype):
            return r
    return None


def is_reference_device(peaks: Peaks) -> bool:
    entry = datasheet_entry(peaks.device_name)
    return peaks.source == "datasheet" and entry is not None and entry.label.startswith("A100 40GB")


def bandwidth_target(experiment: str, dtype: str, peaks: Peaks) -> float | None:
    """GB/s: the reference figure on its own A100, else its fraction of this device's peak."""
    ref = reference(experiment, BANDWIDTH, dtype)
    if ref is None:
        return None
    if is_reference_device(peaks):
        return ref.value
    return ref.fraction_of_peak * peaks.bytes_per_s / 1e9


def flops_utilization_target(experiment: str, dtype: str, roofline: float) -> float | None:
    """The reference's utilisation, scaled by what the shape's roofline allows."""
    ref = reference(experiment, FLOPS_UTILIZATION, dtype)
    return None if ref is None else ref.value * roofline


def tokens_target(experiment: str, dtype: str, peaks: Peaks, bytes_per_token: float) -> float | None:
    gbps = bandwidth_target(experiment, dtype, peaks)
    return None if gbps is None else gbps * 1e9 / bytes_per_token


def compile_time_target(experiment: str, dtype: str, device: str) -> float | None:
    ref = reference(experiment, COMPILE, dtype)
    return ref.value if ref is not None and device.startswith("cuda") else None
