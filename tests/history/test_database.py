"""The history database on real SQLite files: storing, importing once, migrating, refusing what is not ours,
many writers at once and a writer killed with SIGKILL."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import numpy as np
import pytest
from history_runs import run
from sqlalchemy import MetaData, create_engine

import interruptible
from harness.errors import UsageError
from harness.history import open_history, query, schema
from harness.records import save

ROOT = Path(__file__).resolve().parents[2]


def _counts(path: Path) -> tuple[int, int, str]:
    with sqlite3.connect(path) as db:
        runs = db.execute("SELECT count(*) FROM runs").fetchone()[0]
        results = db.execute("SELECT count(*) FROM results").fetchone()[0]
        check = db.execute("PRAGMA integrity_check").fetchone()[0]
    return runs, results, check


def test_store_keeps_every_part_of_a_run_and_import_is_idempotent(tmp_path: Path, capsys):
    from harness.cli import main

    db = tmp_path / "h.sqlite"
    save(run(0), tmp_path / "r0.json")
    for i in (1, 2):
        save(run(i), tmp_path / "runs.jsonl")
    save(run(3), tmp_path / "r3.csv")
    save(run(0), tmp_path / "copy.jsonl")  # run 0 again, in another format
    names = ("r0.json", "runs.jsonl", "r3.csv", "copy.jsonl")
    assert main(["history", "import", *(str(tmp_path / n) for n in names), "--history", str(db)]) == 0
    out = capsys.readouterr().out
    assert "runs.jsonl: 2 run(s) added" in out and "copy.jsonl: 0 run(s) added, 1 already kept" in out
    assert main(["history", "import", str(tmp_path / "runs.jsonl"), "--history", str(db)]) == 0
    assert "0 run(s) added, 2 already kept" in capsys.readouterr().out
    assert _counts(db) == (4, 12, "ok")
    with open_history(db) as history:
        trends = query.load(history)
        assert [r.label for r in trends.runs] == ["v0", "v1", "v2", "v3"]
        assert trends.runs[1].commit.startswith("c0000001") and trends.runs[1].branch == "main"
        assert trends.runs[0].torch == "2.13.0+cpu" and trends.runs[0].hostname == "testhost"
        counted = next(i for i, b in enumerate(trends.benchmarks) if b.mode == "instructions")
        assert trends.runs[0].counter == "callgrind"
        assert np.allclose(trends.values[counted], [run(i).results[1].value for i in range(4)])
        extra, number = query.details(history, trends.benchmarks[counted].id, [trends.runs[0].id])[trends.runs[0].id]
        assert number == 100 and extra["layers"]["interpreter"] == 40_000_000 and "at::add" in extra["symbols"]
    with sqlite3.connect(db) as conn:  # samples kept as they were measured
        blob = conn.execute("SELECT samples FROM results WHERE n_samples = 5 LIMIT 1").fetchone()[0]
        assert len(np.frombuffer(blob, "<f8")) == 5
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"


def test_migration_from_the_first_schema(tmp_path: Path):
    db = tmp_path / "v1.sqlite"
    engine = create_engine(f"sqlite:///{db}")
    first = schema.tables(MetaData(), 1)
    assert "series" not in first["runs"].c  # the first schema had no packed series
    with engine.begin() as conn:
        schema.migrate(conn, 0, upto=1)
        conn.execute(first["benchmarks"].insert(), [{"id": 1, "suite": "ops", "name": "add", "mode": "wall", "side": "",
                                                     "kind": "timer", "unit": "s", "higher_is_better": False}])
        conn.execute(first["runs"].insert(), [
            {"id": i + 1, "run_key": f"id:old{i}", "started": f"2025-01-0{i + 1}T00:00:00", "stored": "x",
             "label": f"old{i}", "environment": "{}"} for i in range(3)])
        conn.execute(
            first["results"].insert(),
            [
                {"benchmark_id": 1, "run_id": i + 1, "status": "ok", "unit": "s", "value": 1e-6 * (i + 1)}
                for i in range(3)
            ],
        )
    engine.dispose()
    with open_history(db) as history:  # migrated on opening
        trends = query.load(history)
        assert [r.label for r in trends.runs] == ["old0", "old1", "old2"]
        assert np.allclose(trends.values[0], [1e-6, 2e-6, 3e-6])
        history.store(run(5))
        assert len(query.load(history).runs) == 4
    with sqlite3.connect(db) as conn:
        assert conn.execute("SELECT value FROM harness_history WHERE key = 'version'").fetchone()[0] == str(
            schema.VERSION
        )


def _refused(capsys, db: Path, *expected: str) -> None:
    from harness.cli import main

    before = db.read_bytes()
    assert main(["history", "show", "--history", str(db)]) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err, err
    for text in (str(db), *expected):
        assert text in err, err
    assert db.read_bytes() == before  # never replaced, never written to


def test_newer_foreign_and_damaged_databases_are_refused_with_their_path(tmp_path: Path, capsys):
    newer = tmp_path / "newer.sqlite"
    open_history(newer).close()
    conn = sqlite3.connect(newer)
    with conn:
        conn.execute("UPDATE harness_history SET value = '99' WHERE key = 'version'")
    conn.close()  # the last connection checkpoints the WAL into the file
    _refused(capsys, newer, "schema version 99, newer than version 3", "upgrade harness")

    foreign = tmp_path / "other.sqlite"
    with sqlite3.connect(foreign) as conn:
        conn.execute("CREATE TABLE users (name TEXT)")
    _refused(capsys, foreign, "not a harness history", "users")

    damaged = tmp_path / "damaged.sqlite"
    damaged.write_bytes(b"this is not a database at all\n" * 200)
    _refused(capsys, damaged, "not a readable SQLite database")

    with pytest.raises(UsageError, match="is a directory"):
        open_history(tmp_path)


WRITER = textwrap.dedent("""
    import sys
    sys.path[:0] = [sys.argv[3], sys.argv[3] + "/.."]
    from history_runs import run
    from harness.history import open_history
    writer, count = int(sys.argv[2]), int(sys.argv[4])
    with open_history(sys.argv[1]) as history:
        for i in range(count):
            history.store(run(i, seed=writer))
            print(i, flush=True)
