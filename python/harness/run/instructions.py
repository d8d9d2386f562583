"""Instruction-count runs of Timer tasks (``mode="instructions"``), inside a counter's worker.

The statement is compiled into the same block as for wall time, but its two
clock reads become the counter's region markers, so exactly the loop is
counted (for C++ statements, the native sampler call, whose loop is in C++).
An empty statement with the same loop (the baseline) is measured once per
worker and run count and subtracted: a result is the statement's own
instructions per run.

Parameters (``task.params``, besides the Timer's): ``number`` runs per
measurement (default 100), ``repeats`` measurements (default 1),
``baseline`` (default True for Python), ``scope`` (Python: "function", the
timeit loop, default; "module", torch's unrolled module-level block),
``layers``: when present (a rules file's path, or "" for the shipped
rules), instructions per PyTorch layer of the first repeat, baseline
subtracted as for the total (``extra["layers"]``, counts of ``number`` runs
that add up to ``samples[0] * number``; ``extra["layer_symbols"]``, the
largest functions of each layer and the rule that claimed each),
``detail``: "symbols" (default: top
functions per run in ``extra["symbols"]``), "total" (counts only) or "full"
(every function, inclusive and exclusive, for ``CallgrindStats``; with
``retain_out_file`` also the callgrind file's text).
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import json
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from harness.errors import UsageError
from harness.files.atomic import atomic_write_text
from harness.measure.callgrind.counter import CallgrindCounter
from harness.measure.callgrind.details import (
    PENDING,
    count_details,
    discard,
    pending,
    profile_from_json,
    profile_json,
)
from harness.measure.callgrind.flame import PARAMS as FLAME_PARAMS
from harness.measure.callgrind.flame import flame_details, wants_tree
from harness.measure.callgrind.globals import load_globals
from harness.measure.counter_choice import worker_counter
from harness.measure.counters.base import InstructionCounter
from harness.measure.counters.profile import Profile
from harness.measure.language import Language, parse_language
from harness.measure.python_block import PythonBlock, check_scope
from harness.measure.threads import torch_threads
from harness.model.result import TaskResult
from harness.model.task import Task
from harness.options import require_positive
from harness.run.prepare import cpp_block
from harness.workers.protocol import request_line
from harness.workers.zygote import Zygote, zygote_of_this_child

DEFAULT_NUMBER = 100
DETAILS = ("total", "symbols", "full")

# (counter, language, number, threads, detail) -> baseline profile, per worker.
_baselines: dict[tuple[Any, ...], Profile] = {}
# A task parameter: measure only the baseline and keep it for the zygote's later children.
BASELINE_ONLY = "baseline_only"


# What a Timer task's count depends on, in one order, with the value a task that leaves one out gets:
# the one table of these defaults (the runner, the baseline and the counting child's request read it).
_WORK_DEFAULTS: dict[str, Any] = {
    "stmt": None, "setup": "", "global_setup": "", "batch_setup": None, "language": "python",
    "num_threads": 1, "number": DEFAULT_NUMBER, "repeats": 1, "baseline": True, "scope": "function",
    "globals": None, "detail": "symbols", "retain_out_file": False, "layers": None, BASELINE_ONLY: False,
}
# What only names or labels a task: a counting child never needs it.
_NOT_WORK = ("label", "sub_label", "description", "min_run_time")


def _positive_int(params: Mapping[str, Any], key: str) -> int:
    value = params.get(key)
    if value is None:
        return _WORK_DEFAULTS[key]
    require_positive(key, value, int)
    return value


def _text(params: Mapping[str, Any], key: str) -> str:
    """A text parameter; left out or empty, its default."""
    return params.get(key) or _WORK_DEFAULTS[key]


def _flag(params: Mapping[str, Any], key: str) -> bool:
    value = params.get(key)
    return bool(_WORK_DEFAULTS[key] if value is None else value)


def _detail(params: Mapping[str, Any]) -> str:
    detail = _text(params, "detail")
    if detail not in DETAILS:
        raise UsageError(f"detail must be one of {', '.join(DETAILS)}, got {detail!r}")
    return detail


def _python_block(
    params: Mapping[str, Any], stmt: str, counter: InstructionCounter, with_globals: bool, scope: str = "function"
) -> Any:
    return PythonBlock(
        stmt,
        params.get("setup") or "pass",
        params.get("global_setup") or "",
        batch_setup=params.get("batch_setup"),
        globals=load_globals(params.get("globals")) if with_globals else None,
        clock_ns=counter.clock(),
        scope=scope,
    )


def _deferred(counter: InstructionCounter) -> bool:
    """Whether this count's dumps are left for the process that receives its result to read
    (``measure.callgrind.details``): in a counting child of a callgrind worker, under valgrind."""
    return counter.name == CallgrindCounter.name and zygote_of_this_child() is not None


def _measure(counter: InstructionCounter, sampler: Any, number: int, repeats: int, *, clocked: bool, detail: str,
             keep_text: bool = False) -> list[Profile]:
    """``repeats`` counts, parsed here (per function when ``detail`` asks)."""
    return counter.measure(sampler, number, repeats, clocked=clocked, detail=detail != "total", keep_text=keep_text)


def measure_block(
    block: Any, counter: InstructionCounter, number: int, repeats: int, *, clocked: bool, detail: str,
    keep_text: bool = False,
) -> list[Profile]:
    with block.translate_errors():
        return _measure(counter, block.sampler(), number, repeats, clocked=clocked, detail=detail, keep_text=keep_text)


def _dumps_of(counter: InstructionCounter, sampler: Any, number: int, repeats: int, *, clocked: bool) -> list[str]:
    """``repeats`` counts whose dumps are left unread (``_deferred``)."""
    assert isinstance(counter, CallgrindCounter)
    return counter.measure_dumps(sampler, number, repeats, clocked=clocked)


@contextlib.contextmanager
def _removed_on_error(dumps: list[str]) -> Iterator[None]:
    """Left dumps removed when what follows their count fails: no result will name them."""
    try:
        yield
    except BaseException:
        discard(dumps)
        raise


def run_timer_instructions(task: Task, min_run_time: float) -> TaskResult:
    """The runner for Timer tasks in instruction mode (called by ``run_timer_task``)."""
    p = task.params
    counter = worker_counter()
    language = parse_language(_text(p, "language"))
    number = _positive_int(p, "number")
    repeats = _positive_int(p, "repeats")
    threads = _positive_int(p, "num_threads")
    detail = _detail(p)
    python = language is Language.PYTHON
    scope = _text(p, "scope")
    check_scope(scope, python, p.get("batch_setup"))
    want_baseline = _flag(p, "baseline") and python

    with torch_threads(threads):
        if p.get(BASELINE_ONLY):
            baseline = _measure_baseline(counter, number, detail, scope)
            _save_baseline(_baseline_key(counter.name, p), baseline)
            return instruction_result(task, counter, [baseline], None, number, "total")
        if python:
            block = _python_block(p, p["stmt"], counter, with_globals=True, scope=scope)
        else:
            block = cpp_block(task)
        keep_text = detail == "full" and bool(p.get("retain_out_file"))
        if _deferred(counter):
            with block.translate_errors():
                dumps = _dumps_of(counter, block.sampler(), number, repeats, clocked=python)
            with _removed_on_error(dumps):
                baseline_ref = _baseline_ref(counter, p, number, detail, scope) if want_baseline else None
            return deferred_result(task, counter, dumps, baseline_ref, number, detail, keep_text)
        stmt = measure_block(block, counter, number, repeats, clocked=python, detail=detail, keep_text=keep_text)
        baseline = None
        if want_baseline:
            key = _baseline_key(counter.name, p)
            baseline = _baselines.get(key) or _load_baseline(key)
            if baseline is None:
                baseline = _measure_baseline(counter, number, detail, scope)
            _baselines[key] = baseline
    return instruction_result(task, counter, stmt, baseline, number, detail)


def _baseline_ref(counter: InstructionCounter, params: Mapping[str, Any], number: int, detail: str,
                  scope: str) -> Profile | str:
    """A deferred count's baseline: the file its zygote keeps it in (``baseline_first``), unread; else
    (its child failed) measured here, after the statement."""
    path = _baseline_file(_baseline_key(counter.name, params))
    if path is not None and path.exists():
        return str(path)
    return _measure_baseline(counter, number, detail, scope)


def _baseline_key(counter_name: str, params: Mapping[str, Any]) -> tuple[Any, ...]:
    """The one key a baseline is saved and found by: what an empty statement's count depends on."""
    return (counter_name, _positive_int(params, "number"), _positive_int(params, "num_threads"), _detail(params),
            _text(params, "scope"))


