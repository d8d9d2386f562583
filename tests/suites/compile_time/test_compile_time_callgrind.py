"""End to end with the real counter: a small compile-time subset counted under callgrind, then gated.

Costs about 1.5 minutes on an idle 2-core machine (two valgrind workers in
parallel: the cheapest aotdispatcher case and a 20-step InlineMod).
"""

from __future__ import annotations

import csv
import json
import shutil
import textwrap
from pathlib import Path

import pytest

pytestmark = pytest.mark.skipif(shutil.which("valgrind") is None, reason="needs valgrind (apt-get install valgrind)")

SUITE = """
import harness
from harness.suites.compile_time.cases import AotDispatcher, InlineModule

suite = harness.Suite(default=False)
suite.add(AotDispatcher(mode="inference", subclass=False))
suite.add(InlineModule(repeats=20))
"""


@pytest.fixture(scope="module")
def counted(tmp_path_factory) -> tuple[Path, object]:
    from conftest import run_cli

    tmp = tmp_path_factory.mktemp("ct_callgrind")
    root = tmp / "benchmarks"
    (root / "ct_small").mkdir(parents=True)
    (root / "ct_small" / "suite.py").write_text(textwrap.dedent(SUITE))
    out = tmp / "results.csv"
    r = run_cli(
        "bench", "ct_small", "--path", str(root), "-k", "instructions", "--counter", "callgrind",
        "--jobs", "2", "--output", str(out), timeout=1800,
    )
    assert r.returncode == 0, r.stdout + r.stderr
    return out, r


def test_counts_come_from_callgrind_through_bench(counted):
    out, r = counted
    rows = {(row["name"], row["metric"]): float(row["value"]) for row in csv.DictReader(out.open())}
    aot = rows[("aotdispatcher_inference_nosubclass_cpu", "compile_time_instruction_count")]
    inline = rows[("basic_InlineMod20_eager", "compile_time_instruction_count")]
    # One compile of 100 adds through AOT autograd is ~2e9 instructions with
    # torch 2.13; a broken region (nothing counted, or the whole process) is
    # orders of magnitude off.
    assert 5e8 < aot < 2e10
    assert 5e7 < inline < aot
    table = [line for line in r.stdout.splitlines() if "aotdispatcher_inference_nosubclass_cpu" in line]
    assert len(table) == 1 and f"{aot:,.0f}" in table[0]
    assert "instructions by callgrind" in r.stdout
    record = json.loads(out.with_suffix(".json").read_text())
    assert {res["extra"]["counter"] for res in record["results"]} == {"callgrind"}
    assert all(res["extra"]["iterations"] == 2 and res["extra"]["cold_unit"] == "s" for res in record["results"])


def test_gate_over_the_counted_run(counted, tmp_path, cli):
    out, _ = counted
    expected = tmp_path / "expected.csv"
    metric = "compile_time_instruction_count"
    r = cli("check", str(out), "--expected", str(expected), "--metric", metric, "--update")
    assert r.returncode == 0, r.stdout + r.stderr
    lines = expected.read_text().splitlines()
    assert lines[0] == "name,metric,expected,noise_margin" and len(lines) == 3
    r = cli("check", str(out), "--expected", str(expected))
    assert r.returncode == 0 and r.stdout.count(" ok ") == 2

    # 3% fewer instructions expected than measured: a regression, with the refresh command.
    name, metric, value, margin = lines[1].split(",")
    lines[1] = f"{name},{metric},{int(float(value) / 1.03)},{margin}"
    expected.write_text("\n".join(lines) + "\n")
    r = cli("check", str(out), "--expected", str(expected))
    assert r.returncode == 1 and "REGRESSION" in r.stdout and "--update" in r.stdout
