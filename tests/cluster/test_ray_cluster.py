"""Two Ray nodes on one machine (ray.cluster_utils.Cluster): wall-time tasks alone on their node,
a lost node's tasks retried elsewhere, a node with another harness (or another cache geometry)
refused, a run without --address beside a running cluster given a Ray of its own, and kept actors
serving run after run.

Marked ``multinode``: 72 s together on the 2-core reference VM under a load average of ~9 (and
about 12 s for the cache geometry's), and 45-50 s more for the kept actors (a counting worker's
start under valgrind, four runs). Each test starts its own cluster, so a killed node cannot leak
into the next.
"""

from __future__ import annotations

import fcntl
import os
import shutil
import textwrap
import threading
import time
from pathlib import Path

import pytest

from conftest import suite_root
from harness.bench import Event, run_tasks
from harness.define.discovery import select_suites
from harness.options import WALL_RESOURCE, RunOptions

ray = pytest.importorskip("ray", reason="Ray is not installed: pip install -e '.[ray]' (scripts/setup.sh --test does)")
from ray.cluster_utils import Cluster  # noqa: E402

pytestmark = pytest.mark.multinode


def _suite(tmp_path: Path, count: int, seconds: float) -> list:
    root = suite_root(tmp_path, "sleepy", f"""
        import harness
        suite = harness.Suite(description="tasks that take a while")
        for i in range({count}):
            suite.timer(f"sleep{{i}}", "time.sleep(0.001)", setup="import time", min_run_time={seconds})
    """)
    return [t for s in select_suites(root, ["sleepy"]) for t in s.tasks()]


@pytest.fixture
def cluster():
    """A head node that runs no task (the driver's) and two worker nodes of 1 CPU, each offering the wall resource."""
    c = Cluster(initialize_head=True, head_node_args={"num_cpus": 0})
    nodes = [c.add_node(num_cpus=1, resources={WALL_RESOURCE: 1}) for _ in range(2)]
    c.wait_for_nodes()
    ray.init(address=c.address, log_to_driver=False)
    yield c, nodes
    ray.shutdown()
    c.shutdown()


def _intervals(record) -> dict[str, list[tuple[float, float]]]:
    per_node: dict[str, list[tuple[float, float]]] = {}
    for r in record.results:
        node = r.extra["node"]
        per_node.setdefault(node["node_id"], []).append((node["started"], node["finished"]))
    return per_node


def test_wall_time_tasks_never_share_a_node(cluster, tmp_path):
    tasks = _suite(tmp_path, 6, 0.3)
    record = run_tasks(tasks, RunOptions(executor="ray", min_run_time=0.3))
    assert [r.status for r in record.results] == ["ok"] * 6, [r.error for r in record.results]
    per_node = _intervals(record)
    assert len(per_node) == 2  # both nodes worked, each on one task at a time
    for spans in per_node.values():
        spans.sort()
        assert all(end <= start for (_, end), (start, _) in zip(spans, spans[1:], strict=False)), spans
    assert all(r.extra["node"]["host"] for r in record.results)


def test_a_lost_node_loses_no_result(cluster, tmp_path):
    c, nodes = cluster
    tasks = _suite(tmp_path, 6, 1.0)
    killed: list[tuple[str, float]] = []

    def on_event(event: Event) -> None:
        # After the first result, take down the other node: it is in the middle of a task.
        if event.kind == "result" and not killed:
            done_on = event.result.extra["node"]["node_id"]
            victim = next(n for n in nodes if n.unique_id != done_on)
            killed.append((victim.unique_id, time.time()))
            threading.Thread(target=c.remove_node, args=(victim,), daemon=True).start()

    record = run_tasks(tasks, RunOptions(executor="ray", min_run_time=1.0), on_event)
    assert killed
    assert sorted(r.task.name for r in record.results) == sorted(t.name for t in tasks)
    assert all(r.ok for r in record.results), [r.error for r in record.results]
    victim, at = killed[0]
    # Nothing came back from the lost node after it was lost: its task ran again on the other one.
    assert all(r.extra["node"]["finished"] < at for r in record.results if r.extra["node"]["node_id"] == victim)
    assert sum(r.extra["node"]["node_id"] != victim for r in record.results) >= 6 - 1


