"""The history database's tables, its schema version, and the migrations from each version to the next.

Version 1 (the first): ``harness_history`` (what the database is and its
version), ``benchmarks``, ``runs`` and ``results``. Version 2 adds
``runs.series``: the run's headline values packed (benchmark ids, then
values), written in the same transaction as its results, so ``show`` and
``changes`` read 10,000 runs as 10,000 rows instead of millions. Version 3
adds ``benchmarks.metric`` to a benchmark's identity: "" for the result's own
value, else a cache figure of a ``--cache-sim`` count (``history.metrics``),
each figure a series of its own with its results and its place in the packed
series; the migration gives the figures already kept in results' ``extra``
their rows.

A fresh database is built by running every migration in order, so a
database made by any earlier harness goes through the same steps.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import numpy as np
from sqlalchemy import (
    Boolean,
    Column,
    Connection,
    Float,
    ForeignKey,
    Integer,
    LargeBinary,
    MetaData,
    PrimaryKeyConstraint,
    String,
    Table,
    Text,
    UniqueConstraint,
    select,
    text,
    update,
)

from harness.history import metrics

KIND = "harness.history"
VERSION = 3


def tables(metadata: MetaData, version: int = VERSION) -> dict[str, Table]:
    """The tables as they are at schema ``version``."""
    meta = Table("harness_history", metadata, Column("key", String(32), primary_key=True),
                 Column("value", String(200), nullable=False))
    benchmarks = _benchmarks(metadata, version)
    run_columns = [
        Column("id", Integer, primary_key=True, autoincrement=True),
        Column("run_key", String(100), nullable=False, unique=True),
        Column("started", String(40), nullable=False),
        Column("stored", String(40), nullable=False),
        Column("label", Text, nullable=False, default=""),
        Column("source", Text, nullable=False, default=""),
        Column("repo_commit", String(64), nullable=False, default=""),
        Column("repo_branch", Text, nullable=False, default=""),
        Column("harness_version", String(40), nullable=False, default=""),
        Column("harness_commit", String(64), nullable=False, default=""),
        Column("torch_version", String(80), nullable=False, default=""),
        Column("python", String(40), nullable=False, default=""),
        Column("hostname", Text, nullable=False, default=""),
        Column("machine", Text, nullable=False, default=""),
        Column("counter", String(40), nullable=False, default=""),
        Column("interrupted", Boolean, nullable=False, default=False),
        Column("environment", Text, nullable=False),
    ]
    if version >= 2:
        run_columns.append(Column("series", LargeBinary, nullable=True))
    runs = Table("runs", metadata, *run_columns)
    results = Table(
        "results", metadata,
        Column("benchmark_id", Integer, ForeignKey("benchmarks.id"), nullable=False),
        Column("run_id", Integer, ForeignKey("runs.id"), nullable=False),
        Column("status", String(10), nullable=False),
        Column("unit", String(60), nullable=False),
        Column("value", Float, nullable=True),
        Column("iqr", Float, nullable=True),
        Column("noisy", Boolean, nullable=False, default=False),
        Column("n_samples", Integer, nullable=False, default=0),
        Column("number_per_run", Integer, nullable=False, default=1),
        Column("samples", LargeBinary, nullable=True),
        Column("error", Text, nullable=True),
        Column("extra", Text, nullable=True),
        PrimaryKeyConstraint("benchmark_id", "run_id", name="result_identity"),
    )
    return {"harness_history": meta, "benchmarks": benchmarks, "runs": runs, "results": results}


def _benchmarks(metadata: MetaData, version: int, name: str = "benchmarks") -> Table:
    identity = ["suite", "name", "mode", "side"]
    columns = [
        Column("id", Integer, primary_key=True, autoincrement=True),
        Column("suite", String(200), nullable=False),
        Column("name", Text, nullable=False),
        Column("mode", String(20), nullable=False),
        Column("side", String(100), nullable=False, default=""),
        Column("kind", String(100), nullable=False),
        Column("unit", String(60), nullable=False, default=""),
        Column("higher_is_better", Boolean, nullable=False, default=False),
    ]
    if version >= 3:
        columns.append(Column("metric", String(60), nullable=False, default="", server_default=""))
        identity.append("metric")
    return Table(name, metadata, *columns, UniqueConstraint(*identity, name="benchmark_identity"))


METADATA = MetaData()
TABLES = tables(METADATA)
META, BENCHMARKS, RUNS, RESULTS = (TABLES[n] for n in ("harness_history", "benchmarks", "runs", "results"))


def pack_series(benchmark_ids: list[int], values: list[float]) -> bytes:
    """A run's headline values as one blob: int32 benchmark ids, then float64 values (NaN: failed)."""
    return np.asarray(benchmark_ids, "<i4").tobytes() + np.asarray(values, "<f8").tobytes()


def unpack_series(blob: bytes) -> tuple[np.ndarray, np.ndarray]:
    n = len(blob) // 12
    return np.frombuffer(blob, "<i4", n), np.frombuffer(blob, "<f8", n, offset=4 * n)


def _create_first(conn: Connection) -> None:
    md = MetaData()
    tables(md, 1)
    md.create_all(conn)
    conn.execute(META.insert(), [{"key": "schema", "value": KIND}, {"key": "version", "value": "1"}])


