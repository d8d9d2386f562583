"""Kept workers: a callgrind worker that outlives the run that started it, reused by the next run.

Cost (2-core machine): seven valgrind'ed worker start-ups (~15-20 s each; two of them in parallel),
a few short script runs and two ~6 s counts interrupted (Ctrl-C, kill -9); about 3 minutes.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

import pytest

import interruptible
from alike import assert_counts_alike
from harness.errors import UsageError
from harness.model.task import Task
from harness.options import KEEP_WORKER_ENV as KEEP_ENV
from harness.options import keep_worker_seconds as keep_seconds

SCRIPT = textwrap.dedent(
    """
    import json, harness
    from harness.measure.callgrind.collect import shared_worker
    stats = harness.Timer("y = x + 1", setup="x = torch.ones(4)").collect_callgrind(number=100, repeats=2)
    w = shared_worker()._worker
    print(json.dumps({"type": type(w).__name__, "pid": w.proc.pid, "reused": getattr(w, "reused", None),
                      "server": getattr(w, "server_pid", None),
                      "dir": str(getattr(w, "directory", "")), "counts": [s.counts() for s in stats],
                      "denoised": stats[0].counts(denoise=True)}))
    """
)


@pytest.fixture
def short_tmp():
    """A short TMPDIR of the test's own (kept workers' sockets live under it), and no server left behind."""
    path = Path(tempfile.mkdtemp(prefix="hk", dir="/tmp"))
    try:
        yield path
    finally:
        subprocess.run(["pkill", "-KILL", "-f", "--", f"listen:{path}"], check=False)
        shutil.rmtree(path, ignore_errors=True)


# Counts for ~6 s under callgrind (10 warm-up runs and 20 counted ones of a 0.2 s sleep).
LONG_SCRIPT = 'import harness; harness.Timer("time.sleep(0.2)", setup="import time").collect_callgrind(number=20)'


def _mid_count(tmp: Path, directory: Path, then) -> subprocess.CompletedProcess:
    """Run LONG_SCRIPT against the kept worker of ``directory``; once it counts, call ``then(client)``."""
    env = {**os.environ, "TMPDIR": str(tmp), KEEP_ENV: "120"}
    logs = set(directory.glob("valgrind.*.log"))
    client = interruptible.popen([sys.executable, "-c", LONG_SCRIPT], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              text=True, env=env)
    deadline = time.monotonic() + 120
    # Its session and the zygote's child for the count are new processes under valgrind: a log each.
    while len(set(directory.glob("valgrind.*.log")) - logs) < 2 and time.monotonic() < deadline:
        time.sleep(0.1)
    time.sleep(1.0)
    then(client)
    out, err = client.communicate(timeout=300)
    return subprocess.CompletedProcess(client.args, client.returncode, out, err)


def _kill_servers(tmp: Path) -> None:
    """kill -9 of every kept worker under ``tmp`` (each directory's info.json names its server)."""
    for info in tmp.glob("harness-*/workers/k*/info.json"):
        with contextlib.suppress(ProcessLookupError, ValueError, OSError):
            os.kill(json.loads(info.read_text())["server"], signal.SIGKILL)


def _servers(tmp: Path) -> list[str]:
    """The pids of the kept workers serving under ``tmp``."""
    out = subprocess.run(["pgrep", "-f", "--", f"listen:{tmp}"], capture_output=True, text=True).stdout
    pids = out.split()
    # A callgrind worker's zygote is a fork of it, with the same command line: not a worker of its own.
    return [p for p in pids if Path(f"/proc/{p}/stat").read_text().rsplit(")", 1)[1].split()[1] not in pids]


def _run_script(tmp: Path, **extra_env: str) -> dict:
    env = {**os.environ, "TMPDIR": str(tmp), KEEP_ENV: "120", **extra_env}
    proc = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True, env=env, timeout=600)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout.strip().splitlines()[-1])


def test_keep_seconds():
    assert keep_seconds("600") == 600.0
    assert keep_seconds("0") is None  # 0 overrides the environment: do not keep
    with pytest.raises(UsageError, match="HARNESS_KEEP_WORKER='soon': give the idle timeout in seconds"):
        keep_seconds("soon")
    with pytest.raises(UsageError, match="between 0 and"):
        keep_seconds("-5")


