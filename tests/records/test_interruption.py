"""Nothing is lost when a real `python -m harness bench` is stopped by a real signal.

The suite below has a kind of its own whose tasks block until the test opens
their gate, so each signal lands at a known moment: before the first result,
between results, or during the write (the test holds the output's writers'
lock, so the run's final write is waiting on it). Each output already holds
an earlier run, which must stay byte-identical.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

import interruptible
from conftest import suite_root
from harness.files.lock import lock_path
from harness.records import save
from harness.records.store import load_runs
from process_scan import processes_with
from synthetic_runs import full_run

REPO = Path(__file__).resolve().parents[2]

SUITE = '''
import os
import time
from pathlib import Path

import harness
from harness.kinds import Kind, register
from harness.model.result import TaskResult

GATES = Path(__file__).parent


def run_gated(task, min_run_time):
    """Says it started, then waits for the test to open its gate when it is the gated one."""
    (GATES / f"started-{task.name}").touch()
    if task.params["wait"]:
        while not (GATES / f"open-{task.name}").exists():
            time.sleep(0.01)
    return TaskResult(task=task, status="ok", unit="s", samples=[0.001, 0.002])


register(Kind(name="gated", runner=run_gated))


class Gated:
    def expand(self, suite):
        wait = os.environ.get("GATED_WAIT", "")
        return [harness.Task(suite, n, "gated", {"wait": n == wait}) for n in ("one", "two", "three")]


suite = harness.Suite(description="tasks that wait for the test")
suite.add(Gated())
'''

MOMENTS = ("before_first_result", "between_results", "during_write")


@pytest.fixture
def gated_suite(tmp_path: Path) -> Path:
    return suite_root(tmp_path, "gated", SUITE)


def _wait_for(what: str, condition, proc: subprocess.Popen, timeout: float = 120) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if proc.poll() is not None:
            out, err = proc.communicate()
            pytest.fail(f"bench exited ({proc.returncode}) before {what}:\n{out}\n{err}")
        if time.monotonic() > deadline:
            proc.kill()
            pytest.fail(f"timed out waiting for {what}")
        time.sleep(0.01)


def _holds_open(pid: int, path: Path) -> bool:
    fd_dir = Path(f"/proc/{pid}/fd")
    try:
        return any(os.readlink(e) == str(path) for e in fd_dir.iterdir())
    except OSError:
        return False


def _left_behind(mark: str, timeout: float = 10.0) -> list[str]:
    """The processes of a run marked ``mark`` still alive after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while (left := processes_with(mark)) and time.monotonic() < deadline:
        time.sleep(0.1)
    return left


