"""Change points over real histories: a known step at run 37 found at run 37 (counts and wall times), with the
layers and functions that moved; 200 runs of seeded noise without a step; the CI gate; bench --history."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest
from history_runs import STEP_AT, noise_run, run

from harness.history import open_history, query
from harness.history.changes import find_changes, find_steps
from harness.records import save

SUITE = """
import harness
suite = harness.Suite()
suite.add(harness.TimerDefinition("noop", "pass"))
"""


@pytest.fixture(scope="module")
def stepped(tmp_path_factory) -> Path:
    """60 runs with a step at run 37, in a history file (stored through import, the way records arrive)."""
    folder = tmp_path_factory.mktemp("stepped")
    for i in range(60):
        save(run(i), folder / "runs.jsonl")
    db = folder / "h.sqlite"
    with open_history(db) as history:
        history.import_paths([folder / "runs.jsonl"])
    return db


def test_known_step_is_found_at_its_run_with_what_moved(stepped: Path, capsys):
    from harness.cli import main

    with open_history(stepped) as history:
        changes = find_changes(query.load(history))
    assert {(c.benchmark.full_name, c.after.label, c.before.label) for c in changes} == {
        ("ops/add", f"v{STEP_AT}", f"v{STEP_AT - 1}"), ("ops/add [instructions]", f"v{STEP_AT}", f"v{STEP_AT - 1}")}
    counted = next(c for c in changes if c.benchmark.mode == "instructions")
    assert counted.step.change == pytest.approx(0.02, rel=0.01) and counted.worse
    assert main(["history", "changes", "--history", str(stepped)]) == 0
    out = capsys.readouterr().out
    row = next(line for line in out.splitlines() if "[instructions]" in line)
    assert "+2.0%" in row and f"v{STEP_AT - 1}" in row and f"v{STEP_AT} " in row
    flat = re.sub(r"[\s│]+", " ", out)  # the last column wraps onto lines of its own
    assert "dispatcher +20,000" in flat and "c10::Dispatcher::call +12,000" in flat  # why: layer and function
    assert "ops/mul" not in out


def test_show_table_and_order_by_label(stepped: Path, cli):
    r = cli("history", "show", "--history", str(stepped), "-k", "add", "--last", "30", env={"COLUMNS": "250"})
    assert r.returncode == 0, r.stderr
    assert "30 runs in" in r.stdout and "ops/mul" not in r.stdout
    row = next(line for line in r.stdout.splitlines() if "[instructions]" in line)
    assert re.search(r"[▁▂▃▄▅▆▇█]{20,}", row)
    with open_history(stepped) as history:
        trends = query.load(history)
        by_label = query.regroup(trends, "label")
        assert [r.label for r in by_label.runs][:3] == ["v0", "v1", "v2"]  # natural order: v2 before v10
        by_commit = query.regroup(trends, "commit")
        assert len(by_commit.runs) == 60 and by_commit.runs[0].commit.startswith("c0000000")


def test_seeded_noise_has_no_step(tmp_path: Path):
    db = tmp_path / "noise.sqlite"
    with open_history(db) as history:
        history.store_many([noise_run(i, seed=7) for i in range(200)])
        trends = query.load(history)
    assert len(trends.runs) == 200 and find_changes(trends) == []
    for seed in range(5):  # and directly, wall-time-like and count-like noise
        rng = np.random.default_rng(seed)
        assert find_steps(rng.normal(1e-6, 3e-8, 200), 0.02) == []
        assert find_steps(np.round(rng.normal(1e6, 30, 200)), 0.005) == []


def test_fail_on_regression_gates_the_newest_run(tmp_path: Path, cli, capsys):
    from harness.cli import main  # in this process where the exit status is all a call checks

    db = tmp_path / "gate.sqlite"
    with open_history(db) as history:
        history.store_many([run(i, step_at=None) for i in range(30)])
    assert main(["history", "changes", "--history", str(db), "--fail-on-regression", "1"]) == 0
    with open_history(db) as history:
        history.store(run(30, step_at=30))  # the newest run is 10% slower, 2% more instructions
    gated = cli("history", "changes", "--history", str(db), "--fail-on-regression", "5")
    assert gated.returncode == 1 and "ops/add: +" in gated.stderr and "regressed beyond 5%" in gated.stderr
    assert "[instructions]" not in gated.stderr  # +2% is within 5%
    assert main(["history", "changes", "--history", str(db), "--fail-on-regression", "50"]) == 0
    assert main(["history", "changes", "--history", str(db), "--plot", "x.html"]) == 2
    assert "--plot belongs to `history show`" in capsys.readouterr().err


def test_bench_history_stores_the_run_with_its_label(tmp_path: Path, cli, capsys):
    from conftest import suite_root

    root = suite_root(tmp_path, "tiny", SUITE)
    db = tmp_path / "bench.sqlite"
    r = cli("bench", "tiny", "--path", str(root), "--min-run-time", "0.01", "--in-process", "--history", str(db),
            "--label", "nightly-1", "-o", str(tmp_path / "run.json"), cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert f"run stored in the history {db}" in r.stderr
    from harness.cli import main

    assert main(["history", "import", str(tmp_path / "run.json"), "--history", str(db)]) == 0
    assert "0 run(s) added, 1 already kept" in capsys.readouterr().out  # bench's run and its record: one run
    with open_history(db) as history:
        trends = query.load(history)
    assert [r.label for r in trends.runs] == ["nightly-1"] and trends.benchmarks[0].full_name == "tiny/noop"
