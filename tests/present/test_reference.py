"""`check --reference`: the file must say where its values come from; without --expected it never gates."""

from __future__ import annotations

from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
SHIPPED = REPO / "benchmarks" / "compile_time" / "reference_pytorch.csv"


def test_shipped_reference_names_counter_torch_and_source_for_every_row():
    from harness.present.reference import read_reference

    reference = read_reference(SHIPPED)
    assert len(reference.rows) == 23
    header = reference.header
    for row in reference.rows.values():
        cells = dict(zip(header, row.cells, strict=True))
        assert cells["counter"] == "perf" and cells["torch"].startswith("main@")
        assert "65a34a1d1f8345be66be639d7c6f5c1300ab7d19" in cells["source"]


def test_reference_without_provenance_columns_is_a_usage_error(cli, tmp_path):
    results = tmp_path / "r.csv"
    results.write_text("name,metric,value\nadd_loop_eager,compile_time_instruction_count,3000000000\n")
    reference = tmp_path / "ref.csv"
    reference.write_text("name,metric,expected,noise_margin\nadd_loop_eager,compile_time_instruction_count,3e9,0.1\n")
    r = cli("check", str(results), "--reference", str(reference))
    assert r.returncode == 2 and "counter, torch, source" in r.stderr and "Traceback" not in r.stderr


def test_check_needs_expected_or_reference(cli, tmp_path):
    results = tmp_path / "r.csv"
    results.write_text("name,metric,value\nadd_loop_eager,compile_time_instruction_count,3000000000\n")
    r = cli("check", str(results))
    assert r.returncode == 2 and "--expected FILE" in r.stderr and "--reference FILE" in r.stderr


def test_reference_of_a_metric_csv_without_its_record_says_ours_is_unknown(cli, tmp_path):
    results = tmp_path / "r.csv"
    results.write_text("name,metric,value\nadd_loop_eager,compile_time_instruction_count,1689000000\n")
    r = cli("check", str(results), "--reference", str(SHIPPED))
    assert r.returncode == 0, r.stdout + r.stderr
    row = next(line for line in r.stdout.splitlines() if "add_loop_eager " in line)
    assert "0.50" in row and "our counter unknown" in r.stdout
