"""Counting instructions under real valgrind: determinism, scaling, faults, clean-up.

Cost (2-core machine): one worker for the native samplers (no torch import,
so each (re)start takes seconds), one Timer.collect_callgrind worker
(imports torch under valgrind once) and one CLI run; about 1-2 minutes.
"""

from __future__ import annotations

import copy
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

import pytest

import harness
from harness.errors import StatementError, UsageError
from harness.measure.callgrind.collect import shared_worker
from harness.measure.callgrind.details import PENDING
from harness.measure.counter_choice import get_counter
from harness.model.task import Task
from harness.workers.pool import WorkerPool
from harness.workers.private_dir import FRESH_PREFIX

pytestmark = pytest.mark.skipif(shutil.which("valgrind") is None, reason="valgrind is not installed")

SAMPLER = "harness._C:test_sampler"  # native k-additions loops (until C++ statements land)


def _sampler_task(name: str, body: str, repeats: int = 1, **params) -> Task:
    p = {"factory": SAMPLER, "args": [body], "baseline_args": ["add0"], "number": 1000, "repeats": repeats}
    p.update(params)
    return Task(suite="t", name=name, kind="sampler", params=p, mode="instructions")


@pytest.fixture(scope="module")
def native_runs():
    counter = get_counter("callgrind")
    tasks = [
        _sampler_task("add10", "add10", repeats=2),
        _sampler_task("add10_again", "add10"),
        _sampler_task("add1", "add1"),
        Task("t", "crash", "sampler", {"factory": "ctypes:string_at", "args": [0]}, mode="instructions"),
        _sampler_task("after_crash", "add1"),
        Task("t", "hang", "sampler", {"factory": "time:sleep", "args": [120], "timeout": 5}, mode="instructions"),
        _sampler_task("after_hang", "add1"),
    ]
    # No pool timeout: a given one would be every task's limit, and "hang" has its own 5 s.
    raw = {}  # each answer as its counting child sent it, before the pool's finish

    def finish(result):
        raw[result.task.name] = copy.deepcopy(result)
        return counter.finish(result)

    pool = WorkerPool(jobs=1, prefix=counter.worker_prefix(), env=counter.worker_env(),
                      diagnostics=counter.diagnostics, finish=finish)
    try:
        results = {r.task.name: r for r in pool.run(tasks, 0.01)}
        out_dir = counter.out_dir()
        left = sorted(p.name for p in out_dir.iterdir())
    finally:
        counter.close()
    return results, out_dir, left, raw


def test_native_counts_are_identical_across_runs(native_runs):
    results, _, _, _ = native_runs
    a, b = results["add10"], results["add10_again"]
    assert a.ok and b.ok, (a.error, b.error)
    assert a.unit == "instructions" and a.extra["counter"] == "callgrind"
    assert len(a.samples) == 2
    assert a.samples[0] == a.samples[1] == b.samples[0]  # repeats and separate runs agree exactly
    assert a.extra["totals"][0] == b.extra["totals"][0]


def test_a_counting_child_leaves_its_dump_to_the_receiver(native_runs):
    results, _, _, raw = native_runs
    answer = raw["add1"]
    work = answer.extra[PENDING]
    # The child read nothing: its dump's path (in its worker's directory), and no counts yet.
    (dump,) = work["dumps"]
    assert Path(dump).name.startswith("pending.callgrind.out.")
    assert answer.samples == [] and "symbols" not in answer.extra
    done = results["add1"]  # finished by the counter, as the pool's finish does
    assert done.ok and PENDING not in done.extra and done.samples[0] > 0 and done.extra["totals"]
    assert done.extra["symbols"]  # the native loop's functions, ranked here
    assert not Path(dump).exists()  # and the dump is gone


def test_more_work_counts_more(native_runs):
    results, _, _, _ = native_runs
    ten, one = results["add10"].median, results["add1"].median
    assert one > 0
    assert 8 < ten / one < 12  # 10 additions vs 1, the loop itself subtracted


def test_worker_crash_is_reported_and_the_next_task_runs(native_runs):
    results, _, _, _ = native_runs
    crash = results["crash"]
    assert not crash.ok
    assert "SIGSEGV" in crash.error
    assert "Process terminating with default action of signal 11" in crash.error  # valgrind's own report
    assert results["after_crash"].ok


def test_timeout_kills_the_task_and_the_next_task_runs(native_runs):
    results, _, _, _ = native_runs
    assert not results["hang"].ok and "timed out after 5 s" in results["hang"].error
    assert results["after_hang"].ok
    assert results["after_hang"].samples == results["add1"].samples


