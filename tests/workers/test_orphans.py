"""Nothing outlives its run: `bench` killed with SIGKILL (the process, not its group, as the OOM
killer or a CI runner's hard stop does) while a worker runs a statement that never returns leaves
no process of that run alive 10 s later, whatever the statement does (a spin, a sleep loop, a C++
spin holding no GIL) and whatever runs it (a wall-time worker, a counting worker under valgrind,
its zygote's child and the forks that child counts each repeat in, a kept worker's session). A kept
worker itself stays, idle.

Each run's processes carry a marker of its own in their environment (inherited by every child),
so they are found by walking /proc; whatever is left is killed in a ``finally``.

Cost (2-core machine): one plain worker start (import torch), one C++ statement (cached after its
first compile), three valgrind'ed worker start-ups (~15-20 s each); about 2 minutes.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import textwrap
import time
import uuid
from pathlib import Path

import pytest

from harness.options import CPP_PCH_ENV, KEEP_WORKER_ENV

MARKER_VAR = "HARNESS_TEST_ORPHAN_MARKER"  # read by this test only, never by harness

SPIN = "while True: pass"
SLEEPS = "while True: time.sleep(0.01)"
# setup writes `started` into the working directory (bench's, the test's directory): the worker
# has begun the statement's benchmark.
STARTED = "open('started', 'w').close()"


def _suite(directory: Path, definition: str) -> Path:
    suite = directory / "benchmarks"
    suite.mkdir()
    (suite / "bench_forever.py").write_text(
        "import harness\nsuite = harness.Suite()\n" + textwrap.dedent(definition).strip() + "\n")
    return suite


def _marked(marker: str) -> dict[int, str]:
    """The live processes whose environment holds ``marker``: pid -> command line."""
    found = {}
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit() or int(proc.name) == os.getpid():
            continue
        with contextlib.suppress(OSError, IndexError):
            if marker.encode() not in (proc / "environ").read_bytes():
                continue
            if (proc / "stat").read_bytes().rsplit(b")", 1)[1].split()[0] in (b"Z", b"X"):
                continue
            found[int(proc.name)] = (proc / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
    return found


def _group_of(pid: int) -> int:
    try:
        return int(Path(f"/proc/{pid}/stat").read_bytes().rsplit(b")", 1)[1].split()[2])
    except (OSError, IndexError, ValueError):
        return -1


def _kept_servers(tmp: Path) -> set[int]:
    """The kept workers' own pids (each directory's info.json names its server)."""
    pids = set()
    for info in tmp.glob("harness-*/workers/k*/info.json"):
        with contextlib.suppress(OSError, ValueError, KeyError):
            pids.add(int(json.loads(info.read_text())["server"]))
    return pids


@pytest.fixture
def run_dir():
    """A short directory of the test's own (a TMPDIR for kept workers' sockets, bench's working directory)."""
    path = Path(tempfile.mkdtemp(prefix="ho", dir="/tmp"))
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


def _kill_bench_mid_statement(run_dir: Path, definition: str, *args: str, env: dict[str, str] | None = None,
                              start_within: float = 300.0) -> tuple[dict[int, str], dict[int, str], set[int]]:
    """Start `bench --timeout 600` on a suite whose statement never returns, SIGKILL the bench process
    (not its group) once a worker runs the statement; as ``_kill_client_mid_statement``."""
    suite = _suite(run_dir, definition)
    command = [sys.executable, "-m", "harness", "bench", "--path", str(suite), "--timeout", "600", *args]
    return _kill_client_mid_statement(run_dir, command, env=env, start_within=start_within)


