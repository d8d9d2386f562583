"""Call trees from callgrind's call graph (``measure.callgrind.call_tree``), on the real dump in tests/data.

No valgrind needed: tests/present/test_flame_graph.py checks trees of real counts end to end.
"""

from __future__ import annotations

import json
from pathlib import Path

from harness.measure.callgrind.call_tree import ROOT, Node, call_tree, from_json, to_json
from harness.measure.callgrind.flame import speedscope
from harness.measure.callgrind.profile import parse_text
from harness.present.flame_graph import differential, own_counts
from speedscope_schema import schema_errors

DUMP = (Path(__file__).resolve().parents[2] / "data" / "callgrind.out.fixture").read_text()


def _check(tree: Node) -> None:
    for node in tree.walk():
        assert node.value >= 0 and node.self_value >= 0, node.name


def test_the_parser_reads_the_call_graph():
    profile = parse_text(DUMP)
    # Per function, inlined code included: the functions' own costs add up to the dump's total.
    assert sum(profile.functions.values()) == profile.total == 50144
    assert profile.calls and all(n > 0 for out in profile.calls.values() for n in out.values())
    # Every call's cost is counted once where it is made and once where it is received, so what no call
    # into a function explains (the region's outermost frames) adds up to the total.
    made = {f: profile.functions.get(f, 0) + sum(profile.calls.get(f, {}).values())
            for f in set(profile.functions) | set(profile.calls)}
    received: dict[str, int] = {}
    for out in profile.calls.values():
        for callee, n in out.items():
            received[callee] = received.get(callee, 0) + n
    assert sum(made.values()) - sum(received.values()) == profile.total
    # Calls made from inlined code hang off their function, not off the header it was inlined from.
    assert not any(caller.split(" [")[0].endswith(".h:_PyEval_EvalFrameDefault") for caller in profile.calls)


def test_the_root_is_the_total_exactly_and_every_node_covers_its_children():
    profile = parse_text(DUMP)
    tree = call_tree(profile)
    assert tree.name == ROOT and tree.value == profile.total
    _check(tree)
    assert tree.size() > 50
    assert any("_PyEval_EvalFrameDefault" in n.name for n in tree.walk())


def test_caps_keep_a_tree_small_and_exact():
    profile = parse_text(DUMP)
    for limits in ({"min_share": 0.05}, {"max_nodes": 10}, {"max_depth": 3}):
        tree = call_tree(profile, **limits)
        assert tree.value == profile.total
        _check(tree)
    assert call_tree(profile, max_nodes=10).size() <= 10
    assert call_tree(profile, min_share=0.05).size() < call_tree(profile).size()


def test_a_baseline_is_subtracted_path_by_path_and_the_root_stays_exact():
    profile = parse_text(DUMP)
    base = parse_text(DUMP)
    # A smaller "baseline": half of one leaf's own cost.
    leaf = max(base.functions, key=lambda f: base.functions[f] if f not in base.calls else 0)
    half = base.functions[leaf] // 2
    base.functions[leaf] -= half
    base.total -= half
    tree = call_tree(profile, base)
    assert tree.value == half > 0
    _check(tree)
    assert call_tree(profile, parse_text(DUMP)).value == 0  # itself as baseline: nothing left


def test_the_compact_form_round_trips_and_names_layers():
    profile = parse_text(DUMP)
    data = to_json(call_tree(profile), lambda f: "interpreter" if "ceval" in f else "other", number=10)
    assert json.loads(json.dumps(data)) == data
    back = from_json(data)
    assert back.value == profile.total
    _check(back)
    assert "interpreter" in data["layers"]
    assert abs(sum(own_counts(data).values()) * 10 - profile.total) < 1e-6


def test_a_differential_of_a_tree_with_itself_changes_nothing():
    data = to_json(call_tree(parse_text(DUMP)), number=10)
    same = differential(data, data)
    stack = [same["tree"]]
    while stack:
        item = stack.pop()
        assert item[3] == 0
        stack.extend(item[2])
    grown = json.loads(json.dumps(data))
    grown["tree"][1] += 500  # the root grew by 500 instructions of 10 runs
    assert differential(data, grown)["tree"][3] == 500


def test_speedscope_samples_add_up_to_the_tree():
    tree = call_tree(parse_text(DUMP))
    doc = speedscope(tree, "s/sorted", 10)
    (prof,) = doc["profiles"]
    assert prof["type"] == "sampled" and prof["unit"] == "none"
    assert sum(prof["weights"]) == tree.value == prof["endValue"]
    assert len(prof["samples"]) == len(prof["weights"])
    assert all(0 <= i < len(doc["shared"]["frames"]) for s in prof["samples"] for i in s)
    assert doc["$schema"] == "https://www.speedscope.app/file-format-schema.json"


def test_the_speedscope_export_meets_speedscopes_own_schema():
    """speedscope's file-format schema (vendored from its npm package, tests/data/speedscope/) takes the
    export of a real dump, and of a tree with nothing left once the baseline is subtracted (no sample)."""
    profile = parse_text(DUMP)
    full, empty = speedscope(call_tree(profile), "s/sorted", 10), speedscope(call_tree(profile, profile), "s/x", 1)
    assert empty["profiles"][0]["samples"] == [] and empty["profiles"][0]["endValue"] == 0
    assert schema_errors(full) == [] and schema_errors(empty) == []
    # The check is live: a unit speedscope does not know, a frame without a name, a sample that is not
    # frame indices are each refused, named where they are.
    (prof,) = full["profiles"]
    assert schema_errors({**full, "profiles": [{**prof, "unit": "instructions"}]}) == [
        "profiles/0/unit: 'instructions' is not one of ['bytes', 'microseconds', 'milliseconds', 'nanoseconds', "
        "'none', 'seconds']"]
    assert schema_errors({**full, "shared": {"frames": [{"file": "a.c"}]}}) == [
        "shared/frames/0: 'name' is a required property"]
    assert schema_errors({**full, "profiles": [{**prof, "samples": [["main"]]}]}) == [
        "profiles/0/samples/0/0: 'main' is not of type 'number'"]


def test_a_count_finished_where_it_was_counted_keeps_its_tree_too():
    # A worker that could not fork a zygote counts and parses in place (run.instructions.instruction_result).
    from harness.measure.callgrind.counter import CallgrindCounter
    from harness.model.task import Task
    from harness.run.instructions import instruction_result

    profile = parse_text(DUMP)
    task = Task(suite="s", name="n", kind="timer", params={"stmt": "pass", "flame": True}, mode="instructions")
    result = instruction_result(task, CallgrindCounter(), [profile], None, 10, "symbols")
    assert result.extra["flame"]["tree"][1] == profile.total == result.samples[0] * 10
    plain = Task(suite="s", name="n", kind="timer", params={"stmt": "pass"}, mode="instructions")
    assert "flame" not in instruction_result(plain, CallgrindCounter(), [profile], None, 10, "symbols").extra
