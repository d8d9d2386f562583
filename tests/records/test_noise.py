"""Noise checks: governor, other load (measured for real), core count."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from harness.records.noise import busy_fraction, check_noise, governors, warning_block


def _sysfs(root: Path, governor_by_cpu: dict[int, str]) -> Path:
    for cpu, governor in governor_by_cpu.items():
        d = root / f"devices/system/cpu/cpu{cpu}/cpufreq"
        d.mkdir(parents=True)
        (d / "scaling_governor").write_text(governor + "\n")
    return root


def test_governor_findings(tmp_path: Path):
    slow = _sysfs(tmp_path / "slow", {0: "performance", 1: "powersave"})
    assert governors(slow) == {"cpu0": "performance", "cpu1": "powersave"}
    noise = check_noise(window=0.01, sys_root=slow)
    assert noise["governors"] == ["performance", "powersave"]
    assert any("governor is powersave" in f for f in noise["findings"])
    fast = _sysfs(tmp_path / "fast", {0: "performance", 1: "performance"})
    assert not any("governor" in f for f in check_noise(window=0.01, sys_root=fast)["findings"])
    unreadable = check_noise(window=0.01, sys_root=tmp_path / "none")
    assert unreadable["governors"] is None and not any("governor" in f for f in unreadable["findings"])


def test_few_cores_finding(tmp_path: Path):
    noise = check_noise(window=0.01, sys_root=tmp_path, cores=1)
    assert any("only 1 usable core" in f for f in noise["findings"])
    block = warning_block(noise)
    assert block is not None and block.startswith("warning:") and "only 1 usable core" in block
    assert warning_block({"findings": []}) is None


def test_busy_cpus_are_seen(tmp_path: Path):
    # Keep every core busy with real work while the check samples /proc/stat.
    spin = "import time\nend = time.monotonic() + 5\nwhile time.monotonic() < end: pass\n"
    procs = [subprocess.Popen([sys.executable, "-c", spin]) for _ in range(os.cpu_count() or 2)]
    try:
        busy = busy_fraction(window=0.5)
        noise = check_noise(window=0.5, sys_root=tmp_path)
    finally:
        for p in procs:
            p.kill()
            p.wait()
    assert busy is not None and busy > 0.5
    assert any(f.startswith("other load:") for f in noise["findings"])
    assert noise["checked"] and 0.0 <= noise["busy_fraction"] <= 1.0 and noise["load_average_1m"] is not None
