"""Peak caching per machine, the CSV/JSON-lines writers and the experiment record (real files, real torch)."""

from __future__ import annotations

import csv
import json

import pytest

from harness.errors import UsageError
from harness.model.record import RunRecord
from harness.model.result import TaskResult
from harness.model.task import Task
from harness.suites.gpt_fast import peaks
from harness.suites.gpt_fast.experiment import CSV_FIELDS, Experiment
from harness.suites.gpt_fast.output import (
    append_csv,
    append_jsonl,
    database_record,
    output_paths,
    write_outputs,
)

SMALL = peaks.MeasureSizes(gemm_n=128, copy_bytes=2**20)


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("HARNESS_CACHE_DIR", str(tmp_path / "cache"))
    return tmp_path / "cache" / "peaks"


@pytest.fixture
def quiet(tmp_path):
    """A /proc whose load signal says quiet (load average 0, CPU times that do not move): this shared
    machine is rarely idle, and a peak measured on a busy one is not cached (test_gpt_fast_stale_peak.py)."""
    proc = tmp_path / "quiet-proc"
    proc.mkdir()
    (proc / "loadavg").write_text("0.00 0.00 0.00 1/100 1\n")
    (proc / "stat").write_text("cpu  100 0 100 10000 0 0 0 0 0 0\n")
    return proc


def test_measured_peaks_are_cached_per_machine(cache, quiet):
    first = peaks.measured_peaks("cpu", "test cpu", SMALL, min_run_time=0.01, proc=quiet)
    assert first.source == "measured" and first.flops_per_s > 0 and first.bytes_per_s > 0
    files = list(cache.glob("*.json"))
    assert len(files) == 1
    stored = json.loads(files[0].read_text())
    assert stored["key"]["device_name"] == "test cpu" and stored["key"]["gemm_n"] == 128

    assert stored["tries"] == peaks.TRIES and stored["load"][0]["load_average_1m"] == 0.0

    again = peaks.measured_peaks("cpu", "test cpu", SMALL, min_run_time=0.01, proc=quiet)
    assert again.source == "cached" and str(files[0]) in again.detail
    assert (again.flops_per_s, again.bytes_per_s) == (first.flops_per_s, first.bytes_per_s)

    # Other measurement sizes are another measurement, not this one.
    other = peaks.measured_peaks("cpu", "test cpu", peaks.MeasureSizes(256, 2**20), min_run_time=0.01, proc=quiet)
    assert other.source == "measured" and len(list(cache.glob("*.json"))) == 2


def test_unreadable_cache_is_measured_again(cache, quiet):
    peaks.measured_peaks("cpu", "test cpu", SMALL, min_run_time=0.01, proc=quiet)
    (path,) = cache.glob("*.json")
    path.write_text("{not json")
    assert peaks.measured_peaks("cpu", "test cpu", SMALL, min_run_time=0.01, proc=quiet).source == "measured"
    assert json.loads(path.read_text())["flops_per_s"] > 0


def test_cpu_never_uses_the_datasheet(cache):
    p = peaks.peaks_for("cpu", SMALL, min_run_time=0.01)
    assert p.source in ("measured", "cached") and p.device_name == peaks.device_name("cpu")


def _exp(name="gemv", actual=123.456789, target=990.0, dtype="bfloat16", is_model=False):
    return Experiment(name, "memory_bandwidth(GB/s)", target, actual, dtype, "cpu", "Test CPU", is_model,
                      shapes=({"D": 1024, "value": actual, "target": target},))


def _read(path):
    with open(path, newline="") as f:
        return list(csv.reader(f))


def test_csv_append_keeps_rows_and_header(tmp_path):
    path = tmp_path / "out.csv"
    append_csv(path, [_exp(), _exp(dtype="int8", target=None)])
    append_csv(path, [_exp(name="llama", actual=9.5, is_model=True)])
    rows = _read(path)
    assert rows[0] == list(CSV_FIELDS)
    assert len(rows) == 4 and rows.count(list(CSV_FIELDS)) == 1
    assert rows[1] == ["gemv", "memory_bandwidth(GB/s)", "990.0", "123.457", "bfloat16", "cpu", "Test CPU", "False"]
    assert rows[2][2] == ""  # no target
    assert rows[3][0] == "llama" and rows[3][-1] == "True"


def test_csv_with_another_header_is_not_touched(tmp_path):
    path = tmp_path / "other.csv"
    path.write_text("a,b\n1,2\n")
    with pytest.raises(UsageError, match="header"):
        append_csv(path, [_exp()])
    assert path.read_text() == "a,b\n1,2\n"


def test_csv_bare_file_name(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    append_csv("bare.csv", [_exp()])
    assert len(_read(tmp_path / "bare.csv")) == 2


def test_database_record_shape():
    rec = database_record(_exp(name="llama", is_model=True, actual=9.5, target=None), {"size": "cpu"})
    assert set(rec) == {"benchmark", "model", "metric"}
    assert rec["benchmark"] == {
        "name": "PyTorch gpt-fast benchmark", "mode": "inference", "dtype": "bfloat16",
        "extra_info": {"device": "cpu", "arch": "Test CPU", "size": "cpu"},
    }
    assert rec["model"] == {"name": "llama", "type": "OSS model", "origins": ["pytorch"]}
    assert rec["metric"] == {"name": "memory_bandwidth(GB/s)", "benchmark_values": [9.5], "target_value": None}
    assert database_record(_exp())["model"]["type"] == "micro-benchmark"
    assert isinstance(database_record(_exp())["metric"]["benchmark_values"][0], float)


def test_jsonl_appends(tmp_path):
    path = tmp_path / "out.jsonl"
    append_jsonl(path, [{"a": 1}])
    append_jsonl(path, [{"b": 2}, {"c": 3}])
    assert [json.loads(line) for line in path.read_text().splitlines()] == [{"a": 1}, {"b": 2}, {"c": 3}]


def test_write_outputs_beside_the_csv(tmp_path):
    task = Task("gpt_fast", "gemv", "gpt_fast", {"experiment": "gemv"})
    ok = TaskResult(task, "ok", unit="gpt_fast rows", extra={
        "rows": [_exp().to_json(), _exp(dtype="int8").to_json()],
        "skipped": [], "context": {"size": "cpu", "peaks": {"source": "measured"}},
    })
    failed = TaskResult(Task("gpt_fast", "llama", "gpt_fast", {}), "failed", error="boom")
    record = RunRecord(environment={"hostname": "x"}, results=[ok, failed])
    csv_path, jsonl_path, record_path = output_paths(tmp_path / "res.csv")
    assert (jsonl_path.name, record_path.name) == ("res.jsonl", "res.run.json")
    assert write_outputs(csv_path, record) == [csv_path, jsonl_path, record_path]
    assert len(_read(csv_path)) == 3
    lines = [json.loads(x) for x in jsonl_path.read_text().splitlines()]
    assert [x["benchmark"]["dtype"] for x in lines] == ["bfloat16", "int8"]
    assert lines[0]["benchmark"]["extra_info"]["peaks_source"] == "measured"
    saved = json.loads(record_path.read_text())
    assert saved["schema"] == "harness.run" and saved["results"][0]["extra"]["rows"][0]["shapes"][0]["D"] == 1024
    write_outputs(csv_path, record)  # a second run appends
    assert len(_read(csv_path)) == 5 and len(jsonl_path.read_text().splitlines()) == 4


def test_experiment_json_round_trip():
    e = _exp(target=None)
    assert Experiment.from_json(json.loads(json.dumps(e.to_json()))) == e
