"""Runner for ``compile_time`` tasks: rebuild the case, collect it, report its metrics."""

from __future__ import annotations

import contextlib
import platform
from collections.abc import Iterator
from typing import Any

from harness.errors import HarnessError
from harness.model.result import TaskResult
from harness.model.task import Task
from harness.suites.compile_time.benchmark import load_case
from harness.suites.compile_time.collect import collect, reported_seconds, wall_seconds
from harness.suites.compile_time.phases import (
    PhasedMeasure,
    callgrind_compile_phases,
    callgrind_work_phases,
    wall_phases,
)
from harness.suites.compile_time.region import (
    compile_counter,
    instructions_metric,
    pytorch_settings,
    wall_metric,
    work_counter,
)


@contextlib.contextmanager
def valgrind_compatible_kernels() -> Iterator[None]:
    """Inductor builds CPU kernels for the host (``-march=native``, AVX-512
    vectors where the CPU has them); valgrind cannot decode AVX-512 and the
    worker dies with SIGILL when such a kernel runs. Target AVX2 instead."""
    if platform.machine() not in ("x86_64", "AMD64"):
        yield
        return
    import torch._inductor.config as inductor_config

    patches: dict[str, Any] = {"cpp.simdlen": 256}
    if hasattr(inductor_config.cpp, "march"):  # torch >= 2.12
        patches["cpp.march"] = "x86-64-v3"
    with inductor_config.patch(patches):
        yield


def run_compile_time_task(task: Task, min_run_time: float) -> TaskResult:
    """``min_run_time`` does not apply: a case runs its fixed number of iterations."""
    case = load_case(dict(task.params))
    phased: bool | PhasedMeasure = bool(task.params.get("phases"))
    extra: dict[str, Any] = {"case": case.name(), "description": case.description()}
    if task.mode == "instructions":
        if case.region == "import":
            raise HarnessError(f"{case.name()}: an import-time case is measured in a child interpreter, "
                               "so it has wall time only")
        from harness.measure.counter_choice import worker_counter

        counter = worker_counter()
        callgrind = counter.name == "callgrind"
        if callgrind and case.device == "cuda":
            raise HarnessError(
                f"{case.name()}: CUDA cases cannot be counted under valgrind (the CUDA driver does not run "
                "under it); use --counter perf, or -k 'not cuda'"
            )
        iterations = case.callgrind_iterations if callgrind else case.iterations
        # Under callgrind the cold iteration is a timed warm-up: counting it costs
        # about five warm iterations, and its count depends on what the worker
        # process ran before (imports, caches), so it could not be gated anyway.
        measure = (compile_counter if case.region == "compile" else work_counter)(counter, case.name())
        if phased:
            if not callgrind:
                raise HarnessError(f"{case.name()}: --phases cuts the count at torch's compile events with "
                                   "callgrind; use --counter callgrind")
            phases_of = callgrind_compile_phases if case.region == "compile" else callgrind_work_phases
            measure = phased = PhasedMeasure(phases_of(counter, case.name(), bool(task.params.get("functions"))))
        metric = instructions_metric(case.region)
        with valgrind_compatible_kernels() if callgrind else contextlib.nullcontext(), pytorch_settings():
            result = collect(case, measure, iterations, cold_measure=wall_seconds if callgrind else None)
        unit = "instructions"
        extra["counter"] = counter.name
        extra["region"] = case.region
        extra["metrics"] = {metric: result.min}
        if callgrind:
            extra["cold_unit"] = "s"
        else:
            extra["metrics"][f"{metric}_cold"] = result.cold
    else:
        iterations = case.iterations
        wall = wall_seconds
        if phased and case.region != "import":
            wall = phased = PhasedMeasure(wall_phases)
        with pytorch_settings():
            result = collect(case, reported_seconds if case.region == "import" else wall, iterations)
        unit = "s"
        metric, scale = wall_metric(case.region)
        extra["metrics"] = {
            metric: result.min * scale,
            f"{metric}_median": result.median * scale,
            f"{metric}_cold": result.cold * scale,
        }
    extra.update(actual=result.min, cold=result.cold, iterations=iterations, calls=case.calls)
    if isinstance(phased, PhasedMeasure):
        # The phases of the iteration reported (the minimum), so they add up to its value.
        phases, functions = phased.of_value(result.warm, result.min)
        phases = phases.scaled(case.calls)
        extra["phases"] = phases.to_json()
        extra["metrics"].update(phases.metrics(metric))
        if functions is not None:  # params["functions"]: the noise command compares them between repeats
            extra["functions"] = functions
    return TaskResult(task=task, status="ok", unit=unit, samples=list(result.warm), extra=extra)
