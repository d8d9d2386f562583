"""Sides of an A/B run: a task's side in its identity and in JSON, one record split per side, --python values."""

from __future__ import annotations

import sys

import pytest

from harness.errors import UsageError
from harness.model.record import RunRecord, split_sides
from harness.model.result import TaskResult
from harness.model.task import Task
from harness.options import RunOptions, parse_pythons


def _result(name: str, side: str, value: float) -> TaskResult:
    task = Task("s", name, "timer", {"stmt": "pass"}, mode="instructions", side=side)
    return TaskResult(task=task, status="ok", unit="instructions", samples=[value])


def test_a_side_is_part_of_the_identity_and_survives_json():
    a = Task("s", "mul", "timer", {}, side="A")
    assert a.full_name == "s/mul@A" and Task("s", "mul", "timer", {}).full_name == "s/mul"
    assert Task.from_json(a.to_json()) == a
    assert "side" not in Task("s", "mul", "timer", {}).to_json()  # records without sides are unchanged


def test_split_sides_lines_the_sides_up():
    record = RunRecord(environment={"sides": {"A": {"torch": "1"}, "B": {"torch": "2"}}},
                       results=[_result("mul", "A", 10), _result("mul", "B", 12), _result("add", "A", 5),
                                _result("add", "B", 5)])
    sides = split_sides(record)
    assert list(sides) == ["A", "B"]
    assert [r.task.full_name for r in sides["B"].results] == ["s/mul", "s/add"]
    assert [r.samples[0] for r in sides["B"].results] == [12, 5]
    assert sides["B"].environment["side_environment"] == {"torch": "2"}
    assert split_sides(RunRecord(environment={}, results=[_result("mul", "", 1)])) == {}


def test_python_values_are_checked_before_a_run(tmp_path):
    assert parse_pythons([sys.executable]) == {"A": sys.executable}
    assert list(parse_pythons([f"old={sys.executable}", f"new={sys.executable}"])) == ["old", "new"]
    with pytest.raises(UsageError, match="is not an executable file"):
        parse_pythons([f"A={tmp_path / 'nope'}"])
    with pytest.raises(UsageError, match="given twice"):
        parse_pythons([f"A={sys.executable}", f"A={sys.executable}"])
    with pytest.raises(UsageError, match="needs a .json or .jsonl record"):
        RunOptions(pythons=(sys.executable,), output=str(tmp_path / "x.csv"))
