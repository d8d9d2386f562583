"""gpt-fast maths, targets, peak table and timing helpers against hand-computed values (no GPU needed)."""

from __future__ import annotations

import math
from types import SimpleNamespace

import pytest

from harness.suites.gpt_fast import efficiency, targets
from harness.suites.gpt_fast.peaks import Peaks, datasheet_entry, datasheet_peaks, name_tokens
from harness.suites.gpt_fast.timing import (
    FALLBACK_FLUSH_BYTES,
    FALLBACK_LLC_BYTES,
    MAX_COPIES,
    flush_bytes,
    last_level_cache_bytes,
    rotation_count,
    time_callable,
)

A100_40 = Peaks(312e12, 1555e9, "datasheet", "NVIDIA A100-SXM4-40GB")
H100_SXM = Peaks(989e12, 3.35e12, "datasheet", "NVIDIA H100 80GB HBM3")
CPU = Peaks(1e12, 50e9, "measured", "AMD EPYC")


# -- metrics -------------------------------------------------------------------

def test_flops_utilization_hand_computed():
    # 156e9 FLOPs in 1 ms = 156 TFLOP/s = half of the A100's 312 TFLOP/s.
    assert efficiency.flops_utilization(156e9, 1e-3, 312e12) == pytest.approx(0.5)
    # A 4096-token MLP at D=4096, H=14336: 2 GEMMs of 2*T*D*H FLOPs, 4 ms on an H100.
    flops = 2 * (2 * 4096 * 4096 * 14336)
    assert efficiency.flops_utilization(flops, 4e-3, 989e12) == pytest.approx(flops / 4e-3 / 989e12)
    assert efficiency.flops_utilization(flops, 4e-3, 989e12) == pytest.approx(0.2432, abs=1e-4)


def test_utilization_falls_as_time_grows():
    """The reference multiplied time by work; utilisation must halve when the kernel takes twice as long."""
    fast = efficiency.flops_utilization(1e12, 0.01, 312e12)
    slow = efficiency.flops_utilization(1e12, 0.02, 312e12)
    assert slow == pytest.approx(fast / 2)


def test_bandwidth_hand_computed():
    assert efficiency.bandwidth_gb_per_s(2e9, 1.0) == pytest.approx(2.0)
    # A bf16 4096x4096 gemv (33,554,432 bytes) in 25 us: 1342.18 GB/s.
    nbytes = efficiency.weight_bytes(4096, 4096, 2)
    assert nbytes == 33_554_432
    assert efficiency.bandwidth_gb_per_s(nbytes, 25e-6) == pytest.approx(1342.17728)
    # gather_gemv reads the 2 selected experts' int8 matrices.
    assert efficiency.weight_bytes(1024, 1024, 1, matrices=2) == 2_097_152


def test_layer_norm_bytes():
    # 4096 x 1024 bf16 read and written, plus bf16 weight and bias.
    assert efficiency.layer_norm_bytes(4096, 1024, 2, 2) == 2 * 4096 * 1024 * 2 + 2 * 1024 * 2 == 16_781_312


def test_decode_metrics():
    assert efficiency.tokens_per_second(200, 2.0) == 100.0
    # 13.5 GB per token at 94 tokens/s.
    assert efficiency.decode_bandwidth_gb_per_s(13.5e9, 94) == pytest.approx(1269.0)


def test_roofline_bound_of_a_decode_mlp():
    d, h = 4096, 14336
    flops = 2 * (2 * 1 * d * h)  # one token through two linears
    nbytes = 2 * d * h * 2  # both bf16 weight matrices
    # 1 FLOP per byte x 1555 GB/s / 312 TFLOP/s
    assert efficiency.roofline_bound(flops, nbytes, 312e12, 1555e9) == pytest.approx(1555e9 / 312e12)
    assert efficiency.roofline_bound(1e15, 1.0, 312e12, 1555e9) == 1.0


@pytest.mark.parametrize("bad", [0.0, -1.0, math.inf, math.nan])
def test_bad_seconds_rejected(bad):
    with pytest.raises(ValueError, match="seconds"):
        efficiency.bandwidth_gb_per_s(1.0, bad)


# -- targets -------------------------------------------------------------------

def test_reference_device_gets_reference_figures():
    assert targets.bandwidth_target("gemv", "bfloat16", A100_40) == 990
    assert targets.bandwidth_target("gather_gemv", "int8", A100_40) == 990
    assert targets.bandwidth_target("layer_norm", "bfloat16", A100_40) == 950


def test_other_devices_get_the_same_fraction_of_peak():
    # 990 GB/s of 1555 on the A100 -> the same fraction of an H100's 3350.
    assert targets.bandwidth_target("gemv", "bfloat16", H100_SXM) == pytest.approx(990 / 1555 * 3350)
    assert targets.bandwidth_target("gemv", "int8", CPU) == pytest.approx(870 / 1555 * 50)
    # An A100 80GB is not the reference device: its larger bandwidth scales the target.
    a100_80 = datasheet_peaks("NVIDIA A100-SXM4-80GB")
    assert a100_80 is not None
    assert targets.bandwidth_target("gemv", "bfloat16", a100_80) == pytest.approx(990 / 1555 * 2039)