def test_temporary_files_are_removed(native_runs):
    _, out_dir, left, _ = native_runs
    # Only what each worker process itself leaves at exit (its log and final dump) and the owner's
    # lock; every measured region's dump and child's files were removed. (The workers' link to the
    # cache is the cache's own, outside: workers.private_dir.cache_link.)
    assert "owner.lock" in left and "cache" not in left
    workers = [n for n in left if n != "owner.lock"]
    assert workers and all(n.startswith("valgrind.") or n.count(".") == 2 for n in workers), left
    assert not out_dir.exists()  # and the directory goes with the counter


def test_count_in_a_worker_process(tmp_path: Path):
    # What other runners (the compile-time suite) do: get_counter() inside a
    # process started with the counter's prefix and environment.
    counter = get_counter("callgrind")
    code = textwrap.dedent(
        """
        from harness.measure.counter_choice import get_counter
        c = get_counter()
        small, large = (lambda: sum(range(1000))), (lambda: sum(range(10000)))
        c.count(small), c.count(large)  # warm-up: the first call also sets up allocator pools
        print(c.name, c.count(small), c.count(small), c.count(large))
        """
    )
    try:
        proc = subprocess.run(
            [*counter.worker_prefix(), sys.executable, "-c", code],
            env={**__import__("os").environ, **counter.worker_env()}, capture_output=True, text=True, timeout=300,
        )
        left = [
            p.name for p in counter.out_dir().iterdir() if p.name.startswith("callgrind.out") and p.name.count(".") > 2
        ]
    finally:
        counter.close()
    assert proc.returncode == 0, proc.stderr
    name, a, b, c = proc.stdout.split()
    assert name == "callgrind"
    # In-process (no fork: fn's side effects must stay), so the allocator's state differs between calls:
    # here the int churn of sum() lands on fresh or reused obmalloc pools (~7%).
    assert int(a) > 0 and abs(int(a) - int(b)) <= 0.1 * int(a)
    assert 5 < int(c) / int(a) < 15
    assert not left  # each count's dump was removed


# ------------------------------------------------------------------ collect_callgrind


@pytest.fixture(scope="module", autouse=True)
def _close_shared_worker():
    yield
    shared_worker().close()


def test_python_statement_scales_and_repeats_exactly():
    one = harness.Timer("a + 1", setup="a = 1").collect_callgrind(number=200, repeats=2)
    ten = harness.Timer("\n".join(["a + 1"] * 10), setup="a = 1").collect_callgrind(number=200)
    assert isinstance(one, tuple) and len(one) == 2
    assert isinstance(ten, harness.CallgrindStats)
    assert one[0].counts() == one[1].counts()  # each repeat starts from the same state
    assert one[0].baseline_exclusive_stats.sum() > 0
    per_one = one[0].own_counts()
    per_ten = ten.own_counts()
    assert per_one > 0
    assert 8 < per_ten / per_one < 12


def test_callgrind_stats_of_a_tensor_op():
    stats = harness.Timer("y = x * w", setup="x = torch.ones(4, 4)\nw = torch.ones(4, 4)").collect_callgrind(
        number=20, repeats=2, retain_out_file=True
    )
    a, b = stats
    assert a.counts() == b.counts()
    assert 0 < a.own_counts() < a.counts(denoise=True) <= a.counts()
    assert a.number_per_run == 20
    assert a.stmt_callgrind_out.startswith("# callgrind format")
    assert any("mul" in fn for _, fn in a.stats())
    assert a.stats(inclusive=True)[0].count >= a.stats()[0].count
    assert a.delta(b).sum() == 0
    assert a.as_standardized().counts() == a.counts()


def _denoised(stats) -> int:
    """Statement minus baseline without the unicode-key dict lookups (the rule applied to torch's stats too)."""
    from harness.measure.callgrind.stats import is_noisy

    def quiet(counts) -> int:
        return counts.filter(lambda fn: not is_noisy(fn)).sum()

    return quiet(stats.stats()) - quiet(stats.baseline_exclusive_stats)


def test_scope_is_checked():
    with pytest.raises(UsageError, match="scope must be one of function, module"):
        harness.Timer("pass").collect_callgrind(scope="global")
    with pytest.raises(UsageError, match="batch_setup needs scope='function'"):
        harness.Timer("pass", batch_setup="batch = [0] * number").collect_callgrind(scope="module")


