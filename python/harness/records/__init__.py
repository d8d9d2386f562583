"""Run records on disk: the one writer and reader, their formats, and what a run records about itself.

Lives here: ``store`` (save and load by suffix), ``formats/`` (``.json``,
``.jsonl``, ``.csv``), ``environment`` (the machine and software of a run),
``noise`` (noise sources checked before wall-time runs), ``metrics``
(results flattened to ``name,metric,value`` rows, the gate's unit),
``merge`` (shard records joined into one run).
``harness.records.load``, ``load_runs`` and ``save`` are the public entry points.
May import: ``harness.model``, ``harness.files``, ``harness.errors``,
``harness.options``, ``harness._version``.
Imported by: ``harness.cluster``, ``harness.run``, ``harness.bench``, ``harness.present``,
``harness.cli``, the suites' writers.
"""

from __future__ import annotations

from harness.records.store import load, load_runs, save

__all__ = ["load", "load_runs", "save"]