def _measure_baseline(counter: InstructionCounter, number: int, detail: str, scope: str) -> Profile:
    empty = _python_block({}, "pass", counter, with_globals=False, scope=scope)
    # Parsed here: kept beside the zygote for every later child (one parse per worker, not per count).
    return measure_block(empty, counter, number, 1, clocked=True, detail=detail)[0]


def _baseline_file(key: tuple[Any, ...]) -> Path | None:
    """Where a zygote's children keep a baseline: beside the zygote, one file per key and zygote."""
    zygote = zygote_of_this_child()
    return _baseline_path(zygote, key) if zygote is not None else None


def _baseline_path(zygote: Zygote, key: tuple[Any, ...]) -> Path:
    return zygote.own_file(f"baseline-{hashlib.sha256(json.dumps(key).encode()).hexdigest()[:16]}.json")


def _load_baseline(key: tuple[Any, ...]) -> Profile | None:
    path = _baseline_file(key)
    try:
        data = json.loads(path.read_text(encoding="utf-8")) if path is not None else None
    except (OSError, ValueError):
        return None
    return profile_from_json(data) if data else None


def _save_baseline(key: tuple[Any, ...], profile: Profile) -> None:
    path = _baseline_file(key)
    if path is not None:
        atomic_write_text(path, json.dumps(profile_json(profile)))


