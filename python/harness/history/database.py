"""History: one database of runs, opened, checked and written; storing a run, importing records.

What it guarantees (docs/history.md, "What is guaranteed"):

- every run is one transaction: its row, its results and its packed series
  go in together or not at all, so a writer killed (Ctrl-C, ``kill -9``, a
  power cut with SQLite's ``synchronous=FULL``) leaves the runs before it;
- many writers at once (parallel CI jobs on one file) each keep their run:
  SQLite in WAL mode, every write a ``BEGIN IMMEDIATE`` transaction that waits
  up to ``BUSY_SECONDS`` for the one before; PostgreSQL's own transactions;
- the same run stored twice (a re-import, bench then import of its record)
  is kept once (``provenance.run_key``);
- a file that is not a harness history (another program's database, a
  damaged file, not a database at all) is reported with its path and never
  written to; a history of a newer schema is refused with its version; an
  older one is migrated in one transaction.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import math
import os
import sqlite3
import time
from collections.abc import Iterable, Iterator, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
from sqlalchemy import Connection, Engine, create_engine, event, inspect, select
from sqlalchemy.exc import DBAPIError, IntegrityError, NoSuchModuleError, SQLAlchemyError
from sqlalchemy.pool import NullPool

from harness.errors import UsageError
from harness.files.oserrors import owned
from harness.history import metrics, provenance, schema
from harness.history.location import Location, locate
from harness.model.record import RunRecord
from harness.model.result import TaskResult
from harness.records.store import load_runs

BUSY_SECONDS = 120.0  # how long a writer waits for the one before it (a CI job storing a big run)
WRITE_ATTEMPTS = 5  # a server database: tries of a write that lost a race to add the same new benchmark
TOP_SYMBOLS = 100  # per result, the functions with the most instructions kept from extra["symbols"]
POSTGRES_INSTALL = "pip install 'psycopg[binary]>=3.1,<4'  (or pip install -e '.[postgresql]')"


@dataclasses.dataclass(frozen=True)
class Stored:
    """A run in the history: its ``run_id`` there, and whether this call ``added`` it (False: already kept)."""

    run_id: int
    added: bool


class History:
    """An open history database (``open_history``); close it, or use it in a ``with`` block."""

    def __init__(self, location: Location, engine: Engine) -> None:
        self.location = location
        self.engine = engine
        self._benchmarks: dict[tuple[str, ...], int] = {}

    # -- opening -------------------------------------------------------------------------------------
    def __enter__(self) -> History:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self.engine.dispose()

    @contextlib.contextmanager
    def errors(self, doing: str) -> Iterator[None]:
        """Database errors in the block as one UsageError naming the database and what to do
        (an IntegrityError passes through: a concurrent writer's, retried by ``store_many``)."""
        try:
            yield
        except IntegrityError:
            raise
        except DBAPIError as exc:
            raise UsageError(self._explain(exc, doing)) from None
        except SQLAlchemyError as exc:
            raise UsageError(f"{self.location.shown}: cannot {doing}: {exc}") from None

    def _explain(self, exc: DBAPIError, doing: str) -> str:
        where = self.location.shown
        detail = str(exc.orig).strip().splitlines()[0] if exc.orig is not None else str(exc)
        low = detail.lower()
        if "not a database" in low or "malformed" in low or "file is encrypted" in low:
            return (f"{where}: not a readable SQLite database ({detail}): damaged, or another kind of file; "
                    "harness leaves it as it is: move it away, or give another --history")
        if "locked" in low or "busy" in low:
            return (f"{where}: cannot {doing}: another process held the database for {BUSY_SECONDS:g} s "
                    f"({detail}); try again")
        if "readonly" in low or "read-only" in low:
            return f"{where}: cannot {doing}: the database is read-only ({detail}); give a writable --history"
        if "unable to open" in low:
            return f"{where}: cannot open the database ({detail}); give a --history path in a writable directory"
        return f"{where}: cannot {doing}: {detail}"

    @contextlib.contextmanager
    def write(self) -> Iterator[Connection]:
        """A write transaction: ``BEGIN IMMEDIATE`` on SQLite (waits for the writer before it)."""
        with self.engine.connect().execution_options(harness_write=True) as conn, conn.begin():
            yield conn

    @contextlib.contextmanager
    def read(self) -> Iterator[Connection]:
        with self.engine.connect() as conn, conn.begin():
            yield conn

    def check(self) -> None:
        """Refuse a foreign, damaged or newer database; create or migrate ours (one transaction)."""
        with self.errors("read the database"):
            with self.read() as conn:
                state = _state(conn, self.location)
            if state != schema.VERSION:
                with self.write() as conn:
                    if conn.dialect.name == "postgresql":  # two first writers must not both create the tables
                        conn.exec_driver_sql("SELECT pg_advisory_xact_lock(7235)")
                    state = _state(conn, self.location)
                    if state != schema.VERSION:
                        schema.migrate(conn, state)
            if self.engine.dialect.name == "sqlite":
                raw = self.engine.raw_connection()  # outside a transaction, as the journal mode must be set
                try:
                    cursor = raw.cursor()
                    # Switching to WAL needs the file to itself, and SQLite answers "locked" at once rather
                    # than through the busy timeout while other first writers hold it: try again until then.
                    deadline = time.monotonic() + BUSY_SECONDS
                    while cursor.execute("PRAGMA journal_mode").fetchone()[0] != "wal":
                        try:
                            cursor.execute("PRAGMA journal_mode=WAL")
                        except sqlite3.OperationalError as exc:
                            if "locked" not in str(exc) or time.monotonic() > deadline:
                                raise
                            time.sleep(0.05)
                finally:
                    raw.close()

    # -- writing -------------------------------------------------------------------------------------
    def store(self, record: RunRecord, label: str = "", source: str = "",
              repository: dict[str, str] | None = None) -> Stored:
        """Store one run (its results, samples, layers and top symbols) unless it is already kept."""
        return self.store_many([record], label, source, repository)[0]

    def store_many(self, records: Sequence[RunRecord], label: str = "", source: str = "",
                   repository: dict[str, str] | None = None) -> list[Stored]:
        """Store runs in one transaction; ``label``: for runs whose record has none of its own."""
        for attempt in range(WRITE_ATTEMPTS):
            out = []
            try:
                with self.errors("store the run"), self.write() as conn:
                    known = self._known_runs(conn, [provenance.run_key(r) for r in records])
                    for record in records:
                        key = provenance.run_key(record)
                        if key in known:
                            out.append(Stored(known[key], False))
                            continue
                        run_id = self._insert(conn, record, key, label, source, repository or {})
                        known[key] = run_id
                        out.append(Stored(run_id, True))
                return out
            except IntegrityError:
                # A server database lets two writers add the same new benchmark (or run) at once;
                # the second is refused and tries again, seeing the first's. SQLite's writers
                # take turns (BEGIN IMMEDIATE), so this is PostgreSQL's case only.
                self._benchmarks = {}
                if attempt == WRITE_ATTEMPTS - 1:
                    raise UsageError(f"{self.location.shown}: cannot store the run: other writers kept "
                                     f"adding the same benchmarks in {WRITE_ATTEMPTS} tries; try again") from None
        return []

    def _known_runs(self, conn: Connection, keys: list[str]) -> dict[str, int]:
        found: dict[str, int] = {}
        for start in range(0, len(keys), 500):
            chunk = keys[start:start + 500]
            found.update(conn.execute(select(schema.RUNS.c.run_key, schema.RUNS.c.id)
                                      .where(schema.RUNS.c.run_key.in_(chunk))).all())
        return found

    def _benchmark_ids(self, conn: Connection, series: Sequence[Series]) -> list[int]:
        table = schema.BENCHMARKS
        if any(s.key not in self._benchmarks for s in series):
            rows = conn.execute(select(table.c.suite, table.c.name, table.c.mode, table.c.side, table.c.metric,
                                       table.c.id))
            self._benchmarks = {tuple(row[:5]): row[5] for row in rows}
            missing = {s.key: s for s in series if s.key not in self._benchmarks}
            for key, s in missing.items():
                suite, name, mode, side, metric = key
                new = conn.execute(table.insert().values(suite=suite, name=name, mode=mode, side=side, metric=metric,
                                                         kind=s.result.task.kind, unit=s.unit,
                                                         higher_is_better=s.higher_is_better))
                self._benchmarks[key] = int(new.inserted_primary_key[0])
        return [self._benchmarks[s.key] for s in series]

    def _insert(self, conn: Connection, record: RunRecord, key: str, label: str, source: str,
                repository: dict[str, str]) -> int:
        series = [s for r in _unique(record.results) for s in _series(r)]
        ids = self._benchmark_ids(conn, series)
        run = _run_row(record, key, label, source, repository)
        run["series"] = schema.pack_series(ids, [math.nan if s.value is None else s.value for s in series])
        run_id = int(conn.execute(schema.RUNS.insert().values(**run)).inserted_primary_key[0])
        if series:
            conn.execute(schema.RESULTS.insert(), [
                _result_row(s.result, b, run_id, s.value) if not s.metric else
                schema.figure_row(b, run_id, s.result.status, s.metric, s.value, s.result.number_per_run)
                for s, b in zip(series, ids, strict=True)])
        return run_id

    def import_paths(self, paths: Iterable[str | os.PathLike[str]], label: str = "") -> list[tuple[str, int, int]]:
        """Load every run of each record file (``records.store``'s reader) and store it; per file:
        (path, runs added, runs already kept). Every file is read before anything is stored."""
        loaded = [(str(p), load_runs(p)) for p in paths]
        report = []
        for path, runs in loaded:
            stored = self.store_many(runs, label, source=os.path.abspath(path))
            added = sum(s.added for s in stored)
            report.append((path, added, len(stored) - added))
        return report


def _state(conn: Connection, location: Location) -> int:
    """The schema version of the database (0: empty); a foreign or newer one raises UsageError."""
    names = set(inspect(conn).get_table_names())
    if schema.META.name not in names:
        if names:
            shown = ", ".join(sorted(names)[:6]) + (", ..." if len(names) > 6 else "")
            raise UsageError(f"{location.shown}: a database, but not a harness history (it has tables {shown}); "
                             "harness leaves it as it is: give another --history")
        return 0
    meta = dict(conn.execute(select(schema.META.c.key, schema.META.c.value)).all())
    if meta.get("schema") != schema.KIND:
        raise UsageError(f"{location.shown}: not a harness history (its harness_history table says "
                         f"{meta.get('schema')!r}); harness leaves it as it is: give another --history")
    try:
        version = int(meta.get("version", ""))
    except ValueError:
        raise UsageError(
            f"{location.shown}: damaged harness history: schema version {meta.get('version')!r} "
            "is not a number; harness leaves it as it is: move it away, or give another --history"
        ) from None
    if version > schema.VERSION:
        raise UsageError(f"{location.shown}: history schema version {version}, newer than version {schema.VERSION}, "
                         "which this harness reads and writes; upgrade harness to use it, or give another --history")
    return version


def _benchmark_key(r: TaskResult) -> tuple[str, str, str, str]:
    return (r.task.suite, r.task.name, r.task.mode, r.task.side)


@dataclasses.dataclass(frozen=True)
class Series:
    """One value a run gives a series: a result's own (``metric`` "") or one of its cache figures."""

    result: TaskResult
    metric: str
    unit: str
    higher_is_better: bool
    value: float | None

    @property
    def key(self) -> tuple[str, str, str, str, str]:
        return (*_benchmark_key(self.result), self.metric)


def _series(r: TaskResult) -> list[Series]:
    """A result's own value, then each of its cache figures (``history.metrics``)."""
    own = Series(r, "", r.value_unit, r.higher_is_better, _value(r))
    return [own, *(Series(r, figure, metrics.figure_unit(figure), False, value)
                   for figure, value in metrics.cache_figures(r.extra, r.ok).items())]


def _unique(results: Sequence[TaskResult]) -> list[TaskResult]:
    """Each benchmark once (its first result): a benchmark has one value per run."""
    seen: dict[tuple[str, str, str, str], TaskResult] = {}
    for r in results:
        seen.setdefault(_benchmark_key(r), r)
    return list(seen.values())


def _value(r: TaskResult) -> float | None:
    if not r.ok:
        return None
    try:
        v = r.value
    except (ValueError, ZeroDivisionError, IndexError):
        return None
    return v if math.isfinite(v) else None


def _run_row(record: RunRecord, key: str, label: str, source: str, repository: dict[str, str]) -> dict[str, Any]:
    env = record.environment
    torch = env.get("torch") if isinstance(env.get("torch"), dict) else {"version": env.get("torch")}
    repo = env.get("repository") if isinstance(env.get("repository"), dict) else repository
    counters = sorted({str(r.extra["counter"]) for r in record.results if r.extra.get("counter")})
    if not counters and any(r.counts_instructions for r in record.results):
        counters = ["instructions"]
    now = datetime.now(UTC).isoformat(timespec="seconds")
    return {
        "run_key": key,
        "started": str(env.get("start_time") or now),
        "stored": now,
        "label": str(env.get("label") or label or ""),
        "source": source,
        "repo_commit": str(repo.get("commit") or ""),
        "repo_branch": str(repo.get("branch") or ""),
        "harness_version": str(env.get("harness_version") or ""),
        "harness_commit": str(env.get("git_commit") or ""),
        "torch_version": str((torch or {}).get("version") or ""),
        "python": str(env.get("python") or ""),
        "hostname": str(env.get("hostname") or ""),
        "machine": str(env.get("cpu_model") or ""),
        "counter": ",".join(counters),
        "interrupted": record.interrupted is not None,
        "environment": json.dumps(env, default=str, separators=(",", ":")),
    }


def _result_row(r: TaskResult, benchmark_id: int, run_id: int, value: float | None) -> dict[str, Any]:
    extra = dict(r.extra)
    symbols = extra.get("symbols")
    if isinstance(symbols, dict) and len(symbols) > TOP_SYMBOLS:
        top = sorted(symbols.items(), key=lambda kv: -abs(kv[1]) if isinstance(kv[1], int | float) else 0)
        extra["symbols"] = dict(top[:TOP_SYMBOLS])
    samples = np.asarray(r.samples, "<f8").tobytes() if r.samples else None
    iqr = r.iqr if r.ok and r.samples else None
    return {
        "benchmark_id": benchmark_id, "run_id": run_id, "status": r.status, "unit": r.value_unit, "value": value,
        "iqr": iqr if iqr is None or math.isfinite(iqr) else None, "noisy": bool(r.samples) and r.noisy,
        "n_samples": len(r.samples), "number_per_run": r.number_per_run, "samples": samples, "error": r.error,
        "extra": json.dumps(extra, default=str, separators=(",", ":")) if extra else None,
    }


def _engine(location: Location) -> Engine:
    if location.path is None:
        try:
            return create_engine(location.url, poolclass=NullPool)
        except (NoSuchModuleError, ImportError) as exc:
            raise UsageError(f"{location.shown}: cannot use this database URL ({exc}); for PostgreSQL: "
                             f"{POSTGRES_INSTALL}") from None
    # isolation_level=None: the driver leaves transactions to us, so BEGIN IMMEDIATE below is the one.
    # The default pool keeps the connection open between transactions: closing the last one
    # checkpoints the WAL into the file (~10 ms), once per process is enough.
    engine = create_engine(location.url,
                           connect_args={"timeout": BUSY_SECONDS, "isolation_level": None})

    @event.listens_for(engine, "connect")
    def _pragmas(dbapi_conn: Any, _record: Any) -> None:
        cursor = dbapi_conn.cursor()
        cursor.execute(f"PRAGMA busy_timeout = {int(BUSY_SECONDS * 1000)}")
        cursor.execute("PRAGMA synchronous = FULL")  # a committed run survives a power cut, not only kill -9
        cursor.close()

    @event.listens_for(engine, "begin")
    def _begin(conn: Connection) -> None:
        # A writer takes the write lock when it begins, so it waits (busy_timeout) instead of
        # failing at commit with "database is locked" after a reader's snapshot went stale.
        conn.exec_driver_sql("BEGIN IMMEDIATE" if conn.get_execution_options().get("harness_write") else "BEGIN")

    return engine


def open_history(target: str | os.PathLike[str] | None = None, create: bool = True) -> History:
    """The history at ``target`` (a path or URL; None: ``$HARNESS_HISTORY``, else the default file),
    checked, and migrated when older; a new file is created unless ``create`` is False (readers:
    a mistyped path is an error, not an empty history)."""
    location = locate(target)
    if location.path is not None:
        path: Path = location.path
        if path.is_dir():
            raise UsageError(f"{path}: is a directory; give a file for the history database (--history FILE)")
        if not create and not path.exists():
            raise UsageError(f"{path}: no history database there yet; `bench --history` or `history import` "
                             "creates it (or give --history, or set HARNESS_HISTORY, to name another)")
        with owned(path.parent, "create the history database's directory",
                   fix="give another --history PATH or set HARNESS_HISTORY"):
            path.parent.mkdir(parents=True, exist_ok=True)
        if path.exists() and not os.access(path, os.R_OK):
            raise UsageError(f"{path}: cannot read the history database (permission denied); "
                             "give another --history")
    history = History(location, _engine(location))
    try:
        history.check()
    except BaseException:
        history.close()
        raise
    return history
