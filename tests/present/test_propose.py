"""check --propose: the expected file as it should be after a run, and its markdown summary."""

from __future__ import annotations

from pathlib import Path

EXPECTED = """\
# recorded by hand: this comment stays
name,metric,expected,noise_margin
worse,compile_time_instruction_count,1000000,0.015
steady,compile_time_instruction_count,2000000,0.02
drifted,compile_time_instruction_count,3000000,0.03
better,compile_time_instruction_count,4000000,0.015
worse,compile_time_instruction_count:phase:dynamo,1000000,0.015
worse,compile_time_instruction_count:phase:dynamo/GraphLowering.run,400000,0.015
worse,compile_time_instruction_count:phase:dynamo/build_guards,600000,0.015
"""

RESULTS = """\
name,metric,value
worse,compile_time_instruction_count,1100000
steady,compile_time_instruction_count,2000100
drifted,compile_time_instruction_count,3020000
better,compile_time_instruction_count,3000000
brand_new,compile_time_instruction_count,42
worse,compile_time_instruction_count:phase:dynamo,1100000
worse,compile_time_instruction_count:phase:dynamo/GraphLowering.run,500000
worse,compile_time_instruction_count:phase:dynamo/build_guards,600000
"""


def test_only_rows_beyond_their_margin_change_and_the_summary_names_the_phase(tmp_path: Path, cli):
    expected, results, out = tmp_path / "expected.csv", tmp_path / "results.csv", tmp_path / "proposed.csv"
    expected.write_text(EXPECTED)
    results.write_text(RESULTS)
    r = cli("check", str(results), "--expected", str(expected), "--propose", str(out))
    assert r.returncode == 1, r.stdout + r.stderr  # the gate still fails on the regression
    assert expected.read_text() == EXPECTED  # --propose never edits the expected file
    lines = out.read_text().splitlines()
    assert lines[0] == "# recorded by hand: this comment stays"
    assert "worse,compile_time_instruction_count,1100000,0.015" in lines  # a regression, margin kept
    assert "better,compile_time_instruction_count,3000000,0.015" in lines  # a win is recorded too
    # Within the margin: kept as they were, though "drifted" moved by more than a third of it (--update would).
    assert "steady,compile_time_instruction_count,2000000,0.02" in lines
    assert "drifted,compile_time_instruction_count,3000000,0.03" in lines
    assert "brand_new,compile_time_instruction_count,42,0.015" in lines
    assert "worse,compile_time_instruction_count:phase:dynamo/build_guards,600000,0.015" in lines
    summary = out.with_suffix(".md").read_text()
    row = next(line for line in summary.splitlines() if line.startswith("| worse | compile_time_instruction_count |"))
    # The deepest gated phase that moved names the cause; the unmoved sibling is not blamed.
    assert "dynamo/GraphLowering.run +25.00%" in row and "build_guards" not in row
    assert "+10.00%" in row and "REGRESSION" in row
    assert "| better |" in summary and "improved" in summary and "| drifted |" not in summary
    assert summary in r.stdout.replace("\r", "")


def test_propose_needs_the_expected_file_and_not_update(tmp_path: Path, cli):
    results = tmp_path / "results.csv"
    results.write_text(RESULTS)
    r = cli("check", str(results), "--propose", str(tmp_path / "p.csv"), "--reference", str(results))
    assert r.returncode == 2 and "--propose writes the --expected file" in r.stderr
