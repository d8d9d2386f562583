"""What `--cache-sim` costs: the count of the same statement with and without callgrind's cache simulation.

Each statement is counted through ``Timer.collect_callgrind`` in two workers
(one plain, one simulating the caches), each started and warmed first (its
start-up, ``import torch`` under valgrind, is not what a count costs); then
the best of a few counts of each, side by side, and their ratio (target:
at most 2x). The simulated count also gives its instructions, so the two
columns can be checked to count the same work.

Run: .venv/bin/python benchmarks/self/cache_sim_cost.py [--repeats N] [--json out.json]
(a few minutes on a quiet 2-core machine; more under load).
"""

from __future__ import annotations

import argparse
import json
import time

import harness

SETUP = "import torch\nx = torch.ones(4, 4)\nw = torch.ones(4, 4)\nbig = torch.zeros(1 << 20)"
STATEMENTS = ["y = x * w", "y = torch.cat([x, w])", "y = big.sum()"]
NUMBER = 100


def _count(stmt: str, cache_sim: bool) -> tuple[float, int]:
    start = time.perf_counter()
    stats = harness.Timer(stmt, setup=SETUP).collect_callgrind(number=NUMBER, cache_sim=cache_sim)
    return time.perf_counter() - start, stats.own_counts(denoise=False)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3, help="counts of each statement per mode (best kept)")
    parser.add_argument("--json", help="also write the figures to this file")
    args = parser.parse_args()
    for cache_sim in (False, True):  # both workers started (and torch imported under valgrind) before timing
        _count("pass", cache_sim)
    rows = []
    print(f"{'statement':<24}{'plain (s)':>11}{'cache-sim (s)':>15}{'ratio':>8}{'Ir plain':>12}{'Ir sim':>12}")
    for stmt in STATEMENTS:
        plain = min(_count(stmt, False) for _ in range(args.repeats))
        sim = min(_count(stmt, True) for _ in range(args.repeats))
        ratio = sim[0] / plain[0]
        rows.append({"statement": stmt, "plain_s": plain[0], "cache_sim_s": sim[0], "ratio": ratio,
                     "instructions_plain": plain[1], "instructions_cache_sim": sim[1]})
        print(f"{stmt:<24}{plain[0]:>11.2f}{sim[0]:>15.2f}{ratio:>7.2f}x{plain[1]:>12,}{sim[1]:>12,}")
    worst = max(r["ratio"] for r in rows)
    print(f"worst ratio {worst:.2f}x (target <= 2x): {'ok' if worst <= 2 else 'over'}")
    if args.json:
        from harness.files.atomic import atomic_write_text

        atomic_write_text(args.json, json.dumps(rows, indent=2))


if __name__ == "__main__":
    main()
