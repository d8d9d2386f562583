"""Instruction counters: the interface every counter implements, the hardware counter, the choice.

Lives here: ``base`` (InstructionCounter, warm-up and garbage-collector
rules), ``profile`` (Profile: a count's per-function counts, below both
counters), ``perf`` (the CPU's retired-instruction counter), ``choice``
(``get_counter`` in the harness process, ``worker_counter`` in a worker),
``kept`` (which kept worker a counter borrows). The callgrind counter lives
with the rest of valgrind's code in ``measure.callgrind``.
May import: ``harness.measure.callgrind``, ``harness.workers``,
``harness.core``, ``harness.errors``, ``harness.options``.
Imported by: ``harness.run``, ``harness.bench``.
"""
