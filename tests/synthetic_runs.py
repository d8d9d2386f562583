"""Synthetic run records for tests of records, compare and report (seeded, so deterministic)."""

from __future__ import annotations

import numpy as np

from harness.records import RunRecord
from harness.result import TaskResult
from harness.task import Task


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


def wall(suite: str, name: str, samples, **params) -> TaskResult:
    task = Task(suite=suite, name=name, kind="timer", params=params)
    return TaskResult(task=task, status="ok", unit="s", samples=[float(x) for x in samples], number_per_run=100)


def instructions(suite: str, name: str, counts, **extra) -> TaskResult:
    task = Task(suite=suite, name=name, kind="callgrind", params={}, mode="instructions")
    return TaskResult(task=task, status="ok", unit="instructions", samples=[float(c) for c in counts], extra=extra)


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
                                language=language, sub_label=op, num_threads=1))
    for k, case in enumerate(("aotdispatcher_inference_nosubclass_cpu", "basic_InlineMod_eager", "add_loop_inductor")):
        base = (2.0e9, 1.1e9, 3.3e9)[k] * scale
        results.append(instructions("compile_time", case, [base, base * 1.0001], counter="callgrind"))
    metrics = (("layer_norm", "memory_bandwidth(GB/s)", 70.0, 90.0, 100.0),
               ("gemv_int8", "memory_bandwidth(GB/s)", 40.0, 60.0, 100.0),
               ("mlp_layer_norm_gelu", "flops_utilization", 0.35, 0.8, 1.0))
    for name, metric, actual, target, peak in metrics:
        r = wall("gpt_fast", name, normal(1e-3, 0.01, 10, seed + 99))
        r.extra.update(metric=metric, actual=actual / scale, target=target, peak=peak, higher_is_better=True,
                       dtype="bfloat16", device="cpu")
        results.append(r)
    results.append(failed("dispatch", "broken[language=cpp]", "StatementError: boom\n  at line 1, \"quoted\", comma"))
    return RunRecord(environment=environment(start, run_id), results=results)