def _kill_client_mid_statement(run_dir: Path, command: list[str], env: dict[str, str] | None = None,
                               start_within: float = 300.0) -> tuple[dict[int, str], dict[int, str], set[int]]:
    """Start ``command`` (a client of harness's workers), SIGKILL it (not its group) once a worker runs
    a statement that never returns; (its processes then, those alive 10 s later less the kept workers
    (server and zygote) and the `cat`s draining their stderr, which are meant to stay, and the kept
    workers' processes alive then)."""
    marker = f"{MARKER_VAR}={uuid.uuid4().hex}"
    key, value = marker.split("=")
    full_env = {**os.environ, "TMPDIR": str(run_dir), KEEP_WORKER_ENV: "0", **(env or {}), key: value}
    log = open(run_dir / "bench.log", "wb")  # noqa: SIM115 - closed below
    bench = subprocess.Popen(command, cwd=run_dir, env=full_env, stdin=subprocess.DEVNULL, stdout=log,
                             stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + start_within
        while not (run_dir / "started").exists():
            assert bench.poll() is None, (run_dir / "bench.log").read_text()
            assert time.monotonic() < deadline, "the statement did not start:\n" + (run_dir / "bench.log").read_text()
            time.sleep(0.1)
        time.sleep(1.0)  # into the statement proper
        before = _marked(marker)
        os.kill(bench.pid, signal.SIGKILL)  # the process only: its workers are in sessions of their own
        bench.wait()
        # A kept worker's group: the server and its zygote (its sessions have groups of their own).
        staying = _kept_servers(run_dir)
        left: dict[int, str] = {}
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            left = {pid: cmd for pid, cmd in _marked(marker).items()
                    if _group_of(pid) not in staying and cmd.strip() != "cat"}
            if not left:
                break
            time.sleep(0.2)
        return before, left, {pid for pid in _marked(marker) if _group_of(pid) in staying}
    finally:
        if bench.poll() is None:
            bench.kill()
            bench.wait()
        log.close()
        for pid in _marked(marker):  # nothing of the run outlives the test, the kept servers included
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)


def test_wall_time_worker_goes_with_a_killed_bench(run_dir: Path):
    """A wall-time worker spinning in Python (was: alive, spinning a core, for ever)."""
    before, left, _ = _kill_bench_mid_statement(
        run_dir, f'suite.timer("spin", {SPIN!r}, setup={STARTED!r})', "--mode", "wall")
    assert any("harness.run.worker" in cmd for cmd in before.values()), before
    assert left == {}


def test_cpp_statement_worker_goes_with_a_killed_bench(run_dir: Path):
    """A worker spinning in a C++ statement (the GIL released, no Python running in it)."""
    before, left, _ = _kill_bench_mid_statement(
        run_dir,
        """
        suite.timer("spin", "for (;;) { asm volatile(\\"\\"); }", language="cpp", global_setup="#include <cstdio>",
                    setup='std::fclose(std::fopen("started", "w"));')
        """,
        "--mode", "wall", env={CPP_PCH_ENV: "0"}, start_within=600.0)
    assert any("harness.run.worker" in cmd for cmd in before.values()), before
    assert left == {}


def test_counting_worker_and_its_zygote_go_with_a_killed_bench(run_dir: Path):
    """A counting worker under valgrind, its zygote and the zygote's child sleeping in a loop
    (was: three valgrind.bin processes, for ever)."""
    before, left, _ = _kill_bench_mid_statement(
        run_dir, f'suite.timer("sleeps", {SLEEPS!r}, setup="import time; " + {STARTED!r})',
        "--mode", "instructions", "--counter", "callgrind")
    assert sum("harness.run.worker" in cmd for cmd in before.values()) >= 3, before  # worker, zygote, child
    assert left == {}


def test_kept_workers_session_goes_with_a_killed_bench_and_the_worker_stays(run_dir: Path):
    """A kept worker's session (and the zygote's child counting for it) spinning: ended by the kept
    worker when its client's socket closes; the kept worker stays, idle."""
    before, left, stayed = _kill_bench_mid_statement(
        run_dir, f'suite.timer("spin", {SPIN!r}, setup={STARTED!r})',
        "--mode", "instructions", "--counter", "callgrind", env={KEEP_WORKER_ENV: "120"})
    (server,) = _kept_servers(run_dir)
    assert server in before and sum("harness.run.worker" in cmd for cmd in before.values()) >= 4, before
    assert left == {}
    assert server in stayed and len(stayed) == 2, stayed  # alive after the 10 s: itself and its zygote


def test_counting_childs_forked_repeats_go_with_a_killed_client(run_dir: Path):
    """The processes a counting child forks, one per repeat (``CallgrindCounter._measure_in_children``:
    every count of a statement under callgrind where forking is safe, ``repeats`` of them), spinning:
    the statement returns in the warm-up, which runs in the counting child itself, and spins only in
    its forks. The client is a script calling ``Timer.collect_callgrind(repeats=3)`` (was: the three
    forks, valgrind.bin each, spinning for ever once their parent was killed)."""
    stmt = "if os.getpid() != home:\n    open('started', 'w').close()\n    while True: pass"
    script = f"import harness; harness.Timer({stmt!r}, setup='import os; home = os.getpid()')" \
             ".collect_callgrind(number=1, repeats=3)"
    before, left, _ = _kill_client_mid_statement(run_dir, [sys.executable, "-c", script])
    # the worker, its zygote, the zygote's child and its three forks
    assert sum("harness.run.worker" in cmd for cmd in before.values()) >= 6, before
    assert left == {}
