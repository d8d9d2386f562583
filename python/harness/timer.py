"""Timer: a drop-in for ``torch.utils.benchmark.Timer`` whose clock, loop policy and statistics are C++."""

from __future__ import annotations

import enum
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from .core_loader import native
from .errors import UsageError
from .measurement import Measurement, TaskSpec

if TYPE_CHECKING:
    from .callgrind import CallgrindStats
from .python_block import PythonBlock


class Language(enum.Enum):
    PYTHON = 0
    CPP = 1


_LANGUAGE_NAMES = {"py": Language.PYTHON, "python": Language.PYTHON, "cpp": Language.CPP, "c++": Language.CPP}


def parse_language(language: Language | str) -> Language:
    if isinstance(language, Language):
        return language
    try:
        return _LANGUAGE_NAMES[str(language).lower()]
    except KeyError:
        raise UsageError(
            f"unknown language {language!r}: use 'python' or 'cpp' (or harness.Language)"
        ) from None


@contextmanager
def torch_threads(num_threads: int) -> Iterator[None]:
    """Run with torch's intra-op thread count set, restoring the previous one after."""
    import torch

    previous = torch.get_num_threads()
    torch.set_num_threads(num_threads)
    try:
        yield
    finally:
        torch.set_num_threads(previous)


def require_positive(name: str, value: float, kind: type = float) -> None:
    """UsageError unless ``value`` is a positive number (of ``kind``): the one check of counts and durations."""
    if not isinstance(value, (int, float)) or isinstance(value, bool) or not value > 0:
        raise UsageError(f"{name} must be a positive {kind.__name__}, got {value!r}")
    if kind is int and not isinstance(value, int):
        raise UsageError(f"{name} must be a positive int, got {value!r}")


class Timer:
    """Time a statement: ``timeit``, ``blocked_autorange``, ``adaptive_autorange``.

    Same arguments and results as ``torch.utils.benchmark.Timer``, plus
    ``batch_setup``: untimed code run before each block of runs, with
    ``number`` bound to the block's run count. If it binds ``batch`` (a
    sequence of exactly ``number`` items), the timed loop iterates over it
    with each item bound to ``item``: fresh inputs for in-place statements
    without stopping the clock around every run.
    """

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
        if self._language is Language.CPP:
            from .cpp_stmt import CppBlock  # noqa: PLC0415 - only C++ users pay for it

            self._block: Any = CppBlock(stmt, setup, global_setup, batch_setup=batch_setup)
        else:
            self._block = PythonBlock(
                stmt, setup, global_setup, batch_setup=batch_setup, globals=globals, timer=timer,
                clock_ns=native().now_ns,
            )

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
        self, callback: Callable[[int, float], None] | None = None, min_run_time: float = 0.2
    ) -> Measurement:
        """Blocks of a calibrated run count until ``min_run_time`` seconds are spent."""
        require_positive("min_run_time", min_run_time)
        with torch_threads(self._task_spec.num_threads), self._block.translate_errors():
            n, raw = native().blocked_autorange(self._block.sampler(), min_run_time, self._wrap_callback(callback))
        return self._measurement(n, raw)

    def adaptive_autorange(
        self,
        threshold: float = 0.1,
        *,
        min_run_time: float = 0.01,
        max_run_time: float = 10.0,
        callback: Callable[[int, float], None] | None = None,
    ) -> Measurement:
        """Blocks until IQR/median < ``threshold`` (and ``min_run_time`` is spent) or ``max_run_time``."""
        require_positive("threshold", threshold)
        require_positive("min_run_time", min_run_time)
        require_positive("max_run_time", max_run_time)
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
    ) -> CallgrindStats | tuple[CallgrindStats, ...]:
        """Instruction counts of ``number`` runs under callgrind, as torch's ``collect_callgrind``.

        The statement runs in this process's callgrind worker (started on the
        first call, reused by later ones). ``repeats``: that many measurements,
        returned as a tuple (each from the same warmed-up state, so Python
        statements repeat exactly). ``collect_baseline``: also measure the
        empty statement, which ``counts(denoise=True)`` subtracts (Python
        only, as in torch). ``globals`` must be builtins or wrapped in
        ``torch.utils.benchmark.CopyIfCallgrind``. ``timeout``: seconds before
        the measurement is killed (default 1800).

        ``scope`` (Python statements): "function" (default) counts the
        warmed-up ``timeit`` loop, where the statement's names are fast
        locals and its bytecode is specialised, as in code that runs hot.
        "module" counts the statement the way torch does (unrolled at module
        scope: every name a dictionary lookup, bytecode barely specialised):
        more instructions, but the same ones torch counts, for comparing with
        counts recorded by torch.
        """
        from .callgrind_worker import collect_callgrind

        return collect_callgrind(self, number, repeats, collect_baseline, retain_out_file, timeout, scope)
