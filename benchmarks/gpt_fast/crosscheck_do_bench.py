"""Cross-check harness's kernel timing against the reference tool, on the same compiled kernel.

GPU: harness (CUDA events, L2 flush sized to the device's L2, median) against
``triton.testing.do_bench`` (CUDA events, fixed 256 MB flush, median).
CPU: harness (the C++ core's loop) against ``torch.utils.benchmark.Timer``.
Prints both figures per kernel and shape, and their ratio (harness / reference).

    python benchmarks/gpt_fast/crosscheck_do_bench.py [--kernel gemv] [--dims 1024 4096] [--dtype bfloat16]
"""

from __future__ import annotations

import argparse
import statistics
import sys

import torch

from harness.suites.gpt_fast import kernels
from harness.suites.gpt_fast.timing import time_callable


def build(kernel: str, dim: int, dtype: torch.dtype, device: str):
    x = torch.randn(dim, device=device, dtype=torch.bfloat16)
    if kernel == "gemv":
        return kernels.gemv, (kernels.random_weights((dim, dim), dtype, device), x)
    if kernel == "gather_gemv":
        w = kernels.random_weights((kernels.NUM_EXPERTS, dim, dim), dtype, device)
        return kernels.gather_gemv, (w, torch.tensor(kernels.SELECTED_EXPERTS, device=device), x)
    if kernel == "layer_norm":
        rows = 4096
        xs = torch.randn(rows, dim, device=device, dtype=dtype)
        ones = torch.ones(dim, device=device, dtype=dtype)
        return kernels.layer_norm, (xs, ones, torch.zeros_like(ones))
    raise SystemExit(f"unknown kernel {kernel!r}: use gemv, gather_gemv or layer_norm")


def reference_seconds(fn, device: str, min_run_time: float) -> tuple[float, str]:
    if device == "cuda":
        from triton.testing import do_bench

        ms = do_bench(fn, rep=int(min_run_time * 1e3), return_mode="median")
        return ms / 1e3, "triton.testing.do_bench"
    from torch.utils.benchmark import Timer

    m = Timer("fn()", globals={"fn": fn}, num_threads=torch.get_num_threads()).blocked_autorange(
        min_run_time=min_run_time
    )
    return m.median, "torch.utils.benchmark.Timer"


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--kernel", default="gemv", choices=["gemv", "gather_gemv", "layer_norm"])
    p.add_argument("--dims", type=int, nargs="+", default=None)
    p.add_argument("--dtype", default="bfloat16", choices=["bfloat16", "int8"])
    p.add_argument("--min-run-time", type=float, default=0.5)
    p.add_argument("--rounds", type=int, default=3, help="alternate the two tools this many times")
    args = p.parse_args(argv)
    if args.kernel == "layer_norm" and args.dtype == "int8":
        raise SystemExit("layer_norm runs in bfloat16 only")
    device = "cuda" if torch.cuda.is_available() else "cpu"
    dims = args.dims or ([1024, 4096, 8192, 16384] if device == "cuda" else [1024, 4096])
    dtype = getattr(torch, args.dtype)
    print(f"device: {torch.cuda.get_device_name() if device == 'cuda' else 'cpu'}, torch {torch.__version__}, "
          f"threads {torch.get_num_threads()}")
    print(f"{'kernel':<12} {'D':>6} {'harness':>12} {'reference':>12} {'ratio':>7}  reference tool")
    for dim in dims:
        fn, fargs = build(args.kernel, dim, dtype, device)
        compiled = kernels.compile_fresh(fn)
        for _ in range(kernels.WARMUP_ITER):
            compiled(*fargs)

        def call(compiled=compiled, fargs=fargs):
            return compiled(*fargs)

        ours, theirs, tool = [], [], ""
        # Alternate the tools so that drifting machine load hits both alike.
        for _ in range(args.rounds):
            ours.append(time_callable(call, device=device, min_run_time=args.min_run_time).median_s)
            t, tool = reference_seconds(call, device, args.min_run_time)
            theirs.append(t)
        a, b = statistics.median(ours), statistics.median(theirs)
        print(f"{args.kernel:<12} {dim:>6} {a * 1e6:>10.2f}us {b * 1e6:>10.2f}us {a / b:>7.3f}  {tool}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
