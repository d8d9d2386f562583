"""How far the same count moves from one fresh counting worker to the next.

One worker repeats a count exactly (every count runs in a fresh fork of one zygote). This script
measures what is left between workers: each statement is counted by ``--workers`` separate
``python`` processes, each with a worker of its own (``HARNESS_KEEP_WORKER=0``, so no kept worker
serves two of them), all in one environment, and prints the distinct counts, how often each came,
and the spread (largest minus smallest, as a share of the smallest). ``--side-by-side`` starts them
two at a time, as ``bench --jobs 2`` and a busy CI machine do.

Run: .venv/bin/python benchmarks/self/worker_spread.py [--workers 6] [--side-by-side]
About 20 s a worker start on the 2-core VM: ~4 minutes with the defaults.
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import shutil
import subprocess
import sys
import tempfile

TENSORS = "x = torch.ones(4, 4)\nw = torch.ones(4, 4)"
STATEMENTS = {
    "y = x * w": ("y = x * w", TENSORS),
    # A TorchScript function compiled in the setup (harness's own TorchScript tasks load a saved module).
    "TorchScript, compiled in setup": (
        "y = cu.f(x, w)",
        TENSORS + "\ncu = torch.jit.CompilationUnit('def f(x, w):\\n    return x * w\\n')",
    ),
}

COUNT = """
import json, sys, harness
print(json.dumps(harness.Timer(sys.argv[1], setup=sys.argv[2]).collect_callgrind(number=100).counts()))
"""


def counts_in_fresh_workers(stmt: str, setup: str, env: dict[str, str], at_once: int) -> list[int]:
    """One count from each of ``at_once`` processes started together, each with a worker of its own."""
    procs = [subprocess.Popen([sys.executable, "-c", COUNT, stmt, setup], stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True, env=env) for _ in range(at_once)]
    counts = []
    for proc in procs:
        out, err = proc.communicate()
        if proc.returncode:
            raise SystemExit(err)
        counts.append(json.loads(out.strip().splitlines()[-1]))
    return counts


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--workers", type=int, default=6, help="fresh workers per statement")
    parser.add_argument("--side-by-side", action="store_true", help="start the workers two at a time")
    args = parser.parse_args()
    tmp = tempfile.mkdtemp(prefix="hws", dir="/tmp")  # this script's workers, apart from any other's
    env = {**os.environ, "TMPDIR": tmp, "HARNESS_KEEP_WORKER": "0"}
    try:
        print(f"{'statement':<32} {'counts for 100 runs (times seen)':<58} spread")
        for label, (stmt, setup) in STATEMENTS.items():
            at_once = 2 if args.side_by_side else 1
            seen = collections.Counter(count for _ in range(0, args.workers, at_once)
                                       for count in counts_in_fresh_workers(stmt, setup, env, at_once))
            low, high = min(seen), max(seen)
            counts = ", ".join(f"{c:,} ({n})" for c, n in sorted(seen.items()))
            print(f"{label:<32} {counts:<58} {(high - low) / low:.3%}", flush=True)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
