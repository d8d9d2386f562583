"""A write that fails half-way (here: the file-size limit, RLIMIT_FSIZE) leaves the earlier file intact."""

from __future__ import annotations

import resource
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import TINY_SUITE, suite_root
from harness.files.lock import lock_path
from harness.model.record import RunRecord
from harness.records import save
from synthetic_runs import full_run

REPO = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("suffix", [".json", ".jsonl", ".csv"])
def test_file_size_limit_keeps_the_earlier_file(tmp_path: Path, suffix: str):
    root = suite_root(tmp_path, "quick", TINY_SUITE)
    out = tmp_path / "out"
    out.mkdir()
    output = out / f"runs{suffix}"
    earlier = full_run(run_id="earlier")
    if suffix == ".json":
        # .json replaces its run: a small earlier record, so that the new one alone passes the limit.
        earlier = RunRecord({"run_id": "earlier"}, earlier.results[:1])
    save(earlier, output)
    before = output.read_bytes()
    limit = len(before) + 256  # the earlier run fits; the new content does not

    def limit_file_size() -> None:
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))

    r = subprocess.run(
        [sys.executable, "-m", "harness", "bench", "--in-process", "--path", str(root), "--output", str(output),
         "--min-run-time", "0.01"],
        cwd=REPO, capture_output=True, text=True, timeout=300, preexec_fn=limit_file_size,
    )
    message = " ".join(r.stderr.split())
    assert r.returncode == 2, r.stderr
    assert (f"{output}: cannot write run record: the file would pass the file-size limit (ulimit -f); "
            "the file is as it was before; give --output a path in a directory you can write") in message
    assert "Traceback" not in r.stderr
    assert output.read_bytes() == before
    assert sorted(p.name for p in out.iterdir()) == sorted([output.name, lock_path(output).name])
