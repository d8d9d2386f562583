"""The callgrind worker behind ``Timer.collect_callgrind``: started once per process, reused.

torch starts a fresh ``valgrind python`` (and ``import torch`` under it) for
every call; here the first call starts one worker under callgrind and later
calls send it their statements, so start-up is paid once per process. The
worker is restarted after a crash or a timeout and closed when the process
exits; its temporary files go with it. By default the worker outlives the
process (``workers.kept``; ``HARNESS_KEEP_WORKER``), so the next script run
skips the start-up as well.
"""

from __future__ import annotations

import atexit
import contextlib
import functools
import importlib.util
import json
import os
import threading
from collections.abc import Callable
from typing import Any

from harness.errors import CallgrindFailed, HarnessError, UsageError
from harness.files.atomic import atomic_write_text
from harness.files.cache import cache_dir
from harness.measure.callgrind.counter import CallgrindCounter, built_with_debug_symbols
from harness.measure.callgrind.globals import dump_globals
from harness.measure.callgrind.stats import CallgrindStats, FunctionCounts, empty_counts
from harness.measure.counters.cache import figures, is_cache_sim
from harness.measure.counters.kept import open_counter_worker
from harness.measure.cpp.build import build
from harness.measure.cpp.pch import wait_for_pch
from harness.measure.cpp.statement import CppStatement
from harness.measure.language import Language
from harness.measure.python_block import check_scope
from harness.model.result import TaskResult
from harness.model.task import Task
from harness.options import CALLGRIND_TIMEOUT, WORKER_START_TIMEOUT, keep_worker_seconds, require_positive
from harness.workers.kept import KeptWorker
from harness.workers.process import WorkerProcess
from harness.workers.protocol import WorkerDied, WorkerStartFailed, with_stderr


class CallgrindWorker:
    """One long-lived worker process under callgrind, used by one process's Timers."""

    def __init__(self, cache_sim: bool = False) -> None:
        self._cache_sim = cache_sim
        self._counter: CallgrindCounter | None = None
        self._worker: WorkerProcess | KeptWorker | None = None
        self._lock = threading.Lock()

    def _start(self, counter: CallgrindCounter) -> WorkerProcess | KeptWorker:
        keep = keep_worker_seconds()
        if keep is not None:
            kept = open_counter_worker(counter, keep, WORKER_START_TIMEOUT)
            if kept is not None:
                return kept
        return WorkerProcess(counter.worker_prefix(), counter.worker_env(), WORKER_START_TIMEOUT)

    def _ready(self) -> tuple[CallgrindCounter, WorkerProcess | KeptWorker]:
        """The counter and a live worker, started (or joined, when kept) if there is none; called with the lock held."""
        if self._counter is None:
            CallgrindCounter.require_valgrind()
            self._counter = CallgrindCounter(cache_sim=self._cache_sim)
        counter = self._counter
        if self._worker is None or self._worker.proc.poll() is not None:
            self._discard()
            try:
                self._worker = self._start(counter)
            except WorkerStartFailed as exc:
                raise HarnessError(
                    _with_notes(f"could not start the callgrind worker: {exc}", counter.diagnostics, exc.pid)
                ) from None
        return counter, self._worker

    def start(self) -> None:
        """Have a worker ready now, so that its start-up (~10-15 s under valgrind) can overlap other work."""
        with self._lock:
            self._ready()

    def run(self, task: Task, timeout: float) -> TaskResult:
        with self._lock:
            counter, worker = self._ready()
            # A kept worker's valgrind logs are in its own directory.
            notes = worker.diagnostics if isinstance(worker, KeptWorker) else counter.diagnostics
            try:
                result = worker.run(task, 0.0, timeout)
            except TimeoutError:
                self._discard()
                raise HarnessError(
                    _with_notes(
                        with_stderr(
                            f"collect_callgrind timed out after {timeout:g} s; the measuring process was killed "
                            "(pass a larger timeout= for long statements)",
                            worker.take_stderr(),
                        ),
                        notes,
                        worker.proc.pid,
                    )
                ) from None
            except WorkerDied as exc:
                self._discard()
                raise CallgrindFailed(
                    _with_notes(
                        with_stderr(f"the callgrind worker died: {exc}", worker.take_stderr()), notes, worker.proc.pid
                    )
                ) from None
            except BaseException:  # Ctrl-C: the worker may be mid-task; do not reuse it
                self._discard()
                raise
        return counter.finish(result)  # outside the lock: another thread's count need not wait for it

    def _discard(self) -> None:
        if self._worker is not None:
            self._worker.kill()
            self._worker = None

    def close(self) -> None:
        with self._lock:
            if self._worker is not None:
                self._worker.close()
                self._worker = None
            if self._counter is not None:
                self._counter.close()
                self._counter = None


