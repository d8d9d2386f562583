"""Two Ray nodes on one machine (ray.cluster_utils.Cluster): wall-time tasks alone on their node,
a lost node's tasks retried elsewhere, a node with another harness refused, and a run without
--address beside a running cluster given a Ray of its own.

Marked ``multinode``: 72 s together on the 2-core reference VM under a load average of ~9 (each
test starts its own cluster, so a killed node cannot leak into the next).
"""

from __future__ import annotations

import textwrap
import threading
import time
from pathlib import Path

import pytest

from harness.bench import Event, run_tasks
from harness.define.discovery import select_suites
from harness.options import WALL_RESOURCE, RunOptions

ray = pytest.importorskip("ray", reason="Ray is not installed: pip install -e '.[ray]' (scripts/setup.sh --test does)")
from ray.cluster_utils import Cluster  # noqa: E402

pytestmark = pytest.mark.multinode


def _suite(tmp_path: Path, count: int, seconds: float) -> list:
    root = tmp_path / "benchmarks"
    (root / "sleepy").mkdir(parents=True)
    (root / "sleepy" / "suite.py").write_text(textwrap.dedent(f"""
        import harness
        suite = harness.Suite(description="tasks that take a while")
        for i in range({count}):
            suite.timer(f"sleep{{i}}", "time.sleep(0.001)", setup="import time", min_run_time={seconds})
    """))
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