def test_statement_errors_and_crashes_inside_the_measured_run():
    with pytest.raises(StatementError, match="ZeroDivisionError"):
        harness.Timer("1 / 0").collect_callgrind(number=5)
    pid = shared_worker()._worker.proc.pid
    # Crashes in the measured run only (after the warm-up's 10 runs).
    crashing = harness.Timer("calls[0] += 1\nif calls[0] > 10: ctypes.string_at(0)", setup="import ctypes\ncalls = [0]")
    with pytest.raises(StatementError, match="crashed under valgrind \\(SIGSEGV\\)") as err:
        crashing.collect_callgrind(number=20)
    assert "Process terminating with default action of signal 11" in str(err.value)  # valgrind's report
    assert "in string_at" in str(err.value)  # and the Python stack of the crash
    assert abs(harness.Timer("pass").collect_callgrind(number=5).own_counts()) < 50
    assert shared_worker()._worker.proc.pid == pid  # the worker survived: the run was a forked child


def test_cpp_statement_counts_are_identical():
    timer = harness.Timer("int x = 1; x += 2;", language="cpp")
    a, b = timer.collect_callgrind(number=100, repeats=2)
    assert a.counts() == b.counts() > 0
    with pytest.raises(UsageError, match="applies to Python statements only"):
        timer.collect_callgrind(scope="module")


def test_a_cpp_statement_that_does_not_compile_is_reported_with_the_compilers_words():
    # Built in a thread beside the worker's start: its failure still reaches the caller, once,
    # and the worker stays usable.
    compiles = harness.Timer("int x = 1; x += 2;", language="cpp")
    assert compiles.collect_callgrind(number=10).counts() > 0
    pid = shared_worker()._worker.proc.pid
    with pytest.raises(harness.CallgrindFailed, match="does not compile") as err:
        harness.Timer("int y = no_such_name + 1;", language="c++").collect_callgrind(number=10)
    assert "'no_such_name' was not declared" in str(err.value).replace("\u2018", "'").replace("\u2019", "'")
    assert compiles.collect_callgrind(number=10).counts() > 0
    assert shared_worker()._worker.proc.pid == pid


# Last of the collect_callgrind tests: it ends this process's callgrind worker.
# Alone: torch's `callgrind_control --stat` talks to every callgrind process on the machine (vgdb),
# and would reach the other xdist worker's.
@pytest.mark.alone
def test_module_scope_counts_the_way_torch_does(monkeypatch):
    """scope="module" is torch's layout, so its counts agree with torch's collect_callgrind (within 3%)."""
    import os

    import torch.utils.benchmark as tb

    stmt, setup = "y = x * w", "x = torch.ones(4, 4)\nw = torch.ones(4, 4)"
    module = harness.Timer(stmt, setup=setup).collect_callgrind(number=100, repeats=2, scope="module")
    loop = harness.Timer(stmt, setup=setup).collect_callgrind(number=100)
    assert module[0].counts() == module[1].counts()
    # Module scope pays a dictionary lookup or store per name, and barely specialised bytecode.
    assert _denoised(module[0]) > _denoised(loop) > 0
    with pytest.raises(StatementError, match=r"stmt line 2 \('y = 1 / 0'\) raised ZeroDivisionError"):
        harness.Timer("x = 1\ny = 1 / 0").collect_callgrind(number=100, scope="module")

    # torch's `callgrind_control --stat` check talks to every callgrind process
    # on the machine (through vgdb), ours included, and can upset it: close it.
    shared_worker().close()
    # torch launches `python` from PATH; this interpreter must be the one it finds.
    monkeypatch.setenv("PATH", os.path.dirname(sys.executable) + os.pathsep + os.environ.get("PATH", ""))
    attempts = 4  # torch's own `callgrind_control --stat` check fails now and then when busy (twice in a row once)
    for attempt in range(attempts):
        try:
            theirs = tb.Timer(stmt, setup=setup).collect_callgrind(number=100)
            break
        except OSError as exc:
            if attempt == attempts - 1 or "does not appear to be running callgrind" not in str(exc):
                raise
    ratio = _denoised(module[0]) / _denoised(theirs)
    assert 0.97 < ratio < 1.03, (ratio, _denoised(module[0]), _denoised(theirs))


# ------------------------------------------------------------------ the CLI


