"""What `bench --layers` adds to an instruction count: classifying the functions of real profiles.

Counting runs with per-function detail whether or not layers are asked for
(``bench`` keeps the top symbols of every callgrind count), so what
``--layers`` adds is the classification of each profile's functions by the
rules, in the worker, after counting. This script counts a few dispatch-suite
statements once under callgrind (through ``Timer.collect_callgrind``, one
worker), then times the classification of their profiles:

  1. counting wall time per statement (the work --layers rides on; the
     first also starts the callgrind worker and imports torch under it)
  2. classification, cold: the first profile a worker classifies (every
     function matched against the rules)
  3. classification, warm: later profiles (functions seen before are cached)
  4. the share of (2) in (1): the time --layers adds per counted statement

Run: .venv/bin/python benchmarks/self/layers_cost.py [--json out.json]
(about a minute on a quiet 2-core machine; more under load).
"""

from __future__ import annotations

import argparse
import json
import os
import time

import harness
from harness.measure.callgrind import layers
from harness.measure.language import Language

SETUP = "x = torch.ones(4, 4)\nw = torch.ones(4, 4)"
CPP_SETUP = "auto x = torch::ones({4, 4});\nauto w = torch::ones({4, 4});"
STATEMENTS = [
    ("y = x * w", SETUP, Language.PYTHON),
    ("y = x.view(-1)", SETUP, Language.PYTHON),
    ("y = torch.cat([x, w])", SETUP, Language.PYTHON),
    ("auto y = x * w;", CPP_SETUP, Language.CPP),
]


def _best_of(fn, repeats: int = 5) -> float:
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - start)
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", help="also write the figures to this file")
    args = parser.parse_args()
    rows = []
    for stmt, setup, language in STATEMENTS:
        timer = harness.Timer(stmt, setup=setup, global_setup="import torch" if language is Language.PYTHON else "",
                              language=language)
        start = time.perf_counter()
        stats = timer.collect_callgrind(number=100)
        counting = time.perf_counter() - start
        delta = stats.stmt_exclusive_stats - stats.baseline_exclusive_stats
        functions = {fn: c for c, fn in delta}

        def classify(functions=functions) -> None:
            layers.layer_counts(functions, number=100)

        layers._classify.cache_clear()  # a fresh worker: nothing classified yet
        cold = _best_of(lambda: (layers._classify.cache_clear(), classify()))
        warm = _best_of(classify)
        rows.append({"statement": stmt, "language": language.name.lower(), "functions": len(functions),
                     "counting_s": counting, "cold_ms": cold * 1e3, "warm_ms": warm * 1e3})
    print(f"load average {os.getloadavg()[0]:.2f}")
    print(f"{'statement':28} {'functions':>9} {'counting s':>11} {'layers cold ms':>15} {'warm ms':>8} {'share':>7}")
    for r in rows:
        share = r["cold_ms"] / 1e3 / r["counting_s"]
        print(f"{r['statement']:28} {r['functions']:>9} {r['counting_s']:>11.1f} {r['cold_ms']:>15.2f} "
              f"{r['warm_ms']:>8.2f} {share:>7.2%}")
    if args.json:
        from harness.files.atomic import atomic_write_text

        atomic_write_text(args.json, json.dumps({"load_average": os.getloadavg()[0], "rows": rows}, indent=2))


if __name__ == "__main__":
    main()
