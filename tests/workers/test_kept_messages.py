"""What a client of a kept worker is told when the worker does not serve it: frozen (SIGSTOP), or
stopped by `python -m harness workers stop` mid-count; and the registry's info file, written whole.

Plain (not valgrind'ed) kept workers: the client side is the same for a counting one.
Cost (2-core machine): three plain kept workers (each imports torch) and one CLI call; about 20 s.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import pytest

from harness.model.task import Task
from harness.options import TEST_KILL_AT_ENV
from harness.workers import private_dir
from harness.workers.kept import KeptWorker
from harness.workers.protocol import WorkerDied
from harness.workers.registry import INFO, kept_workers, read_info, write_info

PLACE = {"python": sys.executable, "package": "/p", "cwd": os.getcwd(), "slot": 0, "options": [], "env": "e",
         "harness": "h", "torch": None}


@pytest.fixture
def short_tmp(monkeypatch):
    """A TMPDIR of the test's own, short enough for sockets, for this process and its children."""
    path = Path(tempfile.mkdtemp(prefix="hm", dir="/tmp"))
    monkeypatch.setenv("TMPDIR", str(path))
    monkeypatch.setattr(tempfile, "tempdir", None)  # gettempdir() reads TMPDIR again
    try:
        yield path
    finally:
        subprocess.run(["pkill", "-KILL", "-f", "--", f"listen:{path}"], check=False)
        shutil.rmtree(path, ignore_errors=True)


def _state(pid: int) -> bytes:
    try:
        return Path(f"/proc/{pid}/stat").read_bytes().rsplit(b")", 1)[1].split()[0]
    except OSError:
        return b"gone"


def _gone(pid: int, timeout: float = 10.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if _state(pid) in (b"gone", b"Z", b"X"):
            return True
        time.sleep(0.05)
    return False


def test_a_frozen_kept_worker_is_said_to_be_not_answering(short_tmp: Path, capsys):
    """SIGSTOP'ed, it takes the connection and says nothing (was: "left a dead socket"): the client says
    it is not answering within N s and stopped, ends it (nothing could reach it again) and starts another."""
    directory = private_dir.worker_dir("k" + "1" * 40)
    first = KeptWorker.open([], {}, 60.0, 120.0, directory, fingerprint=PLACE)
    assert first is not None
    first.close()
    os.kill(first.server_pid, signal.SIGSTOP)
    try:
        second = KeptWorker.open([], {}, 60.0, 120.0, directory, fingerprint=PLACE, answer_timeout=2.0)
        assert second is not None and second.server_pid != first.server_pid and not second.reused
        second.close()
        err = capsys.readouterr().err
        assert (f"the kept worker in {directory} (pid {first.server_pid}) is not answering within 2 s: "
                "it is stopped (SIGSTOP or Ctrl-Z); ended it, starting a new one") in err, err
        assert "dead socket" not in err
        assert _gone(first.server_pid)
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.kill(first.server_pid, signal.SIGKILL)


def test_a_count_whose_worker_is_stopped_by_workers_stop_says_so(short_tmp: Path):
    """`python -m harness workers stop` while a client's statement runs (was: "kept worker died (a crash;
    ...)", or, for a worker without a zygote, the session ran on, unreached): the count fails at once
    and says who stopped the worker."""
    directory = private_dir.worker_dir("k" + "2" * 40)
    worker = KeptWorker.open([], {}, 60.0, 120.0, directory, fingerprint=PLACE)
    assert worker is not None
    task = Task("t", "sleeps", "timer", {"stmt": "time.sleep(0.05)", "setup": "import time", "min_run_time": 60.0})
    outcome: dict[str, BaseException | object] = {}

    def count() -> None:
        try:
            outcome["result"] = worker.run(task, 60.0, timeout=120.0)
        except BaseException as exc:  # noqa: BLE001 - checked below
            outcome["error"] = exc

    counting = threading.Thread(target=count)
    counting.start()
    try:
        time.sleep(3.0)  # in the statement's timing loop
        assert counting.is_alive(), outcome
        stopped = subprocess.run([sys.executable, "-m", "harness", "workers", "stop"], capture_output=True,
                                 text=True, timeout=120)
        assert stopped.returncode == 0 and stopped.stdout.strip() == "stopped 1 kept worker", stopped
        counting.join(timeout=20)
        assert not counting.is_alive()
        error = outcome.get("error")
        assert isinstance(error, WorkerDied), outcome
        assert str(error) == (f"kept worker stopped by `python -m harness workers stop` (pid {worker.server_pid}) "
                              "while it counted"), error
        assert _gone(worker.proc.pid) and _gone(worker.server_pid)
    finally:
        worker.kill()
        counting.join(timeout=30)


def test_the_info_file_is_written_whole_and_leaves_no_partial_file(short_tmp: Path):
    """info.json goes through files.atomic: a writer SIGKILLed between writing and renaming leaves the
    old file whole, and the next write sweeps what it left (was: its own ``info.json.partial``, never
    synced, never swept); what the registry lists is what was written."""
    directory = private_dir.worker_dir("k" + "3" * 40)
    worker = KeptWorker.open([], {}, 60.0, 120.0, directory, fingerprint=PLACE)
    assert worker is not None
    worker.close()
    (listed,) = kept_workers()
    assert listed["server"] == worker.server_pid and listed["harness"] == "h"
    killed = subprocess.run(
        [sys.executable, "-c", "import sys; from pathlib import Path; from harness.workers.registry import write_info; "
         "write_info(Path(sys.argv[1]), 1, 60.0, {'harness': 'killed'})", str(directory)],
        env={**os.environ, TEST_KILL_AT_ENV: "rename"}, capture_output=True, text=True, timeout=120)
    assert killed.returncode == -signal.SIGKILL, killed.stderr
    assert read_info(directory)["harness"] == "h"  # the old file, whole
    assert [p.name for p in directory.iterdir() if INFO in p.name and p.name != INFO]  # what the kill left
    write_info(directory, worker.server_pid, 60.0, {**PLACE, "harness": "again"})
    assert read_info(directory)["harness"] == "again"
    assert [p.name for p in directory.iterdir() if INFO in p.name] == [INFO]
