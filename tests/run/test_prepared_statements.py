"""A counting child loads the C++ statement the run's preparer compiled; it never compiles one itself.

``bench`` compiles every C++ statement before the run (``run.prepare``). If
the instruction runner built a statement that differs in any field (a grouped
task's ``output`` and ``inputs`` once did), its key differed: each counting
child compiled a statement of its own on the first run of a cache, and the
compiler's processes and output became the heap its count started from (the
dispatch suite's C++ rows then counted up to 2.3% apart between a first run and
the next). Checked here for every C++ task of the shipped suites, through the
request the child really gets.
"""

from __future__ import annotations

import json
from pathlib import Path

from harness.define.discovery import select_suites
from harness.define.selection import with_mode
from harness.model.task import Task
from harness.run.instructions import counted_request
from harness.run.prepare import cpp_block, cpp_statement

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"


def _cpp_tasks() -> list[Task]:
    tasks = [t for s in select_suites(BENCHMARKS, ["dispatch"]) for t in s.tasks()]
    timers = [  # a suite's timer() with language="c++", with and without a per-batch setup
        Task(suite="s", name="mul", kind="timer", params={
            "stmt": "auto y = x * w;", "setup": "auto x = torch::ones({4}); auto w = torch::ones({4});",
            "language": "c++", "label": "s", "sub_label": "mul"}),
        Task(suite="s", name="add", kind="timer", params={
            "stmt": "auto y = x + 1;", "setup": "", "global_setup": "#include <vector>", "language": "cpp",
            "batch_setup": "auto x = torch::ones({batch});", "num_threads": 2}),
    ]
    return [t for t in with_mode(tasks + timers, "instructions") if cpp_statement(t) is not None]


def test_the_counted_statement_is_the_prepared_one():
    tasks = _cpp_tasks()
    kinds = {t.kind for t in tasks}
    assert len(tasks) > 20 and kinds == {"grouped", "timer"}, kinds  # both kinds that compile
    for task in tasks:
        request = json.loads(counted_request(task, 0.0))
        child = Task.from_json(request["task"])
        counted = cpp_block(child).statement
        assert counted.key == cpp_statement(task).key, task.name
