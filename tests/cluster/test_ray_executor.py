"""`bench --executor ray` on a local Ray started for the run: counts agree with the serial run's,
also with --cache-sim, --flame, --layers and --keep-profiles (on Ray tasks and on kept actors),
Ctrl-C, Ray only where asked for, a clear error where it is absent.

About 5.5 minutes on the 2-core reference VM under a load average of ~10, 5 of them callgrind
(a serial and a Ray run of three dispatch ops from the CLI; a serial, a Ray and a serial run of
one op in one process, about 55 s alone); the rest about 40 s. The two --cache-sim tests add
about 1.5-2.5 minutes (one op: a local and a Ray run; a local run, a cluster and three runs on
its kept actor).
"""

from __future__ import annotations

import itertools
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

import interruptible
from alike import assert_cache_alike
from busy_caller import delivered_before_interrupt
from conftest import run_cli, suite_root
from harness.cluster.remote import RAY_SLOTS
from process_scan import processes_with

pytest.importorskip("ray", reason="Ray is not installed: pip install -e '.[ray]' (scripts/setup.sh --test does)")

REPO = Path(__file__).resolve().parents[2]
DISPATCH = ["dispatch", "--only", "empty[py-eager,fwd,t1]", "--only", "empty_tensor[py-eager,fwd,t1]",
            "--only", "zeros[py-eager,fwd,t1]", "--mode", "instructions", "--counter", "callgrind",
            "--min-run-time", "0.01"]
# Counts are a function of the work and the environment (docs/instruction-counts.md): harness's
# worker on a Ray node starts with the driver's environment as it was before `import ray` and
# ray.init added their own variables, so the counts equal the serial run's exactly.
# This test process imported Ray (importorskip), which set RAY_CLIENT_MODE here: the commands
# start without it, as a user's shell would.
RAYS_OWN = ("RAY_CLIENT_MODE",)


