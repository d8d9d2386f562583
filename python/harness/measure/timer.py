"""Timer: a drop-in for ``torch.utils.benchmark.Timer`` whose clock, loop policy and statistics are C++."""

from __future__ import annotations

import textwrap
import timeit as stdlib_timeit
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, ClassVar

from harness.core import native
from harness.errors import UsageError
from harness.measure.language import Language, parse_language
from harness.measure.python_block import PythonBlock
from harness.measure.threads import torch_threads
from harness.measure.timer_cls import TimeitSampler
from harness.model.measurement import Measurement, TaskSpec
from harness.options import DEFAULT_MIN_RUN_TIME, NOISY_IQR_FRACTION, require_positive

if TYPE_CHECKING:
    from harness.measure.callgrind.stats import CallgrindStats


def _as_torch_stores(code: str) -> str:
    """``stmt``/``setup`` as torch's Timer keeps them: dedented, one leading newline and trailing blanks dropped.

    The task spec (and so every repr and table) shows them this way, and a
    ``_timer_cls`` object is built with them.
    """
    code = textwrap.dedent(code)
    return (code[1:] if code.startswith("\n") else code).rstrip()


class Timer:
    """Time a statement: ``timeit``, ``blocked_autorange``, ``adaptive_autorange``.

    Same arguments and results as ``torch.utils.benchmark.Timer``, plus
    ``batch_setup``: untimed code run before each block of runs, with
    ``number`` bound to the block's run count. If it binds ``batch`` (a
    sequence of exactly ``number`` items), the timed loop iterates over it
    with each item bound to ``item``: fresh inputs for in-place statements
    without stopping the clock around every run.

    ``_timer_cls`` is torch's hook: a subclass that sets it to another class
    than ``timeit.Timer`` (built as ``_timer_cls(stmt=, setup=, timer=,
    globals=)``, its ``timeit(number)`` returning seconds) is timed through
    that object with torch's own calibration and loops (``timer_cls``).
    """

    _timer_cls: ClassVar[type] = stdlib_timeit.Timer

    def __init__(
        self,
        stmt: str = "pass",
        setup: str = "pass",
        global_setup: str = "",
        timer: Callable[[], float] | None = None,
        globals: dict[str, Any] | None = None,
        label: str | None = None,
        sub_label: str | None = None,
        description: str | None = None,
        env: str | None = None,
        num_threads: int = 1,
        language: Language | str = Language.PYTHON,
        batch_setup: str | None = None,
    ) -> None:
        if not isinstance(stmt, str):
            raise UsageError(f"stmt must be a string, got {type(stmt).__name__}")
        if not isinstance(setup, str):
            raise UsageError(f"setup must be a string, got {type(setup).__name__}")
        require_positive("num_threads", num_threads, int)
        self._language = parse_language(language)
        if self._language is Language.CPP and globals:
            raise UsageError("C++ timing does not support globals: define the values in `setup` instead")
        if self._language is Language.CPP:
            if self._timer_cls is not stdlib_timeit.Timer:
                raise AssertionError("_timer_cls has already been swapped.")  # torch's check and message
            setup = "" if setup == "pass" else setup
        stmt, setup = _as_torch_stores(stmt), _as_torch_stores(setup)
        # Kept for collect_callgrind, which rebuilds the statement in its worker.
        self._callgrind_globals = dict(globals or {})
        self._callgrind_batch_setup = batch_setup
        self._task_spec = TaskSpec(
            stmt=stmt,
            setup=setup,
            global_setup=global_setup,
            label=label,
            sub_label=sub_label,
            description=description,
            env=env,
            num_threads=num_threads,
        )
        self._sampler: TimeitSampler | None = None
        if self._language is Language.CPP:
            from harness.measure.cpp.block import CppBlock  # only C++ users pay for it

            self._block: Any = CppBlock(stmt, setup, global_setup, batch_setup=batch_setup)
        elif self._timer_cls is not stdlib_timeit.Timer:
            self._sampler = self._timeit_sampler(timer, globals)
        else:
            self._block = PythonBlock(
                stmt, setup, global_setup, batch_setup=batch_setup, globals=globals, timer=timer,
                clock_ns=native().now_ns,
            )

    def _timeit_sampler(self, timer: Callable[[], float] | None, globals: dict[str, Any] | None) -> TimeitSampler:
        """The object ``_timer_cls`` builds, with the arguments torch's Timer gives it."""
        import torch
        from torch.utils.benchmark.utils.timer import timer as torch_timer
        from torch.utils.benchmark.utils.valgrind_wrapper.timer_interface import CopyIfCallgrind

        namespace = dict(globals or {})
        namespace.setdefault("torch", torch)
        spec = self._task_spec
        timer_obj = self._timer_cls(
            stmt=spec.stmt, setup=spec.setup, timer=timer or torch_timer,
            globals=CopyIfCallgrind.unwrap_all(namespace),
        )
        return TimeitSampler(timer_obj, spec)

    @property
    def language(self) -> Language:
        return self._language

    @property
    def task_spec(self) -> TaskSpec:
        return self._task_spec

    def _measurement(self, number: int, raw_ns: list[float]) -> Measurement:
        return Measurement(number_per_run=number, raw_times=[t / 1e9 for t in raw_ns], task_spec=self._task_spec)

    def timeit(self, number: int = 1000000) -> Measurement:
        """One block of ``number`` runs (after a short warm-up block)."""
        require_positive("number", number, int)
        if self._sampler is not None:
            return self._sampler.timeit(number)
        with torch_threads(self._task_spec.num_threads), self._block.translate_errors():
            sampler = self._block.sampler()
            native().fixed_blocks(sampler, max(number // 100, 2), 1)
            n, raw = native().fixed_blocks(sampler, number, 1)
        return self._measurement(n, raw)

    def repeat(self, repeat: int = -1, number: int = -1) -> None:
        raise NotImplementedError("See `Timer.blocked_autorange.`")

    def autorange(self, callback: Callable[[int, float], None] | None = None) -> None:
        raise NotImplementedError("See `Timer.blocked_autorange.`")

    @staticmethod
    def _wrap_callback(callback: Callable[[int, float], None] | None) -> Callable[[int, int], None] | None:
        if callback is None:
            return None
        return lambda number, ns: callback(number, ns / 1e9)

    def blocked_autorange(
        self, callback: Callable[[int, float], None] | None = None, min_run_time: float = DEFAULT_MIN_RUN_TIME
    ) -> Measurement:
        """Blocks of a calibrated run count until ``min_run_time`` seconds are spent."""
        require_positive("min_run_time", min_run_time)
        if self._sampler is not None:
            return self._sampler.blocked_autorange(callback, min_run_time)
        with torch_threads(self._task_spec.num_threads), self._block.translate_errors():
            n, raw = native().blocked_autorange(self._block.sampler(), min_run_time, self._wrap_callback(callback))
        return self._measurement(n, raw)

    def adaptive_autorange(
        self,
        threshold: float = NOISY_IQR_FRACTION,
        *,
        min_run_time: float = 0.01,
        max_run_time: float = 10.0,
        callback: Callable[[int, float], None] | None = None,
    ) -> Measurement:
        """Blocks until IQR/median < ``threshold`` (and ``min_run_time`` is spent) or ``max_run_time``."""
        require_positive("threshold", threshold)
        require_positive("min_run_time", min_run_time)
        require_positive("max_run_time", max_run_time)
        if self._sampler is not None:
            return self._sampler.adaptive_autorange(threshold, min_run_time, max_run_time, callback)
        with torch_threads(self._task_spec.num_threads), self._block.translate_errors():
            n, raw = native().adaptive_autorange(
                self._block.sampler(), threshold, min_run_time, max_run_time, self._wrap_callback(callback)
            )
        return self._measurement(n, raw)

    def collect_callgrind(
        self,
        number: int = 100,
        *,
        repeats: int | None = None,
        collect_baseline: bool = True,
        retain_out_file: bool = False,
        timeout: float | None = None,
        scope: str = "function",
        plain_globals: bool = False,
        cache_sim: bool = False,
    ) -> CallgrindStats | tuple[CallgrindStats, ...]:
        """Instruction counts of ``number`` runs under callgrind, as torch's ``collect_callgrind``.

        The statement runs in this process's callgrind worker (started on the
        first call, reused by later ones). ``repeats``: that many measurements,
        returned as a tuple (each from the same warmed-up state, so Python
        statements repeat exactly). ``collect_baseline``: also measure the
        empty statement, which ``own_counts()`` subtracts (Python only, as in
        torch). Every value in ``globals`` must be wrapped in
        ``CopyIfCallgrind``, as with torch (``ValueError`` otherwise);
        ``plain_globals=True`` (harness only) lets builtin values (str, int,
        float, ...) through unwrapped. ``timeout``: seconds before the
        measurement is killed (default ``options.CALLGRIND_TIMEOUT``, 1800 s).

        ``scope`` (Python statements): "function" (default) counts the
        warmed-up ``timeit`` loop, where the statement's names are fast
        locals and its bytecode is specialised, as in code that runs hot.
        "module" counts the statement the way torch does (unrolled at module
        scope: every name a dictionary lookup, bytecode barely specialised):
        more instructions, but the same ones torch counts, for comparing with
        counts recorded by torch.

        ``cache_sim`` (harness only): count under callgrind's cache simulation
        at one fixed geometry (``measure.counters.cache``), in a worker of its
        own; each CallgrindStats then has ``stmt_cache``, ``baseline_cache`` and
        ``own_cache()``: data reads and writes, misses per level, L1/LL/RAM
        hits and estimated cycles.
        """
        from harness.measure.callgrind.collect import collect_callgrind  # starts a worker: only when asked

        return collect_callgrind(
            self, number, repeats, collect_baseline, retain_out_file, timeout, scope, plain_globals=plain_globals,
            cache_sim=cache_sim,
        )