def _add_series(conn: Connection) -> None:
    blob = LargeBinary().compile(dialect=conn.dialect)
    conn.execute(text(f"ALTER TABLE runs ADD COLUMN series {blob}"))
    rows = conn.execute(select(RESULTS.c.run_id, RESULTS.c.benchmark_id, RESULTS.c.value)
                        .order_by(RESULTS.c.run_id)).all()
    per_run: dict[int, tuple[list[int], list[float]]] = {}
    for run_id, bench_id, value in rows:
        ids, values = per_run.setdefault(run_id, ([], []))
        ids.append(bench_id)
        values.append(float("nan") if value is None else value)
    for run_id, (ids, values) in per_run.items():
        conn.execute(update(RUNS).where(RUNS.c.id == run_id).values(series=pack_series(ids, values)))


def figure_row(benchmark_id: int, run_id: int, status: str, figure: str, value: float, number: int) -> dict[str, Any]:
    """The ``results`` row of one cache figure of a result: its value per run, nothing else (the result's
    own row keeps its samples and ``extra``)."""
    return {"benchmark_id": benchmark_id, "run_id": run_id, "status": status, "unit": metrics.figure_unit(figure),
            "value": value, "iqr": None, "noisy": False, "n_samples": 0, "number_per_run": number,
            "samples": None, "error": None, "extra": None}


def _add_metric(conn: Connection) -> None:
    """Version 3: ``benchmarks.metric`` joins the identity, and the cache figures kept get their series."""
    kept = ("id", "suite", "name", "mode", "side", "kind", "unit", "higher_is_better")
    if conn.dialect.name == "sqlite":
        # SQLite cannot change a table's constraints: the table is made anew, its rows copied (ids kept),
        # the old one dropped and the new one renamed, SQLite's own recipe for it.
        _benchmarks(MetaData(), 3, "benchmarks_v3").create(conn)
        columns = ", ".join(kept)
        conn.execute(text(f"INSERT INTO benchmarks_v3 ({columns}, metric) SELECT {columns}, '' FROM benchmarks"))
        conn.execute(text("DROP TABLE benchmarks"))
        conn.execute(text("ALTER TABLE benchmarks_v3 RENAME TO benchmarks"))
    else:
        kind = String(60).compile(dialect=conn.dialect)
        conn.execute(text(f"ALTER TABLE benchmarks ADD COLUMN metric {kind} DEFAULT '' NOT NULL"))
        conn.execute(text("ALTER TABLE benchmarks DROP CONSTRAINT benchmark_identity"))
        conn.execute(text("ALTER TABLE benchmarks ADD CONSTRAINT benchmark_identity "
                          "UNIQUE (suite, name, mode, side, metric)"))
    _add_figures(conn)


def _add_figures(conn: Connection) -> None:
    """Rows for the cache figures of results stored before version 3 (kept only in their ``extra``)."""
    b, r = BENCHMARKS, RESULTS
    found = conn.execute(
        select(r.c.run_id, r.c.status, r.c.number_per_run, r.c.extra, b.c.suite, b.c.name, b.c.mode, b.c.side,
               b.c.kind)
        .join(b, b.c.id == r.c.benchmark_id).where(b.c.metric == "", r.c.extra.like('%"cache"%'))
        .order_by(r.c.run_id, r.c.benchmark_id)).all()
    ids: dict[tuple[str, ...], int] = {}
    rows, per_run = [], {}
    for run_id, status, number, extra, suite, name, mode, side, kind in found:
        for figure, value in metrics.cache_figures(json.loads(extra), status == "ok").items():
            key = (suite, name, mode, side, figure)
            if key not in ids:
                ids[key] = int(conn.execute(b.insert().values(
                    suite=suite, name=name, mode=mode, side=side, kind=kind, metric=figure,
                    unit=metrics.figure_unit(figure), higher_is_better=False)).inserted_primary_key[0])
            rows.append(figure_row(ids[key], run_id, status, figure, value, number))
            added = per_run.setdefault(run_id, ([], []))
            added[0].append(ids[key])
            added[1].append(value)
    if rows:
        conn.execute(r.insert(), rows)
    for run_id, (new_ids, values) in per_run.items():
        old_ids, old_values = unpack_series(conn.execute(select(RUNS.c.series).where(RUNS.c.id == run_id))
                                            .scalar_one() or b"")
        conn.execute(update(RUNS).where(RUNS.c.id == run_id).values(
            series=pack_series([*old_ids.tolist(), *new_ids], [*old_values.tolist(), *values])))


# MIGRATIONS[v] takes a database from version v to v + 1 (0: an empty database).
MIGRATIONS: dict[int, Callable[[Connection], None]] = {0: _create_first, 1: _add_series, 2: _add_metric}
assert sorted(MIGRATIONS) == list(range(VERSION))


def migrate(conn: Connection, found: int, upto: int = VERSION) -> None:
    """Run the migrations from version ``found`` to ``upto`` inside the caller's transaction."""
    for version in range(found, upto):
        MIGRATIONS[version](conn)
        conn.execute(update(META).where(META.c.key == "version").values(value=str(version + 1)))