def test_flops_target_scaled_by_roofline():
    assert targets.flops_utilization_target("mlp_layer_norm_gelu", "bfloat16", 1.0) == 0.8
    assert targets.flops_utilization_target("mlp_layer_norm_gelu", "bfloat16", 0.005) == pytest.approx(0.004)


def test_model_targets():
    # tokens/s from the bandwidth target and the bytes per token: 1253 GB/s / 13.33 GB = 94 tokens/s.
    assert targets.tokens_target("llama", "bfloat16", A100_40, 1253e9 / 94) == pytest.approx(94)
    assert targets.compile_time_target("llama", "int8", "cuda") == 136
    assert targets.compile_time_target("llama", "int8", "cpu") is None
    assert targets.bandwidth_target("mixtral_moe", "bfloat16", A100_40) is None
    assert targets.bandwidth_target("mixtral_moe", "int8", A100_40) == 1130


# -- peak table ----------------------------------------------------------------

@pytest.mark.parametrize(
    ("name", "label"),
    [
        ("NVIDIA A100-SXM4-40GB", "A100 40GB (SXM or PCIe)"),
        ("NVIDIA A100-PCIE-40GB", "A100 40GB (SXM or PCIe)"),
        ("NVIDIA A100-SXM4-80GB", "A100 80GB SXM"),
        ("NVIDIA A100 80GB PCIe", "A100 80GB PCIe"),
        ("NVIDIA H100 80GB HBM3", "H100 SXM"),
        ("NVIDIA H100 PCIe", "H100 PCIe"),
        ("NVIDIA H100 NVL", "H100 NVL"),
        ("NVIDIA H200", "H200 SXM"),
        ("NVIDIA H200 NVL", "H200 NVL"),
        ("NVIDIA L4", "L4"),
        ("NVIDIA A10G", "A10G"),
        ("NVIDIA A10", "A10"),
        ("NVIDIA GH200 480GB", None),  # not an H200
        ("NVIDIA L40S", None),  # not an L4
        ("Tesla T4", None),
    ],
)
def test_datasheet_lookup(name, label):
    entry = datasheet_entry(name)
    assert (entry.label if entry else None) == label


def test_datasheet_values():
    h100 = datasheet_peaks("NVIDIA H100 80GB HBM3")
    assert h100 is not None and h100.source == "datasheet"
    assert (h100.flops_per_s, h100.bytes_per_s) == (989e12, 3.35e12)
    l4 = datasheet_peaks("NVIDIA L4")
    assert l4 is not None and (l4.flops_per_s, l4.bytes_per_s) == (121e12, 300e9)
    assert datasheet_peaks("Some Future GPU") is None
    assert name_tokens("NVIDIA A100-SXM4-40GB") == {"nvidia", "a100", "sxm4", "40gb"}


# -- timing helpers ------------------------------------------------------------

def test_flush_is_twice_the_l2():
    assert flush_bytes(SimpleNamespace(L2_cache_size=40 * 2**20)) == 80 * 2**20  # A100
    assert flush_bytes(SimpleNamespace(L2_cache_size=50 * 2**20)) == 100 * 2**20  # H100
    assert flush_bytes(SimpleNamespace(L2_cache_size=0)) == FALLBACK_FLUSH_BYTES
    assert flush_bytes(SimpleNamespace()) == FALLBACK_FLUSH_BYTES


def test_last_level_cache_from_sysfs(tmp_path):
    for index, (level, kind, size) in enumerate(
        [(1, "Data", "48K"), (1, "Instruction", "32K"), (2, "Unified", "1024K"), (3, "Unified", "32768K")]
    ):
        d = tmp_path / f"index{index}"
        d.mkdir()
        (d / "level").write_text(f"{level}\n")
        (d / "type").write_text(f"{kind}\n")
        (d / "size").write_text(f"{size}\n")
    assert last_level_cache_bytes(tmp_path) == 32 * 2**20
    assert last_level_cache_bytes(tmp_path / "missing") == FALLBACK_LLC_BYTES


def test_rotation_count():
    llc = 32 * 2**20
    # 2 MB per call: the other copies must cover 64 MB -> 32 others + itself.
    assert rotation_count(2 * 2**20, llc) == 33
    # Larger than twice the cache: one other copy is enough.
    assert rotation_count(100 * 2**20, llc) == 2
    # Tiny calls are capped: overhead dominates them anyway.
    assert rotation_count(4096, llc) == MAX_COPIES
    with pytest.raises(ValueError):
        rotation_count(0, llc)


def test_cpu_timing_uses_the_core_loop():
    import torch

    x = torch.randn(256, 256)
    calls = []

    def fn():
        calls.append(1)
        return x @ x

    t = time_callable(fn, device="cpu", min_run_time=0.02)
    assert len(t.samples_s) >= 3 and all(s > 0 for s in t.samples_s)
    assert "C++ core loop" in t.method
    assert len(calls) >= len(t.samples_s)
    with pytest.raises(ValueError, match="CUDA"):
        time_callable(fn, device="cpu", min_run_time=0.02, cuda_graph=True)
