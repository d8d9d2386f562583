"""A peak is what the machine can do: never cached from a busy machine, raised when a kernel beats it,
and a utilisation above 1 never printed as a figure (issue 46, item 2). Real torch, real processes."""

from __future__ import annotations

import csv
import json
import os
import re
import subprocess
import sys
import time

import pytest

from harness.records.noise import current_load
from harness.suites.gpt_fast import peaks, targets
from harness.suites.gpt_fast.experiment import Experiment
from harness.suites.gpt_fast.output import csv_line, database_record
from harness.suites.gpt_fast.table import rows_table

SMALL = peaks.MeasureSizes(gemm_n=128, copy_bytes=2**20)
PLANTED_FLOPS = 1e6  # 0.001 GFLOP/s: any real GEMM beats it


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("HARNESS_CACHE_DIR", str(tmp_path / "cache"))
    return tmp_path / "cache"


@pytest.fixture
def spinning():
    """One busy process per usable core, spinning for real until the test ends."""
    procs = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(os.cpu_count() or 1)]
    try:
        deadline = time.monotonic() + 30
        while not current_load(window=0.2).busy:  # the spinners are up once the signal sees them
            assert time.monotonic() < deadline, "the spinning processes never showed in the load signal"
        yield procs
    finally:
        for p in procs:
            p.kill()
            p.wait()


def test_a_peak_measured_on_a_busy_machine_is_used_but_not_cached(cache, spinning):
    p = peaks.measured_peaks("cpu", "test cpu", SMALL, min_run_time=0.01)
    assert p.source == "measured" and p.flops_per_s > 0 and not p.cache_file
    assert "not cached, the machine was busy (other load:" in p.detail
    assert not list((cache / "peaks").glob("*.json"))
    assert peaks.cached_peaks() == []


def _plant_low_peak(env: dict[str, str], flops_per_s: float = PLANTED_FLOPS, bytes_per_s: float = 1e9) -> str:
    """Plant the tiny-size CPU peak far too low, under the key a fresh worker computes."""
    code = (
        "import json; from harness.suites.gpt_fast import peaks, context\n"
        "key = peaks._machine_key('cpu', peaks.device_name('cpu'), context.TINY_PEAK_SIZES)\n"
        "path = peaks.cache_path(key)\n"
        f"rec = {{'key': key, 'flops_per_s': {flops_per_s}, 'bytes_per_s': {bytes_per_s},"
        " 'measured_at': '2026-01-01T00:00:00+00:00',"
        " 'tries': 1, 'load': [{'busy_fraction': 0.6, 'load_average_1m': 3.5, 'usable_cores': 2}]}\n"
        "path.write_text(json.dumps(rec)); print(path)\n"
    )
    r = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    return r.stdout.strip()


def test_a_kernel_faster_than_the_cached_peak_raises_it_and_says_so(cli, cache, tmp_path):
    env = {"HARNESS_GPT_FAST_SIZE": "tiny", "HARNESS_CACHE_DIR": str(cache), "TORCHINDUCTOR_COMPILE_THREADS": "1"}
    planted = _plant_low_peak({**os.environ, **env})
    shown = cli("cache", "info", env=env)
    assert shown.returncode == 0, shown.stderr
    assert "0.0 GFLOP/s bf16, 1.0 GB/s; measured 2026-01-01T00:00:00+00:00 (other processes busy 60%, load " \
           "average 3.50 on 2 core(s))" in shown.stdout and planted in shown.stdout and "raised" not in shown.stdout

    out = tmp_path / "gpt.csv"
    r = cli("bench", "gpt_fast", "--only", "mlp_layer_norm_gelu", "--min-run-time", "0.01", "-o", str(out), env=env)
    assert r.returncode == 0, r.stderr
    text = " ".join(r.stdout.split())  # the table's caption wraps
    assert "peak stale: mlp_layer_norm_gelu" in text and "faster than the peak of 0.0 GFLOP/s" in text, r.stdout
    # Measured again, or on a busy machine raised to the kernel's rate: either way the output says which.
    assert "; measured again: " in text or "; raised to the kernel's rate (not measured again" in text, r.stdout

    rows = [row for row in csv.DictReader(out.open())]
    assert {row["name"] for row in rows} == {"mlp_layer_norm_gelu", "mlp_layer_norm_gelu[tokens=4]"}
    assert all(0 < float(row["actual"]) <= 1.0 for row in rows)
    record = json.loads(out.with_suffix(".run.json").read_text())
    (result,) = record["results"]
    assert result["extra"]["context"]["peaks"]["source"] == "raised"
    for row in result["extra"]["rows"]:
        assert all(s["value"] <= 1.0 for s in row["shapes"])

    stored = json.loads(open(planted).read())
    assert stored["flops_per_s"] > PLANTED_FLOPS and stored["raised"]["from"] == {"flops_per_s": PLANTED_FLOPS}
    assert stored["raised"]["how"] in ("measured again", "raised to the kernel's rate")
    (entry,) = peaks.cached_peaks()
    assert entry.flops_per_s == stored["flops_per_s"] and "mlp_layer_norm_gelu" in entry.raised
    shown = cli("cache", "info", env=env)
    assert f"; raised {entry.raised}" in shown.stdout
    cleared = cli("cache", "clear", "peaks", env=env)
    assert cleared.returncode == 0 and "removed 1 cached peak(s)" in cleared.stdout
    assert peaks.cached_peaks() == [] and "no cached peaks" in cli("cache", "info", env=env).stdout