def test_workers_start_without_the_variables_ray_sets():
    code = textwrap.dedent("""
        import os
        os.environ["MINE"] = "kept"
        from harness.cluster.executor import require_ray
        from harness.workers.process import own_environment, worker_env
        require_ray()
        assert os.environ.get("RAY_CLIENT_MODE") == "0", "import ray no longer sets RAY_CLIENT_MODE"
        for env in own_environment(), worker_env():  # what Ray's nodes and local workers start with
            assert "RAY_CLIENT_MODE" not in env and env["MINE"] == "kept", sorted(env)
        print("ok")
    """)
    env = {k: v for k, v in os.environ.items() if k not in RAYS_OWN}
    r = subprocess.run([sys.executable, "-c", code], cwd=REPO, env=env, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0 and r.stdout.strip() == "ok", r.stderr


KEPT_SERVERS = "import json; from harness.workers.registry import kept_workers; " \
    "print(json.dumps(sorted([w['server'], w['slot']] for w in kept_workers())))"


def _kept_servers(env: dict[str, str]) -> list[list[int]]:
    """[server pid, slot] of each kept worker alive under ``env``'s TMPDIR."""
    r = subprocess.run([sys.executable, "-c", KEPT_SERVERS], cwd=REPO, env={**os.environ, **env},
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


def test_ray_counts_equal_the_serial_counts_and_the_next_ray_run_reuses_kept_workers(tmp_path):
    """A Ray run counts exactly as a serial run; with --keep-worker the next Ray run's tasks count in the
    workers the first left on the node (no start-up), and the counts stay the same."""
    serial = tmp_path / "serial.json"
    on_ray = [tmp_path / "ray1.json", tmp_path / "ray2.json"]
    # This test's own kept workers: a short TMPDIR of its own (a long one falls back to /tmp's).
    env = {"TMPDIR": tempfile.mkdtemp(prefix="hr", dir="/tmp")}
    keep = ("--keep-worker", "300")
    try:
        r = run_cli("bench", *DISPATCH, "--keep-worker", "0", "-o", str(serial), env=env, unset=RAYS_OWN)
        assert r.returncode == 0, r.stderr
        assert _kept_servers(env) == []
        servers = []
        for out in on_ray:
            r = run_cli("bench", *DISPATCH, *keep, "--executor", "ray", "-o", str(out), env=env, unset=RAYS_OWN)
            assert r.returncode == 0, r.stderr
            servers.append(_kept_servers(env))
        # The first Ray run left its workers kept, in Ray's own slots (one per Ray worker process
        # that counted, two CPUs at most), and they outlived its Ray worker processes.
        assert servers[0], "the first Ray run left no kept worker"
        assert len(servers[0]) <= 2, servers[0]
        assert all(slot >= RAY_SLOTS for _, slot in servers[0]), servers[0]
        # The second borrowed them: the same processes in the same slots, none started.
        assert servers[1] == servers[0], servers
    finally:
        run_cli("workers", "stop", env=env)
        shutil.rmtree(env["TMPDIR"], ignore_errors=True)
    a = json.loads(serial.read_text())["results"]
    assert len(a) == 3 and all(x["samples"][0] > 1000 for x in a[1:])  # the two ops
    for path in on_ray:
        b = json.loads(path.read_text())["results"]
        assert [x["task"] for x in a] == [y["task"] for y in b]
        for x, y in zip(a, b, strict=True):
            assert x["samples"] == y["samples"], (x, y)
            assert x["extra"]["baseline"] == y["extra"]["baseline"] > 0  # the empty loop itself
        assert all(y["extra"]["node"]["host"] and y["extra"]["counter"] == "callgrind" for y in b)


def test_a_local_run_after_a_ray_run_in_one_process_counts_the_same(tmp_path):
    # Ray's variables stay in the process after its run; the next local run's workers start without them.
    code = textwrap.dedent(f"""
        from pathlib import Path
        from harness.bench import run_tasks
        from harness.define.discovery import select_suites
        from harness.define.selection import select, with_mode
        from harness.options import RunOptions
        found = [t for s in select_suites(Path({str(REPO / "benchmarks")!r}), ["dispatch"]) for t in s.tasks()]
        tasks = with_mode(select(found, "empty_tensor and py-eager"), "instructions")
        assert len(tasks) == 1, tasks
        common = dict(mode="instructions", counter="callgrind", min_run_time=0.01)
        counts = [run_tasks(tasks, RunOptions(**options, **common)).results[0].samples
                  for options in ({{}}, {{"executor": "ray", "jobs": 1}}, {{}})]
        assert counts[0][0] > 1000 and counts[0] == counts[1] == counts[2], counts
        print("ok")
    """)
    env = {k: v for k, v in os.environ.items() if k not in RAYS_OWN}
    r = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, env=env, capture_output=True, text=True,
                       timeout=600)
    assert r.returncode == 0 and r.stdout.strip().endswith("ok"), r.stdout + r.stderr


def _same_cache(local: dict, other: dict) -> None:
    """A --cache-sim count's figures on Ray are the local run's, as two local workers' are (tests/alike.py):
    deterministic like the counts (docs/instruction-counts.md, "Deterministic like the counts")."""
    from harness.measure.counters.cache import FIGURES, figures

    assert set(other) == set(local) == set(FIGURES)
    assert_cache_alike(local, other)
    assert figures(other) == pytest.approx(other, abs=0.05)  # hits and cycles made from these events (rounded)


ONE = ["dispatch", "--only", "empty_tensor[py-eager,fwd,t1]", "--mode", "instructions", "--counter", "callgrind",
       "--min-run-time", "0.01"]


def test_cache_sim_flame_graphs_and_kept_profiles_on_ray_are_the_local_runs(tmp_path):
    """`--cache-sim --flame --layers --keep-profiles DIR` on a local Ray started for the run (Ray tasks):
    the counts, the cache figures, the layers, the call tree and both kept files are the
    local run's, the files written into the driver's DIR (sent back from the node, cluster.profiles),
    the record's one geometry the same."""
    from harness.measure.callgrind.profile import parse_file
    from harness.measure.counters.cache import record_geometry
    from speedscope_schema import schema_errors

    env = {"TMPDIR": tempfile.mkdtemp(prefix="hr", dir="/tmp")}  # the node's own profile directories go here
    kept = {side: tmp_path / f"profiles-{side}" for side in ("local", "ray")}
    records = {}
    try:
        for side, extra in (("local", ()), ("ray", ("--executor", "ray"))):
            out = tmp_path / f"{side}.json"
            r = run_cli("bench", *ONE, "--keep-worker", "0", "--cache-sim", "--flame", "--layers", *extra,
                        "--keep-profiles", str(kept[side]), "-o", str(out), env=env, unset=RAYS_OWN)
            assert r.returncode == 0, r.stdout + r.stderr
            records[side] = json.loads(out.read_text())
        left = sorted(p.name for p in Path(env["TMPDIR"]).glob("harness-profiles-*"))
    finally:
        shutil.rmtree(env["TMPDIR"], ignore_errors=True)
    assert left == []  # the node removed its copies
    assert records["local"]["environment"]["cache_sim"] == records["ray"]["environment"]["cache_sim"] \
        == record_geometry()
    (a,), (b,) = records["local"]["results"], records["ray"]["results"]
    assert a["status"] == b["status"] == "ok", (a.get("error"), b.get("error"))
    # The record keeps the driver's own task, DIR its own, not the node's directory.
    assert b["task"]["params"]["keep_profile"] == str(kept["ray"])
    assert {**a["task"], "params": {**a["task"]["params"], "keep_profile": ""}} \
        == {**b["task"], "params": {**b["task"]["params"], "keep_profile": ""}}
    assert a["samples"] == b["samples"] and a["samples"][0] > 1000
    assert a["extra"]["cache"]["D1mr"] > 0
    for field in ("cache_geometry", "totals", "baseline", "symbols", "layers", "flame"):
        assert a["extra"][field] == b["extra"][field], field
    _same_cache(a["extra"]["cache"], b["extra"]["cache"])
    assert a["extra"]["cycles_layers"].keys() == b["extra"]["cycles_layers"].keys()
    for r in (a, b):  # the tree by estimated cycles is the count's own, exactly
        assert r["extra"]["flame_cycles"]["tree"][1] / r["number_per_run"] == pytest.approx(
            r["extra"]["cache"]["estimated_cycles"], abs=0.01)
    names = [[Path(p).name for p in r["extra"]["profiles"]] for r in (a, b)]
    assert names[0] == names[1] and len(names[0]) == 2
    assert all(Path(p).parent == kept["ray"] for p in b["extra"]["profiles"])
    dumps, scopes = ([Path(r["extra"]["profiles"][i]) for r in (a, b)] for i in (0, 1))
    assert parse_file(dumps[0]).total == parse_file(dumps[1]).total == b["extra"]["totals"][0]
    doc = json.loads(scopes[1].read_text())
    assert doc == json.loads(scopes[0].read_text()) and schema_errors(doc) == []


def test_cache_sim_counts_on_kept_actors_are_the_local_ones(tmp_path):
    """On a Ray cluster that stays up (`--address`), a run that keeps its workers counts on kept actors:
    with --cache-sim in a simulating counting worker, kept and borrowed again by the next run, which a
    plain count on the same actor never uses; every figure is the local run's."""
    from ray.cluster_utils import Cluster

    env = {"TMPDIR": tempfile.mkdtemp(prefix="hk", dir="/tmp")}  # the kept counting workers' sockets
    runs = {}

    def bench(name: str, *extra: str) -> None:
        out = tmp_path / f"{name}.json"
        r = run_cli("bench", *ONE, *extra, "-o", str(out), env=env, unset=RAYS_OWN)
        assert r.returncode == 0, r.stdout + r.stderr
        (runs[name],) = json.loads(out.read_text())["results"]

    c = None
    try:
        bench("local", "--cache-sim", "--keep-worker", "0")
        c = Cluster(initialize_head=True, head_node_args={"num_cpus": 1})
        on_ray = ("--executor", "ray", "--address", c.address, "--keep-worker", "120")
        for name, sim in (("sim1", ("--cache-sim",)), ("sim2", ("--cache-sim",)), ("plain", ())):
            bench(name, *on_ray, *sim)
    finally:
        if c is not None:
            c.shutdown()
        run_cli("workers", "stop", env=env)
        shutil.rmtree(env["TMPDIR"], ignore_errors=True)
    assert all(r["status"] == "ok" for r in runs.values()), {k: r.get("error") for k, r in runs.items()}
    # Three commands, one process: the kept actor (a Ray task's worker process lasts one job).
    assert len({runs[k]["extra"]["node"]["pid"] for k in ("sim1", "sim2", "plain")}) == 1
    local = runs["local"]
    assert local["extra"]["cache"]["D1mr"] > 0
    for k in ("sim1", "sim2"):
        assert runs[k]["samples"] == local["samples"], k
        _same_cache(local["extra"]["cache"], runs[k]["extra"]["cache"])
    assert "cache" not in runs["plain"]["extra"]  # a plain count, in a plain worker


def test_without_ray_the_flag_exits_2_with_the_install_command(tmp_path):
    code = (
        "import sys; sys.modules['ray'] = None  # what an environment without Ray gives `import ray`\n"
        "from harness.cli import main\n"
        "sys.exit(main(['bench', 'basic', '--only', 'empty', '--executor', 'ray', "
        f"'-o', {str(tmp_path / 'x.json')!r}]))"
    )
    r = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=300)
    assert r.returncode == 2, r.stderr
    assert "pip install -e '.[ray]'" in r.stderr and "Traceback" not in r.stderr
    assert not (tmp_path / "x.json").exists()


