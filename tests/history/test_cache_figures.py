"""Cache figures in the history: each a series of its own, shown, searched for steps and gated like the counts.

The series is made of two real `bench --mode instructions --cache-sim --layers` records (tests/conftest.py's
``cache_runs``: a gather over contiguous, then strided indices, whose instructions stay and whose cache
misses move), each stored again as a run of its own, 16 contiguous then 8 strided, as the history tests
synthesise their series (history_runs.py); and a history of schema version 2 holding a real cache-sim
result, migrated.
Cost: the two counts of ``cache_runs`` (~1-2 min on 2 cores), shared with tests/present/test_cache_report.py and
tests/present/test_markdown.py (one xdist group, tests/parallel.py).
"""

from __future__ import annotations

import dataclasses
import json
import re
import sqlite3
from pathlib import Path

import numpy as np
import pytest
from sqlalchemy import MetaData, create_engine
from test_changes_markdown import tables

from conftest import run_cli
from harness.history import open_history, query, schema
from harness.history.changes import find_changes
from harness.model.record import RunRecord
from harness.records import save
from harness.records.store import load_runs

STEP_AT = 16


def _as_run(record: RunRecord, i: int) -> RunRecord:
    env = dict(record.environment, run_id=f"gather-{i}", start_time=f"2026-02-01T{i:02d}:00:00+00:00", label=f"b{i}")
    return dataclasses.replace(record, environment=env)


@pytest.fixture(scope="module")
def series(cache_runs, tmp_path_factory) -> tuple[Path, RunRecord, RunRecord]:
    """(history file, contiguous record, strided record): 24 runs stored through `history import`."""
    contiguous, strided = (load_runs(p)[-1] for p in cache_runs)
    folder = tmp_path_factory.mktemp("cache_history")
    for i in range(24):
        save(_as_run(contiguous if i < STEP_AT else strided, i), folder / "runs.jsonl")
    done = run_cli("history", "import", "runs.jsonl", "--history", "h.sqlite", cwd=folder)
    assert done.returncode == 0 and "24 run(s) added" in done.stdout, done.stderr
    return folder / "h.sqlite", contiguous, strided


def test_the_figures_are_series_of_their_own_with_the_records_values(series):
    db, contiguous, strided = series
    (a,), (b,) = contiguous.results, strided.results
    assert a.value == b.value  # the instructions did not move
    with open_history(db) as history:
        trends = query.load(history)
    figures = {bench.metric: i for i, bench in enumerate(trends.benchmarks)}
    assert set(figures) == {"", *a.extra["cache"]}  # the own value, and every figure the record has
    for metric, i in figures.items():
        expected = [(a if j < STEP_AT else b).extra["cache"][metric] if metric else (a if j < STEP_AT else b).value
                    for j in range(24)]
        assert trends.values[i].tolist() == expected  # exactly the record's figures, per run
    assert trends.benchmarks[figures["estimated_cycles"]].unit == "cycles"
    assert trends.benchmarks[figures["RAM_hits"]].full_name == "gathers/gather [RAM_hits]"


def test_changes_names_the_step_in_estimated_cycles_where_the_instructions_stayed(series):
    db, contiguous, strided = series
    done = run_cli("history", "changes", "--history", str(db), "--markdown")
    assert done.returncode == 0, done.stderr
    (header, *rows), *moved = tables(done.stdout)
    assert header[:2] == ["benchmark", "step"]
    (row,) = rows  # one step, and not of the count itself: its instructions are the same
    change = strided.results[0].extra["cache"]["estimated_cycles"] / contiguous.results[0].extra["cache"][
        "estimated_cycles"] - 1
    assert row[0] == "gathers/gather [estimated_cycles]" and row[1].endswith(f"{change * 100:+.2f}%")
    assert change > 0.5 and row[2].endswith(" cycles") and row[3].endswith(" cycles")
    assert row[4].startswith(f"b{STEP_AT - 1} ") and row[5].startswith(f"b{STEP_AT} ")
    cycles = next(t for t in moved if t[0][0] == "layer (estimated cycles)")
    assert cycles[1][0] == "kernel" and cycles[1][3].startswith("+")  # why: the kernel's cycles (cycles_layers)
    plain = run_cli("history", "changes", "--history", str(db))
    flat = re.sub(r"[\s│]+", " ", plain.stdout)
    assert "[estimated_cycles]" in flat and f"{change * 100:+.1f}%" in flat and "[instructions]" not in flat
    assert "layers by estimated cycles:" in flat and "kernel +" in flat  # the last column folds onto lines
    # The gate over the history judges the estimated cycles as it judges a count.
    gated = run_cli("history", "changes", "--history", str(db), "--fail-on-regression", "10")
    assert gated.returncode == 1 and "gathers/gather [estimated_cycles]: +" in gated.stderr
    assert run_cli("history", "changes", "--history", str(db), "--fail-on-regression", "10",
                   "--metric", "value").returncode == 0  # the instructions alone pass


