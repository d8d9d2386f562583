"""Measuring: timing Python and C++ statements and callables, and counting their instructions.

Lives here: ``timer`` (Timer, torch's drop-in), ``timer_cls`` (torch's
``Timer._timer_cls`` hook), ``python_block`` (the generated timed Python
loop), ``callable_timer`` (``harness.timeit``), ``language`` and ``threads``
(what a statement is written in, torch's thread count); ``cpp/`` (C++
statements: code generation, PCH, build cache, error mapping), ``counters/``
(instruction counters: the interface, Profile, perf, kept workers),
``callgrind/`` (valgrind's callgrind: the counter, its profiles, torch's
CallgrindStats, ``collect_callgrind``), ``counter_choice`` (which counter).
Inside, ``counters/`` sits below ``callgrind/``, and ``counter_choice`` above
both (docs/architecture.md, "Floors inside a folder").
May import: ``harness.model``, ``harness.workers``, ``harness.files``,
``harness.core``, ``harness.errors``, ``harness.options``, ``harness._version``.
Imported by: ``harness.run``, ``harness.bench``, the public API.
"""
