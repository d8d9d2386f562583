"""Every CUDA path of harness, run once on this machine's GPU: one table, non-zero exit on a failure.

The CUDA paths (CUDA-event timing, the L2 flush, CUDA graphs, the
``triton.testing.do_bench`` cross-check, the gpt-fast kernels and a model on
CUDA, datasheet peaks) are otherwise tested only where a GPU is, so this
script checks them in one command, at sizes that take a few minutes on one
H100 (most of it compiling the gpt-fast kernels). Each row is one path: the
figure it produced, the range a working path gives, pass or fail. Ranges are
wide on purpose: they catch a path that is broken (an impossible figure, a
flush that changes nothing, two timers that disagree by 25%), not a slow GPU.

Without a CUDA device it says so and exits 0.

Run (after the README's set-up): .venv/bin/python benchmarks/self/gpu_check.py [--device cuda:0]
"""

from __future__ import annotations

import argparse
import dataclasses
import importlib.util
import math
import sys
import time
import traceback
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

ROOT = Path(__file__).resolve().parents[2]
MIN_RUN_TIME = 0.2  # seconds of timing per figure
GEMV_N = 8192  # a 128 MiB bf16 matrix: far beyond any L2
L2_GEMV_ROWS, L2_GEMV_COLS = 4096, 2048  # 16 MiB bf16: fits an A100's or H100's L2


@dataclasses.dataclass(frozen=True)
class Check:
    """One CUDA path's outcome: ``figure`` (in ``unit``) should lie in [low, high]."""

    path: str
    figure: float | None
    unit: str
    low: float
    high: float
    detail: str = ""
    error: str | None = None  # the exception the path raised, if it did

    @property
    def passed(self) -> bool:
        return (self.error is None and self.figure is not None and math.isfinite(self.figure)
                and self.low <= self.figure <= self.high)


def _num(x: float) -> str:
    return "inf" if math.isinf(x) else f"{x:.3g}" if abs(x) < 1000 else f"{x:,.0f}"


def render(checks: Sequence[Check], title: str) -> Table:
    """The table: path, figure, expected range, pass/fail, and what the figure is or what went wrong."""
    table = Table(title=title, title_justify="left")
    for col, justify in (("path", "left"), ("figure", "right"), ("expected", "right"), ("result", "left"),
                         ("detail", "left")):
        table.add_column(col, justify=justify)  # type: ignore[arg-type]
    for c in checks:
        figure = "-" if c.figure is None else f"{_num(c.figure)} {c.unit}".strip()
        expected = f"{_num(c.low)} .. {_num(c.high)} {c.unit}".strip()
        result = "[green]pass[/green]" if c.passed else "[red]FAIL[/red]"
        table.add_row(c.path, figure, expected, result, c.error or c.detail)
    return table


def exit_code(checks: Sequence[Check]) -> int:
    return 0 if checks and all(c.passed for c in checks) else 1


def run_check(path: str, unit: str, low: float, high: float, fn: Callable[[], tuple[float, str]]) -> Check:
    """Run one path; an exception is a failed row carrying its last line, never the end of the script."""
    try:
        figure, detail = fn()
    except Exception as e:  # noqa: BLE001 - every failure is a row of the table
        last = traceback.format_exception_only(type(e), e)[-1].strip()
        return Check(path, None, unit, low, high, error=last[:300])
    return Check(path, figure, unit, low, high, detail)


# -- the paths ---------------------------------------------------------------------------------------


