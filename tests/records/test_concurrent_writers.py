"""Several real writers on one output: every run kept, none interleaved, truncated or dropped."""

from __future__ import annotations

import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from conftest import TINY_SUITE, suite_root
from harness.records.store import load_runs

REPO = Path(__file__).resolve().parents[2]


# One process of the Python API test: N appends of a run with a unique id.
APPENDER = textwrap.dedent("""
    import sys
    from harness.model.record import RunRecord
    from harness.model.result import TaskResult
    from harness.model.task import Task
    from harness.records import save

    path, who, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
    for i in range(n):
        task = Task("s", f"b{i}", "timer", {"who": who})
        save(RunRecord({"run_id": f"{who}-{i}"}, [TaskResult(task, "ok", samples=[1.0, 2.0, 3.0])]), path)
""")


@pytest.fixture
def tiny_suite(tmp_path: Path) -> Path:
    return suite_root(tmp_path, "tiny", TINY_SUITE)


@pytest.mark.parametrize("suffix", [".json", ".jsonl", ".csv"])
def test_eight_concurrent_cli_runs(tiny_suite: Path, tmp_path: Path, suffix: str):
    output = tmp_path / f"runs{suffix}"
    cmd = [sys.executable, "-m", "harness", "bench", "--path", str(tiny_suite), "--output", str(output),
           "--min-run-time", "0.01", "--in-process"]
    procs = [subprocess.Popen(cmd, cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for _ in range(8)]
    outs = [p.communicate(timeout=300) for p in procs]
    for p, (_, err) in zip(procs, outs, strict=True):
        assert p.returncode == 0, err
    runs = load_runs(output)
    for run in runs:
        assert [r.task.name for r in run.results] == ["noop"] and run.results[0].ok
    if suffix != ".json":
        assert len(runs) == 8 and len({r.run_id for r in runs}) == 8
        return
    # One complete record; each run replaced by another is named in that writer's message.
    assert len(runs) == 1
    errs = "\n".join(err for _, err in outs)
    written = re.findall(r"\(run (\w+) replaced run (\w+)", errs)
    winner = runs[0].run_id
    replaced = {old for _, old in written}
    writers = {new for new, _ in written}
    assert winner in writers and winner not in replaced
    assert len(writers | replaced) == 8 or len(written) == 7


@pytest.mark.parametrize("suffix", [".jsonl", ".csv"])
def test_two_processes_fifty_appends_each(tmp_path: Path, suffix: str):
    output = tmp_path / f"runs{suffix}"
    procs = [subprocess.Popen([sys.executable, "-c", APPENDER, str(output), who, "50"], cwd=REPO,
                              stderr=subprocess.PIPE, text=True) for who in ("a", "b")]
    for p in procs:
        _, err = p.communicate(timeout=300)
        assert p.returncode == 0, err
    runs = load_runs(output)
    assert len(runs) == 100
    assert sorted(r.run_id for r in runs) == sorted(f"{w}-{i}" for w in "ab" for i in range(50))
    # Each process's own runs stay in the order it wrote them.
    for who in "ab":
        mine = [int(r.run_id.split("-")[1]) for r in runs if r.run_id.startswith(who)]
        assert mine == list(range(50))
