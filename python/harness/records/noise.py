"""Noise sources that distort wall-time measurements, checked before a run.

Findings are printed as a warning block and stored in the run record's
environment (``environment["noise"]``), so a reader of the record can tell a
quiet run from one taken on a busy laptop in power-saving mode.
"""

from __future__ import annotations

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


def check_noise(
    window: float = 0.25,
    proc: Path = Path("/proc"),
    sys_root: Path = Path("/sys"),
    cores: int | None = None,
) -> dict[str, Any]:
    """What was observed and a list of findings (human sentences), JSON-able for the run record."""
    cores = usable_cores() if cores is None else cores
    govs = governors(sys_root)
    load = load_average(proc)
    busy = busy_fraction(window, proc)
    findings: list[str] = []
    slow = sorted({g for g in govs.values() if g != "performance"})
    if slow:
        findings.append(
            f"CPU frequency governor is {', '.join(slow)} (not performance): clocks change under load; "
            "set it with `sudo cpupower frequency-set -g performance`"
        )
    if busy is not None and busy > BUSY_LIMIT:
        findings.append(
            f"other load: {busy:.0%} of all CPU time was busy while harness was idle; "
            "stop other work or expect slower, noisier times"
        )
    if load is not None and load > LOAD_LIMIT * cores:
        findings.append(f"load average {load:.2f} over the last minute on {cores} usable core(s)")
    if cores < MIN_CORES:
        findings.append(
            f"only {cores} usable core(s): the benchmark shares its core with the OS and harness itself"
        )
    return {
        "checked": True,
        "usable_cores": cores,
        "governors": sorted(set(govs.values())) or None,
        "load_average_1m": load,
        "busy_fraction": None if busy is None else round(busy, 4),
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
