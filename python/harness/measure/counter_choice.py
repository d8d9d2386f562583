"""Choosing an instruction counter: by name in the harness process, by environment in a worker."""

from __future__ import annotations

import sys

from harness.core import native
from harness.errors import HarnessError, UsageError
from harness.measure.callgrind.counter import VALGRIND_INSTALL_HINT, CallgrindCounter, valgrind_path
from harness.measure.counters.base import InstructionCounter
from harness.measure.counters.perf import PerfCounter, perf_status
from harness.options import CACHE_SIM_ENV, CALLGRIND_DIR_ENV, COUNTER_ENV, env

COUNTER_NAMES = ("auto", "callgrind", "perf")


_told_fallback = False


def get_counter(name: str = "auto", cache_sim: bool = False) -> InstructionCounter:
    """The counter called ``name``; "auto": perf where readable, else callgrind (said once on stderr).

    ``cache_sim``: callgrind with its cache simulation (``counters.cache``); "auto" then means callgrind.

    Inside a worker started with a counter's ``worker_prefix()`` and
    ``worker_env()``, "auto" and that counter's name give the worker's own
    counter, whose ``count()`` works there.
    """
    global _told_fallback
    if name not in COUNTER_NAMES:
        raise UsageError(f"unknown instruction counter {name!r}: use one of {', '.join(COUNTER_NAMES)}")
    started_for = env(COUNTER_ENV)
    if started_for and name in ("auto", started_for):
        return worker_counter()  # inside a worker started for this counter
    if cache_sim:
        if name == "perf":
            raise UsageError("--cache-sim is callgrind's cache simulation: use --counter callgrind (or auto)")
        CallgrindCounter.require_valgrind()
        return CallgrindCounter(cache_sim=True)
    if name == "perf":
        counter = PerfCounter()
        counter.require_available()
        return counter
    if name == "callgrind":
        CallgrindCounter.require_valgrind()
        return CallgrindCounter()
    ok, reason = perf_status()
    if ok:
        return PerfCounter()
    if valgrind_path() is None:
        raise HarnessError(
            f"cannot count instructions: the hardware counter is unavailable ({reason}) and valgrind is not "
            f"installed; {VALGRIND_INSTALL_HINT}"
        )
    if not _told_fallback:
        _told_fallback = True
        print(f"harness: hardware instruction counter unavailable ({reason}); counting with callgrind", file=sys.stderr)
    return CallgrindCounter()


_worker_counter: InstructionCounter | None = None


def worker_counter() -> InstructionCounter:
    """The counter this (worker) process was started for, from its environment."""
    global _worker_counter
    if _worker_counter is None:
        name = env(COUNTER_ENV)
        if name is None:
            name = "callgrind" if native().callgrind.running_on_valgrind() else "perf"
        if name == "callgrind":
            _worker_counter = CallgrindCounter(out_dir=env(CALLGRIND_DIR_ENV), cache_sim=env(CACHE_SIM_ENV) == "1")
        elif name == "perf":
            _worker_counter = PerfCounter()
        else:
            raise UsageError(f"{COUNTER_ENV}={name!r}: use callgrind or perf")
    return _worker_counter
