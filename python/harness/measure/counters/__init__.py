"""Instruction counters: the interface every counter implements, the Profile a count reports, the hardware counter.

Lives here: ``base`` (InstructionCounter, warm-up and garbage-collector
rules), ``profile`` (Profile: a count's per-function counts), ``perf`` (the
CPU's retired-instruction counter), ``kept`` (which kept worker a counter
borrows), ``cache`` (callgrind's cache simulation at one geometry, and its
figures). The callgrind counter lives with the rest of valgrind's code in
``measure.callgrind``, one floor up; the choice between the two counters in
``measure.counter_choice``, above both.
May import: ``harness.workers``, ``harness.model``, ``harness.files``,
``harness.core``, ``harness.errors``, ``harness.options``.
Imported by: ``harness.measure`` (callgrind, the choice), ``harness.run``, ``harness.cluster``,
``harness.bench``, ``harness.cli``, ``harness.suites``.
"""
