"""Synthetic run records for tests of records, compare and report (seeded, so deterministic)."""

from __future__ import annotations

import numpy as np

from harness.model.record import RunRecord
from harness.model.result import TaskResult
from harness.model.task import Task


def environment(start: str = "2026-01-01T00:00:00+00:00", run_id: str = "run-a") -> dict:
    return {
        "run_id": run_id,
        "harness_version": "0.1.0",
        "git_commit": "0123456789abcdef",
        "torch": {"version": "2.13.0+cpu", "build": "cpu", "cuda_version": None, "num_threads": 2},
        "python": "3.11.7",
        "os": "Linux 6.1",
        "cpu_model": "Test CPU",
        "cpu_count": 2,
        "cpu_governor": None,
        "hostname": "testhost",
        "start_time": start,
        "command_line": ["python", "-m", "harness", "bench"],
        "noise": {"checked": True, "findings": []},
    }


def wall(suite: str, name: str, samples, kind: str = "timer", **params) -> TaskResult:
    task = Task(suite=suite, name=name, kind=kind, params=params)
    return TaskResult(task=task, status="ok", unit="s", samples=[float(x) for x in samples], number_per_run=100)


def instructions(suite: str, name: str, counts, kind: str = "timer", **extra) -> TaskResult:
    task = Task(suite=suite, name=name, kind=kind, params={}, mode="instructions")
    return TaskResult(task=task, status="ok", unit="instructions", samples=[float(c) for c in counts], extra=extra)


def gpt_fast(name: str, metric: str, actual: float, target: float, peak_bytes_per_s: float) -> TaskResult:
    """A gpt_fast result as its runner writes it: one measured row, the device's peaks in the context."""
    row = {"name": name, "metric": metric, "target": target, "actual": actual, "dtype": "bfloat16",
           "device": "cpu", "arch": "Test CPU", "is_model": False, "shapes": []}
    context = {"device": "cpu", "arch": "Test CPU", "size": "tiny", "min_run_time": 0.01, "cuda_graph": False,
               "peaks": {"flops_per_s": 1e12, "bytes_per_s": peak_bytes_per_s, "source": "measured",
                         "device_name": "Test CPU", "detail": ""}}
    task = Task(suite="gpt_fast", name=name, kind="gpt_fast", params={"experiment": name, "size": "tiny"})
    return TaskResult(task=task, status="ok", unit="gpt_fast rows", samples=[],
                      extra={"rows": [row], "skipped": [], "context": context})


def failed(suite: str, name: str, error: str) -> TaskResult:
    return TaskResult(task=Task(suite=suite, name=name, kind="timer", params={}), status="failed", error=error)


def normal(mean: float, rel_sd: float, n: int, seed: int) -> list[float]:
    return list(np.random.default_rng(seed).normal(mean, mean * rel_sd, n))


def full_run(scale: float = 1.0, start: str = "2026-01-01T00:00:00+00:00", run_id: str = "run-a",
             seed: int = 0) -> RunRecord:
    """A run with every kind of data the report draws: dispatch, compile time, gpt-fast, failures."""
    results = []
    for i, op in enumerate(("add", "mul", "matmul")):
        for j, (language, cost) in enumerate((("python", 4e-6), ("torchscript", 3e-6), ("cpp", 1e-6))):
            rel_sd = 0.3 if (op, language) == ("mul", "python") else 0.01  # one noisy measurement
            results.append(wall("dispatch", f"{op}[language={language}]",
                                normal(cost * (1 + i * 0.2) * scale, rel_sd, 20, seed + 10 * i + j),
                                kind="grouped", language=language, sub_label=op, num_threads=1))
    for k, case in enumerate(("aotdispatcher_inference_nosubclass_cpu", "basic_InlineMod_eager", "add_loop_inductor")):
        base = (2.0e9, 1.1e9, 3.3e9)[k] * scale
        results.append(instructions("compile_time", case, [base, base * 1.0001], kind="compile_time",
                                    counter="callgrind"))
    metrics = (("layer_norm", "memory_bandwidth(GB/s)", 70.0, 90.0),
               ("gemv_int8", "memory_bandwidth(GB/s)", 40.0, 60.0),
               ("mlp_layer_norm_gelu", "flops_utilization", 0.35, 0.8))
    for name, metric, actual, target in metrics:
        results.append(gpt_fast(name, metric, actual / scale, target, peak_bytes_per_s=100e9))
    broken = failed("dispatch", "broken[language=cpp]", "StatementError: boom\n  at line 1, \"quoted\", comma")
    results.append(broken)
    return RunRecord(environment=environment(start, run_id), results=results)
