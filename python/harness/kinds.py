"""The registry of benchmark kinds: the one place that says what a kind of task is.

A ``Kind`` names, for tasks of that kind (``Task.kind``):

- ``runner(task, min_run_time) -> TaskResult``: runs one task, in a worker;
- ``preparer(tasks, status)``: runs once in the harness process before any
  task of the run (compiling every C++ statement of a run in one build);
- ``table(title, results)``: the terminal table of its results (None: the
  generic one);
- ``outputs``: ``{suffix: writer(path, record) -> [paths]}``, files of the
  kind's own layout that ``bench --output FILE.suffix`` writes instead of a
  plain run record when every task of the run is of this kind;
- ``report(runs) -> html | None``: the kind's section of the HTML report;
- ``cache``: ``{name: entries(clear) -> [lines]}``, what the kind keeps in
  the per-user cache: ``python -m harness cache info`` prints each entry's
  lines, ``python -m harness cache clear NAME`` calls it with ``clear=True``;
- ``estimate``: seconds one task takes per mode, when no earlier run recorded
  it (``bench --shard`` balances parts by it; ``estimated_seconds``).

Each is a callable or a reference (``"module:function"``, resolved on first
use), so registering the built-in kinds imports nothing: a run of Python
timers never imports the compile-time or gpt-fast code. A suite registers a
kind of its own with ``register(Kind(...))`` and callables; the worker pool
sends the runner's reference along with each task of such a kind, so a
worker process finds it without loading the suite.

Imports ``define.loading`` (to resolve references) and ``model``; imported by
``run``, ``bench`` and ``present``.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from typing import Any

from harness.define.loading import reference_of, resolve_reference
from harness.errors import UsageError

Target = str | Callable[..., Any]


@dataclasses.dataclass(frozen=True)
class Kind:
    name: str
    runner: Target | None  # None: measured where defined (the pytest plugin), never sent to a worker
    preparer: Target | None = None
    table: Target | None = None
    outputs: Mapping[str, Target] = dataclasses.field(default_factory=dict)
    report: Target | None = None
    report_title: str = ""  # the report section's title, named in the report when no run has this kind
    cache: Mapping[str, Target] = dataclasses.field(default_factory=dict)
    description: str = ""
    # Seconds one task takes, by mode, at the default --min-run-time: what shards
    # are balanced by when no earlier run recorded the task's duration. Only the
    # ratios between kinds matter; rough figures from the 2-core reference VM.
    estimate: Mapping[str, float] = dataclasses.field(default_factory=lambda: {"wall": 1.0, "instructions": 3.0})


_KINDS: dict[str, Kind] = {}
_BUILTIN: set[str] = set()


def _origin(target: Target | None) -> Any:
    """What a target is, across reloads of the module defining it (its module and qualified name)."""
    if target is None or isinstance(target, str):
        return target
    return (getattr(target, "__module__", None), getattr(target, "__qualname__", None))


def register(kind: Kind, *, replace: bool = False) -> Kind:
    """Add ``kind`` to the registry and return it.

    Registering a kind again from the same code (a suite file loaded twice, or
    by a worker) replaces it; another kind under a taken name is an error
    unless ``replace``.
    """
    if not kind.name or not isinstance(kind.name, str):
        raise UsageError(f"a Kind needs a name, got {kind.name!r}")
    existing = _KINDS.get(kind.name)
    if existing is not None and not replace and _origin(existing.runner) != _origin(kind.runner):
        if kind.name in _BUILTIN:
            raise UsageError(f"kind {kind.name!r} is built into harness; give yours another name")
        raise UsageError(f"kind {kind.name!r} is already registered by other code; pass replace=True to redefine it")
    _KINDS[kind.name] = kind
    return kind


def get(name: str) -> Kind:
    try:
        return _KINDS[name]
    except KeyError:
        known = ", ".join(sorted(_KINDS))
        raise UsageError(
            f"no kind {name!r} is registered (known: {known}); the suite that defines it must "
            "register it with harness.kinds.register(Kind(...))"
        ) from None


def find(name: str) -> Kind | None:
    """The kind called ``name``, or None where this process never registered it."""
    return _KINDS.get(name)


def registered() -> list[Kind]:
    return list(_KINDS.values())


def resolve(target: Target, what: str) -> Callable[..., Any]:
    """The callable a target names (callables are returned as they are)."""
    if callable(target):
        return target
    return resolve_reference(target, what)


def runner_for(name: str) -> Callable[..., Any]:
    runner = get(name).runner
    if runner is None:
        raise UsageError(f"tasks of kind {name!r} are measured where they are defined and cannot be run again")
    return resolve(runner, f"the runner of kind {name!r}")


def estimated_seconds(task: Any) -> float:
    """How long ``task`` (a Task) is expected to take, from its kind's ``estimate``."""
    kind = _KINDS.get(task.kind)
    return float((kind.estimate if kind is not None else {}).get(task.mode, 1.0))


