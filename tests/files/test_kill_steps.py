"""Every atomic file of docs/files.md, its real writer SIGKILLed at each step of the write.

``HARNESS_TEST_KILL_AT`` makes the writer kill itself before its temporary
file exists, after that file's content is synced (still unnamed), and once it
is named, just before the rename (what issue 36 found left behind). Each
leaves the earlier content byte-identical; the next write leaves nothing but
the file (and its writers' lock, which stays by design).

Peaks and C++ cache entries are written by the same ``atomic_write_text``
as the cache entry here; the TorchScript cache and the HTML report, whose
writers import torch or matplotlib (seconds a process), are killed at the
rename only (their earlier steps are the same ``atomic_open``'s).
tests/files/test_inventory.py keeps every writer on files/.

Cost: about 45 short processes importing harness (no torch), ~12 s on the
shared 2-core VM, and the two heavy writers ~5 s (15 s at a load of 8).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from harness.files.lock import lock_path
from harness.options import TEST_KILL_POINTS

REPO = Path(__file__).resolve().parents[2]

# kind -> (file name, code writing version argv[2] of it to argv[1]); each the writer the inventory names.
RECORD = """
    from harness.model.record import RunRecord
    from harness.model.result import TaskResult
    from harness.model.task import Task
    from harness.records import save
    save(RunRecord({"run_id": f"run{version}"}, [TaskResult(Task("s", "b", "timer", {}), "ok", samples=[1.0])]), path)
