"""What `bench --phases` costs: counting a compile-time case with and without its phases, in one run.

Counts the same case of the compile-time suite under callgrind with
`python -m harness bench compile_time -k CASE --mode instructions` and with
`--phases` added, alternating, each a fresh `bench` process with a fresh
worker (`--keep-worker 0`), and prints:

  1. the counting time of each (the whole command: worker start, import torch
     under valgrind, the compile counted, the dumps read) and the ratio
     (target <= 1.10x);
  2. the count of each and the difference, and that difference per phase
     boundary, which mixes what marking a boundary adds with the case's own
     noise between processes;
  3. what one boundary adds to a count, exactly: a Timer counts torch's event
     logger's start and end 200 times with the wrapper cutting (collection off
     from region_end to region_begin, as in a phased count) and without it.

Run: .venv/bin/python benchmarks/self/phases_cost.py [-k float_args] [--repeats 2]
(one count of float_args takes 1-3 minutes on a loaded 2-core machine).
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from harness.files.atomic import atomic_write_text


def count(case: str, phases: bool, out: Path) -> tuple[float, float, int]:
    """(seconds, instructions, boundaries) of one `bench` of ``case``."""
    command = [sys.executable, "-m", "harness", "bench", "compile_time", "-k", f"{case} and instructions",
               "--mode", "instructions", "--counter", "callgrind", "--keep-worker", "0", "--output", str(out)]
    start = time.perf_counter()
    done = subprocess.run(command + (["--phases"] if phases else []), capture_output=True, text=True)
    seconds = time.perf_counter() - start
    if done.returncode != 0:
        sys.exit(f"bench failed ({done.returncode}):\n{done.stdout}\n{done.stderr}")
    result = json.loads(out.read_text())["results"][0]
    return seconds, float(result["extra"]["actual"]), int((result["extra"].get("phases") or {}).get("boundaries", 0))


SETUP = """
import torch._dynamo.utils as u
log = u.get_chromium_event_logger()
"""
CUT = """
from harness.suites.compile_time.phases import CallgrindCuts, events_cut
cuts = CallgrindCuts()
cuts._dump = lambda reason: None  # a dump runs with collection off: uncounted either way
cuts.collecting = True
cut = events_cut(cuts)
cut.__enter__()
"""
EVENTS = """
log.log_event_start("x", 0, {}, False, None)
log.log_event_end("x", 0, {}, 0, False, None)
"""
EVENT_PAIRS = 200


def per_boundary() -> float:
    """Instructions one boundary adds to a count (the wrapper's call up to region_end, and back from region_begin)."""
    import harness

    counts = []
    for setup in (SETUP, SETUP + CUT):
        stats = harness.Timer(EVENTS, setup=setup).collect_callgrind(number=EVENT_PAIRS, repeats=1)
        stats = stats[0] if isinstance(stats, tuple) else stats
        counts.append(stats.counts(denoise=False))
    return (counts[1] - counts[0]) / (2 * EVENT_PAIRS)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("-k", dest="case", default="float_args", help="the case (a -k expression; default float_args)")
    parser.add_argument("--repeats", type=int, default=2, help="counts each way, alternating (default 2)")
    parser.add_argument("--json", help="also write the figures as JSON to this file")
    parser.add_argument("--boundary-only", action="store_true", help="only the exact cost of one boundary (3.)")
    args = parser.parse_args()
    if args.boundary_only:
        print(f"one boundary adds {per_boundary():,.0f} instructions to a count")
        return 0
    runs: dict[bool, list[tuple[float, float, int]]] = {False: [], True: []}
    with tempfile.TemporaryDirectory() as tmp:
        for i in range(args.repeats):
            for phases in (False, True) if i % 2 == 0 else (True, False):
                runs[phases].append(count(args.case, phases, Path(tmp) / f"run{i}{phases}.json"))
                s, n, b = runs[phases][-1]
                print(f"  {'with' if phases else 'without'} phases: {s:.1f} s, {n:,.0f} instructions"
                      + (f", {b} boundaries" if phases else ""), flush=True)
    plain_s = statistics.median(r[0] for r in runs[False])
    phased_s = statistics.median(r[0] for r in runs[True])
    plain_n = statistics.median(r[1] for r in runs[False])
    phased_n = statistics.median(r[1] for r in runs[True])
    boundaries = runs[True][0][2]
    spread = (max(r[1] for r in runs[False]) - min(r[1] for r in runs[False])) / plain_n
    print(f"case {args.case}, medians of {args.repeats}:")
    print(f"  counting time without phases {plain_s:.1f} s, with phases {phased_s:.1f} s: "
          f"{phased_s / plain_s:.3f}x (target <= 1.10x)")
    print(f"  count without {plain_n:,.0f}, with {phased_n:,.0f}: {phased_n - plain_n:+,.0f} "
          f"({(phased_n - plain_n) / plain_n:+.3%}; the case's own spread without phases {spread:.3%}), "
          f"{boundaries} boundaries: {(phased_n - plain_n) / max(boundaries, 1):+,.0f} per boundary")
    boundary = per_boundary()
    print(f"  one boundary adds {boundary:,.0f} instructions to a count (exact: {EVENT_PAIRS} event pairs counted "
          f"with and without the cut); x {boundaries} boundaries = {boundary * boundaries:,.0f} "
          f"({boundary * boundaries / plain_n:.3%} of the count)")
    if args.json:
        atomic_write_text(args.json, json.dumps({"per_boundary": boundary,
            "case": args.case, "repeats": args.repeats, "seconds": {"without": plain_s, "with": phased_s},
            "ratio": phased_s / plain_s, "instructions": {"without": plain_n, "with": phased_n},
            "boundaries": boundaries, "runs": {str(k): v for k, v in runs.items()},
        }, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
