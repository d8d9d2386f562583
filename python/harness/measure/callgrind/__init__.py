"""Valgrind's callgrind, the foreign engine behind exact instruction counts.

Lives here: ``counter`` (CallgrindCounter: counting under valgrind, forked
repeats), ``dump_dir`` (the directory its workers dump into, swept once its
owner is killed), ``logs`` (valgrind's logs), ``profile`` (reading callgrind's output
format into per-function counts), ``stats`` (torch's CallgrindStats and
FunctionCounts), ``layers`` (counts per PyTorch layer, by the rules in
``layers.toml``), ``globals`` (Timer globals copied to the measuring process
by torch's rules), ``collect`` (``Timer.collect_callgrind``: this process's
callgrind worker).
May import: ``harness.measure.counters.base``, ``harness.workers``,
``harness.model``, ``harness.core``, ``harness.errors``, ``harness.options``.
Imported by: ``harness.measure`` (the Timer, the counters), ``harness.run``.
"""