def test_a_node_with_another_harness_is_refused(tmp_path):
    # The node's Python runs this sitecustomize first: its harness reports another version,
    # as an older install would.
    site = tmp_path / "site"
    site.mkdir()
    (site / "sitecustomize.py").write_text(
        "import harness, harness._version\nharness.__version__ = harness._version.__version__ = '0.0.1-other'\n"
    )
    c = Cluster(initialize_head=True, head_node_args={"num_cpus": 0})
    try:
        c.add_node(num_cpus=1, resources={WALL_RESOURCE: 1}, env_vars={"PYTHONPATH": str(site)})
        c.wait_for_nodes()
        ray.init(address=c.address, log_to_driver=False)
        record = run_tasks(_suite(tmp_path, 2, 0.05), RunOptions(executor="ray", min_run_time=0.05))
    finally:
        ray.shutdown()
        c.shutdown()
    assert [r.status for r in record.results] == ["failed", "failed"]
    for r in record.results:
        assert "refused: this node runs harness 0.0.1-other" in r.error
        assert "the driver runs harness 0.1.0" in r.error and "install the driver's versions" in r.error


def test_a_node_that_would_simulate_other_caches_is_refused(tmp_path):
    """--cache-sim on Ray: the record states one geometry, and a node whose harness would simulate
    another (here its sitecustomize halves the last level, as an edited install would) fails each of
    its tasks, both geometries named, before it counts anything."""
    if shutil.which("valgrind") is None:
        pytest.skip("valgrind is not installed: --cache-sim is callgrind's")
    from harness.measure.counters.cache import record_geometry

    site = tmp_path / "site"
    site.mkdir()
    (site / "sitecustomize.py").write_text(
        "import harness.measure.counters.cache as c\nc.GEOMETRY = {**c.GEOMETRY, 'LL': [4194304, 16, 64]}\n"
    )
    root = suite_root(tmp_path, "counted", COUNTED)
    tasks = [t for s in select_suites(root, ["counted"]) for t in s.tasks()]
    c = Cluster(initialize_head=True, head_node_args={"num_cpus": 0})
    try:
        c.add_node(num_cpus=1, env_vars={"PYTHONPATH": str(site)})
        c.wait_for_nodes()
        ray.init(address=c.address, log_to_driver=False)
        record = run_tasks(tasks, RunOptions(executor="ray", mode="instructions", counter="callgrind", cache_sim=True,
                                             keep_worker=0, min_run_time=0.01))
    finally:
        ray.shutdown()
        c.shutdown()
    assert record.environment["cache_sim"] == record_geometry()
    assert [r.status for r in record.results] == ["failed", "failed"]
    for r in record.results:
        assert "refused: this node simulates the caches as" in r.error and "[4194304, 16, 64]" in r.error
        assert "the driver's record states" in r.error and "[8388608, 16, 64]" in r.error


def test_a_run_without_address_gets_a_ray_of_its_own_beside_a_running_cluster(tmp_path, monkeypatch):
    """A cluster left running on this machine (`ray start` leaves its address where ray.init finds
    it; RAY_ADDRESS here) is not the one a run without --address uses: ray.init joined it and
    refused the run's num_cpus with a traceback. The run starts and stops a Ray of its own."""
    c = Cluster(initialize_head=True, head_node_args={"num_cpus": 1, "resources": {WALL_RESOURCE: 1}})
    cluster_node = c.head_node.node_id
    try:
        monkeypatch.setenv("RAY_ADDRESS", c.address)
        record = run_tasks(_suite(tmp_path, 2, 0.05), RunOptions(executor="ray", jobs=1, min_run_time=0.05))
        assert not ray.is_initialized()  # the run's own Ray is stopped
        assert c.head_node.remaining_processes_alive()  # and the cluster left running
    finally:
        c.shutdown()
    assert [r.status for r in record.results] == ["ok", "ok"], [r.error for r in record.results]
    assert cluster_node not in {r.extra["node"]["node_id"] for r in record.results}


