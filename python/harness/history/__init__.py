"""Every run remembered: the history database, its schema, and where benchmarks moved.

Lives here: ``location`` (which database: a path, a URL, ``$HARNESS_HISTORY``,
the default under the user's data directory), ``schema`` (the tables and the
migrations between schema versions), ``database`` (``History``: opening,
checking and writing; storing a run or importing records), ``metrics``
(which values of a result are kept: its own, and each cache figure of a
``--cache-sim`` count as a series of its own), ``query``
(benchmarks' values over runs, read for ``show`` and ``changes``),
``provenance`` (a run's identity, the user's own git commit and branch),
``changes`` (change points of a series: ruptures, then scipy's test of each
step).

The database is a foreign engine (SQLite, or any SQLAlchemy URL such as
PostgreSQL), so it has its own folder, on the layer of ``records/``, whose
reader it uses for ``history import``.
May import: ``harness.records``, ``harness.model``, ``harness.files``,
``harness.errors``, ``harness.options``, ``harness._version``.
Imported by: ``harness.bench`` (``bench --history``), ``harness.present``
(tables, trends), ``harness.cli.history``.
"""

from __future__ import annotations

from harness.history.database import History, open_history

__all__ = ["History", "open_history"]
