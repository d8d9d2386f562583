"""Per-node progress: done and running per node, and what no node has started yet."""

from __future__ import annotations

from harness.cluster.tracker import node_counts


def test_node_counts_split_done_running_and_queued():
    started = {0: "a", 1: "b", 2: "a", 3: "b"}  # task 3 was retried: it ran on b last
    finished = {0: "a", 1: "b"}
    assert node_counts(started, finished, total=6) == {
        "a": {"done": 1, "running": 1}, "b": {"done": 1, "running": 1}, "(queued)": {"queued": 2},
    }


def test_a_task_lost_with_its_node_counts_where_it_finished():
    assert node_counts({0: "a"}, {0: "(lost)"}, total=1) == {"(lost)": {"done": 1, "running": 0},
                                                              "(queued)": {"queued": 0}}
