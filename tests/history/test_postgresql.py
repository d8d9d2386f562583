"""The same history commands against a real PostgreSQL server, by SQLAlchemy URL.

A throwaway cluster (initdb, pg_ctl) in a temporary folder on a free port,
run as a user other than root (PostgreSQL refuses root), stopped at the end.
Skipped, with the reason, where PostgreSQL or psycopg is not installed
(`bash scripts/setup.sh --test` installs both where it can).
"""

from __future__ import annotations

import glob
import importlib.util
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from history_runs import STEP_AT, run

from harness.records import save

INITDB = shutil.which("initdb") or next(iter(sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"))[::-1]), None)


def _as_user() -> tuple[list[str], int | None, int | None]:
    """The command prefix that runs PostgreSQL as a user it accepts, and that user's ids (None: ours)."""
    if os.geteuid() != 0:
        return [], None, None
    for name in ("postgres", "nobody"):
        try:
            user = pwd.getpwnam(name)
        except KeyError:
            continue
        return (
            ["setpriv", f"--reuid={user.pw_uid}", f"--regid={user.pw_gid}", "--clear-groups"],
            user.pw_uid,
            user.pw_gid,
        )
    pytest.skip("running as root with neither a postgres nor a nobody user to run PostgreSQL as")


@pytest.fixture(scope="module")
def server() -> Iterator[str]:
    if INITDB is None:
        pytest.skip("PostgreSQL is not installed (bash scripts/setup.sh --test installs it with apt-get)")
    if importlib.util.find_spec("psycopg") is None:
        pytest.skip("psycopg is not installed (pip install -e '.[postgresql]')")
    prefix, uid, gid = _as_user()
    folder = Path(tempfile.mkdtemp(prefix="harness-pg-"))
    if uid is not None:
        os.chown(folder, uid, gid)
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    bindir = Path(INITDB).resolve().parent
    data = folder / "data"
    try:
        init = subprocess.run([*prefix, str(bindir / "initdb"), "-D", str(data), "-A", "trust", "-U", "harness",
                               "--no-sync"], capture_output=True, text=True, timeout=120)
        if init.returncode != 0:
            pytest.skip(f"initdb failed here: {init.stderr.strip()[-300:]}")
        start = subprocess.run([*prefix, str(bindir / "pg_ctl"), "-D", str(data), "-w", "-l", str(folder / "log"),
                                "-o", f"-p {port} -k {folder} -c listen_addresses=127.0.0.1 -c fsync=off", "start"],
                               capture_output=True, text=True, timeout=120)
        if start.returncode != 0:
            pytest.skip(f"PostgreSQL did not start here: {start.stderr.strip()[-300:]}")
        yield f"postgresql+psycopg://harness@127.0.0.1:{port}/postgres"
    finally:
        if (data / "postmaster.pid").exists():
            subprocess.run([*prefix, str(bindir / "pg_ctl"), "-D", str(data), "-m", "immediate", "stop"],
                           capture_output=True, timeout=120)
        shutil.rmtree(folder, ignore_errors=True)


def test_import_show_and_changes_against_postgresql(server: str, tmp_path: Path, capsys):
    from harness.cli import main

    for i in range(45):
        save(run(i), tmp_path / "runs.jsonl")
    assert main(["history", "import", str(tmp_path / "runs.jsonl"), "--history", server]) == 0
    assert "45 run(s) added" in capsys.readouterr().out
    assert main(["history", "import", str(tmp_path / "runs.jsonl"), "--history", server]) == 0
    again = capsys.readouterr().out
    assert "0 run(s) added, 45 already kept" in again and "postgresql+psycopg://harness@127.0.0.1" in again
    assert main(["history", "show", "--history", server]) == 0
    assert "45 runs in" in capsys.readouterr().out
    assert main(["history", "changes", "--history", server, "--fail-on-regression", "1"]) == 1  # newest: after the step
    out = capsys.readouterr().out
    assert f"v{STEP_AT - 1}" in out and f"v{STEP_AT}" in out


def test_concurrent_writers_on_postgresql_keep_every_run(server: str, tmp_path: Path):
    """Three imports at once, each adding the same new benchmarks: every run kept (a lost race is retried)."""
    import sys

    from harness.history import open_history, query

    files = []
    for w in range(3):
        path = tmp_path / f"w{w}.jsonl"
        for i in range(10):
            save(run(i, seed=100 + w), path)
        files.append(path)
    from sqlalchemy import create_engine

    engine = create_engine(server, isolation_level="AUTOCOMMIT")
    with engine.connect() as conn:
        conn.exec_driver_sql("CREATE DATABASE racing")  # a database of its own: no benchmarks there yet
    engine.dispose()
    fresh = server.rsplit("/", 1)[0] + "/racing"
    procs = [subprocess.Popen([sys.executable, "-m", "harness", "history", "import", str(f), "--history", fresh],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for f in files]
    for p in procs:
        out, err = p.communicate(timeout=300)
        assert p.returncode == 0 and "10 run(s) added" in out, err
    with open_history(fresh) as history:
        assert len(query.load(history).runs) == 30
