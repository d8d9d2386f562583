"""The efficiency maths, as pure functions of counts and seconds.

Units: FLOPs and bytes are plain counts, times are seconds, rates are per
second; GB is 1e9 bytes (datasheets' unit), not GiB.

Where the gpt-fast reference (pytorch/benchmarks/gpt_fast/benchmark.py) goes
wrong and these functions differ:

- Its flops utilisation is ``us_per_iter * flops / 1e9 / 312``: time times
  work, which grows as the kernel gets slower. Utilisation is achieved FLOP/s
  over peak FLOP/s: ``flops / seconds / peak_flops_per_s``.
- It counts its models' "memory bandwidth" from model size: every parameter
  and buffer (the whole KV cache and rotary table included) times tokens/s,
  with time that includes prefill. The bytes a decode step actually reads are
  the weights it uses: one embedding row, not the table; the selected k of E
  experts in a mixture of experts (see models.parameter_bytes_read_per_token).
- Its kernel bandwidths ((1e6 / us) * bytes / 1e9) have the right units;
  they count weight bytes only, as these do for the gemv kernels; layer_norm
  here also counts its affine parameters.
"""

from __future__ import annotations

import math
from collections.abc import Sequence


def _positive(name: str, value: float) -> None:
    if not (value > 0 and math.isfinite(value)):
        raise ValueError(f"{name} must be a positive finite number, got {value!r}")


def achieved_flops_per_s(flops: float, seconds: float) -> float:
    _positive("seconds", seconds)
    return flops / seconds


def flops_utilization(flops: float, seconds: float, peak_flops_per_s: float) -> float:
    """Achieved FLOP/s as a fraction of the device's peak FLOP/s (1.0 = at peak)."""
    _positive("peak_flops_per_s", peak_flops_per_s)
    return achieved_flops_per_s(flops, seconds) / peak_flops_per_s


def bandwidth_gb_per_s(nbytes: float, seconds: float) -> float:
    """Bytes moved per second, in GB/s (1 GB = 1e9 bytes)."""
    _positive("seconds", seconds)
    return nbytes / seconds / 1e9


def tokens_per_second(tokens: int, seconds: float) -> float:
    _positive("seconds", seconds)
    return tokens / seconds


def decode_bandwidth_gb_per_s(bytes_per_token: float, tokens_per_s: float) -> float:
    """Weight bytes read per token x tokens per second, in GB/s."""
    return bytes_per_token * tokens_per_s / 1e9


def roofline_bound(flops: float, nbytes: float, peak_flops_per_s: float, peak_bytes_per_s: float) -> float:
    """The highest flops utilisation a kernel doing ``flops`` over ``nbytes`` of traffic can reach.

    min(1, arithmetic intensity x bandwidth / peak FLOP/s): a single-vector
    MLP does 2 FLOPs per 2-byte weight, so on any GPU it is bandwidth-bound
    far below its compute peak.
    """
    _positive("nbytes", nbytes)
    _positive("peak_flops_per_s", peak_flops_per_s)
    return min(1.0, (flops / nbytes) * peak_bytes_per_s / peak_flops_per_s)


def layer_norm_bytes(rows: int, dim: int, itemsize: int, param_itemsize: int) -> int:
    """Read the input, write the output (same dtype), read weight and bias once."""
    return 2 * rows * dim * itemsize + 2 * dim * param_itemsize


def weight_bytes(rows: int, cols: int, itemsize: int, matrices: int = 1) -> int:
    """Bytes of ``matrices`` (rows x cols) weight matrices: what a gemv must read."""
    return matrices * rows * cols * itemsize


def mean(values: Sequence[float]) -> float:
    if not values:
        raise ValueError("mean of no values")
    return math.fsum(values) / len(values)
