"""The history database's tables, its schema version, and the migrations from each version to the next.

Version 1 (the first): ``harness_history`` (what the database is and its
version), ``benchmarks``, ``runs`` and ``results``. Version 2 adds
``runs.series``: the run's headline values packed (benchmark ids, then
values), written in the same transaction as its results, so ``show`` and
``changes`` read 10,000 runs as 10,000 rows instead of millions.

A fresh database is built by running every migration in order, so a
database made by any earlier harness goes through the same steps.
"""

from __future__ import annotations

from collections.abc import Callable

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

KIND = "harness.history"
VERSION = 2


def tables(metadata: MetaData, version: int = VERSION) -> dict[str, Table]:
    """The tables as they are at schema ``version``."""
    meta = Table("harness_history", metadata, Column("key", String(32), primary_key=True),
                 Column("value", String(200), nullable=False))
    benchmarks = Table(
        "benchmarks", metadata,
        Column("id", Integer, primary_key=True, autoincrement=True),
        Column("suite", String(200), nullable=False),
        Column("name", Text, nullable=False),
        Column("mode", String(20), nullable=False),
        Column("side", String(100), nullable=False, default=""),
        Column("kind", String(100), nullable=False),
        Column("unit", String(60), nullable=False, default=""),
        Column("higher_is_better", Boolean, nullable=False, default=False),
        UniqueConstraint("suite", "name", "mode", "side", name="benchmark_identity"),
    )
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


# MIGRATIONS[v] takes a database from version v to v + 1 (0: an empty database).
MIGRATIONS: dict[int, Callable[[Connection], None]] = {0: _create_first, 1: _add_series}
assert sorted(MIGRATIONS) == list(range(VERSION))


def migrate(conn: Connection, found: int, upto: int = VERSION) -> None:
    """Run the migrations from version ``found`` to ``upto`` inside the caller's transaction."""
    for version in range(found, upto):
        MIGRATIONS[version](conn)
        conn.execute(update(META).where(META.c.key == "version").values(value=str(version + 1)))