def counted_request(task: Task, min_run_time: float, kind: dict[str, Any] | None = None) -> bytes:
    """The request line a counting child of a zygote gets for ``task``: the work alone, in one form.

    A request's bytes become the child's heap, and the heap a count starts
    from moves it (glibc's aligned allocations and frees cost more or less
    with the addresses they meet): ``bench`` sends a suite's labels,
    ``collect_callgrind`` none, and a 90-character label moved a count by 4
    instructions in 966,463. Here every Timer task in instruction mode
    becomes the same request for the same work: no suite, name or labels,
    every parameter present with its default, in one order, and no
    ``min_run_time`` (counting ignores it). Other kinds lose their suite and
    name only (their runners may read anything).
    """
    if task.kind != "timer" or task.mode != "instructions":
        # The flame graph's and kept profiles' parameters are read where the count is finished, not here.
        params = {key: value for key, value in task.params.items() if key not in FLAME_PARAMS}
        return request_line(dataclasses.replace(task, suite="", name="", params=params), min_run_time, kind)
    p = task.params
    work = {key: (default if p.get(key) is None else p[key]) for key, default in _WORK_DEFAULTS.items()}
    if work["setup"] == "pass":
        work["setup"] = ""
    work["language"] = "python" if parse_language(work["language"]) is Language.PYTHON else "cpp"
    work["baseline"] = _flag(p, "baseline") and work["language"] == "python"  # C++ has none
    rest = {key: p[key] for key in sorted(p) if key not in _WORK_DEFAULTS and key not in _NOT_WORK + FLAME_PARAMS}
    return request_line(dataclasses.replace(task, suite="", name="", params={**work, **rest}), 0.0, kind)


