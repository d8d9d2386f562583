"""Overhead of harness's timing loops against the stdlib and torch, measured side by side.

Prints, from one run on this machine:
  1. per-iteration cost of the C++ loop with an empty body (target <= 1 ns);
  2. per-iteration cost of timing a Python `pass`: harness.Timer vs stdlib
     timeit vs torch.utils.benchmark.Timer (target: no worse than timeit),
     plus the alternative loops the design rejected (C++ loop calling a
     function, C++ loop evaluating a code object);
  3. median of `x * w` (4x4 tensors) from harness.Timer vs
     torch.utils.benchmark.Timer (target: within +-10%).

Run: .venv/bin/python benchmarks/self/overhead.py
"""

from __future__ import annotations

import statistics
import timeit

import torch
import torch.utils.benchmark as tb

import harness
from harness.core import native

N = 2_000_000
REPEATS = 7


def best_per_iter(fn, number: int = N, repeats: int = REPEATS) -> float:
    """Median over repeats of ns per iteration."""
    return statistics.median(fn(number) / number for _ in range(repeats))


def main() -> None:
    C = native()
    rows: list[tuple[str, float, str]] = []

    empty = C.empty_loop_cost_ns(10_000_000)
    rows.append(("C++ loop, empty body", empty, "target <= 1 ns"))

    h = harness.Timer("pass")
    block = h._block.sampler()
    ours = best_per_iter(lambda n: block(n))
    std = best_per_iter(lambda n: timeit.Timer("pass").timeit(n) * 1e9)
    t = tb.Timer("pass")
    torch_pass = best_per_iter(lambda n: t.timeit(n).raw_times[0] * 1e9)
    rows.append(("Python `pass`: harness.Timer (generated block)", ours, f"{ours / std:.2f}x timeit"))
    rows.append(("Python `pass`: stdlib timeit", std, "reference"))
    rows.append(("Python `pass`: torch.utils.benchmark.Timer", torch_pass, f"{torch_pass / std:.2f}x timeit"))

    def noop() -> None:
        pass

    call_loop = C.CallLoop(noop)
    via_call = best_per_iter(lambda n: call_loop(n), number=N // 4)
    code = compile("pass", "<stmt>", "exec")
    ns: dict = {}
    eval_loop = C.CallLoop(exec, (code, ns))
    via_exec = best_per_iter(lambda n: eval_loop(n), number=N // 8)
    rows.append(("  rejected: C++ loop calling a Python function", via_call, f"{via_call / std:.2f}x timeit"))
    rows.append(("  rejected: C++ loop exec'ing a code object", via_exec, f"{via_exec / std:.2f}x timeit"))

    setup = "x = torch.ones(4, 4)\nw = torch.ones(4, 4)"
    medians_h, medians_t = [], []
    for _ in range(3):  # interleave so drift hits both equally
        medians_h.append(harness.Timer("y = x * w", setup=setup).blocked_autorange(min_run_time=0.5).median)
        medians_t.append(tb.Timer("y = x * w", setup=setup).blocked_autorange(min_run_time=0.5).median)
    mh, mt = statistics.median(medians_h) * 1e9, statistics.median(medians_t) * 1e9

    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads")
    print(f"{'what':<52} {'ns/iter':>10}  note")
    for name, value, note in rows:
        print(f"{name:<52} {value:>10.2f}  {note}")
    print()
    print(f"{'y = x * w (4x4) median, harness.Timer':<52} {mh:>10.1f}")
    print(f"{'y = x * w (4x4) median, torch.utils.benchmark.Timer':<52} {mt:>10.1f}")
    print(f"{'ratio harness / torch':<52} {mh / mt:>10.3f}  target 0.90 .. 1.10")


if __name__ == "__main__":
    main()