def _crosscheck() -> Any:
    """benchmarks/gpt_fast/crosscheck_do_bench.py, the do_bench cross-check, loaded from its file."""
    spec = importlib.util.spec_from_file_location(
        "crosscheck_do_bench", ROOT / "benchmarks/gpt_fast/crosscheck_do_bench.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def gpu_checks(device: str) -> list[Check]:
    import torch

    from harness.model.task import Task
    from harness.run.dispatch import run_task
    from harness.suites.gpt_fast import kernels, peaks
    from harness.suites.gpt_fast.runner import experiments_of
    from harness.suites.gpt_fast.timing import L2Flusher, time_callable

    name = torch.cuda.get_device_name(torch.device(device))
    entry = peaks.datasheet_entry(name)
    peak = peaks.peaks_for(device, min_run_time=MIN_RUN_TIME)
    out: list[Check] = []

    def datasheet() -> tuple[float, str]:
        if entry is None:  # harness falls back to measuring: a path that works, not this one
            return peak.flops_per_s / 1e12, f"{name!r} is not in peaks.DATASHEET: {peak.source} peaks ({peak.detail})"
        if peak.source != "datasheet":
            raise AssertionError(f"peaks_for gave {peak.source} peaks for a GPU in the datasheet table")
        return peak.flops_per_s / 1e12, f"{entry.label}: {entry.source}, {peak.bytes_per_s / 1e9:,.0f} GB/s"

    out.append(run_check("datasheet peaks", "TFLOP/s", 10, 5000, datasheet))
    # A measured peak is the best of a few GEMMs: measuring again may land a little above it.
    ceiling = 1.0 if peak.source == "datasheet" else 1.1

    gemm_bw: dict[str, float] = {}

    def gemm() -> tuple[float, str]:
        flops, bandwidth = peaks.measure(device, peaks.GPU_SIZES, MIN_RUN_TIME)
        gemm_bw["copy"] = bandwidth
        return flops / peak.flops_per_s, f"bf16 GEMM n={peaks.GPU_SIZES.gemm_n}: {flops / 1e12:,.0f} TFLOP/s"

    out.append(run_check("cuda events: bf16 GEMM / peak FLOP/s", "", 0.2, ceiling, gemm))
    out.append(run_check("cuda events: 2 GiB copy / peak bandwidth", "", 0.3, ceiling,
                         lambda: (gemm_bw["copy"] / peak.bytes_per_s, f"{gemm_bw['copy'] / 1e9:,.0f} GB/s")))

    def gemv_fn(rows: int, cols: int) -> Callable[[], Any]:
        w = torch.randn(rows, cols, device=device, dtype=torch.bfloat16)
        x = torch.randn(cols, device=device, dtype=torch.bfloat16)
        return lambda: w @ x

    big = gemv_fn(GEMV_N, GEMV_N)
    big_bytes = GEMV_N * GEMV_N * 2
    eager: dict[str, float] = {}

    def events_flush() -> tuple[float, str]:
        t = time_callable(big, device=device, min_run_time=MIN_RUN_TIME)
        eager["s"] = t.median_s
        return (
            big_bytes / t.median_s / peak.bytes_per_s,
            f"gemv {GEMV_N}x{GEMV_N} bf16, {t.method}, {len(t.samples_s)} samples",
        )

    out.append(run_check("cuda events + L2 flush: gemv bandwidth / peak", "", 0.3, ceiling, events_flush))

    def l2_flush() -> tuple[float, str]:
        small = gemv_fn(L2_GEMV_ROWS, L2_GEMV_COLS)
        flushed = time_callable(small, device=device, min_run_time=MIN_RUN_TIME, l2_flush=True).median_s
        resident = time_callable(small, device=device, min_run_time=MIN_RUN_TIME, l2_flush=False).median_s
        flusher = L2Flusher(device)
        return flushed / resident, (
            f"{L2_GEMV_ROWS * L2_GEMV_COLS * 2 / 2**20:.0f} MiB gemv: {flushed * 1e6:.1f} us "
            f"flushed, {resident * 1e6:.1f} us L2-resident; flush writes {flusher.nbytes / 2**20:.0f} MiB"
        )

    out.append(run_check("L2 flush: flushed / resident time", "x", 1.05, 50, l2_flush))

    def graphs() -> tuple[float, str]:
        t = time_callable(big, device=device, min_run_time=MIN_RUN_TIME, cuda_graph=True)
        if "CUDA graph" not in t.method:
            raise AssertionError(f"timed without a graph: {t.method}")
        return t.median_s / eager["s"], f"gemv {GEMV_N}x{GEMV_N} replayed from a CUDA graph: {t.median_s * 1e6:.1f} us"

    out.append(run_check("CUDA graphs: graph / eager time", "x", 0.7, 1.3, graphs))

    def do_bench() -> tuple[float, str]:
        cc = _crosscheck()
        fn, fargs = cc.build("gemv", GEMV_N, torch.bfloat16, "cuda")
        compiled = kernels.compile_fresh(fn)
        for _ in range(kernels.WARMUP_ITER):
            compiled(*fargs)
        ours = time_callable(lambda: compiled(*fargs), device=device, min_run_time=MIN_RUN_TIME).median_s
        theirs, tool = cc.reference_seconds(lambda: compiled(*fargs), "cuda", MIN_RUN_TIME)
        return ours / theirs, f"compiled gemv D={GEMV_N}: harness {ours * 1e6:.1f} us, {tool} {theirs * 1e6:.1f} us"

    out.append(run_check("do_bench cross-check: harness / triton", "x", 0.8, 1.25, do_bench))

    for experiment in ("mlp_layer_norm_gelu", "layer_norm", "gather_gemv", "gemv", "llama"):
        out.append(run_check(f"gpt-fast {experiment} on CUDA (tiny)", "rows", 1, 1000,
                             lambda e=experiment: _experiment(e, device, Task, run_task, experiments_of)))
    return out


def _experiment(name: str, device: str, task_cls: Any, run_task: Any, experiments_of: Any) -> tuple[float, str]:
    """One gpt-fast experiment through the real runner on CUDA; every figure possible, graph rows there."""
    task = task_cls("gpt_fast", name, "gpt_fast", {"experiment": name, "size": "tiny", "device": device,
                                                   "cuda_graph": True})
    result = run_task(task, min_run_time=0.05)
    if not result.ok:
        raise RuntimeError((result.error or "failed").strip().splitlines()[-1])
    rows = experiments_of(result)
    bad = [f"{r.name} {r.dtype}: {r.actual}" for r in rows
           if not (math.isfinite(r.actual) and r.actual > 0) or (r.metric == "flops_utilization" and r.actual > 1)]
    if bad:
        raise AssertionError(f"impossible figures: {'; '.join(bad)}")
    if name != "llama" and not any("[cuda_graph]" in r.name for r in rows):
        raise AssertionError("no [cuda_graph] row: the CUDA-graph path did not run")
    timing = {s.get("timing") for r in rows for s in r.shapes if s.get("timing")}
    return float(len(rows)), f"{', '.join(sorted(r.name for r in rows))[:120]}; {', '.join(sorted(timing))[:80]}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cuda", help="the CUDA device to check (default: cuda)")
    args = parser.parse_args(argv)
    console = Console()
    import torch

    if not torch.cuda.is_available():
        built = f"CUDA {torch.version.cuda}" if torch.version.cuda else "a CPU-only build"
        console.print(f"no CUDA device: torch {torch.__version__} ({built}) sees none, so there is no CUDA path "
                      "to check here; nothing failed")
        return 0
    start = time.perf_counter()
    checks = gpu_checks(args.device)
    title = (f"CUDA paths on {torch.cuda.get_device_name(torch.device(args.device))}, torch {torch.__version__}, "
             f"{time.perf_counter() - start:.0f} s")
    console.print(render(checks, title))
    failed = [c.path for c in checks if not c.passed]
    console.print(
        f"{len(checks) - len(failed)} of {len(checks)} passed" + (f"; failed: {', '.join(failed)}" if failed else "")
    )
    return exit_code(checks)


if __name__ == "__main__":
    sys.exit(main())
