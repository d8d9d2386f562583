"""Wall time of a script that counts one statement, run again and again, with and without a kept worker.

Each run is a fresh `python` process calling `harness.Timer(...).collect_callgrind()`.
Without a kept worker every run starts a callgrind worker (and imports torch
under valgrind); with HARNESS_KEEP_WORKER the first run starts one and the
later runs reuse it. Prints each run's seconds, the medians of runs 2..N and
their ratio; the counts show what the worker's history does to them.

Run: .venv/bin/python benchmarks/self/kept_worker.py [--runs 4]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

SCRIPT = """
import json, harness
s = harness.Timer("y = x * w", setup="x = torch.ones(4, 4)\\nw = torch.ones(4, 4)").collect_callgrind(number=100)
print(json.dumps(s.counts(denoise=True)))
"""


def run(env: dict[str, str]) -> tuple[float, int]:
    t0 = time.perf_counter()
    proc = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True, env=env, check=False)
    seconds = time.perf_counter() - t0
    if proc.returncode:
        raise SystemExit(proc.stderr)
    return seconds, json.loads(proc.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=4)
    args = parser.parse_args()
    tmp = tempfile.mkdtemp(prefix="hkb", dir="/tmp")  # short: kept workers' sockets live under it
    base = {k: v for k, v in os.environ.items() if k != "HARNESS_KEEP_WORKER"}
    base["TMPDIR"] = tmp
    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores", flush=True)
    try:
        rows = {}
        for name, env in (("no kept worker", base), ("kept worker", {**base, "HARNESS_KEEP_WORKER": "300"})):
            rows[name] = [run(env) for _ in range(args.runs)]
            print(f"  {name:<15} " + "  ".join(f"{s:6.2f} s" for s, _ in rows[name])
                  + f"   counts/run {[c // 100 for _, c in rows[name]]}", flush=True)
    finally:
        subprocess.run(["pkill", "-KILL", "-f", "--", f"--listen {tmp}"], check=False)
        shutil.rmtree(tmp, ignore_errors=True)
    cold = statistics.median(s for s, _ in rows["no kept worker"][1:])
    warm = statistics.median(s for s, _ in rows["kept worker"][1:])
    print(f"\nruns 2..{args.runs}, median: kept {warm:.2f} s, not kept {cold:.2f} s, ratio {warm / cold:.3f}")


if __name__ == "__main__":
    main()
