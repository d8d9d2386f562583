"""Valgrind's callgrind, the foreign engine behind exact instruction counts.

Lives here: ``counter`` (CallgrindCounter: counting under valgrind, forked
repeats), ``dump_dir`` (the directory its workers dump into, swept once its
owner is killed), ``logs`` (valgrind's logs), ``profile`` (reading callgrind's output
format into per-function counts), ``stats`` (torch's CallgrindStats and
FunctionCounts), ``layers`` (counts per PyTorch layer, by the rules in
``layers.toml``), ``globals`` (Timer globals copied to the measuring process
by torch's rules), ``collect`` (``Timer.collect_callgrind``: this process's
callgrind worker), ``details`` (a count's samples, totals, symbols, layers and
profiles, made from its dumps where the result arrives), ``call_tree`` (a
count's call tree from callgrind's call graph), ``flame`` (what a count keeps
of its call tree: flame graphs, ``--keep-profiles``).
May import: ``harness.measure.counters`` (one floor down: the interface,
Profile, kept workers, the cache geometry), ``harness.measure.cpp``,
``harness.measure.language`` and ``harness.measure.python_block`` (a Timer's
statement, for ``collect``), ``harness.workers``, ``harness.model``,
``harness.files``, ``harness.core``, ``harness.errors``, ``harness.options``,
``harness._version``.
Imported by: ``harness.measure`` (the Timer, the choice of counter), ``harness.run``,
``harness.bench``, ``harness.present``, ``harness.suites``, the public API (CallgrindStats).
"""
