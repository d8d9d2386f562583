"""Peak dense bf16 FLOP/s and memory bandwidth of the device a run measures on.

Known GPUs get their datasheet figures (the table below, matched on the
device name torch reports). CPUs and GPUs not in the table get the machine's
own peaks, measured once with a large bf16 GEMM and a large copy and cached
per machine under ``harness.files.cache.cache_dir("peaks")``. ``Peaks.source`` says
which was used; run records store it.

A peak is what the machine can do, so a measurement is the best of several
tries, and one taken while the machine was busy (records.noise's load signal,
the one the noise warning reports) is used for that run but never cached. A
kernel that runs faster than a measured peak (FLOP/s or bytes/s alike,
``PeakKind``) proves the peak stale: the run measures it again or raises it
to the observed rate, in the cache too (peak_check.py), and says so.

A measured peak is the best this torch build achieves here, not a datasheet
ceiling, so utilisation against it can come close to 1; datasheet peaks are
clock-and-width products that real kernels never quite reach.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import re
import socket
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from harness.files.atomic import atomic_write_text
from harness.files.cache import cache_dir, writing_cache
from harness.options import DEFAULT_MIN_RUN_TIME
from harness.records.noise import Load, current_load

# Tries per measurement; the peak is the best of them.
TRIES = 3


@dataclasses.dataclass(frozen=True)
class Peaks:
    flops_per_s: float  # dense bf16 FLOP/s
    bytes_per_s: float  # memory bandwidth, bytes/s
    source: str  # "datasheet", "measured", "cached" or "raised" (a kernel beat the measured peak)
    device_name: str
    detail: str = ""  # the datasheet entry, or how and where it was measured
    cache_file: str = ""  # where a measured peak is cached; empty where it is not

    def to_json(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


@dataclasses.dataclass(frozen=True)
class PeakKind:
    """One of the two peaks a ``Peaks`` holds: its field (in ``Peaks`` and in a cache record) and its unit."""

    field: str
    unit: str  # of 1e9 per second
    share: str  # what a rate over this peak is called

    def of(self, peaks: Peaks) -> float:
        return float(getattr(peaks, self.field))

    def text(self, rate: float) -> str:
        return f"{rate / 1e9:,.1f} {self.unit}"


FLOP_PEAK = PeakKind("flops_per_s", "GFLOP/s", "utilisation")
BANDWIDTH_PEAK = PeakKind("bytes_per_s", "GB/s", "share of the peak bandwidth")
PEAK_KINDS = (FLOP_PEAK, BANDWIDTH_PEAK)


@dataclasses.dataclass(frozen=True)
class Observed:
    """The fastest rate of one kind a run's kernels reached, and which row and shape reached it."""

    kind: PeakKind
    rate: float
    by: str


@dataclasses.dataclass(frozen=True)
class DatasheetEntry:
    label: str
    tokens: tuple[str, ...]  # every one must appear among the device name's tokens
    flops_per_s: float
    bytes_per_s: float
    source: str


