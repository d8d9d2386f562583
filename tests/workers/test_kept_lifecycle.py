"""Kept workers' lifecycle without valgrind: the private directory's checks, listing and stopping,
a stale worker replaced, the fingerprint of harness's sources. (Reuse, kill -9 mid-count and a
client's Ctrl-C, under callgrind: test_kept_worker.py.)

Cost (2-core machine): two plain (not valgrind'ed) kept workers, each importing torch, and a few
short processes; about 15 s.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from harness.errors import UsageError
from harness.workers import private_dir
from harness.workers.kept import KeptWorker, harness_digest
from harness.workers.registry import kept_workers, stop


@pytest.fixture
def short_tmp(monkeypatch):
    """A TMPDIR of the test's own, short enough for sockets, for this process and its children."""
    path = Path(tempfile.mkdtemp(prefix="hl", dir="/tmp"))
    monkeypatch.setenv("TMPDIR", str(path))
    monkeypatch.setattr(tempfile, "tempdir", None)  # gettempdir() reads TMPDIR again
    try:
        yield path
    finally:
        subprocess.run(["pkill", "-KILL", "-f", "--", f"listen:{path}"], check=False)
        shutil.rmtree(path, ignore_errors=True)


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "harness", *args], capture_output=True, text=True, timeout=300)


def test_trap_directories_are_refused(short_tmp: Path):
    """Every directory on the way to the socket is checked; each trap is one message: path, problem, fix."""
    root = short_tmp / f"harness-{os.getuid()}"
    # A dangling link where the private directory should be (was: [Errno 17] File exists), through the CLI.
    root.symlink_to(short_tmp / "gone")
    suite = short_tmp / "benchmarks"
    suite.mkdir()
    (suite / "bench_one.py").write_text(
        "import harness\nsuite = harness.Suite()\nsuite.timer('add', 'x + 1', setup='x = 1')\n"
    )
    r = _cli("bench", "--path", str(suite), "--mode", "instructions", "--counter", "callgrind")
    assert r.returncode == 2 and "Traceback" not in r.stderr, r.stderr
    assert f"{root}: will not keep harness's workers here: it is a dangling symbolic link" in r.stderr
    assert f"rm {root}" in r.stderr and "TMPDIR" in r.stderr
    assert not (short_tmp / "gone").exists()  # nothing was made through the link
    # A link to a real directory, even one of ours: not followed.
    root.unlink()
    (short_tmp / "elsewhere").mkdir(mode=0o700)
    root.symlink_to(short_tmp / "elsewhere")
    with pytest.raises(UsageError, match="it is a symbolic link"):
        private_dir.workers_dir()
    root.unlink()
    # Others may write to it.
    root.mkdir(mode=0o700)
    root.chmod(0o777)
    with pytest.raises(UsageError, match=f"{root}: .*its mode is 0777.*chmod 700 {root}"):
        private_dir.workers_dir()
    # The same one step further down: the workers' directory itself.
    root.chmod(0o700)
    (root / "workers").mkdir(mode=0o700)
    (root / "workers").chmod(0o770)
    with pytest.raises(UsageError, match="workers: will not keep harness's workers here: its mode is 0770"):
        private_dir.workers_dir()
    (root / "workers").chmod(0o700)
    assert private_dir.workers_dir() == root / "workers"
    # Another user's.
    if os.getuid() == 0:
        os.chown(root / "workers", 65534, 65534)
        with pytest.raises(UsageError, match="belongs to another user"):
            private_dir.workers_dir()
        os.chown(root / "workers", 0, 0)
    # A directory above that anyone may write to, without the sticky bit: refused too.
    shutil.rmtree(root)
    short_tmp.chmod(0o777)
    try:
        if os.getuid() == 0:  # root owns it, and root's own directories are trusted; make it another's
            os.chown(short_tmp, 65534, 65534)
            with pytest.raises(UsageError, match="other users may write to it"):
                private_dir.workers_dir()
    finally:
        os.chown(short_tmp, os.getuid(), os.getgid())
        short_tmp.chmod(0o700)


def test_worker_directories_have_one_length(short_tmp: Path):
    paths = {len(str(private_dir.worker_dir(name))) for name in ("k" + "ab" * 40, private_dir.fresh_name(), "k1")}
    assert paths == {private_dir.WORKER_DIR_LENGTH}


def test_an_edited_source_changes_the_fingerprint(tmp_path: Path):
    """harness's sources by content: an edit a worker could run retires it, one in present/ does not."""
    package = tmp_path / "harness"
    (package / "run").mkdir(parents=True)
    (package / "present").mkdir()
    (package / "run" / "worker.py").write_text("x = 1\n")
    (package / "present" / "table.py").write_text("y = 1\n")
    before = harness_digest.__wrapped__(package)
    (package / "present" / "table.py").write_text("y = 2\n")
    assert harness_digest.__wrapped__(package) == before
    (package / "run" / "worker.py").write_text("x = 2\n")
    assert harness_digest.__wrapped__(package) != before


