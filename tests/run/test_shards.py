"""Shards: balanced, deterministic parts of a selection; the record notes them; merged they are the whole run."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from harness.errors import UsageError
from harness.model.record import RunRecord
from harness.model.result import TaskResult
from harness.model.task import Task
from harness.options import RunOptions, parse_shard
from harness.run import shards

SELECT = ["basic", "--min-run-time", "0.01"]


def _tasks(n: int) -> list[Task]:
    return [Task("s", f"t{i}", "timer", {}, "wall" if i % 3 else "instructions") for i in range(n)]


def test_parts_cover_the_selection_once_and_are_deterministic():
    tasks = _tasks(17)
    parts = [shards.shard(tasks, k, 4) for k in range(1, 5)]
    assert parts == [shards.shard(list(tasks), k, 4) for k in range(1, 5)]
    keys = [t.key for part in parts for t in part]
    assert sorted(keys) == sorted(t.key for t in tasks) and len(set(keys)) == len(tasks)
    for part in parts:  # each part keeps the selection's order
        assert part == [t for t in tasks if t in part]


def test_parts_balance_by_recorded_durations():
    tasks = _tasks(6)
    seconds = [10.0, 1.0, 1.0, 1.0, 1.0, 6.0]
    record = RunRecord(
        {}, [TaskResult(t, "ok", samples=[1.0], extra={"elapsed_s": s}) for t, s in zip(tasks, seconds, strict=True)]
    )
    durations = shards.durations_of([record])
    parts = [shards.shard(tasks, k, 2, durations) for k in (1, 2)]
    loads = sorted(sum(durations[t.key] for t in part) for part in parts)
    assert loads == [10.0, 10.0]  # longest first: {10} and {6, 1, 1, 1, 1}
    # Without durations every timer task weighs its kind's estimate, so the parts differ.
    assert [shards.shard(tasks, k, 2) for k in (1, 2)] != parts
    assert shards.makespan(seconds, 2) == 10.0 and shards.makespan(seconds, 1) == sum(seconds)


@pytest.mark.parametrize("text", ["0/3", "4/3", "1", "a/b", "1/0"])
def test_bad_shard_is_a_usage_error(text):
    with pytest.raises(UsageError, match="--shard"):
        parse_shard(text)


def test_durations_need_a_shard():
    with pytest.raises(UsageError, match="--shard"):
        RunOptions(durations="x.json")


@pytest.fixture(scope="module")
def shard_records(tmp_path_factory, repo):
    """The basic suite unsharded and as shards 1/3, 2/3, 3/3 (each a real `bench` run)."""
    from conftest import run_cli

    out = tmp_path_factory.mktemp("shards")
    whole = out / "whole.json"
    r = run_cli("bench", *SELECT, "-o", str(whole))
    assert r.returncode == 0, r.stderr
    parts = []
    for k in (1, 2, 3):
        path = out / f"part{k}.json"
        r = run_cli("bench", *SELECT, "--shard", f"{k}/3", "--durations", str(whole), "-o", str(path))
        assert r.returncode == 0, r.stderr
        parts.append(path)
    return whole, parts


def _keys(path: Path) -> list[tuple[str, str]]:
    data = json.loads(path.read_text())
    return [(f"{r['task']['suite']}/{r['task']['name']}", r["mode"]) for r in data["results"]]


def test_merged_shards_equal_the_unsharded_run(shard_records, tmp_path, cli):
    whole, parts = shard_records
    notes = [json.loads(p.read_text())["environment"]["shard"] for p in parts]
    assert [(n["index"], n["count"]) for n in notes] == [(1, 3), (2, 3), (3, 3)]
    assert all([(t["name"], t["mode"]) for t in n["selection"]] == _keys(whole) for n in notes)
    assert all(_keys(p) for p in parts)  # no empty part: 8 tasks over 3 shards
    merged = tmp_path / "merged.json"
    r = cli("merge", str(merged), *map(str, reversed(parts)))
    assert r.returncode == 0, r.stderr
    assert _keys(merged) == _keys(whole)
    env = json.loads(merged.read_text())["environment"]
    assert "shard" not in env and len(env["merged_from"]) == 3
    # compare and report take the merged record like any other run.
    r = cli("compare", str(whole), str(merged))
    assert r.returncode == 0, r.stderr
    assert all(name.split("/")[1] in r.stdout for name, _ in _keys(whole))
    r = cli("report", str(whole), str(merged), "-o", str(tmp_path / "report.html"))
    assert r.returncode == 0, r.stderr


def test_missing_or_duplicated_shards_are_refused_by_name(shard_records, tmp_path, cli):
    whole, parts = shard_records
    out = str(tmp_path / "merged.json")
    r = cli("merge", out, str(parts[0]), str(parts[1]))
    assert r.returncode == 2 and "Traceback" not in r.stderr
    assert "missing" in r.stderr and "shard 3/3 not given" in r.stderr
    assert all(name in r.stderr for name, _ in _keys(parts[2]))
    r = cli("merge", out, *map(str, parts), str(parts[1]))
    assert r.returncode == 2 and "more than once" in r.stderr
    assert all(name in r.stderr for name, _ in _keys(parts[1]))
    assert not Path(out).exists()


def test_parts_on_other_software_need_allow_mixed(shard_records, tmp_path, cli):
    whole, parts = shard_records
    other = tmp_path / "other.json"
    data = json.loads(parts[1].read_text())
    data["environment"]["torch"]["version"] = "2.0.0"  # the part as another machine's torch would record it
    other.write_text(json.dumps(data))
    out = tmp_path / "merged.json"
    r = cli("merge", str(out), str(parts[0]), str(other), str(parts[2]))
    assert r.returncode == 2 and "--allow-mixed" in r.stderr and "torch 2.0.0" in r.stderr
    r = cli("merge", str(out), str(parts[0]), str(other), str(parts[2]), "--allow-mixed")
    assert r.returncode == 0, r.stderr
    assert r.stdout.count("mixed: harness") == len(data["results"])
    assert _keys(out) == _keys(whole)