# Dense (no 2:4 sparsity) bf16 tensor-core FLOP/s and HBM/GDDR bandwidth from
# NVIDIA's product datasheets. Datasheets quote bf16 "with sparsity"; the dense
# figure is half of it. Order matters: more specific entries come first (an
# "A100 80GB PCIe" must not match the SXM entry).
DATASHEET: tuple[DatasheetEntry, ...] = (
    DatasheetEntry("A100 80GB PCIe", ("a100", "80gb", "pcie"), 312e12, 1935e9, "NVIDIA A100 datasheet"),
    DatasheetEntry("A100 80GB SXM", ("a100", "80gb"), 312e12, 2039e9, "NVIDIA A100 datasheet"),
    DatasheetEntry("A100 40GB (SXM or PCIe)", ("a100",), 312e12, 1555e9, "NVIDIA A100 datasheet"),
    DatasheetEntry("H100 NVL", ("h100", "nvl"), 835e12, 3.9e12, "NVIDIA H100 datasheet (1671 TF sparse / 2)"),
    DatasheetEntry("H100 PCIe", ("h100", "pcie"), 756e12, 2.0e12, "NVIDIA H100 datasheet (1513 TF sparse / 2)"),
    DatasheetEntry("H100 SXM", ("h100",), 989e12, 3.35e12, "NVIDIA H100 datasheet (1979 TF sparse / 2)"),
    DatasheetEntry("H200 NVL", ("h200", "nvl"), 835e12, 4.8e12, "NVIDIA H200 datasheet (1671 TF sparse / 2)"),
    DatasheetEntry("H200 SXM", ("h200",), 989e12, 4.8e12, "NVIDIA H200 datasheet (1979 TF sparse / 2)"),
    DatasheetEntry("L4", ("l4",), 121e12, 300e9, "NVIDIA L4 datasheet (242 TF sparse / 2)"),
    # NVIDIA publishes no A10G datasheet; AWS's G5 documentation and public
    # A10-vs-A10G comparisons give 600 GB/s and about 70 TF dense bf16 (the
    # A10 itself: 125 TF).
    DatasheetEntry("A10G", ("a10g",), 70e12, 600e9, "AWS G5 / A10G spec comparisons"),
    DatasheetEntry("A10", ("a10",), 125e12, 600e9, "NVIDIA A10 datasheet (250 TF sparse / 2)"),
)


def name_tokens(device_name: str) -> set[str]:
    """Lower-case alphanumeric words: "NVIDIA A100-SXM4-40GB" -> {"nvidia", "a100", "sxm4", "40gb"}.

    Matching whole tokens, not substrings, keeps "GH200" from matching H200
    and "L40S" from matching L4.
    """
    return set(re.findall(r"[a-z0-9]+", device_name.lower()))


def datasheet_entry(device_name: str) -> DatasheetEntry | None:
    tokens = name_tokens(device_name)
    for entry in DATASHEET:
        if all(t in tokens for t in entry.tokens):
            return entry
    return None


def datasheet_peaks(device_name: str) -> Peaks | None:
    entry = datasheet_entry(device_name)
    if entry is None:
        return None
    return Peaks(
        entry.flops_per_s, entry.bytes_per_s, "datasheet", device_name, f"{entry.label}: {entry.source}"
    )


@dataclasses.dataclass(frozen=True)
class MeasureSizes:
    """How big the peak-finding GEMM and copy are; part of the cache key."""

    gemm_n: int
    copy_bytes: int


# The GEMM must be large enough to reach the compute roof, the copy large
# enough (several times the last-level cache) to measure DRAM, not cache.
CPU_SIZES = MeasureSizes(gemm_n=2048, copy_bytes=256 * 2**20)
GPU_SIZES = MeasureSizes(gemm_n=8192, copy_bytes=2 * 2**30)


def _machine_key(device: str, device_name: str, sizes: MeasureSizes) -> dict[str, Any]:
    import torch

    return {
        "hostname": socket.gethostname(),
        "device": device,
        "device_name": device_name,
        "torch": torch.__version__,
        "num_threads": torch.get_num_threads() if device == "cpu" else None,
        "gemm_n": sizes.gemm_n,
        "copy_bytes": sizes.copy_bytes,
    }


def cache_path(key: dict[str, Any]) -> Path:
    digest = hashlib.sha256(json.dumps(key, sort_keys=True).encode()).hexdigest()[:16]
    slug = re.sub(r"[^a-z0-9]+", "-", f"{key['device']}-{key['device_name']}".lower()).strip("-")[:60]
    return cache_dir("peaks") / f"{slug}-{digest}.json"


def _gemm_flops_per_s(device: str, n: int, min_run_time: float) -> float:
    import torch

    from harness.suites.gpt_fast.timing import time_callable

    gen = torch.Generator(device=device).manual_seed(0)
    a = torch.randn(n, n, device=device, dtype=torch.bfloat16, generator=gen)
    b = torch.randn(n, n, device=device, dtype=torch.bfloat16, generator=gen)
    out = torch.empty(n, n, device=device, dtype=torch.bfloat16)
    timing = time_callable(lambda: torch.mm(a, b, out=out), device=device, min_run_time=min_run_time, l2_flush=False)
    return 2.0 * n**3 / min(timing.samples_s)