def _interrupted_bench(root: Path, output: Path, moment: str, sig: int) -> subprocess.CompletedProcess[str]:
    """Start bench, send ``sig`` at ``moment``, let it finish; its exit status and output.

    A run stopped by SIGINT or SIGTERM leaves no process behind (its worker is killed in the
    middle of a task that would wait for ever). SIGKILL gives the run no chance to stop its
    worker: the test kills that orphan itself, or it would wait for its gate for ever.
    """
    gates = root / "gated"
    wait = {"before_first_result": "one", "between_results": "two", "during_write": ""}[moment]
    name, value = "HARNESS_TEST_INTERRUPTED_RUN", uuid.uuid4().hex
    env = {**os.environ, "GATED_WAIT": wait, name: value}
    mark = f"{name}={value}"  # as it stands in /proc/PID/environ
    cmd = [sys.executable, "-m", "harness", "bench", "gated", "--path", str(root), "--output", str(output),
           "--min-run-time", "0.01"]
    lock_fd = None
    if moment == "during_write":
        # Holding the writers' lock keeps the run's final write waiting on it.
        lock_fd = os.open(lock_path(output), os.O_RDWR | os.O_CREAT, 0o644)
        fcntl.flock(lock_fd, fcntl.LOCK_EX)
    proc = interruptible.popen(cmd, cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        if moment == "during_write":
            _wait_for("the final write", lambda: _holds_open(proc.pid, lock_path(output)), proc)
        else:
            _wait_for(f"task {wait} to start", (gates / f"started-{wait}").exists, proc)
        proc.send_signal(sig)
        if lock_fd is not None:
            time.sleep(0.2)
            os.close(lock_fd)
            lock_fd = None
        out, err = proc.communicate(timeout=120)
    finally:
        if lock_fd is not None:
            os.close(lock_fd)
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    left = _left_behind(mark, timeout=0.0 if sig == signal.SIGKILL else 10.0)
    for line in left:
        with contextlib.suppress(ProcessLookupError):
            os.kill(int(line.split(":")[0]), signal.SIGKILL)
    assert sig == signal.SIGKILL or not left, f"{signal.Signals(sig).name} left processes behind: {left}"
    return subprocess.CompletedProcess(cmd, proc.returncode, out, err)


def _earlier(output: Path):
    earlier = full_run(run_id="earlier")
    save(earlier, output)
    return earlier, output.read_bytes()


FINISHED = {"before_first_result": [], "between_results": ["one"], "during_write": ["one", "two", "three"]}


@pytest.mark.parametrize("suffix", [".json", ".jsonl", ".csv"])
@pytest.mark.parametrize("moment", MOMENTS)
@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_signal_keeps_earlier_runs_and_marks_what_finished(gated_suite: Path, tmp_path: Path, suffix: str,
                                                           moment: str, sig: int):
    output = tmp_path / f"out{suffix}"
    earlier, before = _earlier(output)
    r = _interrupted_bench(gated_suite, output, moment, sig)
    assert r.returncode == (130 if sig == signal.SIGINT else 143), r.stderr
    assert "Traceback" not in r.stderr
    finished = FINISHED[moment]
    runs_file = output
    if suffix == ".json":
        assert output.read_bytes() == before  # a complete record is never replaced by an interrupted run
        beside = [p for p in tmp_path.iterdir() if p.name.startswith("out.interrupted-")]
        assert len(beside) == (1 if finished else 0), sorted(p.name for p in tmp_path.iterdir())
        if not finished:
            assert "nothing written" in r.stderr
            return
        assert beside[0].name in r.stderr  # the message says where it went
        runs_file = beside[0]
        new = load_runs(runs_file)
    else:
        data = output.read_bytes()
        assert data[: len(before)] == before  # earlier runs byte-identical
        runs = load_runs(output)
        assert runs[0].to_json() == earlier.to_json()
        if not finished:
            assert len(runs) == 1 and data == before and "nothing written" in r.stderr
            return
        assert len(runs) == 2
        new = runs[1:]
    assert [x.task.name for x in new[0].results] == finished
    mark = new[0].interrupted
    assert mark == {"signal": signal.Signals(sig).name, "finished": len(finished), "total": 3}


@pytest.mark.parametrize("moment", MOMENTS)
def test_sigkill_keeps_earlier_runs(gated_suite: Path, tmp_path: Path, moment: str):
    outputs = [tmp_path / f"out{s}" for s in (".json", ".jsonl", ".csv")]
    for output in outputs:
        _, before = _earlier(output)
        r = _interrupted_bench(gated_suite, output, moment, signal.SIGKILL)
        assert r.returncode == -signal.SIGKILL
        assert output.read_bytes() == before
        for gate in (gated_suite / "gated").glob("started-*"):
            gate.unlink()
    leftovers = [p.name for p in tmp_path.iterdir() if p.suffix not in (".json", ".jsonl", ".csv", ".lock")
                 and p.name != "benchmarks"]
    assert leftovers == []


@pytest.mark.parametrize("suffix", [".json", ".jsonl", ".csv"])
def test_compare_and_report_show_the_interrupted_mark(cli, tmp_path: Path, suffix: str):
    base = tmp_path / f"base{suffix}"
    save(full_run(run_id="base"), base)
    cut = full_run(run_id="cut")
    cut.environment["interrupted"] = {"signal": "SIGTERM", "finished": len(cut.results), "total": 9}
    new = tmp_path / f"new{suffix}"
    save(cut, new)
    assert load_runs(new)[-1].interrupted == cut.environment["interrupted"]  # survives the format
    r = cli("compare", str(base), str(new))
    assert r.returncode == 0, r.stderr
    assert f"interrupted (SIGTERM) after {len(cut.results)} of 9 results" in " ".join(r.stdout.split())
    r = cli("report", str(base), str(new), "-o", str(tmp_path / "r.html"))
    assert r.returncode == 0, r.stderr
    html = (tmp_path / "r.html").read_text()
    assert f"interrupted (SIGTERM) after {len(cut.results)} of 9 results" in html and "(interrupted)" in html