def test_other_commands_never_import_ray(tmp_path):
    out = tmp_path / "run.json"
    code = textwrap.dedent(f"""
        import sys, harness
        from harness.cli import main
        assert main(['list', 'basic']) == 0
        assert main(['bench', 'basic', '--only', 'empty', '--min-run-time', '0.01', '-o', {str(out)!r}]) == 0
        assert main(['merge', {str(tmp_path / 'merged.json')!r}, {str(out)!r}]) == 0
        assert main(['compare', {str(out)!r}, {str(tmp_path / 'merged.json')!r}]) == 0
        print('ray loaded:', 'ray' in sys.modules)
    """)
    r = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    assert "ray loaded: False" in r.stdout


def test_ctrl_c_cancels_keeps_finished_results_and_leaves_no_process(tmp_path):
    root = suite_root(tmp_path, "sleepy", """
        import harness
        suite = harness.Suite(description="tasks that take a while")
        for i in range(12):
            suite.timer(f"sleep{i}", "time.sleep(0.001)", setup="import time", min_run_time=1.5)
    """)
    marker = f"HARNESS_TEST_MARKER_{uuid.uuid4().hex}"
    out = tmp_path / "run.json"
    env = {**os.environ, marker: "1"}
    driver = interruptible.popen(
        [sys.executable, "-m", "harness", "bench", "sleepy", "--path", str(root), "--executor", "ray",
         "--min-run-time", "1.5", "-o", str(out)],
        cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )
    try:
        deadline = time.monotonic() + 240
        while not any("harness.run.worker" in p for p in processes_with(marker)):
            assert time.monotonic() < deadline and driver.poll() is None, driver.communicate()
            time.sleep(0.5)
        time.sleep(8)  # a few tasks finish, one is running, the rest are queued
        sent = time.time()
        driver.send_signal(signal.SIGINT)
        _, stderr = driver.communicate(timeout=120)
    finally:
        if driver.poll() is None:
            driver.kill()
    assert driver.returncode == 130, stderr
    record = json.loads(out.read_text())
    results = record["results"]
    names = [r["task"]["name"] for r in results]
    # Some finished, each once; the rest were cancelled, not run to the end behind our back.
    assert len(set(names)) == len(names), stderr
    spans = sorted((r["extra"]["node"]["started"], r["extra"]["node"]["finished"]) for r in results)
    assert spans, f"8 s of 1.5-s tasks and nothing finished:\n{stderr}"
    # A wall-time task holds the whole node: one at a time, each at least its min_run_time long ...
    assert all(later[0] >= earlier[1] for earlier, later in itertools.pairwise(spans)), spans
    assert all(end - start >= 1.5 for start, end in spans), spans
    # ... and every one kept had finished by Ctrl-C (a result in flight then may land within a second):
    # the one running and the queued ones were cancelled, none ran on to the end after it.
    assert spans[-1][1] <= sent + 1.0, (spans[-1], sent)
    assert len(names) <= (sent - spans[0][0]) / 1.5 < 12
    assert set(names) <= {f"sleep{i}" for i in range(12)}
    assert all(r["status"] == "ok" and r["samples"] and r["extra"]["node"]["host"] for r in results), stderr
    assert record["environment"]["interrupted"] == {"signal": "SIGINT", "finished": len(results), "total": 12}
    assert f"kept {len(results)} of 12 results" in stderr
    deadline = time.monotonic() + 30
    while processes_with(marker) and time.monotonic() < deadline:
        time.sleep(0.5)
    assert processes_with(marker) == []



def test_ctrl_c_keeps_a_result_ray_finished_before_the_driver_took_it(tmp_path):
    # Wall-time tasks hold the node one at a time: c has begun, so b had finished.
    names = delivered_before_interrupt(
        tmp_path, "from harness.cluster.executor import run_on_ray\nfrom harness.options import RunOptions",
        "run_on_ray(tasks, RunOptions(executor='ray', jobs=1, min_run_time=0.01), None, on_result)")
    assert names == ["a", "b"]  # c was cancelled