def _copy_bytes_per_s(device: str, nbytes: int, min_run_time: float) -> float:
    import torch

    from harness.suites.gpt_fast.timing import time_callable

    src = torch.ones(nbytes, device=device, dtype=torch.uint8)
    dst = torch.empty_like(src)
    timing = time_callable(lambda: dst.copy_(src), device=device, min_run_time=min_run_time, l2_flush=False)
    # A copy reads every byte once and writes it once.
    return 2.0 * nbytes / min(timing.samples_s)


def measure(device: str, sizes: MeasureSizes, min_run_time: float = DEFAULT_MIN_RUN_TIME) -> tuple[float, float]:
    """(bf16 FLOP/s of an n x n GEMM, bytes/s of a copy) at their fastest repetition.

    The fastest, not the median: a peak is what the machine can do, and on a
    shared machine slower repetitions are other processes' noise.
    """
    return (
        _gemm_flops_per_s(device, sizes.gemm_n, min_run_time),
        _copy_bytes_per_s(device, sizes.copy_bytes, min_run_time),
    )


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


def _read_record(path: Path) -> dict[str, Any] | None:
    try:
        data = json.loads(path.read_text())
        float(data["flops_per_s"]), float(data["bytes_per_s"])
        return data if isinstance(data.get("key"), dict) else None
    except (OSError, ValueError, KeyError, TypeError):
        return None  # absent or unreadable: measure again


def _write_record(path: Path, record: dict[str, Any]) -> None:
    with writing_cache("cache this machine's measured peaks"):
        atomic_write_text(path, json.dumps(record, indent=1) + "\n")


def describe_load(loads: list[dict[str, Any]]) -> str:
    """The load seen before each try, in a few words: "busy 3%, load 0.4 on 2 cores"."""
    if not loads:
        return "load not recorded"
    busiest = max(loads, key=lambda x: x.get("busy_fraction") or 0.0)
    busy = busiest.get("busy_fraction")
    load = max((x.get("load_average_1m") or 0.0) for x in loads)
    busy_text = "busy unknown" if busy is None else f"other processes busy {busy:.0%}"
    return f"{busy_text}, load average {load:.2f} on {busiest.get('usable_cores')} core(s)"


def _best_of(
    device: str, sizes: MeasureSizes, min_run_time: float, tries: int, proc: Path
) -> tuple[float, float, list[Load]]:
    """(best FLOP/s, best bytes/s, the load sampled before each try) over ``tries`` measurements."""
    flops = bandwidth = 0.0
    loads: list[Load] = []
    for _ in range(max(1, tries)):
        loads.append(current_load(proc=proc))
        f, b = measure(device, sizes, min_run_time)
        flops, bandwidth = max(flops, f), max(bandwidth, b)
    return flops, bandwidth, loads


def _busy(loads: list[Load]) -> str | None:
    """The first finding of the load signal over the tries, None where the machine was quiet throughout."""
    return next((finding for load in loads for finding in load.findings), None)