@pytest.mark.skipif(shutil.which("valgrind") is None, reason="valgrind is not installed")
def test_next_run_reuses_the_kept_worker_and_a_busy_one_is_not_shared(short_tmp: Path):
    first = _run_script(short_tmp)
    assert first["type"] == "KeptWorker" and first["reused"] is False
    assert first["counts"][0] == first["counts"][1]  # forked repeats stay identical
    assert Path(f"/proc/{first['server']}").exists()  # the worker outlived the script
    # Its session did not: it ends once the script has closed its connection (valgrind's own exit, seconds
    # on a busy machine, after the script's), and the worker reaps it.
    deadline = time.monotonic() + 60
    while Path(f"/proc/{first['pid']}").exists() and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not Path(f"/proc/{first['pid']}").exists()

    second = _run_script(short_tmp)
    assert second["type"] == "KeptWorker" and second["reused"] is True
    assert second["dir"] == first["dir"] and second["pid"] != first["pid"]  # a new session of the same worker
    assert second["server"] == first["server"]
    # Each session is a fork of the worker as it stood after start-up: no drift with history.
    assert second["counts"] == first["counts"]

    # A client's Ctrl-C mid-count ends that client; the worker serves the next run, which counts the same.
    interrupted = _mid_count(short_tmp, Path(first["dir"]), lambda client: client.send_signal(signal.SIGINT))
    assert interrupted.returncode != 0 and "KeyboardInterrupt" in interrupted.stderr
    after_ctrl_c = _run_script(short_tmp)
    assert after_ctrl_c["server"] == first["server"] and after_ctrl_c["counts"] == first["counts"]

    # kill -9 of the worker mid-count: the count in progress finishes or fails with a message (no hang);
    # the next run starts a new worker and counts the same.
    killed = _mid_count(short_tmp, Path(first["dir"]), lambda _: _kill_servers(short_tmp))
    assert killed.returncode == 0 or "the callgrind worker died" in killed.stderr, killed.stderr
    after_kill = _run_script(short_tmp)
    assert after_kill["reused"] is False
    assert_counts_alike(dict(enumerate(after_kill["counts"])), dict(enumerate(first["counts"])))  # another worker
    first = after_kill

    # While another client holds it, a run gets a private worker instead of waiting.
    lock_fd = os.open(Path(first["dir"]) / "lock", os.O_RDWR)
    try:
        fcntl.flock(lock_fd, fcntl.LOCK_EX)
        busy = _run_script(short_tmp)
    finally:
        os.close(lock_fd)
    assert busy["type"] == "WorkerProcess"
    assert_counts_alike(dict(enumerate(busy["counts"])), dict(enumerate(first["counts"])))  # own worker, kept one

    # Another setting (here the environment) gets a worker of its own.
    other = _run_script(short_tmp, OMP_NUM_THREADS="1")
    assert other["type"] == "KeptWorker" and other["server"] != first["server"] and other["dir"] != first["dir"]

    # A damaged directory heals: the worker killed, its socket replaced by junk, a cut-off dump
    # beside it. The next run starts a new worker there (one line on stderr) and counts the same.
    directory = Path(first["dir"])
    with contextlib.suppress(ProcessLookupError):  # (gone already where harness's sources changed meanwhile)
        os.kill(first["server"], signal.SIGKILL)
    (directory / "sock").unlink()
    (directory / "sock").write_bytes(b"\x00junk")
    (directory / "callgrind.out.1").write_text("# callgrind format\nversion: 1\ncre")
    env = {**os.environ, "TMPDIR": str(short_tmp), KEEP_ENV: "120"}
    proc = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True, env=env, timeout=600)
    assert proc.returncode == 0, proc.stderr
    healed = json.loads(proc.stdout.strip().splitlines()[-1])
    assert proc.stderr.count("left a dead socket; starting a new one") == 1
    assert healed["type"] == "KeptWorker" and healed["reused"] is False and healed["dir"] == first["dir"]
    assert healed["server"] != first["server"] and not (directory / "callgrind.out.1").exists()
    assert healed["counts"] == first["counts"]


def test_server_serves_one_client_at_a_time_and_exits_when_idle(short_tmp: Path):
    """The socket server itself, without valgrind: requests, a client that leaves, the idle exit."""
    sock_path = short_tmp / "sock"
    server = subprocess.Popen(
        [sys.executable, "-m", "harness.run.worker", "--listen", str(sock_path), "--idle-timeout", "3"],
        stderr=subprocess.PIPE, text=True,
    )
    try:
        deadline = time.monotonic() + 60
        while not sock_path.exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        task = Task("t", "x", "timer", {"stmt": "x = 1", "min_run_time": 0.01})
        sessions = []
        for killed in (True, False, False):  # clients in turn; the first one's session is killed mid-way
            with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s, s.makefile("rwb") as f:
                s.connect(str(sock_path))
                hello = json.loads(f.readline())
                assert hello["server"] == server.pid
                sessions.append(hello["ready"])
                if killed:
                    os.killpg(sessions[-1], signal.SIGKILL)
                    assert f.readline() == b""
                    continue
                f.write((json.dumps({"task": task.to_json(), "min_run_time": 0.01}) + "\n").encode())
                f.flush()
                answer = json.loads(f.readline())
                assert answer["result"]["status"] == "ok"
        assert len(set(sessions)) == 3 and server.pid not in sessions  # a fork per client
        assert server.poll() is None  # a killed session does not end the worker
        assert oct(sock_path.stat().st_mode & 0o777) == "0o600"  # the owner's alone
        # A count's dump whose client was killed before reading it, and a file not the worker's.
        (short_tmp / "pending.callgrind.out.1234.1").write_text("events: Ir\n")
        (short_tmp / "not-the-workers").write_text("")
        assert server.wait(timeout=30) == 0  # idle for 3 s: gone
        assert not sock_path.exists()
        assert not (short_tmp / "pending.callgrind.out.1234.1").exists()  # removed as it exits
        assert (short_tmp / "not-the-workers").exists()
    finally:
        if server.poll() is None:
            server.send_signal(signal.SIGKILL)
            server.wait()