PLANTED_BYTES = 1.0  # a byte a second: any real kernel moves more, however busy the machine
HIGH_FLOPS = 1e18  # no CPU reaches it: only the bandwidth peak is stale


def _of_peak_cells(page: str) -> list[str]:
    """The "of peak" column of the report's kernel tables: each row's sixth cell."""
    out = []
    section = page.split('id="kernels"', 1)[1].split("<h2", 1)[0]
    for row in re.findall(r"<tr><td>.*?</tr>", section, flags=re.S):
        cells = re.findall(r"<td[^>]*>(.*?)</td>", row, flags=re.S)
        out.append(cells[5])
    return out


def test_a_kernel_faster_than_the_cached_bandwidth_peak_raises_it_and_says_so(cli, cache, tmp_path):
    """The bandwidth peak has the FLOP peak's guarantee: a kernel that moves bytes faster than the cached
    peak bandwidth proves it stale (was: kept, and the report's "of peak" read 100,000% and more)."""
    env = {"HARNESS_GPT_FAST_SIZE": "tiny", "HARNESS_CACHE_DIR": str(cache), "TORCHINDUCTOR_COMPILE_THREADS": "1"}
    planted = _plant_low_peak({**os.environ, **env}, flops_per_s=HIGH_FLOPS, bytes_per_s=PLANTED_BYTES)

    out = tmp_path / "gpt.csv"
    r = cli("bench", "gpt_fast", "--only", "layer_norm", "--min-run-time", "0.01", "-o", str(out), env=env)
    assert r.returncode == 0, r.stderr
    text = " ".join(r.stdout.split())  # the table's caption wraps
    assert "peak stale: layer_norm bfloat16 (D=64) ran at" in text and "faster than the peak of 0.0 GB/s" in text, \
        r.stdout
    assert "; measured again: " in text or "; raised to the kernel's rate (not measured again" in text, r.stdout

    stored = json.loads(open(planted).read())
    assert stored["bytes_per_s"] > PLANTED_BYTES and stored["raised"]["from"] == {"bytes_per_s": PLANTED_BYTES}
    record = json.loads(out.with_suffix(".run.json").read_text())
    (result,) = record["results"]
    used = result["extra"]["context"]["peaks"]
    assert used["source"] == "raised" and used["bytes_per_s"] == stored["bytes_per_s"]
    # Every figure derived from the peak is scored against the raised one: the target (the reference's
    # share of the peak bandwidth) and the share of the peak each shape reached.
    (row,) = [row for row in csv.DictReader(out.open())]
    share = targets.reference("layer_norm", targets.BANDWIDTH, "bfloat16").fraction_of_peak
    assert float(row["target"]) == pytest.approx(share * used["bytes_per_s"] / 1e9, rel=1e-5)
    for shape in result["extra"]["rows"][0]["shapes"]:
        assert 0 < shape["value"] * 1e9 <= used["bytes_per_s"]

    page = tmp_path / "report.html"
    shown = cli("report", str(out.with_suffix(".run.json")), "-o", str(page))
    assert shown.returncode == 0, shown.stderr
    html = page.read_text()
    assert "peak stale: layer_norm" in html
    of_peak = _of_peak_cells(html)
    assert of_peak and all(0 < float(cell.rstrip("%").replace(",", "")) <= 100 for cell in of_peak), of_peak

    (entry,) = peaks.cached_peaks()
    assert "from 0.0 GB/s" in entry.raised and "layer_norm" in entry.raised


def _util(actual: float) -> Experiment:
    return Experiment("mlp_layer_norm_gelu", "flops_utilization", 0.4, actual, "bfloat16", "cpu", "Test CPU",
                      shapes=({"D": 64, "value": actual, "target": 0.4},))


def test_a_utilisation_above_one_is_never_printed_as_a_figure():
    from rich.console import Console

    from harness.model.result import TaskResult
    from harness.model.task import Task

    impossible, possible = _util(1.97), _util(0.5)
    assert csv_line(impossible)[3] == "" and csv_line(possible)[3] == "0.5"
    assert database_record(impossible)["metric"]["benchmark_values"] == []
    result = TaskResult(Task("gpt_fast", "mlp", "gpt_fast", {}), "ok", unit="gpt_fast rows",
                        extra={"rows": [impossible.to_json()], "skipped": []})
    console = Console(width=200, record=True)
    console.print(rows_table("t", [result]))
    shown = console.export_text()
    assert "1.97" not in shown and "over peak" in shown


