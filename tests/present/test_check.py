"""The expected-results gate on synthetic files: verdicts, exit codes, minimal --update, malformed input."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from harness.cli import main
from harness.model.record import RunRecord
from harness.model.result import TaskResult
from harness.model.task import Task
from harness.present.check import read_expected
from harness.records import save

HEADER = "name,metric,expected,noise_margin\n"
M = "compile_time_instruction_count"


def _write(path: Path, text: str) -> Path:
    path.write_bytes(text.encode())
    return path


def _results(path: Path, rows: dict[str, float], metric: str = M) -> Path:
    body = "".join(f"{name},{metric},{value}\n" for name, value in rows.items())
    return _write(path, "name,metric,value\n" + body)


def _check(capsys, *args: str) -> tuple[int, str, str]:
    code = main(["check", *map(str, args)])
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture
def expected(tmp_path: Path) -> Path:
    return _write(
        tmp_path / "expected.csv",
        HEADER + f"a,{M},1000000,0.01\n" + f"b,{M},2000000,0.02\n",
    )


def test_within_margin_is_ok_including_the_boundary(tmp_path, expected, capsys):
    results = _results(tmp_path / "r.csv", {"a": 1010000, "b": 1960000})
    code, out, _ = _check(capsys, results, "--expected", expected)
    assert code == 0
    assert out.count(" ok ") == 2 and "REGRESSION" not in out
    assert "+1.00%" in out and "-2.00%" in out


def test_regression_fails_and_prints_the_refresh_command(tmp_path, expected, capsys):
    results = _results(tmp_path / "r.csv", {"a": 1010001, "b": 2000000})
    code, out, _ = _check(capsys, results, "--expected", expected)
    assert code == 1
    assert "REGRESSION" in out and "1 regression(s)" in out
    assert f"python -m harness check {results} --expected {expected} --update" in out


def test_improvement_passes_with_a_refresh_message(tmp_path, expected, capsys):
    results = _results(tmp_path / "r.csv", {"a": 900000, "b": 2000000})
    code, out, _ = _check(capsys, results, "--expected", expected)
    assert code == 0
    assert "improved" in out and "-10.00%" in out
    assert "record the new values with" in out and "--update" in out


def test_missing_fails_and_new_warns(tmp_path, expected, capsys):
    results = _results(tmp_path / "r.csv", {"a": 1000000, "c": 5})
    code, out, _ = _check(capsys, results, "--expected", expected)
    assert code == 1
    assert "missing" in out and "1 missing result(s)" in out
    assert "new" in out and "1 result(s) have no expected row" in out

    only_new = _results(tmp_path / "r2.csv", {"a": 1000000, "b": 2000000, "c": 5})
    code, out, _ = _check(capsys, only_new, "--expected", expected)
    assert code == 0 and "warning" in out


def test_metrics_without_expected_rows_are_not_judged(tmp_path, expected, capsys):
    rows = _write(
        tmp_path / "r.csv",
        f"name,metric,value\na,{M},1000000\nb,{M},2000000\na,compile_time_s,0.7\n",
    )
    code, out, _ = _check(capsys, rows, "--expected", expected)
    assert code == 0 and "compile_time_s" not in out and "new" not in out


def test_run_record_as_results_and_failed_case_is_missing(tmp_path, expected, capsys):
    def result(case: str, value: float | None) -> TaskResult:
        task = Task("compile_time", f"{case}[instructions]", "compile_time", {"case": case}, mode="instructions")
        if value is None:
            return TaskResult(task=task, status="failed", error="worker crashed with SIGSEGV")
        return TaskResult(
            task=task, status="ok", unit="instructions", samples=[value],
            extra={"case": case, "metrics": {M: value, f"{M}_cold": 3 * value}},
        )

    record = tmp_path / "run.json"
    save(RunRecord(environment={}, results=[result("a", 1000500), result("b", None)]), record)
    code, out, _ = _check(capsys, record, "--expected", expected)
    assert code == 1
    lines = {line.split()[0]: line for line in out.splitlines() if line.split()[:1] in (["a"], ["b"])}
    assert "ok" in lines["a"] and "missing" in lines["b"]


def test_update_rewrites_only_rows_that_moved_a_third_of_their_margin(tmp_path, capsys):
    original = (
        "# recorded on the reference machine with callgrind\r\n"
        + HEADER.replace("\n", "\r\n")
        + f"still,{M},1000000,0.03\r\n"  # moves 0.5%: under a third of 3%, kept
        + f"moved,{M},1000000,0.03\r\n"  # moves 2%: within the margin but over a third, rewritten
        + f"regressed,{M},1000000,0.03\r\n"  # moves 10%, rewritten
        + f"\"quoted, name\",{M},500,0.5\r\n"  # no change, its quoting must survive
        + f"gone,{M},42,0.01\r\n"  # no result: kept
        + f"last,{M},7,0.01"  # no final newline, unchanged
    )
    expected = _write(tmp_path / "expected.csv", original)
    results = _results(
        tmp_path / "r.csv",
        {"still": 1005000, "moved": 1020000, "regressed": 1100000, '"quoted, name"': 500, "last": 7, "fresh": 1234},
    )
    code, out, _ = _check(capsys, results, "--expected", expected, "--update")
    assert code == 1  # a row without a result stays, and says so
    assert "2 row(s) changed, 1 added" in out and "kept" in out
    new = expected.read_bytes().decode()
    old_lines, new_lines = original.splitlines(keepends=True), new.splitlines(keepends=True)
    assert new_lines[:3] == old_lines[:3]
    assert new_lines[3] == f"moved,{M},1020000,0.03\r\n"
    assert new_lines[4] == f"regressed,{M},1100000,0.03\r\n"
    assert new_lines[5:7] == old_lines[5:7]
    assert new_lines[7] == f"last,{M},7,0.01\r\n"
    assert new_lines[8] == f"fresh,{M},1234,0.015\r\n"
    assert len(new_lines) == 9
    assert not list(tmp_path.glob(".expected.csv.*.tmp"))  # no temporary left behind (the writers' lock stays)

    # The refreshed file gates the same results as ok (the missing row still fails).
    code, out, _ = _check(capsys, results, "--expected", expected)
    assert "REGRESSION" not in out and "improved" not in out


@pytest.mark.parametrize(
    ("value", "verdict", "mode", "code", "updated"),
    [
        (1010000, "ok", "1/2", 0, "1010000|1400000"),
        (1390000, "ok", "2/2", 0, "1000000|1390000"),
        (1200000, "REGRESSION", "1/2", 1, "1000000|1200000"),  # between the modes: above the lower one
        (1500000, "REGRESSION", "2/2", 1, "1000000|1500000"),
        (900000, "improved", "1/2", 0, "900000|1400000"),
    ],
)
def test_a_multimodal_row_accepts_each_mode_and_nothing_between(tmp_path, capsys, value, verdict, mode, code, updated):
    expected = _write(tmp_path / "expected.csv", HEADER + f"bimodal,{M},1000000|1400000,0.015\n")
    results = _results(tmp_path / "r.csv", {"bimodal": value})
    got, out, _ = _check(capsys, results, "--expected", expected)
    (line,) = [line for line in out.splitlines() if line.split()[:1] == ["bimodal"]]
    assert got == code and verdict in line and f"(mode {mode})" in line
    # --update rewrites only the mode the value is nearest to (relatively), and keeps the other.
    _check(capsys, results, "--expected", expected, "--update")
    assert expected.read_text() == HEADER + f"bimodal,{M},{updated},0.015\n"


def test_update_without_changes_leaves_the_file_alone(tmp_path, expected, capsys):
    before = expected.read_bytes()
    mtime = expected.stat().st_mtime_ns
    results = _results(tmp_path / "r.csv", {"a": 1000001, "b": 2000000})
    code, out, _ = _check(capsys, results, "--expected", expected, "--update")
    assert code == 0 and "0 row(s) changed, 0 added" in out
    assert expected.read_bytes() == before and expected.stat().st_mtime_ns == mtime


@pytest.mark.parametrize(
    ("text", "where", "message"),
    [
        ("name,metric,expected\na,m,1\n", ":1:", "lacks column(s) noise_margin"),
        ("", ":1:", "empty expected-results file"),
        (HEADER + "a,m,1,0.01\nb,m,12x,0.01\n", ":3:", "expected value '12x' is not a number"),
        (HEADER + "a,m,1|x2,0.01\n", ":2:", "expected value 'x2' is not a number"),
        (HEADER + "a,m,1,wide\n", ":2:", "noise_margin 'wide' is not a number"),
        (HEADER + "a,m,1,-0.1\n", ":2:", "noise_margin must be a finite number >= 0"),
        (HEADER + "a,m,1,0.01\nb,m,2,0.01\na,m,3,0.01\n", ":4:", "duplicate row for a,m (first at line 2)"),
        (HEADER + "a,m,1\n", ":2:", "3 cells where the header has 4"),
        ("# comment\n" + HEADER + "\n,m,1,0.01\n", ":4:", "empty name or metric"),
    ],
)
def test_malformed_expected_file_is_one_clear_error(tmp_path, capsys, text, where, message):
    expected = _write(tmp_path / "expected.csv", text)
    results = _results(tmp_path / "r.csv", {"a": 1})
    code, out, err = _check(capsys, results, "--expected", expected)
    assert code == 2
    assert err.count("harness: error:") == 1
    assert f"{expected}{where}" in err and message in err
    assert "Traceback" not in err + out


def test_malformed_results_and_missing_files(tmp_path, expected, capsys):
    bad = _write(tmp_path / "r.csv", "name,metric,value\na,m,fast\n")
    code, _, err = _check(capsys, bad, "--expected", expected)
    assert code == 2 and f"{bad}:2: value 'fast' is not a number" in err

    twice = _write(tmp_path / "r2.csv", f"name,metric,value\na,{M},1\na,{M},2\n")
    code, _, err = _check(capsys, twice, "--expected", expected)
    assert code == 2 and f"{twice}:3: a,{M} appears twice" in err

    code, _, err = _check(capsys, tmp_path / "nope.csv", "--expected", expected)
    assert code == 2 and "no such results file" in err

    good = _results(tmp_path / "r3.csv", {"a": 1})
    code, _, err = _check(capsys, good, "--expected", tmp_path / "nope.csv")
    assert code == 2 and "no such expected-results file" in err

    record = _write(tmp_path / "r.json", json.dumps({"schema": "something-else"}))
    code, _, err = _check(capsys, record, "--expected", expected)
    assert code == 2 and "line 1 is not a harness record" in err


def test_update_creates_a_new_file_for_the_named_metric(tmp_path, capsys):
    results = _write(tmp_path / "r.csv", f"name,metric,value\na,{M},10\na,compile_time_s,0.5\n")
    expected = tmp_path / "new.csv"
    code, out, err = _check(capsys, results, "--expected", expected)
    assert code == 2 and "no such expected-results file" in err and "--metric" in err
    code, out, err = _check(capsys, results, "--expected", expected, "--update")
    assert code == 2 and "nothing is gated" in err and not expected.exists()
    code, out, err = _check(capsys, results, "--expected", expected, "--metric", M, "--update")
    assert code == 0, err
    assert expected.read_text() == f"{HEADER}a,{M},10,0.015\n"


def test_comments_and_extra_columns_are_allowed(tmp_path):
    path = _write(tmp_path / "e.csv", "# note\n\nname,metric,expected,noise_margin,owner\na,m,10,0.1,me\n")
    parsed = read_expected(path)
    row = parsed.rows[("a", "m")]
    assert (row.line, row.expected, row.margin, row.cells[-1]) == (4, 10.0, 0.1, "me")


def test_check_from_a_real_shell(cli, tmp_path, expected):
    results = _results(tmp_path / "r.csv", {"a": 2000000, "b": 2000000})
    r = cli("check", str(results), "--expected", str(expected))
    assert r.returncode == 1 and "REGRESSION" in r.stdout and "Traceback" not in r.stderr
