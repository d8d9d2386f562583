"""Atomic writes: a writer killed mid-write (SIGKILL, Ctrl-C) leaves the old file and no debris."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from harness.files.atomic import atomic_open
from harness.files.lock import lock_path
from harness.records import save
from harness.records.store import load
from synthetic_runs import full_run

# Writes a run record of ~2 million samples (~60 MB as indented JSON: seconds of
# writing) over the file given as argv[1], through the ordinary save path.
WRITER = textwrap.dedent(
    """
    import sys
    from harness.model.record import RunRecord
    from harness.model.result import TaskResult
    from harness.model.task import Task
    from harness.records import save

    task = Task(suite="big", name="big", kind="timer", params={})
    result = TaskResult(task=task, status="ok", samples=[i * 1e-9 for i in range(2_000_000)])
    save(RunRecord(environment={"run_id": "big"}, results=[result]), sys.argv[1])
    """
)


def _supports_unnamed_temporaries(directory: Path) -> bool:
    try:
        fd = os.open(directory, os.O_TMPFILE | os.O_RDWR, 0o600)
    except (AttributeError, OSError):
        return False
    os.close(fd)
    return True


def _partial_write_fd(pid: int, directory: Path, target: Path) -> int | None:
    """Size of a file the writer has open for writing in ``directory`` other than ``target``, if any."""
    fd_dir = Path(f"/proc/{pid}/fd")
    try:
        entries = list(fd_dir.iterdir())
    except OSError:
        return None
    for entry in entries:
        try:
            link = os.readlink(entry)
        except OSError:
            continue
        if link.startswith(str(directory) + "/") and link not in (str(target), str(lock_path(target))):
            try:
                return entry.stat().st_size
            except OSError:
                continue
    return None


@pytest.mark.parametrize("suffix", [".json", ".csv"])
def test_sigkill_mid_write_keeps_old_file_and_leaves_no_temporary(tmp_path: Path, suffix: str):
    if not _supports_unnamed_temporaries(tmp_path):
        pytest.skip("no O_TMPFILE here: a SIGKILLed writer leaves its named temporary file behind")
    target = tmp_path / f"run{suffix}"
    save(full_run(), target)
    before = target.read_bytes()
    proc = subprocess.Popen([sys.executable, "-c", WRITER, str(target)], stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 120
        size = None
        while time.monotonic() < deadline and proc.poll() is None:
            size = _partial_write_fd(proc.pid, tmp_path, target)
            if size:
                break
            time.sleep(0.005)
        assert size, f"never caught the writer mid-write (exit status {proc.poll()})"
        os.kill(proc.pid, signal.SIGKILL)
    finally:
        proc.kill()
        proc.wait()
    assert proc.returncode == -signal.SIGKILL
    assert target.read_bytes() == before
    # Only the file and its writers' lock (which is kept: see files/lock.py).
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([target.name, lock_path(target).name])
    assert load(target).to_json() == full_run().to_json()


def test_interrupt_while_writing_removes_temporary(tmp_path: Path):
    target = tmp_path / "data.txt"
    target.write_text("old\n")
    with pytest.raises(KeyboardInterrupt):
        with atomic_open(target) as f:
            f.write("half of the new")
            raise KeyboardInterrupt
    assert target.read_text() == "old\n"
    assert [p.name for p in tmp_path.iterdir()] == ["data.txt"]


def test_new_file_gets_ordinary_permissions_and_keeps_existing_ones(tmp_path: Path):
    fresh = tmp_path / "sub" / "fresh.txt"
    with atomic_open(fresh) as f:
        f.write("x")
    assert fresh.read_text() == "x" and (fresh.stat().st_mode & 0o777) == 0o644
    fresh.chmod(0o600)
    with atomic_open(fresh, "wb") as f:
        f.write(b"y")
    assert fresh.read_bytes() == b"y" and (fresh.stat().st_mode & 0o777) == 0o600
