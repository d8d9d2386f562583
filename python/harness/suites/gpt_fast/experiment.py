"""The gpt-fast record (Experiment), skipped rows, and the registry of experiment functions.

An experiment function takes a RunContext and returns a list of Experiment
rows (one per dtype/variant, each the mean over its shapes) and Skipped rows
(a row that cannot run here, with the reason). ``@register_experiment``
registers it under a stable name, the name ``--only`` selects.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from harness.errors import UsageError

if TYPE_CHECKING:
    from harness.suites.gpt_fast.context import RunContext

CSV_FIELDS = ("name", "metric", "target", "actual", "dtype", "device", "arch", "is_model")


@dataclasses.dataclass(frozen=True)
class Experiment:
    """One reported row: ``actual`` against ``target`` for one metric of one experiment and dtype.

    ``target`` is None where no reference figure exists for this device (see
    targets.py). ``shapes`` holds each shape's own value and how it was
    measured; ``actual`` is their mean. Neither is part of the CSV columns.
    """

    name: str
    metric: str
    target: float | None
    actual: float
    dtype: str
    device: str
    arch: str  # GPU name on CUDA, CPU model on CPU
    is_model: bool = False
    shapes: tuple[dict[str, Any], ...] = ()

    def csv_row(self) -> dict[str, Any]:
        return {f: getattr(self, f) for f in CSV_FIELDS}

    def to_json(self) -> dict[str, Any]:
        return {**self.csv_row(), "shapes": [dict(s) for s in self.shapes]}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Experiment:
        return cls(
            name=data["name"],
            metric=data["metric"],
            target=None if data.get("target") is None else float(data["target"]),
            actual=float(data["actual"]),
            dtype=data["dtype"],
            device=data["device"],
            arch=data["arch"],
            is_model=bool(data.get("is_model", False)),
            shapes=tuple(dict(s) for s in data.get("shapes", ())),
        )


@dataclasses.dataclass(frozen=True)
class Skipped:
    """A row that was not measured on this machine, and why."""

    name: str
    metric: str
    dtype: str
    device: str
    reason: str

    def to_json(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


Row = Experiment | Skipped
ExperimentFn = Callable[["RunContext"], list[Row]]


def mean_row(
    name: str, metric: str, dtype: str, ctx: RunContext, shapes: Sequence[dict[str, Any]], *, is_model: bool = False
) -> Experiment:
    """The row for one metric: the mean of the shapes' ``value`` and of their ``target``.

    The target is averaged like the value so that a row whose per-shape
    targets differ (the roofline-bounded MLP rows) compares like with like;
    a row where any shape has no target has none.
    """
    if not shapes:
        raise ValueError(f"{name}: no shapes measured")
    values = [float(s["value"]) for s in shapes]
    targets = [s.get("target") for s in shapes]
    target = None if any(t is None for t in targets) else math.fsum(targets) / len(targets)
    return Experiment(
        name=name,
        metric=metric,
        target=target,
        actual=math.fsum(values) / len(values),
        dtype=dtype,
        device=ctx.device,
        arch=ctx.arch,
        is_model=is_model,
        shapes=tuple(shapes),
    )


_REGISTRY: dict[str, ExperimentFn] = {}


def register_experiment(name: str | None = None) -> Callable[[ExperimentFn], ExperimentFn]:
    """Register ``func`` under ``name`` (default: its function name)."""

    def decorator(func: ExperimentFn) -> ExperimentFn:
        key = name or func.__name__
        existing = _REGISTRY.get(key)
        if existing is not None and existing is not func:
            where = f"{existing.__module__}.{existing.__qualname__}"
            raise UsageError(f"gpt-fast experiment {key!r} is registered twice (first by {where}); rename one")
        _REGISTRY[key] = func
        return func

    return decorator


def registered() -> dict[str, ExperimentFn]:
    """Every registered experiment, the built-in ones included, in registration order."""
    from harness.suites.gpt_fast import load_builtin_experiments

    load_builtin_experiments()
    return dict(_REGISTRY)


def get_experiment(name: str) -> ExperimentFn:
    experiments = registered()
    try:
        return experiments[name]
    except KeyError:
        raise UsageError(
            f"unknown gpt-fast experiment {name!r}; available: {', '.join(experiments)}"
        ) from None


def unregister(name: str) -> None:
    """Remove a registration (tests register throwaway experiments)."""
    _REGISTRY.pop(name, None)
