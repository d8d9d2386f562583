"""harness.Timer.collect_callgrind against torch.utils.benchmark.Timer.collect_callgrind, side by side.

Prints, from one run on this machine (ours, torch's, the ratio, the target):
  1. wall time of the first Python statement of a process (cold: the
     callgrind worker starts and imports torch)            target <= 30% of torch's
  2. wall time of each further statement in that process   target <= 2 s each, median <= 1 s
  3. wall time of 20 statements: ours is one process measuring 20 statements;
     torch's is 20 separate calls, extrapolated from the calls measured here
     (each torch call is a fresh valgrind process, so calls cost the same)
                                                            target <= 5% of torch's
  4. agreement of counts after denoising (statement minus its baseline, the
     same noisy lookups dropped on both sides)             target within +-3%
  5. spread of counts across 3 repeats: Python statements and a native (C++)
     loop                                   target: C++ identical, Python within 0.1%
  6. the same statement counted again in a later call of the same process,
     after every other statement: Python and C++   target: identical (0%)

torch runs the statement unrolled at module level, where every variable is
a dictionary lookup and each copy of the bytecode runs once (so CPython
barely specialises it); harness by default (like timeit) counts a warmed-up
loop with fast locals. (4) compares like with like: ours with
scope="module", torch's layout. The default scope's ratio is printed beside
it, and both with CPython's dict functions removed, which isolates the
difference of layout. torch's collect_callgrind starts `python` from PATH:
this script puts this interpreter's directory first on PATH.

Run: .venv/bin/python benchmarks/self/callgrind_speed.py [--torch-statements 3] [--json out.json]
It is slow (torch needs ~45 s per statement on a quiet 2-core machine).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from typing import Any

import torch
import torch.utils.benchmark as tb

import harness
from harness.measure.callgrind.collect import shared_worker
from harness.measure.callgrind.stats import FunctionCounts, is_noisy
from harness.measure.counter_choice import get_counter
from harness.model.task import Task
from harness.workers.pool import WorkerPool

SETUP_4x4 = "x = torch.ones(4, 4)\nw = torch.ones(4, 4)"
CPP_STMT, CPP_SETUP = "auto y = x * w;", "auto x = torch::ones({4, 4}); auto w = torch::ones({4, 4});"
# (stmt, setup): small eager ops, the kind whose dispatch cost is measured in instructions.
STATEMENTS: list[tuple[str, str]] = [
    ("y = x * w", SETUP_4x4),
    ("y = x + 1", "x = torch.ones(16)"),
    ("torch.empty(4)", "pass"),
    ("x.sum()", "x = torch.randn(1024)"),
    ("x[0]", "x = torch.randn(8, 8)"),
    ("y = torch.add(x, w)", SETUP_4x4),
    ("y = x.view(16)", SETUP_4x4),
    ("y = x.t()", SETUP_4x4),
    ("y = x.clone()", SETUP_4x4),
    ("x.add_(1)", "x = torch.zeros(16)"),
    ("y = x.relu()", SETUP_4x4),
    ("y = torch.cat([x, w])", SETUP_4x4),
    ("y = x.shape", SETUP_4x4),
    ("y = x.size(0)", SETUP_4x4),
    ("y = x.contiguous()", SETUP_4x4),
    ("y = x.to(torch.float64)", SETUP_4x4),
    ("y = x @ w", SETUP_4x4),
    ("y = torch.zeros(4, 4)", "pass"),
    ("y = x.reshape(2, 8)", SETUP_4x4),
    ("y = x[1:3]", SETUP_4x4),
]


def _dict_free(stats: FunctionCounts) -> int:
    return stats.filter(lambda fn: "dictobject.c:" not in fn).sum()


def _quiet(stats: Any) -> int:
    return stats.filter(lambda fn: not is_noisy(fn)).sum()


def denoised(s: Any) -> int:
    """Statement minus baseline, the unicode-key dict lookups dropped: the same rule on both sides.

    (torch's own denoise() names only `lookdict_unicode`, which CPython 3.11+
    no longer has, so on this Python it would drop nothing from torch's side.)
    """
    return _quiet(s.stats()) - _quiet(s.baseline_exclusive_stats)


def dict_free(s: Any) -> int:
    return _dict_free(s.stats()) - _dict_free(s.baseline_exclusive_stats)


def spread(values: list[int]) -> float:
    return (max(values) - min(values)) / min(values) if min(values) else float("inf")


def native_spread(number: int) -> tuple[list[float], float]:
    """A native loop (harness._C's 10-addition test body) counted in 3 repeats; wall seconds."""
    counter = get_counter("callgrind")
    task = Task("meta", "add10", "sampler", {
        "factory": "harness._C:test_sampler", "args": ["add10"], "baseline_args": ["add0"],
        "number": number, "repeats": 3,
    }, mode="instructions")
    t0 = time.perf_counter()
    try:
        (result,) = WorkerPool(1, prefix=counter.worker_prefix(), env=counter.worker_env()).run([task], 0.01)
    finally:
        counter.close()
    if not result.ok:
        raise SystemExit(f"native loop failed: {result.error}")
    return result.extra["totals"], time.perf_counter() - t0


def torch_collect(stmt: str, setup: str, number: int, repeats: int | None) -> tuple[float, Any]:
    """torch's collect_callgrind, timed. Its own check that the child runs under callgrind
    (`callgrind_control --stat`) fails now and then on a busy machine; retry that once, untimed."""
    for attempt in range(2):
        t0 = time.perf_counter()
        try:
            stats = tb.Timer(stmt, setup=setup).collect_callgrind(number=number, repeats=repeats)
            return time.perf_counter() - t0, stats
        except OSError as exc:
            if attempt or "does not appear to be running callgrind" not in str(exc):
                raise
            print(f"  torch failed its own callgrind_control check; retrying: {stmt}", flush=True)
    raise AssertionError("unreachable")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--number", type=int, default=100, help="runs per measurement (default 100, torch's)")
    parser.add_argument("--statements", type=int, default=len(STATEMENTS), help="ours: statements in one process")
    parser.add_argument("--torch-statements", type=int, default=3, help="torch: statements actually measured")
    parser.add_argument("--json", help="also write the figures to this file")
    args = parser.parse_args()
    # (1) is the cold start of a process: a kept worker (the default) would make it warm.
    # Warm counts, kept workers against torch's: benchmarks/self/kept_worker.py.
    os.environ["HARNESS_KEEP_WORKER"] = "0"
    os.environ["PATH"] = os.path.dirname(sys.executable) + os.pathsep + os.environ.get("PATH", "")
    statements = STATEMENTS[: args.statements]
    n_torch = min(args.torch_statements, len(statements))
    print(f"torch {torch.__version__}, Python {sys.version.split()[0]}, number={args.number}, "
          f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores", flush=True)

    # -- ours: one process, statements in sequence (the first one cold) ------
    ours_time: list[float] = []
    ours_stats: list[Any] = []
    for stmt, setup in statements:
        t0 = time.perf_counter()
        ours_stats.append(harness.Timer(stmt, setup=setup).collect_callgrind(number=args.number))
        ours_time.append(time.perf_counter() - t0)
        print(f"  ours  {ours_time[-1]:7.2f} s  {stmt}", flush=True)
    t0 = time.perf_counter()
    ours_repeats = harness.Timer(statements[0][0], setup=statements[0][1]).collect_callgrind(
        number=args.number, repeats=3
    )
    ours_repeats_time = time.perf_counter() - t0
    # Counted again, last, after every other statement: what an earlier call leaves must not move it.
    again = harness.Timer(statements[0][0], setup=statements[0][1]).collect_callgrind(number=args.number)
    cpp = [harness.Timer(CPP_STMT, setup=CPP_SETUP, language="c++").collect_callgrind(number=args.number).counts()
           for _ in range(2)]
    # The same statements again in torch's layout, for the agreement rows.
    ours_module = [
        harness.Timer(stmt, setup=setup).collect_callgrind(number=args.number, scope="module")
        for stmt, setup in statements[:n_torch]
    ]
    native_totals, native_time = native_spread(args.number)
    # Our idle worker would show up in torch's `callgrind_control --stat`
    # check; end it so torch runs as it would alone.
    shared_worker().close()

    # -- torch: separate calls --------------------------------------------------
    torch_time: list[float] = []
    torch_stats: list[Any] = []
    for stmt, setup in statements[:n_torch]:
        seconds, stats = torch_collect(stmt, setup, args.number, None)
        torch_time.append(seconds)
        torch_stats.append(stats)
        print(f"  torch {torch_time[-1]:7.2f} s  {stmt}", flush=True)
    torch_repeats_time, torch_repeats = torch_collect(statements[0][0], statements[0][1], args.number, 3)

    # -- figures ------------------------------------------------------------------
    cold, further = ours_time[0], ours_time[1:]
    torch_call = statistics.mean(torch_time)
    ours_total = sum(ours_time)
    torch_total = torch_call * len(statements)
    rows = [
        ("first statement of a process (cold), s", cold, torch_time[0], "ours <= 30% of torch's"),
        ("each further statement, median s", statistics.median(further) if further else float("nan"),
         torch_call, "ours <= 1 s"),
        ("each further statement, max s", max(further) if further else float("nan"), max(torch_time), "ours <= 2 s"),
        (f"{len(statements)} statements, s (torch: {n_torch} measured x {len(statements) / n_torch:g})",
         ours_total, torch_total, "ours <= 5% of torch's"),
        ("3 repeats of statement 1 in one call, s", ours_repeats_time, torch_repeats_time, ""),
    ]
    print()
    print(f"{'wall time':<58} {'harness':>10} {'torch':>10} {'ratio':>7}  target")
    for name, ours, theirs, target in rows:
        print(f"{name:<58} {ours:>10.2f} {theirs:>10.2f} {ours / theirs:>7.3f}  {target}")

    print()
    print("counts per run after denoising (statement - baseline, unicode dict lookups dropped)")
    print(f"{'':<26} {'harness':>9} {'torch':>9} {'ratio':>6} | {'default':>9} {'ratio':>6} | "
          f"{'no dict:':>9} {'module':>8} {'default':>8} {'torch':>8}")
    agreement = []
    for (stmt, _), mod, loop, theirs in zip(statements, ours_module, ours_stats, torch_stats, strict=False):
        n = args.number
        a, b, c = denoised(mod) / n, denoised(theirs) / n, denoised(loop) / n
        a2, b2, c2 = dict_free(mod) / n, dict_free(theirs) / n, dict_free(loop) / n
        agreement.append({"stmt": stmt, "harness_module": a, "torch": b, "ratio": a / b,
                          "harness_default": c, "ratio_default": c / b,
                          "no_dict": {"harness_module": a2, "harness_default": c2, "torch": b2}})
        print(f"{stmt:<26} {a:>9.1f} {b:>9.1f} {a / b:>6.3f} | {c:>9.1f} {c / b:>6.3f} | "
              f"{'':>9} {a2:>8.1f} {c2:>8.1f} {b2:>8.1f}")
    print("  harness: scope='module' (torch's layout); target: ratio within 0.97 .. 1.03")
    print("  default: scope='function' (timeit's warmed loop, fast locals), for information")
    print("  no dict: CPython's dictobject.c removed as well")

    ours_rep = [s.counts() for s in ours_repeats]
    torch_rep = [s.counts() for s in torch_repeats]
    print()
    print("spread across 3 repeats (max-min)/min          harness        torch   target")
    print(f"  Python {statements[0][0]!r:<36} {spread(ours_rep):>10.4%} {spread(torch_rep):>12.4%}   <= 0.1%")
    print(f"  native loop (10 additions)                 {spread(native_totals):>10.4%} {'n/a':>12}   identical")
    print(f"    counts: harness {ours_rep}, torch {torch_rep}, native {native_totals} ({native_time:.1f} s)")
    across = [ours_stats[0].counts(), again.counts()]
    print()
    print("the same statement again in a later call, (max-min)/min     harness   target")
    print(f"  Python {statements[0][0]!r}: first and last of {len(statements) + 2} calls  {spread(across):>10.4%}   0%")
    print(f"  C++ {CPP_STMT!r}: two calls                   {spread(cpp):>10.4%}   0%")
    print(f"    counts: Python {across}, C++ {cpp}")

    if args.json:
        from harness.files.atomic import atomic_write_text

        atomic_write_text(args.json, json.dumps({
            "number": args.number, "statements": [s for s, _ in statements],
            "harness_seconds": ours_time, "torch_seconds": torch_time,
            "harness_repeats_seconds": ours_repeats_time, "torch_repeats_seconds": torch_repeats_time,
            "agreement": agreement, "harness_repeat_counts": ours_rep, "torch_repeat_counts": torch_rep,
            "native_repeat_counts": native_totals, "load_average": os.getloadavg(),
            "across_calls_counts": {"python": across, "cpp": cpp},
        }, indent=1) + "\n")


if __name__ == "__main__":
    main()
