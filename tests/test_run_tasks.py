"""The one run function, from Python: options, events, modes, outputs and interruption."""

from __future__ import annotations

import pytest

import harness
from harness.errors import UsageError
from harness.kinds import Kind, register
from harness.model.result import TaskResult
from harness.model.task import Task
from harness.records import load, load_runs


def _timer(name: str, stmt: str = "pass") -> Task:
    return Task("py", name, "timer", {"stmt": stmt, "setup": "pass", "min_run_time": 0.01})


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"jobs": 0}, "--jobs must be >= 1"),
        ({"min_run_time": 0}, "--min-run-time must be > 0"),
        ({"timeout": -1}, "--timeout must be > 0"),
        ({"mode": "sometimes"}, "unknown mode 'sometimes'"),
        ({"counter": "abacus"}, "unknown instruction counter 'abacus'"),
        ({"keep_worker": -5}, "kept-worker idle timeout"),
    ],
)
def test_bad_options_fail_before_anything_runs(options, message):
    with pytest.raises(UsageError, match=message):
        harness.RunOptions(**options)


def test_run_tasks_returns_the_record_and_streams_events(tmp_path):
    events = []
    out = tmp_path / "runs.jsonl"
    record = harness.run_tasks([_timer("a"), _timer("b", "x = 1")],
                               harness.RunOptions(output=str(out), min_run_time=0.01), on_event=events.append)
    assert [r.task.name for r in record.results] == ["a", "b"] and all(r.ok for r in record.results)
    kinds = [e.kind for e in events]
    assert kinds.index("start") < kinds.index("result") < kinds.index("written")
    assert [e.done for e in events if e.kind == "result"] == [1, 2]
    (written,) = [e for e in events if e.kind == "written"]
    assert written.path == str(out) and written.message == "run record" and not written.appended
    assert "noise" in record.environment  # wall-time tasks: the machine was checked first
    harness.run_tasks([_timer("a")], harness.RunOptions(output=str(out), min_run_time=0.01))
    assert len(load_runs(out)) == 2


def test_options_mode_re_measures_every_task_that_way():
    counted = Task("py", "a", "timer", {"stmt": "pass", "min_run_time": 0.01}, mode="instructions")
    record = harness.run_tasks([counted], harness.RunOptions(mode="wall", in_process=True, min_run_time=0.01))
    assert [(r.task.name, r.mode, r.unit) for r in record.results] == [("a", "wall", "s")]


# A kind whose second task is interrupted, as Ctrl-C would interrupt it.
def run_or_interrupt(task: Task, min_run_time: float) -> TaskResult:
    if task.params["interrupt"]:
        raise KeyboardInterrupt
    return TaskResult(task=task, status="ok", unit="things", samples=[1.0])


register(Kind(name="interruptible", runner=run_or_interrupt))


def test_an_interrupted_run_keeps_and_writes_what_finished(tmp_path):
    out = tmp_path / "run.json"
    tasks = [Task("t", f"n{i}", "interruptible", {"interrupt": i == 1}) for i in range(3)]
    with pytest.raises(harness.RunInterrupted) as caught:
        harness.run_tasks(tasks, harness.RunOptions(output=str(out), in_process=True))
    assert isinstance(caught.value, KeyboardInterrupt) and caught.value.exit_code == 130
    assert caught.value.total == 3 and not caught.value.terminated
    assert [r.task.name for r in caught.value.record.results] == ["n0"]
    assert [r.task.name for r in load(out).results] == ["n0"]