def _ended(pid: int, timeout: float = 10.0) -> bool:
    """Whether process ``pid`` is gone within ``timeout`` (a kept worker is init's child, reaped there)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            state = Path(f"/proc/{pid}/stat").read_bytes().rsplit(b")", 1)[1].split()[0]
        except OSError:
            return True
        if state in (b"Z", b"X"):
            return True
        time.sleep(0.05)
    return False


def _parent(pid: int) -> int:
    return int(Path(f"/proc/{pid}/stat").read_bytes().rsplit(b")", 1)[1].split()[1])


def _plain_worker(directory: Path, fingerprint: dict) -> KeptWorker:
    worker = KeptWorker.open([], {}, 60.0, 120.0, directory, fingerprint=fingerprint)
    assert worker is not None
    worker.close()
    return worker


def test_listed_stopped_and_a_stale_one_replaced(short_tmp: Path):
    """`harness workers` lists a kept worker with its age, memory and fingerprint; a worker of other
    harness sources in the same place is stopped when its successor starts; `workers stop` ends the rest."""
    place = {"python": sys.executable, "package": "/p", "cwd": os.getcwd(), "slot": 0, "options": [], "env": "e"}
    old_dir = private_dir.worker_dir("k" + "1" * 40)
    old = _plain_worker(old_dir, {**place, "harness": "old", "torch": None})
    # A daemon: not the child of the client that started it (nothing that ends the client ends it).
    assert _parent(old.server_pid) != os.getpid()
    listed = _cli("workers")
    assert listed.returncode == 0, listed.stderr
    assert (
        listed.stdout.startswith("1 kept instruction-counting worker, ")
        and f"pid {old.server_pid}  age " in listed.stdout
    )
    assert "harness old" in listed.stdout and str(old_dir) in listed.stdout
    (entry,) = kept_workers()
    assert entry["memory"] > 10 * 2**20  # a Python process and what it imported

    # Another environment or slot beside it is not stale: both stay.
    other = _plain_worker(private_dir.worker_dir("k" + "2" * 40), {**place, "env": "f", "slot": 1, "harness": "old",
                                                                    "torch": None})
    assert {w["server"] for w in kept_workers()} == {old.server_pid, other.server_pid}
    # Other harness sources (an edit) for this interpreter and checkout: the old ones go, silently,
    # when the new one starts; a worker of another checkout stays.
    elsewhere = _plain_worker(private_dir.worker_dir("k" + "4" * 40), {**place, "package": "/q", "harness": "old",
                                                                        "torch": None})
    new = _plain_worker(private_dir.worker_dir("k" + "3" * 40), {**place, "harness": "new", "torch": None})
    assert {w["server"] for w in kept_workers()} == {new.server_pid, elsewhere.server_pid}
    assert not old_dir.exists() and _ended(old.server_pid) and _ended(other.server_pid)
    stop(next(w for w in kept_workers() if w["server"] == elsewhere.server_pid))

    stopped = _cli("workers", "stop")
    assert stopped.returncode == 0 and stopped.stdout.strip() == "stopped 1 kept worker", stopped
    assert _ended(new.server_pid)
    assert kept_workers() == []
    assert _cli("workers").stdout.startswith("no kept instruction-counting workers")


_ROOT_OF_WORKERS = "from harness.workers.private_dir import workers_dir; print(workers_dir())"


def test_tmpdir_places_the_workers_directory(short_tmp: Path):
    """TMPDIR (read by Python's tempfile) holds harness-$UID/workers while it is short; a long one, or none,
    gives /tmp's. Real processes, as a user's shell starts them."""
    uid = os.getuid()

    def where(**env: str | None) -> str:
        full = {k: v for k, v in os.environ.items() if k != "TMPDIR"}
        full.update({k: v for k, v in env.items() if v is not None})
        r = subprocess.run([sys.executable, "-c", _ROOT_OF_WORKERS], env=full, capture_output=True, text=True,
                           timeout=120)
        assert r.returncode == 0, r.stderr
        return r.stdout.strip()

    assert where(TMPDIR=str(short_tmp)) == f"{short_tmp}/harness-{uid}/workers"
    assert (short_tmp / f"harness-{uid}" / "workers").is_dir()
    long = short_tmp / ("d" * 60)
    long.mkdir()
    assert where(TMPDIR=str(long)) == f"/tmp/harness-{uid}/workers"
    assert where(TMPDIR=None) == where(TMPDIR="") == f"/tmp/harness-{uid}/workers"
