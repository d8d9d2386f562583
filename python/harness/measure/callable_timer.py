"""``harness.timeit(fn, *args, **kwargs)``: time any Python callable from the C++ loop.

For tools that hold a function rather than a statement string. The C++ core
calls ``fn(*args, **kwargs)`` in its loop (``harness._C.CallLoop``: no Python
bytecode of ours between the clock reads), calibrates and collects blocks as
``Timer.blocked_autorange`` does, and the result is a ``harness.Measurement``.
Each run pays one Python call (tens of ns; ``benchmarks/overhead.py`` prints
it as "C++ loop calling a Python function"), which ``Timer``'s inlined
statement does not; for sub-microsecond work, prefer ``Timer``.
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Callable
from typing import Any

from harness.core import native
from harness.errors import UsageError
from harness.measure.threads import torch_threads
from harness.model.measurement import Measurement, TaskSpec
from harness.options import DEFAULT_MIN_RUN_TIME, require_positive


def describe_call(fn: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any]) -> str:
    """A short, stable stand-in for a stmt: the callable's name and the argument types.

    Values are left out on purpose: reprs of tensors or large containers would
    make names huge and unstable across runs.
    """
    name = getattr(fn, "__qualname__", None) or getattr(fn, "__name__", None) or type(fn).__qualname__
    module = getattr(fn, "__module__", None)
    if module and module not in ("builtins", "__main__"):
        name = f"{module}.{name}"
    parts = [type(a).__name__ for a in args] + [f"{k}={type(v).__name__}" for k, v in kwargs.items()]
    return f"{name}({', '.join(parts)})"


def _current_torch_threads() -> int:
    # Report what the run had without importing torch for callables that never used it.
    torch = sys.modules.get("torch")
    return torch.get_num_threads() if torch is not None else 1


def timeit(
    fn: Callable[..., Any],
    /,
    *args: Any,
    min_run_time: float = DEFAULT_MIN_RUN_TIME,
    label: str | None = None,
    sub_label: str | None = None,
    description: str | None = None,
    num_threads: int | None = None,
    **kwargs: Any,
) -> Measurement:
    """Time ``fn(*args, **kwargs)`` for at least ``min_run_time`` seconds; return a Measurement.

    ``label``, ``sub_label`` and ``description`` label the Measurement as in
    ``Timer`` (so results go into ``Compare``); ``num_threads`` sets torch's
    intra-op threads for the run and restores them after (default: leave
    torch alone, and do not import it). These names and ``min_run_time`` are
    harness's own; to pass a keyword argument with one of these names to
    ``fn``, bind it first with ``functools.partial``.

    An exception raised by ``fn`` propagates unchanged, with its traceback.
    """
    if not callable(fn):
        raise UsageError(f"harness.timeit: fn must be callable, got {type(fn).__name__} {fn!r:.80}")
    require_positive("min_run_time", min_run_time)
    if num_threads is not None:
        require_positive("num_threads", num_threads, int)
    spec = TaskSpec(
        stmt=describe_call(fn, args, kwargs),
        setup="",
        label=label,
        sub_label=sub_label,
        description=description,
        num_threads=num_threads if num_threads is not None else _current_torch_threads(),
    )
    core = native()
    loop = core.CallLoop(fn, args, kwargs)
    threads: contextlib.AbstractContextManager[None] = contextlib.nullcontext()
    if num_threads is not None:
        threads = torch_threads(num_threads)
    with threads:
        number, raw_ns = core.blocked_autorange(loop, float(min_run_time))
    return Measurement(number_per_run=number, raw_times=[t / 1e9 for t in raw_ns], task_spec=spec)