@pytest.mark.skipif(shutil.which("valgrind") is None, reason="valgrind is not installed")
def test_bench_keep_worker_is_reused_by_the_next_run(short_tmp: Path):
    root = short_tmp / "benchmarks"
    root.mkdir()
    (root / "bench_one.py").write_text(
        "import harness\nsuite = harness.Suite()\nsuite.timer('add', 'x + 1', setup='x = 1')\n"
    )
    env = {**os.environ, "TMPDIR": str(short_tmp)}
    env.pop(KEEP_ENV, None)
    cmd = [sys.executable, "-m", "harness", "bench", "--path", str(root), "--mode", "instructions",
           "--counter", "callgrind", "--keep-worker", "120"]

    def servers() -> list[str]:
        return _servers(short_tmp)

    first = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=600)
    assert first.returncode == 0, first.stderr
    after_first = servers()
    assert len(after_first) == 1, "the run should leave exactly one kept worker"
    second = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=600)
    assert second.returncode == 0, second.stderr
    assert servers() == after_first  # the same process served the second run
    bad = subprocess.run([*cmd[:-1], "-3"], capture_output=True, text=True, env=env, timeout=600)
    assert bad.returncode == 2 and "between 0 and" in bad.stderr and "Traceback" not in bad.stderr


@pytest.mark.skipif(shutil.which("valgrind") is None, reason="valgrind is not installed")
def test_workers_start_runs_the_workers_that_the_next_counts_use(short_tmp: Path):
    env = {**os.environ, "TMPDIR": str(short_tmp), KEEP_ENV: "120"}  # as a CI job that keeps workers sets it
    start = [sys.executable, "-m", "harness", "workers", "start", "--counter", "callgrind"]

    def run(cmd: list[str], **extra: str) -> subprocess.CompletedProcess:
        return subprocess.run(cmd, capture_output=True, text=True, env={**env, **extra}, timeout=600)

    first = run([*start, "--jobs", "2"])
    assert first.returncode == 0, first.stderr
    pids = {int(p) for p in re.findall(r"slot [01]: callgrind worker started in [\d.]+ s \(pid (\d+)\)", first.stdout)}
    assert len(pids) == 2, first.stdout  # slots 0 and 1: a serial run's (and collect_callgrind's) and --jobs 2's
    counted = _run_script(short_tmp)
    assert counted["reused"] is True and counted["server"] in pids  # the first count waited for no start-up
    again = run(start)
    assert (
        again.returncode == 0 and f"slot 0: callgrind worker already running (pid {counted['server']})" in again.stdout
    )
    refused = run(start, **{KEEP_ENV: "0"})
    assert refused.returncode == 2 and "not kept here" in refused.stderr and "Traceback" not in refused.stderr



@pytest.mark.skipif(shutil.which("valgrind") is None, reason="valgrind is not installed")
def test_bench_starts_its_kept_worker_while_it_compiles_its_cpp_statements(short_tmp: Path):
    from harness.files.cache import configured_root

    root = short_tmp / "benchmarks"
    root.mkdir()
    constant = f"{time.time_ns() % 10**9}"  # a statement no cache has built
    (root / "bench_cpp.py").write_text(
        "import harness\nsuite = harness.Suite()\n"
        f"suite.timer('mul', 'auto y = x * w + {constant};', "
        "setup='auto x = torch::ones({4, 4}); auto w = torch::ones({4, 4});', language='c++')\n"
    )
    env = {**os.environ, "TMPDIR": str(short_tmp)}
    run = subprocess.run([sys.executable, "-m", "harness", "bench", "--path", str(root), "--mode", "instructions",
                          "--counter", "callgrind", "--keep-worker", "120", "-o", str(short_tmp / "run.json")],
                         capture_output=True, text=True, env=env, timeout=900)
    assert run.returncode == 0, run.stderr
    assert len(_servers(short_tmp)) == 1  # one worker: the one started early is the one the run used
    (launched,) = short_tmp.glob("harness-*/workers/k*/info.json")  # written as the worker was launched
    sources = [p for p in configured_root()[0].glob("cpp/*/modules/*/tu0.cpp") if constant in p.read_text()]
    (built,) = [p.parent / "tu0.o" for p in sources]
    # Launched before the compiler had finished the statement: its start and the compile overlapped.
    assert launched.stat().st_mtime < built.stat().st_mtime
    record = json.loads((short_tmp / "run.json").read_text())
    assert [r["status"] for r in record["results"]] == ["ok"]
