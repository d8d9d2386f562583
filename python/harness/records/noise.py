"""Noise sources that distort wall-time measurements, checked before a run.

Findings are printed as a warning block and stored in the run record's
environment (``environment["noise"]``), so a reader of the record can tell a
quiet run from one taken on a busy laptop in power-saving mode.
"""

from __future__ import annotations

import dataclasses
import os
import time
from pathlib import Path
from typing import Any

# Share of all cores found busy while harness itself sleeps; above it other
# processes compete with the benchmark for cores, caches and memory bandwidth.
BUSY_LIMIT = 0.15
# 1-minute load average per usable core.
LOAD_LIMIT = 0.5
MIN_CORES = 2


def governors(sys_root: Path = Path("/sys")) -> dict[str, str]:
    """CPU frequency governor per CPU where readable (absent in most VMs and containers)."""
    out = {}
    for path in sorted((sys_root / "devices/system/cpu").glob("cpu[0-9]*/cpufreq/scaling_governor")):
        try:
            out[path.parent.parent.name] = path.read_text().strip()
        except OSError:
            continue
    return out


def load_average(proc: Path = Path("/proc")) -> float | None:
    try:
        return float((proc / "loadavg").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return None


def _cpu_times(proc: Path) -> tuple[int, int] | None:
    """(idle, total) jiffies of all CPUs from /proc/stat."""
    try:
        with open(proc / "stat") as f:
            first = f.readline().split()
    except OSError:
        return None
    if not first or first[0] != "cpu":
        return None
    values = [int(v) for v in first[1:]]
    # user nice system idle iowait irq softirq steal (guest time is already in user).
    fields = values[:8]
    idle = fields[3] + (fields[4] if len(fields) > 4 else 0)
    return idle, sum(fields)


def busy_fraction(window: float = 0.25, proc: Path = Path("/proc")) -> float | None:
    """Share of all CPUs' time spent busy during ``window`` seconds while this process sleeps."""
    before = _cpu_times(proc)
    time.sleep(window)
    after = _cpu_times(proc)
    if before is None or after is None or after[1] <= before[1]:
        return None
    return max(0.0, 1.0 - (after[0] - before[0]) / (after[1] - before[1]))


def usable_cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


@dataclasses.dataclass(frozen=True)
class Load:
    """Other processes' load on this machine: the one signal for "this machine is busy".

    The noise warning reports it before a wall-time run; a measured peak taken
    while it says busy is not cached (suites/gpt_fast/peaks.py).
    """

    busy_fraction: float | None  # share of all CPU time busy while harness slept; None where unreadable
    load_average_1m: float | None
    cores: int

    @property
    def findings(self) -> list[str]:
        out = []
        if self.busy_fraction is not None and self.busy_fraction > BUSY_LIMIT:
            out.append(
                f"other load: {self.busy_fraction:.0%} of all CPU time was busy while harness was idle; "
                "stop other work or expect slower, noisier times"
            )
        if self.load_average_1m is not None and self.load_average_1m > LOAD_LIMIT * self.cores:
            out.append(f"load average {self.load_average_1m:.2f} over the last minute on {self.cores} usable core(s)")
        return out

    @property
    def busy(self) -> bool:
        return bool(self.findings)

    def to_json(self) -> dict[str, Any]:
        return {
            "busy_fraction": None if self.busy_fraction is None else round(self.busy_fraction, 4),
            "load_average_1m": self.load_average_1m,
            "usable_cores": self.cores,
        }


def current_load(window: float = 0.25, proc: Path = Path("/proc"), cores: int | None = None) -> Load:
    """Sample other processes' load now (sleeps ``window`` seconds)."""
    cores = usable_cores() if cores is None else cores
    return Load(busy_fraction(window, proc), load_average(proc), cores)


def check_noise(
    window: float = 0.25,
    proc: Path = Path("/proc"),
    sys_root: Path = Path("/sys"),
    cores: int | None = None,
) -> dict[str, Any]:
    """What was observed and a list of findings (human sentences), JSON-able for the run record."""
    cores = usable_cores() if cores is None else cores
    govs = governors(sys_root)
    load = current_load(window, proc, cores)
    findings: list[str] = []
    slow = sorted({g for g in govs.values() if g != "performance"})
    if slow:
        findings.append(
            f"CPU frequency governor is {', '.join(slow)} (not performance): clocks change under load; "
            "set it with `sudo cpupower frequency-set -g performance`"
        )
    findings += load.findings
    if cores < MIN_CORES:
        findings.append(
            f"only {cores} usable core(s): the benchmark shares its core with the OS and harness itself"
        )
    return {
        "checked": True,
        "usable_cores": cores,
        "governors": sorted(set(govs.values())) or None,
        "load_average_1m": load.load_average_1m,
        "busy_fraction": load.to_json()["busy_fraction"],
        "findings": findings,
    }


def warning_block(noise: dict[str, Any]) -> str | None:
    findings = noise.get("findings") or []
    if not findings:
        return None
    lines = ["warning: this machine is noisy for wall-time measurements:"]
    lines += [f"  - {f}" for f in findings]
    lines.append("  (recorded in the run record's environment.noise; compare such runs with care)")
    return "\n".join(lines)
