"""Counting as casually as timing: a new statement counted by a fresh script, with and without a kept worker,
against torch's collect_callgrind, in one run.

Each count is a fresh `python` process calling `harness.Timer(...).collect_callgrind()` on a statement
it has not counted before (so nothing is cached but the worker). Prints, with the targets of issue 34:
  1. no worker anywhere (HARNESS_KEEP_WORKER=0): ours against torch's collect_callgrind of the same
     statement, each a fresh process                                   target <= 0.3 of torch's
  2. a new Python statement with a warm kept worker (median of --runs)  target <= 1 s
  3. a new C++ statement with a warm kept worker (median; its compile included)  target <= 4 s,
     and the compiler alone on the same translation unit with the same flags, timed right after
     (the part of the figure no harness change can remove; it moves with the machine's speed)
  4. the same statement counted by a run's own worker and by the kept one: identical counts

Run: .venv/bin/python benchmarks/self/kept_worker.py [--runs 3] [--no-torch]
torch's call costs ~40-80 s on this 2-core VM; --no-torch skips it.
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

SETUP = "x = torch.ones(4, 4)\nw = torch.ones(4, 4)"
CPP_SETUP = "auto x = torch::ones({4, 4}); auto w = torch::ones({4, 4});"

OURS = """
import json, sys, harness
stmt, setup, language = sys.argv[1:4]
s = harness.Timer(stmt, setup=setup, language=language).collect_callgrind(number=100)
print(json.dumps(s.counts()))
"""

TORCH = """
import json, sys
from torch.utils.benchmark import Timer
s = Timer(sys.argv[1], setup=sys.argv[2]).collect_callgrind(number=100)
print(json.dumps(s.counts()))
"""


def timed(script: str, env: dict[str, str], *args: str) -> tuple[float, int]:
    t0 = time.perf_counter()
    proc = subprocess.run([sys.executable, "-c", script, *args], capture_output=True, text=True, env=env, check=False)
    seconds = time.perf_counter() - t0
    if proc.returncode:
        raise SystemExit(proc.stderr)
    return seconds, json.loads(proc.stdout.strip().splitlines()[-1])


def compiler_alone(stmt: str) -> float:
    """Seconds of the compile command ninja ran for ``stmt``'s module, run again on its source."""
    from harness.measure.cpp.build import build
    from harness.measure.cpp.statement import CppStatement

    (compiled,) = build([CppStatement(stmt=stmt, setup=CPP_SETUP)]).compiled.values()
    listed = subprocess.run(["ninja", "-t", "commands"], cwd=compiled.so.parent, capture_output=True, text=True,
                            check=True)
    compile_line = next(line for line in listed.stdout.splitlines() if " -c " in line)
    with tempfile.TemporaryDirectory() as tmp:
        command = compile_line.replace(" -o tu0.o", f" -o {tmp}/tu0.o").replace(" -MF tu0.o.d", f" -MF {tmp}/tu0.o.d")
        t0 = time.perf_counter()
        subprocess.run(command, shell=True, cwd=compiled.so.parent, check=True)
        return time.perf_counter() - t0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=3, help="new statements counted with the warm worker, each kind")
    parser.add_argument("--no-torch", action="store_true", help="skip torch's collect_callgrind (~40-80 s)")
    args = parser.parse_args()
    tmp = tempfile.mkdtemp(prefix="hkb", dir="/tmp")  # a private place for this script's workers
    base = {**os.environ, "TMPDIR": tmp}
    # torch's collect_callgrind starts `python` from PATH: this interpreter's.
    base["PATH"] = os.path.dirname(sys.executable) + os.pathsep + base.get("PATH", "")
    fresh = {**base, "HARNESS_KEEP_WORKER": "0"}
    kept = {**base, "HARNESS_KEEP_WORKER": "300"}
    tag = int(time.time()) % 100000  # statements this worker and the C++ cache have not seen
    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores", flush=True)
    try:
        cold, cold_count = timed(OURS, fresh, f"y = x * w + {tag}", SETUP, "python")
        print(f"1. no worker, a new Python statement: ours {cold:.2f} s", end="", flush=True)
        if not args.no_torch:
            theirs, _ = timed(TORCH, base, f"y = x * w + {tag}", SETUP)
            print(f", torch's {theirs:.2f} s, ratio {cold / theirs:.3f} (target <= 0.3)", flush=True)
        else:
            print(flush=True)
        start, _ = timed(OURS, kept, f"y = x * w - {tag}", SETUP, "python")
        print(f"   (a kept worker started by a first count: {start:.2f} s)", flush=True)
        warm_py = [timed(OURS, kept, f"y = x * w + {tag + i + 1}", SETUP, "python") for i in range(args.runs)]
        print(f"2. warm worker, new Python statements: {'  '.join(f'{s:.2f} s' for s, _ in warm_py)}; "
              f"median {statistics.median(s for s, _ in warm_py):.2f} s (target <= 1 s)", flush=True)
        warm_cpp = [timed(OURS, kept, f"auto y = x * w + {tag + i};", CPP_SETUP, "c++") for i in range(args.runs)]
        print(f"3. warm worker, new C++ statements: {'  '.join(f'{s:.2f} s' for s, _ in warm_cpp)}; "
              f"median {statistics.median(s for s, _ in warm_cpp):.2f} s (target <= 4 s)", flush=True)
        alone = [compiler_alone(f"auto y = x * w + {tag + i};") for i in range(args.runs)]
        print(f"   of which the compiler alone (same TU, same flags, run again): "
              f"median {statistics.median(alone):.2f} s", flush=True)
        _, kept_count = timed(OURS, kept, f"y = x * w + {tag}", SETUP, "python")
        print(f"4. y = x * w + {tag}: a run's own worker {cold_count:,}, the kept worker {kept_count:,}: "
              + ("identical" if kept_count == cold_count else f"{kept_count - cold_count:+,} apart"), flush=True)
    finally:
        subprocess.run([sys.executable, "-m", "harness", "workers", "stop"], env=kept, capture_output=True, check=False)
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
