"""Run records in JSON, JSONL and CSV: lossless round trips, appending, and clear errors on bad input."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest

from harness.errors import UsageError
from harness.files.csv_file import append_csv, read_csv, write_csv
from harness.model.record import RunRecord
from harness.records import save
from harness.records.store import load, load_runs
from synthetic_runs import failed, full_run, instructions, wall

FORMATS = (".json", ".jsonl", ".csv")


def _tricky_run() -> RunRecord:
    run = full_run()
    r = wall("odd suite", "ünïcode, \"quoted\"\nname", [1.2345678901234567e-07, 3e-300, 1.0], nested={"a": [1, None]})
    r.extra["symbols"] = {"at::add(at::Tensor const&)": 1234.0, "PyEval_EvalFrame": 99.5}
    run.results += [r, instructions("s", "counts", [10, 12]), failed("s", "empty-error", "x\r\ny")]
    return run


@pytest.mark.parametrize("suffix", FORMATS)
def test_round_trip(tmp_path: Path, suffix: str):
    run = _tricky_run()
    path = tmp_path / f"run{suffix}"
    assert save(run, path) is False
    back = load(path)
    assert back.to_json() == run.to_json()
    assert [r.mode for r in back.results] == [r.mode for r in run.results]
    assert {r.mode for r in back.results} == {"wall", "instructions"}


@pytest.mark.parametrize("suffix", (".jsonl", ".csv"))
def test_saving_again_appends_a_run(tmp_path: Path, suffix: str):
    path = tmp_path / f"runs{suffix}"
    first, second = full_run(run_id="one"), full_run(scale=2.0, run_id="two")
    save(first, path)
    assert save(second, path) is True
    runs = load_runs(path)
    assert [r.to_json() for r in runs] == [first.to_json(), second.to_json()]
    assert load(path).to_json() == second.to_json()


def test_json_save_replaces(tmp_path: Path):
    path = tmp_path / "run.json"
    save(full_run(run_id="one"), path)
    second = full_run(scale=2.0, run_id="two")
    save(second, path)
    assert [r.to_json() for r in load_runs(path)] == [second.to_json()]


def test_append_csv_keeps_rows_and_checks_header(tmp_path: Path):
    path = tmp_path / "suite.csv"
    header = ["name", "metric", "value"]
    assert append_csv(path, header, [["a", "m", 1], {"name": "b", "metric": "m", "value": "2,5"}]) == 0
    assert append_csv(path, header, [["c", "m", 3]]) == 2
    _, rows = read_csv(path, header)
    assert [(line, row["name"], row["value"]) for line, row in rows] == [(2, "a", "1"), (3, "b", "2,5"), (4, "c", "3")]
    with pytest.raises(UsageError, match=r"suite\.csv:1: cannot append: its header \(name,metric,value\) differs"):
        append_csv(path, ["name", "value"], [["d", 4]])
    assert len(read_csv(path)[1]) == 3  # the failed append changed nothing
    write_csv(path, header, [["z", "m", 0]])
    assert [row["name"] for _, row in read_csv(path)[1]] == ["z"]


def _write(path: Path, text: str) -> Path:
    path.write_text(textwrap.dedent(text).lstrip())
    return path


def test_missing_and_unknown_format(tmp_path: Path):
    with pytest.raises(UsageError, match=r"nope\.json: no such run record"):
        load(tmp_path / "nope.json")
    with pytest.raises(UsageError, match=r"nope\.csv: no such file"):
        load(tmp_path / "nope.csv")
    with pytest.raises(UsageError, match=r"run\.txt: unknown record format '\.txt'; use \.json, \.jsonl, \.csv"):
        load(tmp_path / "run.txt")


def test_unknown_version_names_the_line(tmp_path: Path):
    run = full_run()
    data = run.to_json()
    data["version"] = 7
    p = tmp_path / "v7.json"
    p.write_text(json.dumps(data, indent=1))
    version_line = next(i for i, line in enumerate(p.read_text().splitlines(), 1) if '"version"' in line)
    with pytest.raises(
        UsageError, match=rf"v7\.json:{version_line}: run record schema version 7, newer than version 1"
    ):
        load(p)

    p = tmp_path / "v7.jsonl"
    save(run, p)
    lines = p.read_text().splitlines()
    lines.append(json.dumps({"schema": "harness.run", "version": 7, "environment": {}}))
    p.write_text("\n".join(lines) + "\n")
    with pytest.raises(UsageError, match=rf"v7\.jsonl:{len(lines)}: run record schema version 7"):
        load(p)

    p = tmp_path / "v7.csv"
    save(run, p)
    text = p.read_text().splitlines()
    text[3] = "7" + text[3][1:]
    p.write_text("\n".join(text) + "\n")
    with pytest.raises(UsageError, match=r"v7\.csv:4: run record schema version 7"):
        load(p)


def test_csv_missing_column(tmp_path: Path):
    p = tmp_path / "run.csv"
    save(full_run(), p)
    _, rows = read_csv(p)
    header = [c for c in rows[0][1] if c != "samples"]
    write_csv(p, header, [{c: row[c] for c in header} for _, row in rows])
    with pytest.raises(UsageError, match=r"run\.csv:1: line 1 is not a harness record: 'version,run"):
        load(p)


def test_malformed_entries_name_their_line(tmp_path: Path):
    data = full_run().to_json()
    data["results"][2]["status"] = "maybe"
    p = tmp_path / "bad.json"
    p.write_text(json.dumps(data, indent=1))
    third = [i for i, line in enumerate(p.read_text().splitlines(), 1) if line == "  {"][2]
    with pytest.raises(UsageError, match=rf"bad\.json:{third}: malformed result #3: status 'maybe'"):
        load(p)

    p = _write(tmp_path / "trunc.json", '{"schema": "harness.run",\n "version": 1,\n "results": [\n')
    with pytest.raises(UsageError, match=r"trunc\.json:4: not a JSON run record"):
        load(p)

    p = _write(tmp_path / "other.json", '{"name": "not a record"}\n')
    with pytest.raises(
        UsageError, match=r"other\.json:1: line 1 is not a harness record: '\{\"name\": \"not a record\"\}'"
    ):
        load(p)

    p = tmp_path / "bad.jsonl"
    save(full_run(), p)
    lines = p.read_text().splitlines()
    lines[3] = "{not json"
    p.write_text("\n".join(lines) + "\n")
    with pytest.raises(UsageError, match=r"bad\.jsonl:4: not JSON"):
        load(p)

    p = _write(tmp_path / "headless.jsonl", json.dumps(full_run().results[0].to_json()) + "\n")
    with pytest.raises(UsageError, match=r"headless\.jsonl:1: line 1 is not a harness record"):
        load(p)

    p = tmp_path / "bad.csv"
    save(full_run(), p)
    header, rows = read_csv(p)
    rows[4][1]["samples"] = "[1, 2"
    write_csv(p, header, [row for _, row in rows])
    with pytest.raises(UsageError, match=r"bad\.csv:6: column 'samples' is not JSON"):
        load(p)


def test_cli_bad_records_exit_2(cli, tmp_path: Path):
    good = tmp_path / "good.json"
    save(full_run(), good)
    bad = _write(tmp_path / "bad.jsonl", '{"schema": "harness.run", "version": 99}\n')
    for args, message in (
        (["compare", str(tmp_path / "missing.json"), str(good)], "missing.json: no such run record"),
        (["compare", str(good), str(bad)], "bad.jsonl:1: run record schema version 99, newer than version 1"),
        (["report", str(good), str(bad), "-o", str(tmp_path / "r.html")], "bad.jsonl:1: run record schema"),
    ):
        r = cli(*args)
        assert r.returncode == 2, r.stdout + r.stderr
        assert message in r.stderr and "Traceback" not in r.stderr
    assert not (tmp_path / "r.html").exists()


@pytest.fixture
def quick_suite(tmp_path: Path) -> Path:
    root = tmp_path / "benchmarks"
    root.mkdir()
    (root / "bench_quick.py").write_text(
        "import harness\nsuite = harness.Suite()\n"
        "suite.timer('noop', 'pass', min_run_time=0.02)\n"
        "suite.timer('add', 'x + 1', setup='x = 1', min_run_time=0.02)\n"
    )
    return root


def test_bench_writes_every_format(cli, quick_suite: Path, tmp_path: Path):
    csv_path = tmp_path / "out" / "runs.csv"
    for _ in range(2):
        # In-process: this tests where results go, not worker isolation (tests/test_pool.py).
        r = cli("bench", "--in-process", "--path", str(quick_suite), "--output", str(csv_path))
        assert r.returncode == 0, r.stderr
    assert "run record appended to" in r.stderr
    runs = load_runs(csv_path)
    assert len(runs) == 2 and runs[0].run_id != runs[1].run_id
    for run in runs:
        assert [x.task.name for x in run.results] == ["noop", "add"]
        assert all(x.ok and x.samples and x.mode == "wall" for x in run.results)
        assert run.environment["noise"]["checked"] is True  # noise checks ran before wall-time tasks
        assert "bench" in run.environment["command_line"]
    jsonl = tmp_path / "run.jsonl"
    r = cli("bench", "--in-process", "--path", str(quick_suite), "-k", "noop", "--output", str(jsonl))
    assert r.returncode == 0, r.stderr
    assert [x.task.name for x in load(jsonl).results] == ["noop"]


def test_bench_refuses_foreign_csv_before_running(cli, quick_suite: Path, tmp_path: Path):
    foreign = tmp_path / "foreign.csv"
    foreign.write_text("name,metric,value\na,b,1\n")
    r = cli("bench", "--path", str(quick_suite), "--output", str(foreign))
    assert r.returncode == 2
    assert "foreign.csv:1: line 1 is not a harness record" in r.stderr and "Traceback" not in r.stderr
    assert "noop" not in r.stdout  # refused before measuring anything
    assert foreign.read_text() == "name,metric,value\na,b,1\n"
    r = cli("bench", "--path", str(quick_suite), "--output", str(tmp_path / "run.txt"))
    assert r.returncode == 2 and "unknown record format '.txt'" in r.stderr


BEFORE = Path(__file__).resolve().parents[1] / "data" / "records_before_restructure"


@pytest.mark.parametrize("suffix", [".json", ".jsonl", ".csv"])
def test_records_written_before_the_restructure_still_load_and_compare(cli, suffix):
    """Written by harness as it was before its package was split into layers (commit 775d6ed)."""
    path = BEFORE / f"before{suffix}"
    record = load(path)
    assert [r.task.name for r in record.results] == ["empty", "tensor_mul_4x4", "torch_empty"]
    assert all(r.ok and r.unit == "s" and r.median > 0 for r in record.results)
    r = cli("compare", str(path), str(BEFORE / "before.json"))
    assert r.returncode == 0, r.stderr
    assert "tensor_mul_4x4" in r.stdout