def test_show_and_changes_read_the_metrics_asked_for(series):
    db, _, _ = series
    shown = run_cli("history", "show", "--history", str(db), "--metric", "L1_hits", "--metric", "RAM_hits")
    assert shown.returncode == 0, shown.stderr
    assert re.findall(r"\[(\w+)\]", shown.stdout) == ["L1_hits", "RAM_hits"]
    default = run_cli("history", "show", "--history", str(db))
    assert re.findall(r"\[(\w+)\]", default.stdout) == ["instructions", "estimated_cycles"]
    sparks = re.findall(r"[▁▂▃▄▅▆▇█]{24}", default.stdout)
    assert sparks == ["▁" * 24, "▁" * STEP_AT + "█" * (24 - STEP_AT)]  # the count flat, the cycles stepping
    with open_history(db) as history:
        every = find_changes(query.load(history))
    moved = {c.benchmark.metric for c in every}
    assert {"estimated_cycles", "RAM_hits", "LL_hits", "L1_hits", "DLmr"} <= moved
    assert not moved & {"", "Ir", "Dr", "Dw"}  # what the strided indices left alone: the count and the accesses
    assert all(c.after.label == f"b{STEP_AT}" for c in every)
    markdown = run_cli("history", "changes", "--history", str(db), "--metric", "all", "--markdown")
    assert "| gathers/gather [RAM_hits] |" in markdown.stdout and "layer (estimated cycles)" in markdown.stdout
    assert "in 1 benchmark(s) over 24 run(s)" in markdown.stdout  # a figure is a series of its benchmark
    wrong = run_cli("history", "show", "--history", str(db), "--metric", "cycles")
    assert wrong.returncode == 2 and "--metric cycles: no such metric" in wrong.stderr
    assert "estimated_cycles" in wrong.stderr


def test_a_history_of_schema_version_2_gets_its_kept_figures_as_series(cache_runs, tmp_path: Path):
    """A cache-sim result stored by a harness of schema version 2 kept its figures only in ``extra``: the
    migration gives them their benchmark rows, results and places in the packed series."""
    (result,) = load_runs(cache_runs[0])[-1].results
    db = tmp_path / "v2.sqlite"
    engine = create_engine(f"sqlite:///{db}")
    old = schema.tables(MetaData(), 2)
    assert "metric" not in old["benchmarks"].c
    with engine.begin() as conn:
        schema.migrate(conn, 0, upto=2)
        conn.execute(old["benchmarks"].insert(), [
            {"id": 7, "suite": "gathers", "name": "gather", "mode": "instructions", "side": "", "kind": "timer",
             "unit": "instructions", "higher_is_better": False},
            {"id": 9, "suite": "gathers", "name": "gather", "mode": "wall", "side": "", "kind": "timer",
             "unit": "s", "higher_is_better": False}])
        for i in range(2):
            conn.execute(old["runs"].insert().values(
                id=i + 1, run_key=f"id:old{i}", started=f"2025-01-0{i + 1}T00:00:00", stored="x", label=f"old{i}",
                environment="{}", series=schema.pack_series([7, 9], [result.value, 1e-5])))
            conn.execute(old["results"].insert(), [
                {"benchmark_id": 7, "run_id": i + 1, "status": "ok", "unit": "instructions", "value": result.value,
                 "number_per_run": result.number_per_run, "extra": json.dumps(result.extra)},
                {"benchmark_id": 9, "run_id": i + 1, "status": "ok", "unit": "s", "value": 1e-5, "number_per_run": 1,
                 "extra": None}])
    engine.dispose()
    with open_history(db) as history:  # migrated on opening
        trends = query.load(history)
        by_metric = {(b.mode, b.metric): (b.id, trends.values[i].tolist()) for i, b in enumerate(trends.benchmarks)}
        assert by_metric[("instructions", "")] == (7, [result.value] * 2)  # ids and values as they were
        assert by_metric[("wall", "")] == (9, [1e-5] * 2)
        cache = result.extra["cache"]
        assert {m: v for (_, m), (_, v) in by_metric.items() if m} == {m: [v] * 2 for m, v in cache.items()}
        history.store(_as_run(load_runs(cache_runs[1])[-1], 0))  # a new run's figures join the same series
        after = query.load(history)
        assert len(after.benchmarks) == len(trends.benchmarks)
        cycles = next(i for i, b in enumerate(after.benchmarks) if b.metric == "estimated_cycles")
        assert np.count_nonzero(~np.isnan(after.values[cycles])) == 3
    with sqlite3.connect(db) as conn:
        assert conn.execute("SELECT value FROM harness_history WHERE key = 'version'").fetchone()[0] == "3"
        assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        with pytest.raises(sqlite3.IntegrityError):  # the identity, metric included, is still unique
            conn.execute("INSERT INTO benchmarks (suite, name, mode, side, kind, unit, higher_is_better, metric) "
                         "VALUES ('gathers', 'gather', 'instructions', '', 'timer', '', 0, 'RAM_hits')")