def measured_peaks(
    device: str,
    device_name: str,
    sizes: MeasureSizes,
    min_run_time: float = DEFAULT_MIN_RUN_TIME,
    tries: int = TRIES,
    proc: Path = Path("/proc"),
) -> Peaks:
    """This machine's measured peaks: from the per-machine cache, else measured now (best of ``tries``).

    Before each try the machine's load is sampled (``proc`` is where
    records.noise reads it); if any sample says busy, the peak serves this
    run only and is not cached, so the next run measures again.
    """
    key = _machine_key(device, device_name, sizes)
    path = cache_path(key)
    data = _read_record(path)
    if data is not None and data["key"] == key:
        raised = data.get("raised")
        how = f"{raised.get('how', 'raised')} {raised['at']}" if raised else describe_load(data.get("load") or [])
        return Peaks(
            float(data["flops_per_s"]), float(data["bytes_per_s"]), "raised" if raised else "cached", device_name,
            f"measured {data['measured_at']} ({how}), cached in {path}", str(path),
        )
    flops, bandwidth, loads = _best_of(device, sizes, min_run_time, tries, proc)
    detail = f"bf16 GEMM n={sizes.gemm_n}, copy of {sizes.copy_bytes} bytes, best of {len(loads)} tries"
    busy = _busy(loads)
    if busy:
        return Peaks(flops, bandwidth, "measured", device_name,
                     f"{detail}; not cached, the machine was busy ({busy}): the next run measures again")
    record = {
        "key": key, "flops_per_s": flops, "bytes_per_s": bandwidth, "measured_at": _now(),
        "tries": len(loads), "load": [load.to_json() for load in loads],
    }
    _write_record(path, record)
    return Peaks(flops, bandwidth, "measured", device_name, f"{detail}; cached in {path}", str(path))


def _rates(values: dict[str, float]) -> str:
    """Rates by field, in units: "12.3 GFLOP/s, 4.5 GB/s"."""
    return ", ".join(kind.text(values[kind.field]) for kind in PEAK_KINDS if kind.field in values)


def restate_stale_peak(
    peaks: Peaks,
    observed: Sequence[Observed],
    min_run_time: float = DEFAULT_MIN_RUN_TIME,
    proc: Path = Path("/proc"),
) -> Peaks:
    """New peaks once a run's kernels reached ``observed`` (the fastest rate of each kind of peak), where
    any is faster than ``peaks``: proof they are stale. FLOP/s and bandwidth alike, in one pass.

    A cached peak is measured again (best of TRIES, both kinds) and the cache
    replaced with, per kind, the better of that and the kernels' rate; where the
    machine is busy now, the figures beaten are only raised to the kernels' rate
    (a rate they reached, so no guess). A peak that was never cached is raised
    for this run. A datasheet peak is left as it is: a kernel cannot beat it,
    and the caller withholds the impossible figure instead.
    """
    stale = [o for o in observed if o.rate > o.kind.of(peaks)]
    if peaks.source == "datasheet" or not stale:
        return peaks
    old = {o.kind.field: o.kind.of(peaks) for o in stale}
    fastest = {o.kind.field: o.rate for o in observed}
    found = "; ".join(f"peak stale: {o.by} ran at {o.kind.text(o.rate)}, faster than the peak of "
                      f"{o.kind.text(o.kind.of(peaks))}" for o in stale) + f" ({peaks.detail})"
    data = _read_record(Path(peaks.cache_file)) if peaks.cache_file else None
    if data is None:
        return dataclasses.replace(peaks, **{o.kind.field: o.rate for o in stale}, source="raised",
                                   detail=f"{found}; raised to the kernels' rate for this run")
    key = data["key"]
    sizes = MeasureSizes(int(key["gemm_n"]), int(key["copy_bytes"]))
    flops, bandwidth, loads = _best_of(str(key["device"]), sizes, min_run_time, TRIES, proc)
    busy = _busy(loads)
    if busy:
        new = {**{kind.field: kind.of(peaks) for kind in PEAK_KINDS}, **{o.kind.field: o.rate for o in stale}}
        short = "raised to the kernel's rate"
        how = f"{short} (not measured again: the machine is busy, {busy})"
    else:
        measured = {FLOP_PEAK.field: flops, BANDWIDTH_PEAK.field: bandwidth}
        new = {field: max(rate, fastest.get(field, 0.0)) for field, rate in measured.items()}
        short = "measured again"
        below = {field for field, rate in measured.items() if rate < fastest.get(field, 0.0)}
        how = f"{short}: " + ", ".join(kind.text(measured[kind.field])
                                       + (" (below the kernel's rate)" if kind.field in below else "")
                                       for kind in PEAK_KINDS)
        data.update(measured_at=_now(), tries=len(loads), load=[load.to_json() for load in loads])
    data.update(new, raised={"from": old, "by": ", ".join(o.by for o in stale), "at": _now(), "how": short})
    _write_record(Path(peaks.cache_file), data)
    return dataclasses.replace(peaks, **new, source="raised",
                               detail=f"{found}; {how}; now {_rates(new)}, cached in {peaks.cache_file}")