COUNTED = textwrap.dedent("""
    import harness
    suite = harness.Suite(description="two counts")
    suite.timer("a_mul", "y = x * w", setup="x = torch.ones(4, 4)\\nw = torch.ones(4, 4)")
    suite.timer("b_add", "y = x + 1", setup="x = torch.ones(4, 4)")
""")


def _kept_actor_names() -> list[str]:
    from harness.cluster.kept_actors import NAME_PREFIX, NAMESPACE

    return sorted(a["name"] for a in ray.util.list_named_actors(all_namespaces=True)
                  if a["namespace"] == NAMESPACE and a["name"].startswith(NAME_PREFIX))


def _held() -> list[bool]:
    """Whether a client holds each kept counting worker (its directory's lock is taken)."""
    from harness.workers.registry import kept_workers

    held = []
    for worker in kept_workers():
        fd = os.open(Path(worker["directory"]) / "lock", os.O_RDWR)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            held.append(False)
        except BlockingIOError:
            held.append(True)
        finally:
            os.close(fd)  # and the lock with it
    return held


def test_kept_actors_serve_the_next_run_survive_a_kill_and_leave_when_idle(tmp_path, monkeypatch):
    """On a cluster that stays up, a run that keeps its workers gives its counts to a kept actor (one
    per CPU), which the next run finds and uses again, its kept counting worker with it (let go of
    between runs); an actor
    killed in the middle of a run loses nothing (what is left runs as Ray tasks, counting the same);
    an idle actor leaves after the run's keep time."""
    import tempfile

    from harness.workers.registry import stop_all

    root = suite_root(tmp_path, "counted", COUNTED)
    tasks = [t for s in select_suites(root, ["counted"]) for t in s.tasks()]
    private = tempfile.mkdtemp(prefix="hka", dir="/tmp")  # the kept counting workers' sockets
    monkeypatch.setenv("TMPDIR", private)
    monkeypatch.setattr(tempfile, "tempdir", None)
    common = {"executor": "ray", "mode": "instructions", "counter": "callgrind", "min_run_time": 0.01}
    c = Cluster(initialize_head=True, head_node_args={"num_cpus": 0})
    try:
        c.add_node(num_cpus=1)
        c.wait_for_nodes()
        ray.init(address=c.address, log_to_driver=False)
        runs = [run_tasks(tasks, RunOptions(keep_worker=120, **common)) for _ in range(2)]
        names = _kept_actor_names()
        assert len(names) == 1, names  # one CPU, one actor
        # Between runs the actor lets go of its counting worker (a local run may borrow it).
        deadline = time.monotonic() + 30
        while _held() != [False] and time.monotonic() < deadline:
            time.sleep(0.2)
        assert _held() == [False], "the idle actor still holds its counting worker"

        killed = []

        def kill_the_actor(event: Event) -> None:
            if event.kind == "result" and not killed:
                killed.append(event.result.extra["node"]["pid"])
                ray.kill(ray.get_actor(names[0], namespace="harness"))

        runs.append(run_tasks(tasks, RunOptions(keep_worker=120, **common), kill_the_actor))
        runs.append(run_tasks(tasks, RunOptions(keep_worker=1, **common)))  # a new actor, kept one second
        left = time.monotonic() + 60
        while _kept_actor_names() and time.monotonic() < left:
            time.sleep(0.5)
        assert _kept_actor_names() == [], "the idle actor did not leave"
    finally:
        ray.shutdown()
        c.shutdown()
        stop_all()
        shutil.rmtree(private, ignore_errors=True)
    for record in runs:
        assert [r.status for r in record.results] == ["ok", "ok"], [r.error for r in record.results]
    counts = [{r.task.name: r.samples for r in record.results} for record in runs]
    assert counts[0]["a_mul"][0] > 0 and all(c == counts[0] for c in counts), counts
    pids = [[r.extra["node"]["pid"] for r in record.results] for record in runs]
    assert pids[0][0] == pids[0][1] == pids[1][0] == pids[1][1] == killed[0]  # one actor served both runs
    assert killed[0] not in pids[2][1:] and killed[0] not in pids[3], pids  # after the kill: other processes