def baseline_first(task: Task, zygote: Zygote) -> Task | None:
    """The task measuring ``task``'s baseline in a child of ``zygote`` of its own, when none has yet.

    In a child of a zygote, a baseline measured after the statement would
    start from the heap the statement's setup left; measured before it, it
    would cost a second instrumented run in every task. So the worker has it
    measured once per zygote in a fresh child, and the children read it.
    """
    p = task.params
    if task.kind != "timer" or task.mode != "instructions" or not _flag(p, "baseline"):
        return None
    if parse_language(_text(p, "language")) is not Language.PYTHON:
        return None
    try:
        key = _baseline_key(CallgrindCounter.name, p)  # a zygote is callgrind's
    except UsageError:
        return None  # the statement's own child refuses the parameter, with its message
    if _baseline_path(zygote, key).exists():
        return None
    _, number, threads, detail, scope = key
    params = {"stmt": "pass", "number": number, "num_threads": threads, "detail": detail, "scope": scope,
              BASELINE_ONLY: True}
    # No suite or name: the request's bytes become the child's heap (see run.worker).
    return Task(suite="", name="", kind="timer", params=params, mode="instructions")


def count_task(task: Task, sampler: Any, *, clocked: bool, baseline: Any = None) -> TaskResult:
    """The instruction-mode result of any runner that can build a sampler for its task.

    ``sampler``: a ``harness.sampler`` capsule or ``callable(number)``;
    ``clocked`` when it is a generated Python block built with the worker
    counter's ``clock()``. ``baseline``: a sampler of the same shape doing
    nothing, whose count is subtracted. Reads ``number``, ``repeats`` and
    ``detail`` from ``task.params``.
    """
    p = task.params
    counter = worker_counter()
    number = _positive_int(p, "number")
    repeats = _positive_int(p, "repeats")
    detail = _detail(p)
    base = None
    if _deferred(counter):
        dumps = _dumps_of(counter, sampler, number, repeats, clocked=clocked)
        if baseline is not None:
            with _removed_on_error(dumps):
                base = _measure(counter, baseline, number, 1, clocked=clocked, detail=detail)[0]
        return deferred_result(task, counter, dumps, base, number, detail, False)
    stmt = _measure(counter, sampler, number, repeats, clocked=clocked, detail=detail)
    if baseline is not None:
        base = _measure(counter, baseline, number, 1, clocked=clocked, detail=detail)[0]
    return instruction_result(task, counter, stmt, base, number, detail)


def instruction_result(
    task: Task,
    counter: InstructionCounter,
    stmt: list[Profile],
    baseline: Profile | None,
    number: int,
    detail: str,
) -> TaskResult:
    """The result of ``stmt``'s counts, less ``baseline``'s."""
    base_total = baseline.total if baseline is not None else 0
    extra: dict[str, Any] = {
        "counter": counter.name,
        "totals": [s.total for s in stmt],
        "baseline": base_total / number if baseline is not None else None,
    }
    extra.update(count_details(stmt, baseline, number, detail, task.params.get("layers")))
    if wants_tree(task.params) and stmt and stmt[0].calls:  # counted here, not in a zygote's child
        extra.update(flame_details(task, stmt[0], baseline, number, stmt[0].source))
    return TaskResult(
        task=task,
        status="ok",
        unit="instructions",
        samples=[(s.total - base_total) / number for s in stmt],
        number_per_run=number,
        extra=extra,
    )


def deferred_result(task: Task, counter: InstructionCounter, dumps: list[str], baseline: Profile | str | None,
                    number: int, detail: str, keep_text: bool) -> TaskResult:
    """A result whose counts are still in ``dumps`` (files): its samples, totals and details are made by
    the process that receives it (``measure.callgrind.details.finish``, called by ``counter.finish``)."""
    extra: dict[str, Any] = {
        "counter": counter.name,
        "totals": [],  # filled by finish; here so a record's fields keep instruction_result's order
        "baseline": None,
        PENDING: pending(dumps, baseline, detail, task.params.get("layers"), keep_text),
    }
    return TaskResult(task=task, status="ok", unit="instructions", samples=[], number_per_run=number, extra=extra)