""")


def _writer(db: Path, writer: int, count: int) -> subprocess.Popen[str]:
    return interruptible.popen(
        [sys.executable, "-c", WRITER, str(db), str(writer), str(Path(__file__).parent), str(count)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=ROOT,
    )


def test_eight_concurrent_writers_lose_nothing(tmp_path: Path):
    db = tmp_path / "shared.sqlite"
    writers = [_writer(db, w, 50) for w in range(8)]
    for w in writers:
        out, err = w.communicate(timeout=600)
        assert w.returncode == 0, err
    assert _counts(db) == (400, 1200, "ok")
    with open_history(db) as history:
        assert len(query.load(history).runs) == 400


@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGINT], ids=["kill-9", "ctrl-c"])
def test_a_writer_killed_during_writes_leaves_a_consistent_database(tmp_path: Path, sig: int):
    db = tmp_path / "killed.sqlite"
    writer = _writer(db, 1, 10_000)
    assert writer.stdout is not None
    for _ in range(5):
        writer.stdout.readline()
    time.sleep(0.05)  # in the middle of the next transactions
    os.kill(writer.pid, sig)
    writer.communicate(timeout=60)
    assert writer.returncode == -sig  # Python dies of an uncaught KeyboardInterrupt by SIGINT, as a shell expects
    runs, results, check = _counts(db)
    assert check == "ok" and runs >= 5 and results == 3 * runs  # every run whole, or absent
    with open_history(db) as history:
        history.store(run(0, seed=2))
        trends = query.load(history)
        assert len(trends.runs) == runs + 1
        assert all((~np.isnan(trends.values[:, j])).sum() == 3 for j in range(len(trends.runs)))