def test_a_datasheet_bandwidth_beaten_withholds_the_share_of_the_peak():
    """A datasheet peak is never raised: a kernel over its bandwidth gets no "of peak" figure, and the note says why."""
    from harness.model.record import RunRecord
    from harness.model.result import TaskResult
    from harness.model.task import Task
    from harness.suites.gpt_fast.peak_check import check_against_peak
    from harness.suites.gpt_fast.report import kernel_section

    h100 = peaks.datasheet_peaks("NVIDIA H100 80GB HBM3")
    over = Experiment("gemv", targets.BANDWIDTH, 2000.0, 4000.0, "bfloat16", "cuda", "H100",
                      shapes=({"D": 4096, "bytes": 4e9, "seconds": 1.0, "value": 4000.0, "target": 2000.0},))
    rows, kept, note = check_against_peak([over], h100, min_run_time=0.01)
    assert rows == [over] and kept is h100
    assert note.startswith("gemv bfloat16 (D=4096) ran at 4,000.0 GB/s, above the datasheet peak of 3,350.0 GB/s")
    assert note.endswith("its share of the peak bandwidth is withheld")
    result = TaskResult(Task("gpt_fast", "gemv", "gpt_fast", {}), "ok", unit="gpt_fast rows",
                        extra={"rows": [over.to_json()], "skipped": [], "context": {"peaks": h100.to_json()},
                               "peak_note": note})
    page = kernel_section([("r.json", RunRecord({}, [result]))])
    assert _of_peak_cells(page) == ["over peak"] and "119%" not in page


@pytest.fixture
def quiet(tmp_path):
    """A /proc whose load signal says quiet (load average 0, CPU times that do not move)."""
    proc = tmp_path / "quiet-proc"
    proc.mkdir()
    (proc / "loadavg").write_text("0.00 0.00 0.00 1/100 1\n")
    (proc / "stat").write_text("cpu  100 0 100 10000 0 0 0 0 0 0\n")
    return proc


def _stale_cached_peak(quiet) -> peaks.Peaks:
    """A cached SMALL peak, then made far too low in its file, as a run on a busy machine would have left it."""
    peaks.measured_peaks("cpu", "test cpu", SMALL, min_run_time=0.01, proc=quiet)
    stale = peaks.measured_peaks("cpu", "test cpu", SMALL, min_run_time=0.01, proc=quiet)
    path = stale.cache_file
    data = json.loads(open(path).read())
    data["flops_per_s"] = PLANTED_FLOPS
    open(path, "w").write(json.dumps(data))
    return peaks.measured_peaks("cpu", "test cpu", SMALL, min_run_time=0.01, proc=quiet)


def test_a_stale_peak_on_a_quiet_machine_is_measured_again(cache, quiet):
    stale = _stale_cached_peak(quiet)
    assert stale.source == "cached" and stale.flops_per_s == PLANTED_FLOPS
    new = peaks.restate_stale_peak(stale, [peaks.Observed(peaks.FLOP_PEAK, 2 * PLANTED_FLOPS, "k")], min_run_time=0.01,
                                    proc=quiet)
    assert new.source == "raised" and new.flops_per_s > 2 * PLANTED_FLOPS  # a real GEMM beats 0.002 GFLOP/s
    assert "peak stale: k ran at 0.0 GFLOP/s, faster than the peak of 0.0 GFLOP/s" in new.detail
    assert "; measured again: " in new.detail
    stored = json.loads(open(stale.cache_file).read())
    assert stored["flops_per_s"] == new.flops_per_s and stored["raised"]["how"] == "measured again"
    again = peaks.measured_peaks("cpu", "test cpu", SMALL, min_run_time=0.01, proc=quiet)
    assert again.flops_per_s == new.flops_per_s and again.source == "raised"


def test_a_stale_peak_on_a_busy_machine_is_raised_to_the_kernels_rate(cache, quiet, spinning):
    stale = _stale_cached_peak(quiet)
    new = peaks.restate_stale_peak(stale, [peaks.Observed(peaks.FLOP_PEAK, 2 * PLANTED_FLOPS, "k")], min_run_time=0.01)
    assert new.flops_per_s == 2 * PLANTED_FLOPS and "raised to the kernel's rate (not measured again" in new.detail
    stored = json.loads(open(stale.cache_file).read())
    assert stored["flops_per_s"] == 2 * PLANTED_FLOPS and stored["raised"]["how"] == "raised to the kernel's rate"