"""
WRITERS: dict[str, tuple[str, str]] = {
    "record.json": ("runs.json", RECORD),
    "record.jsonl": ("runs.jsonl", RECORD),
    "record.csv": ("runs.csv", RECORD),
    "expected file": ("expected.csv", """
        import pathlib
        results = pathlib.Path(path).parents[1] / f"results{version}.csv"
        results.write_text(f"name,metric,value\\ncase,m,{version * 1000}\\n")
        from harness.cli import main
        sys.exit(main(["check", str(results), "--expected", path, "--metric", "m", "--update"]))
    """),
    "kind CSV output": ("out.csv", """
        from harness.files.csv_file import append_csv
        append_csv(path, ["name", "value"], [[f"row{version}", version]])
    """),
    "JSON-lines output": ("out.jsonl", """
        from harness.files.jsonl_file import append_jsonl
        append_jsonl(path, [{"version": version}])
    """),
    "replaced CSV (compile-time metrics)": ("metrics.csv", """
        from harness.files.csv_file import write_csv
        write_csv(path, ["name", "metric", "value"], [["case", "m", version]])
    """),
    "cache entry, no O_TMPFILE": ("entry.json", """
        import json
        from harness.files import atomic
        atomic._open_unnamed = lambda directory: None  # a file system without O_TMPFILE: named from the start
        atomic.atomic_write_text(path, json.dumps({"version": version}))
    """),
    "cache entry": ("entry.json", """
        import json
        from harness.files.atomic import atomic_write_text
        atomic_write_text(path, json.dumps({"version": version}))
    """),
}


def _write(kind: str, path: Path, version: int, kill_at: str | None = None) -> subprocess.CompletedProcess[str]:
    code = "import sys\npath, version = sys.argv[1], int(sys.argv[2])\n" + textwrap.dedent(WRITERS[kind][1])
    env = dict(os.environ)
    env.pop("HARNESS_TEST_KILL_AT", None)
    if kill_at:
        env["HARNESS_TEST_KILL_AT"] = kill_at
    return subprocess.run([sys.executable, "-c", code, str(path), str(version)], cwd=REPO, env=env,
                          capture_output=True, text=True, timeout=120)


def _leftovers(directory: Path, target: Path) -> list[str]:
    return sorted(
        p.name for p in directory.iterdir() if p.name.startswith(f".{target.name}.") and p.name.endswith(".tmp")
    )


# Without O_TMPFILE the temporary file has its name from the start: a kill after its fsync leaves it too.
NAMED_AT = {"cache entry, no O_TMPFILE": ("fsync", "rename")}


@pytest.mark.parametrize("kind", sorted(WRITERS))
def test_sigkill_at_each_step_keeps_the_earlier_content(tmp_path: Path, kind: str):
    directory = tmp_path / "out"
    directory.mkdir()
    target = directory / WRITERS[kind][0]
    first = _write(kind, target, 1)
    assert first.returncode == 0, first.stderr
    before = target.read_bytes()
    for step in TEST_KILL_POINTS:
        killed = _write(kind, target, 2, kill_at=step)
        assert killed.returncode == -signal.SIGKILL, killed.stderr
        assert target.read_bytes() == before, f"killed at {step}"
        # Only a writer killed between naming its file and the rename leaves one (issue 36, case 2).
        assert bool(_leftovers(directory, target)) == (step in NAMED_AT.get(kind, ("rename",))), step
    assert _leftovers(directory, target)
    again = _write(kind, target, 3)
    assert again.returncode == 0, again.stderr
    assert target.read_bytes() != before
    # The next write swept the one left behind: only the file and its writers' lock (if it takes one) remain.
    assert {p.name for p in directory.iterdir()} - {lock_path(target).name} == {target.name}


def test_a_live_writers_temporary_file_is_never_swept(tmp_path: Path):
    """A named temporary file whose writer still holds it (here: stopped with SIGSTOP right after naming it)
    is left alone by another write of the same file; once that writer is gone, the next write removes it."""
    target = tmp_path / "entry.json"
    code = textwrap.dedent("""
        import os, signal, sys
        import harness.files.atomic as atomic
        def stop(step):
            if step == "rename":
                os.kill(os.getpid(), signal.SIGSTOP)
        atomic.kill_point = stop
        atomic.atomic_write_text(sys.argv[1], "held")
    """)
    held = subprocess.Popen([sys.executable, "-c", code, str(target)], cwd=REPO)
    try:
        for _ in range(600):
            if _leftovers(tmp_path, target):
                break
            time.sleep(0.05)
        (left,) = _leftovers(tmp_path, target)
        from harness.files.atomic import atomic_write_text

        atomic_write_text(target, "mine")
        assert _leftovers(tmp_path, target) == [left]  # its writer is alive: not swept
    finally:
        held.kill()
        held.wait()
    atomic_write_text(target, "mine again")
    assert not _leftovers(tmp_path, target) and target.read_text() == "mine again"


# Writers whose process imports torch or matplotlib (seconds each): killed at the rename only, the step that
# leaves a file (their earlier steps are atomic_open's, killed above); the next write is made here.
HEAVY = {
    "TorchScript cache": """
        from harness.define.torchscript import Signature, ensure_scripted, function_source
        ensure_scripted(function_source("y = x * 2", Signature.parse("f(x) -> y")), "function")
    """,
    "HTML report": """
        from harness.present.html_report import write_report
        write_report([sys.argv[1] + "/run.json"], sys.argv[1] + "/out/report.html")
    """,
}


@pytest.mark.parametrize("kind", sorted(HEAVY))
def test_heavy_writers_killed_at_the_rename_leave_nothing_after_the_next_write(tmp_path: Path, kind: str,
                                                                               monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("HARNESS_CACHE_DIR", str(tmp_path / "cache"))
    from harness.define.torchscript import Signature, ensure_scripted, function_source, saved_path
    from harness.model.record import RunRecord
    from harness.model.result import TaskResult
    from harness.model.task import Task
    from harness.present.html_report import write_report
    from harness.records import save

    source = function_source("y = x * 2", Signature.parse("f(x) -> y"))
    save(RunRecord({"run_id": "r"}, [TaskResult(Task("s", "b", "timer", {}), "ok", samples=[1.0])]),
         tmp_path / "run.json")
    target = saved_path(source, "function") if kind == "TorchScript cache" else tmp_path / "out" / "report.html"
    env = {**os.environ, "HARNESS_TEST_KILL_AT": "rename"}
    killed = subprocess.run([sys.executable, "-c", "import sys\n" + textwrap.dedent(HEAVY[kind]), str(tmp_path)],
                            cwd=REPO, env=env, capture_output=True, text=True, timeout=300)
    assert killed.returncode == -signal.SIGKILL, killed.stderr
    # The first rename of the TorchScript writer is the function's source, written before the model.
    first = target.with_suffix(".py") if kind == "TorchScript cache" else target
    assert not target.exists() and _leftovers(target.parent, first)
    if kind == "TorchScript cache":
        ensure_scripted(source, "function")
    else:
        write_report([tmp_path / "run.json"], target)
    assert target.exists() and not [p.name for p in target.parent.iterdir() if p.name.endswith(".tmp")]