def test_bench_mode_both_routes_and_records(cli, tmp_path: Path):
    out = tmp_path / "run.json"
    proc = cli("bench", "basic", "-k", "tensor_mul", "--mode", "both", "--counter", "callgrind",
               "--min-run-time", "0.05", "--output", str(out))
    assert proc.returncode == 0, proc.stderr
    assert "basic: time per run" in proc.stdout and "basic: instructions per run (callgrind)" in proc.stdout
    results = json.loads(out.read_text())["results"]
    assert [(r["task"]["mode"], r["unit"]) for r in results] == [("wall", "s"), ("instructions", "instructions")]
    counted = results[1]
    assert counted["extra"]["counter"] == "callgrind"
    assert counted["samples"][0] > 1000
    symbols = counted["extra"]["symbols"]
    assert symbols and all(isinstance(v, float) for v in symbols.values())
    assert not any(k.endswith("]") for k in symbols)  # standardised names
    assert PENDING not in counted["extra"]  # the dump was parsed by the run, not recorded raw


@pytest.mark.parametrize(("sig", "code"), [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_ctrl_c_removes_callgrind_files(tmp_path: Path, sig, code):
    root = tmp_path / "benchmarks"
    root.mkdir()
    (root / "bench_slow.py").write_text(
        textwrap.dedent(
            """
            import harness
            suite = harness.Suite()
            suite.timer("slow", "import time; time.sleep(60)")
            """
        )
    )
    # A short TMPDIR of the test's own: workers' directories live under it only while it is short
    # (workers/private_dir.py: a socket's path has room for ~100 bytes), in harness-$UID/workers/.
    tmp = Path(tempfile.mkdtemp(prefix="hct", dir="/tmp"))
    dumps = tmp / f"harness-{os.getuid()}" / "workers"
    env = {**os.environ, "TMPDIR": str(tmp)}
    proc = subprocess.Popen(
        [sys.executable, "-m", "harness", "bench", "--path", str(root), "--mode", "instructions",
         "--counter", "callgrind"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
        # As from a terminal: a shell running this suite in the background
        # (CI, nohup) hands its children SIGINT ignored, and Python keeps it so.
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    deadline = time.monotonic() + 120
    try:
        while time.monotonic() < deadline and not list(dumps.glob(f"{FRESH_PREFIX}*/valgrind.*.log")):
            time.sleep(0.2)
        assert list(dumps.glob(f"{FRESH_PREFIX}*")), "the worker never started"
        time.sleep(1)
        proc.send_signal(sig)
        _, stderr = proc.communicate(timeout=60)
        assert proc.returncode == code, stderr
        assert not list(dumps.glob(f"{FRESH_PREFIX}*"))
        # Its valgrind'ed worker, which was still importing torch or already running the task, is gone too.
        time.sleep(0.5)
        leftover = subprocess.run(["pgrep", "-f", f"callgrind-out-file={tmp}"], capture_output=True, text=True).stdout
        assert not leftover.split(), "a valgrind'ed worker outlived the run"
    finally:
        proc.kill()
        proc.wait(timeout=30)
        shutil.rmtree(tmp, ignore_errors=True)


_OWNER = """
import sys, time
from harness.measure.callgrind.counter import CallgrindCounter
print(CallgrindCounter().out_dir(), flush=True)
time.sleep(600)
"""


def test_a_killed_owners_dump_directory_is_swept_by_the_next_counter(tmp_path: Path):
    """kill -9 leaves the owner no chance to clean up; the next counter to make a directory removes
    the dead owner's and keeps a live owner's."""
    env = {**__import__("os").environ, "TMPDIR": str(tmp_path)}
    owners = [subprocess.Popen([sys.executable, "-c", _OWNER], stdout=subprocess.PIPE, text=True, env=env)
              for _ in range(2)]
    try:
        dead, alive = (Path(p.stdout.readline().strip()) for p in owners)
        assert dead.is_dir() and alive.is_dir() and (dead / "owner.lock").is_file()
        owners[0].send_signal(signal.SIGKILL)
        owners[0].wait(timeout=30)
        assert dead.is_dir()  # nothing ran in the owner to remove it
        # An older harness's directory (no owner.lock) is nobody's to judge: left alone.
        legacy = tmp_path / "harness-callgrind-legacy"
        legacy.mkdir()
        code = ("from harness.measure.callgrind.counter import CallgrindCounter as C; "
                "c = C(); print(c.out_dir()); c.close()")
        mine = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120)
        assert mine.returncode == 0, mine.stderr
        assert not dead.exists(), "a dead owner's directory was left behind"
        assert alive.is_dir() and legacy.is_dir()
        assert not Path(mine.stdout.strip()).exists()  # close() removed its own
    finally:
        for p in owners:
            p.kill()
            p.wait(timeout=30)