def runner_reference(name: str) -> dict[str, Any] | None:
    """What a worker needs to find the runner of kind ``name``: None for built-in kinds,
    which every worker knows, else ``{"name", "runner"}`` with the runner's reference."""
    if name in _BUILTIN or name not in _KINDS:
        return None
    runner = _KINDS[name].runner
    if runner is None:
        return None
    return {"name": name, "runner": runner if isinstance(runner, str) else reference_of(runner)}


def runner_references(tasks: Any) -> dict[str, dict[str, Any]]:
    """``runner_reference`` of each kind among ``tasks`` that a worker cannot know by name."""
    refs = {}
    for kind in {t.kind for t in tasks}:
        ref = runner_reference(kind)
        if ref is not None:
            refs[kind] = ref
    return refs


def ensure(reference: Mapping[str, Any]) -> None:
    """In a worker: register the kind a request's ``runner_reference`` describes, if it is new here."""
    name = str(reference["name"])
    if name not in _KINDS:
        _KINDS[name] = Kind(name=name, runner=resolve_reference(reference["runner"], f"the runner of kind {name!r}"))


def _builtin(kind: Kind) -> None:
    register(kind)
    _BUILTIN.add(kind.name)


_PREPARE_CPP = "harness.run.prepare:prepare_tasks"

_builtin(Kind(
    name="timer", runner="harness.run.timer_task:run_timer_task", preparer=_PREPARE_CPP,
    estimate={"wall": 0.5, "instructions": 2.0},
    description="one statement (Python or C++), timed or counted",
))
_builtin(Kind(
    name="sampler", runner="harness.run.sampler_task:run_sampler_task",
    estimate={"wall": 0.5, "instructions": 2.0},
    description="a native sampler an extension module exports",
))
_builtin(Kind(
    name="grouped", runner="harness.run.grouped_task:run_grouped_task", preparer=_PREPARE_CPP,
    table="harness.present.grouped_table:grouped_table", estimate={"wall": 0.5, "instructions": 2.0},
    report="harness.present.grouped_report:dispatch_section", report_title="Dispatch overhead",
    description="one op in Python and C++, eager and TorchScript, forward and backward",
))
_builtin(Kind(
    name="compile_time", runner="harness.suites.compile_time.runner:run_compile_time_task",
    estimate={"wall": 20.0, "instructions": 60.0},
    table="harness.suites.compile_time.table:compile_time_table",
    outputs={".csv": "harness.suites.compile_time.output:write_outputs"},
    report="harness.suites.compile_time.report:compile_time_section", report_title="Compile time",
    description="instructions and seconds torch.compile spends on a fixed case",
))
_builtin(Kind(
    name="gpt_fast", runner="harness.suites.gpt_fast.runner:run_gpt_fast_task",
    estimate={"wall": 10.0, "instructions": 60.0},
    table="harness.suites.gpt_fast.table:rows_table",
    outputs={".csv": "harness.suites.gpt_fast.output:write_outputs"},
    report="harness.suites.gpt_fast.report:kernel_section", report_title="Kernel efficiency",
    cache={"peaks": "harness.suites.gpt_fast.peaks:cache_entries"},
    description="gpt-fast micro-kernels and models against the device's peaks",
))
_builtin(Kind(
    name="pytest", runner=None,
    description="a harness_bench measurement taken inside a pytest test",
))