@dataclasses.dataclass(frozen=True)
class CachedPeak:
    """One cache entry, for ``python -m harness cache``."""

    path: Path
    device: str
    device_name: str
    flops_per_s: float
    bytes_per_s: float
    measured_at: str
    load: str  # the load seen while it was measured, in words
    raised: str  # "" or when and by which kernel it was raised

    @classmethod
    def read(cls, path: Path) -> CachedPeak | None:
        data = _read_record(path)
        if data is None:
            return None
        key, raised = data["key"], data.get("raised")
        raised_text = ""
        if raised:
            # "from": the figures it replaced, by field (a record of an earlier harness: the FLOP/s alone).
            was = raised["from"] if isinstance(raised["from"], dict) else {FLOP_PEAK.field: raised["from"]}
            raised_text = f"{raised['at']} by {raised['by']} (from {_rates(was)}; {raised.get('how', 'raised')})"
        return cls(
            path, str(key.get("device")), str(key.get("device_name")), float(data["flops_per_s"]),
            float(data["bytes_per_s"]), str(data.get("measured_at", "?")), describe_load(data.get("load") or []),
            raised_text,
        )


def cached_peaks() -> list[CachedPeak]:
    """Every readable peak in the cache, oldest measurement first."""
    folder = cache_dir("peaks")
    found = [CachedPeak.read(p) for p in sorted(folder.glob("*.json"))]
    return sorted((p for p in found if p is not None), key=lambda p: p.measured_at)


def cache_entries(clear: bool = False) -> list[str]:
    """``python -m harness cache``'s lines for the peaks: each one, when and under what load it was
    measured (and raised); with ``clear``, removes them and says how many."""
    if clear:
        removed = clear_cached_peaks()
        return [
            f"removed {len(removed)} cached peak(s) from {cache_dir('peaks')}: the next gpt_fast run measures again"
        ]
    found = cached_peaks()
    if not found:
        return ["no cached peaks (a gpt_fast run on a CPU or an unknown GPU measures and caches them)"]
    lines = []
    for p in found:
        lines.append(f"{p.device} {p.device_name}: {p.flops_per_s / 1e9:,.1f} GFLOP/s bf16, "
                     f"{p.bytes_per_s / 1e9:,.1f} GB/s; measured {p.measured_at} ({p.load})"
                     + (f"; raised {p.raised}" if p.raised else ""))
        lines.append(f"  {p.path}")
    return lines


def clear_cached_peaks() -> list[Path]:
    """Remove every cached peak (the next run measures again); the paths removed."""
    removed = []
    with writing_cache("clear the cached peaks"):
        for path in sorted(cache_dir("peaks").glob("*.json")):
            path.unlink(missing_ok=True)
            removed.append(path)
    return removed


def device_name(device: str) -> str:
    """The GPU's name on CUDA, the CPU model on CPU: the ``arch`` column."""
    if device.startswith("cuda"):
        import torch

        return torch.cuda.get_device_name(torch.device(device))
    from harness.records.environment import cpu_model

    return cpu_model()


def peaks_for(device: str, sizes: MeasureSizes | None = None, min_run_time: float = DEFAULT_MIN_RUN_TIME) -> Peaks:
    """Datasheet peaks for a known GPU; otherwise this machine's measured (and cached) peaks."""
    name = device_name(device)
    if device.startswith("cuda"):
        known = datasheet_peaks(name)
        if known is not None:
            return known
    if sizes is None:
        sizes = GPU_SIZES if device.startswith("cuda") else CPU_SIZES
    return measured_peaks(device, name, sizes, min_run_time)
