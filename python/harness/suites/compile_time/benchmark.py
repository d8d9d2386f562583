"""CompileTimeBenchmark: one compile-time case and its expansion into Tasks.

A case is a keyword-only dataclass: its fields are plain JSON values, so a
Task can carry them to a worker process, which rebuilds the case from its
class (by module, else by the file that defines it) and those fields.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
from collections.abc import Sequence
from typing import Any

from harness.define.loading import reference_of, resolve_reference
from harness.errors import UsageError
from harness.model.task import Task

KIND = "compile_time"
MODES = ("inference", "training")
# What a count covers. "compile": only the instructions torch.compile spends in
# dynamo's convert_frame compile_inner (tracing, AOT autograd, the backend's
# compile), what PyTorch's pr_time_benchmarks report as
# compile_time_instruction_count; running the compiled code is left out.
# "work": everything work() does, PyTorch's instruction_count (runtime cases).
# "import": what work() returns, the seconds a fresh interpreter spends importing
# one module (PyTorch's import_time cases): wall time only, as in PyTorch.
REGIONS = ("compile", "work", "import")
DEVICES = ("cpu", "cuda")
DEFAULT_ITERATIONS = 5
# Under callgrind one iteration costs ~50x its native time while consecutive
# counts agree within ~0.1%, so a cold iteration plus one warm one is enough
# (see benchmarks/compile_time/noise.py for the measured spreads).
DEFAULT_CALLGRIND_ITERATIONS = 2
# Seconds an instruction-count task may take: the default gate's largest case
# needs ~5 min under callgrind on an idle 2-core machine and several times that
# when the machine is shared (a case that needs more sets its own ``timeout``;
# the user's --timeout overrides both).
INSTRUCTIONS_TIMEOUT = 3600.0


@dataclasses.dataclass(kw_only=True)
class CompileTimeBenchmark:
    """Base of compile-time cases: ``prepare_once()``, then per iteration ``prepare()`` and a measured ``work()``.

    Subclasses are ``@dataclasses.dataclass(kw_only=True)`` and set
    ``category`` and ``variant`` (or override ``name()``). ``iterations``
    counts the first, cold iteration: the reported value is the minimum of
    the others. ``calls`` is how many times ``work()`` runs the thing being
    measured; values are reported per call.
    """

    category: str
    variant: str = ""
    backend: str = "eager"
    device: str = "cpu"
    mode: str = "inference"
    dynamic: bool = False
    iterations: int = DEFAULT_ITERATIONS
    callgrind_iterations: int = DEFAULT_CALLGRIND_ITERATIONS
    calls: int = 1
    timeout: float | None = None  # seconds per task; None: the pool's default (wall), INSTRUCTIONS_TIMEOUT (counted)
    region: str = "compile"
    # Left out of the default run (too slow under callgrind for the gate's
    # budget); `bench --all` runs it.
    extended: bool = False

    def require_choice(self, field: str, choices: Sequence[str]) -> None:
        """UsageError unless the field's value is one of ``choices``: the one check of every case's options."""
        value = getattr(self, field)
        if value not in choices:
            raise UsageError(f"{type(self).__name__}: {field} must be one of {', '.join(choices)}, got {value!r}")

    def __post_init__(self) -> None:
        self.require_choice("mode", MODES)
        self.require_choice("device", DEVICES)
        self.require_choice("region", REGIONS)
        where = type(self).__name__
        for field in ("iterations", "callgrind_iterations"):
            value = getattr(self, field)
            if not isinstance(value, int) or isinstance(value, bool) or value < 2:
                raise UsageError(
                    f"{where}: {field} must be an int >= 2 (one cold iteration plus at least one measured), "
                    f"got {value!r}"
                )
        if not isinstance(self.calls, int) or isinstance(self.calls, bool) or self.calls < 1:
            raise UsageError(f"{where}: calls must be a positive int, got {self.calls!r}")

    # -- identity ---------------------------------------------------------------
    def name(self) -> str:
        """Stable: ``{category}_{variant}_{backend}[_dynamic][_cuda]``."""
        parts = [self.category, self.variant, self.backend]
        if self.dynamic:
            parts.append("dynamic")
        if self.device != "cpu":
            parts.append(self.device)
        return "_".join(p for p in parts if p)

    def description(self) -> str:
        return (type(self).__doc__ or "").strip().splitlines()[0] if type(self).__doc__ else ""

    # -- hooks ------------------------------------------------------------------
    def prepare_once(self) -> None:
        """Build inputs and modules; runs once, unmeasured."""

    def prepare(self) -> None:
        """Runs before every measured ``work()``, unmeasured: forget earlier compilations."""
        import torch

        torch._dynamo.reset()

    def work(self) -> float | None:
        """The measured part: compile (and run once). A case of region "import" measures itself and returns seconds."""
        raise NotImplementedError(f"{type(self).__name__} must define work()")

    # -- expansion --------------------------------------------------------------
    def fields(self) -> dict[str, Any]:
        return {f.name: getattr(self, f.name) for f in dataclasses.fields(self) if f.init}

    def available(self) -> tuple[bool, str]:
        """Whether this machine can run the case, and why not."""
        if self.device == "cuda":
            import torch

            if not torch.cuda.is_available():
                return False, "no CUDA device"
        return True, ""

    def expand(self, suite: str) -> list[Task]:
        """Two tasks: instructions spent in ``work()`` and its wall time (region "import": the wall task
        alone); none when the case cannot run here."""
        if not self.available()[0]:
            return []
        case = self.name()
        spec = {"case": case, "source": reference_of(type(self)), "fields": self.fields()}
        try:
            json.dumps(spec)
        except (TypeError, ValueError) as exc:
            raise UsageError(f"compile-time case {case!r}: its fields must be plain JSON values ({exc})") from None
        # Each case in a process of its own: what a worker compiled before
        # shifts a case's instruction count by ~1% (measured), and "cold"
        # then means the first compile in a fresh process.
        # "fixed_mode": each task is one half of a pair with settings of its own per
        # mode; `bench --mode` picks from the pair instead of converting one into the other.
        params: dict[str, Any] = {**spec, "description": self.description(), "fresh_worker": True, "fixed_mode": True}
        if self.extended:
            params["extended"] = True
        counted = {**params, "timeout": self.timeout or INSTRUCTIONS_TIMEOUT}
        timed = {**params, "timeout": self.timeout} if self.timeout else params
        if self.region == "import":
            # The work is another process's: nothing in this one to count.
            return [Task(suite=suite, name=f"{case}[wall]", kind=KIND, params=timed, mode="wall")]
        return [
            Task(suite=suite, name=f"{case}[instructions]", kind=KIND, params=counted, mode="instructions"),
            Task(suite=suite, name=f"{case}[wall]", kind=KIND, params=timed, mode="wall"),
        ]


def fresh_inductor_cache() -> contextlib.AbstractContextManager[Any]:
    """A temporary, empty inductor (and FX graph) cache, so every iteration compiles from scratch."""
    from torch._inductor import utils

    # Renamed from fresh_inductor_cache to fresh_cache in torch 2.7.
    factory = getattr(utils, "fresh_cache", None) or utils.fresh_inductor_cache
    return factory()


def synchronize(device: str) -> None:
    """Wait for the device, so a CUDA case's measured work includes its kernels."""
    if device == "cuda":
        import torch

        torch.cuda.synchronize()


def load_case(spec: dict[str, Any]) -> CompileTimeBenchmark:
    """Rebuild the case a Task describes (in a worker process)."""
    cls = resolve_reference(spec["source"], f"compile-time case {spec['case']!r}")
    case = cls(**spec["fields"])
    if case.name() != spec["case"]:
        raise UsageError(
            f"compile-time case {spec['case']!r} rebuilt as {case.name()!r}: its name must depend only on its fields"
        )
    return case