def _with_notes(message: str, diagnostics: Callable[[int], str], pid: int) -> str:
    notes = diagnostics(pid)
    return f"{message}\n--- valgrind ---\n{notes}" if notes else message


_shared: dict[bool, CallgrindWorker] = {}  # cache_sim -> this process's worker: a simulating one is another valgrind
_shared_lock = threading.Lock()


def shared_worker(cache_sim: bool = False) -> CallgrindWorker:
    """This process's callgrind worker (closed at exit); ``cache_sim``: the one simulating the caches."""
    with _shared_lock:
        worker = _shared.get(cache_sim)
        if worker is None:
            worker = _shared[cache_sim] = CallgrindWorker(cache_sim)
            atexit.register(worker.close)
        return worker


def collect_callgrind(
    timer: Any,
    number: int = 100,
    repeats: int | None = None,
    collect_baseline: bool = True,
    retain_out_file: bool = False,
    timeout: float | None = None,
    scope: str = "function",
    plain_globals: bool = False,
    cache_sim: bool = False,
) -> CallgrindStats | tuple[CallgrindStats, ...]:
    """``Timer.collect_callgrind``: one CallgrindStats, or a tuple of them when ``repeats`` is given."""
    require_positive("number", number, int)
    if repeats is not None:
        require_positive("repeats", repeats, int)
    if timeout is not None and not timeout > 0:
        raise UsageError(f"timeout must be > 0 seconds, got {timeout!r}")
    spec = timer.task_spec
    python = timer.language is Language.PYTHON
    # Here, before the worker starts (~10 s under valgrind), rather than in it.
    check_scope(scope, python, timer._callgrind_batch_setup)
    if not python and timer._callgrind_globals:
        raise UsageError("globals are only supported for Python statements")
    # Before the worker starts, as torch checks them before starting valgrind.
    globals_blob = dump_globals(timer._callgrind_globals, plain=plain_globals) if python else None
    params = {
        "stmt": spec.stmt,
        "setup": spec.setup,
        "global_setup": spec.global_setup,
        "batch_setup": timer._callgrind_batch_setup,
        "language": "python" if python else "cpp",
        "num_threads": spec.num_threads,
        "number": number,
        "repeats": repeats or 1,
        "baseline": bool(collect_baseline) and python,
        "detail": "full",
        "scope": scope,
        "retain_out_file": bool(retain_out_file),
        "globals": globals_blob,
    }
    if not python:
        _build_while_starting(spec, timer._callgrind_batch_setup, cache_sim)
    task = Task(suite="timer", name="collect_callgrind", kind="timer", params=params, mode="instructions")
    result = shared_worker(cache_sim).run(task, timeout or CALLGRIND_TIMEOUT)
    if not result.ok:
        raise CallgrindFailed(f"collect_callgrind failed: {result.error}")
    stats = stats_from_result(result, spec, number, retain_out_file)
    return stats if repeats is not None else stats[0]


