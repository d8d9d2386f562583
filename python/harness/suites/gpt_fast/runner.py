"""Runner for tasks of kind "gpt_fast": run one registered experiment, keep every row in the result.

The TaskResult has no timing samples of its own (an experiment reports
several metrics in different units); its ``extra`` holds the rows, each
with its per-shape values, the skipped rows with their reasons, and the
context (device, size, peaks and where they came from).
"""

from __future__ import annotations

from harness.model.result import TaskResult
from harness.model.task import Task
from harness.options import DEFAULT_MIN_RUN_TIME
from harness.suites.gpt_fast.context import make_context, replace_peaks
from harness.suites.gpt_fast.experiment import Experiment, Skipped, get_experiment
from harness.suites.gpt_fast.peak_check import check_against_peak

UNIT = "gpt_fast rows"


def run_gpt_fast_task(task: Task, min_run_time: float) -> TaskResult:
    import torch

    p = task.params
    experiment = get_experiment(p["experiment"])
    ctx = make_context(
        device=p.get("device"),
        size=p.get("size", "auto"),
        min_run_time=p.get("min_run_time") or min_run_time,
        cuda_graph=bool(p.get("cuda_graph", True)),
    )
    rows, peaks, note = check_against_peak(experiment(ctx), ctx.peaks, min(ctx.min_run_time, DEFAULT_MIN_RUN_TIME))
    if peaks is not ctx.peaks:
        ctx = replace_peaks(ctx, peaks)
    measured = [r.to_json() for r in rows if isinstance(r, Experiment)]
    skipped = [r.to_json() for r in rows if isinstance(r, Skipped)]
    extra = {"rows": measured, "skipped": skipped, "context": ctx.to_json(), "torch_threads": torch.get_num_threads()}
    if note:
        extra["peak_note"] = note
    return TaskResult(task=task, status="ok", unit=UNIT, samples=[], extra=extra)


def experiments_of(result: TaskResult) -> list[Experiment]:
    """The measured rows of a gpt_fast result (none for a failed one)."""
    return [Experiment.from_json(r) for r in result.extra.get("rows", [])]


def peak_note_of(result: TaskResult) -> str | None:
    """What the run found wrong with its peak (peak_check.py), if anything."""
    return result.extra.get("peak_note")


def skipped_of(result: TaskResult) -> list[Skipped]:
    return [Skipped(**r) for r in result.extra.get("skipped", [])]
