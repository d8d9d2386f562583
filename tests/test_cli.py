"""The command line, run as users run it: exit codes, messages, no tracebacks."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest

from conftest import suite_root


@pytest.fixture
def suites(tmp_path: Path) -> Path:
    root = suite_root(tmp_path, "quick", """
        import harness
        suite = harness.Suite(description="test suite")
        suite.timer("noop", "pass", min_run_time=0.02)
        suite.timer("mul", "x * 2", setup="x = torch.ones(2)", min_run_time=0.02, num_threads=(1, 2))
    """)
    (root / "bench_broken.py").write_text(
        textwrap.dedent(
            """
            import harness
            suite = harness.Suite()
            suite.timer("fine", "pass", min_run_time=0.02)
            suite.timer("raises", "1 / 0", min_run_time=0.02)
            suite.timer("bad_syntax", "x = (", min_run_time=0.02)
            """
        )
    )
    return root


def test_help(cli):
    r = cli("--help")
    assert r.returncode == 0 and "bench" in r.stdout and "list" in r.stdout


def test_list(cli, suites):
    r = cli("list", "--path", str(suites))
    assert r.returncode == 0, r.stderr
    assert "quick" in r.stdout and "mul[threads=2]" in r.stdout and "broken" in r.stdout


def test_bench_ok_and_output(cli, suites, tmp_path):
    out = tmp_path / "run.json"
    r = cli("bench", "quick", "--path", str(suites), "--output", str(out))
    assert r.returncode == 0, r.stderr
    assert "noop" in r.stdout and "mul[threads=1]" in r.stdout
    record = json.loads(out.read_text())
    assert record["schema"] == "harness.run" and record["version"] == 1
    names = [res["task"]["name"] for res in record["results"]]
    assert names == ["noop", "mul[threads=1]", "mul[threads=2]"]
    assert all(res["status"] == "ok" and res["samples"] for res in record["results"])


def test_bench_k_selects(cli, suites):
    r = cli("bench", "--path", str(suites), "-k", "mul and threads=2")
    assert r.returncode == 0, r.stderr
    assert "mul[threads=2]" in r.stdout and "noop" not in r.stdout


def test_failures_reported_run_continues(cli, suites):
    r = cli("bench", "broken", "--path", str(suites))
    assert r.returncode == 1
    assert "fine" in r.stdout
    assert "stmt line 1 ('1 / 0') raised ZeroDivisionError" in r.stderr
    assert "stmt line 1: " in r.stderr and "x = (" in r.stderr
    assert "Traceback" not in r.stderr + r.stdout


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["bench", "nope"], "unknown suite 'nope'; available: broken, quick"),
        (["bench", "-k", "zzz"], "no benchmarks match -k 'zzz'"),
        (["bench", "-k", "mul and"], "-k 'mul and': expected a name after 'and' at column 8\n  mul and\n         ^"),
        (["bench", "-k", "mul noop"], "-k 'mul noop': expected 'and' or 'or' before 'noop' at column 5"),
        (["list", "-k", "(mul or noop"], "-k '(mul or noop': '(' is never closed at column 1"),
        (["list", "-k", "mul)"], "')' without a matching '('"),
        (["bench", "quick", "--min-run-time", "0"], "--min-run-time must be > 0"),
    ],
)
def test_usage_errors_exit_2(cli, suites, args, message):
    r = cli(*args, "--path", str(suites))
    assert r.returncode == 2
    assert message in r.stderr
    assert "Traceback" not in r.stderr


def test_no_suites_dir(cli, tmp_path):
    r = cli("bench", "--path", str(tmp_path / "missing"))
    assert r.returncode == 2 and "no suites found" in r.stderr and "Traceback" not in r.stderr


def test_suite_import_error_names_file_and_line(cli, tmp_path):
    root = tmp_path / "benchmarks"
    root.mkdir()
    (root / "bench_bad.py").write_text("import harness\nsuite = harness.Suite()\nraise RuntimeError('boom')\n")
    r = cli("bench", "--path", str(root))
    assert r.returncode == 2
    assert "bench_bad.py:3" in r.stderr and "boom" in r.stderr and "Traceback" not in r.stderr


def test_repo_standard_suites_listed(cli, repo):
    r = cli("list", cwd=repo)
    assert r.returncode == 0 and "basic" in r.stdout