def _build_while_starting(spec: Any, batch_setup: str | None, cache_sim: bool) -> None:
    """Build a C++ statement in a thread while this one starts (or joins) the worker: a worker's start
    is ``import torch`` under valgrind on one core and the compiler runs on another, so a first count
    waits for the longer of them rather than their sum. The start stays here, where Ctrl-C reaches it;
    the build's failure is the worker's to report."""
    from concurrent.futures import ThreadPoolExecutor  # a C++ statement's only: not on every count's import

    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="harness-build") as pool:
        building = pool.submit(_build_here, spec, batch_setup)
        shared_worker(cache_sim).start()
        building.result()


def _build_here(spec: Any, batch_setup: str | None) -> None:
    """Compile a C++ statement in this process, as ``bench`` does before a run.

    The worker then only loads it from the cache: compiled in the measuring
    process, the compiler's run would leave that process in another state
    than a cache hit does, and the first count would differ from the next.
    A statement that does not compile is left for the worker to report.
    """
    statement = CppStatement(stmt=spec.stmt, setup=spec.setup, global_setup=spec.global_setup,
                             batch_setup=batch_setup or "")
    try:
        build([statement])
    except HarnessError:
        return
    wait_for_pch()


def stats_from_result(result: TaskResult, spec: Any, number: int, retain_out_file: bool) -> tuple[CallgrindStats, ...]:
    data = result.extra["callgrind"]
    base = data.get("baseline")
    if base:
        base_incl = FunctionCounts.from_mapping(base["inclusive"], inclusive=True)
        base_excl = FunctionCounts.from_mapping(base["exclusive"], inclusive=False)
    else:
        base_incl, base_excl = empty_counts(True), empty_counts(False)
    debug = torch_has_debug_symbols()
    base_cache = _cache_of(base) if base else None
    return tuple(
        CallgrindStats(
            task_spec=spec,
            number_per_run=number,
            built_with_debug_symbols=debug,
            baseline_inclusive_stats=base_incl,
            baseline_exclusive_stats=base_excl,
            stmt_inclusive_stats=FunctionCounts.from_mapping(s["inclusive"], inclusive=True),
            stmt_exclusive_stats=FunctionCounts.from_mapping(s["exclusive"], inclusive=False),
            stmt_callgrind_out=s.get("out") if retain_out_file else None,
            stmt_cache=_cache_of(s),
            baseline_cache=base_cache,
        )
        for s in data["stmt"]
    )


def _cache_of(profile: dict[str, Any]) -> dict[str, int] | None:
    """A profile's cache figures (``details.profile_json``), None when it is not a cache simulation's."""
    totals = profile.get("totals")
    if not totals or not is_cache_sim(list(totals)):
        return None
    return {name: int(value) for name, value in figures(totals).items()}


@functools.cache  # torch does not change under a running process: the cache file is read once
def torch_has_debug_symbols() -> bool:
    """Whether torch was built with debug symbols, remembered per torch install in the cache
    (``<cache>/torch/build.json``, keyed by torch's ``__init__.py`` path, size and time).

    A counting child does not ask (torch's answer cost it 0.1 s of a 1 s count under valgrind);
    asked here, it costs ``import torch`` (~1 s) once per torch install, not once per script.
    """
    spec = importlib.util.find_spec("torch")
    try:
        origin = str(spec.origin) if spec is not None else ""
        st = os.stat(origin)
    except OSError:
        return built_with_debug_symbols()
    key = f"{origin}:{st.st_size}:{st.st_mtime_ns}"
    try:
        path = cache_dir("torch") / "build.json"
    except HarnessError:
        return built_with_debug_symbols()  # no usable cache: asked every time, as before
    with contextlib.suppress(OSError, ValueError):
        known = json.loads(path.read_text(encoding="utf-8")).get(key)
        if isinstance(known, bool):
            return known
    value = built_with_debug_symbols()
    with contextlib.suppress(HarnessError, OSError):
        atomic_write_text(path, json.dumps({key: value}))  # the current install only
    return value
