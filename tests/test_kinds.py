"""The kind registry: a kind of one's own runs through bench, its table, its record, its outputs and its report."""

from __future__ import annotations

import json
import re
import textwrap
from pathlib import Path

import pytest
from rich.table import Table

import harness
from conftest import suite_root
from harness import kinds
from harness.errors import UsageError
from harness.kinds import Kind, register
from harness.model.record import RunRecord
from harness.model.result import TaskResult
from harness.model.task import Task
from harness.present.html_report import build_report
from harness.records import load

REPO = Path(__file__).resolve().parents[1]
PREPARED: list[list[str]] = []  # what the preparer saw, in this process


# -- a kind defined in this test file ----------------------------------------------------------------------


def run_square(task: Task, min_run_time: float) -> TaskResult:
    """Runs in a worker process that imported this file by path: squares its input."""
    import os

    x = task.params["x"]
    return TaskResult(task=task, status="ok", unit="squares", samples=[float(x * x)],
                      extra={"pid": os.getpid()})


def prepare_square(tasks: list[Task], status) -> None:
    status(f"preparing {len(tasks)} square(s)")
    PREPARED.append([t.name for t in tasks])


def square_table(title: str, results: list[TaskResult]) -> Table:
    table = Table(title=f"{title}: squares")
    table.add_column("x")
    table.add_column("x squared")
    for r in results:
        table.add_row(str(r.task.params["x"]), f"{r.value:g}")
    return table


def write_squares(path: str, record: RunRecord) -> list[Path]:
    out = Path(path)
    out.write_text("".join(f"{r.task.params['x']} {r.value:g}\n" for r in record.results))
    return [out]


def square_section(runs) -> str | None:
    found = [r for _, record in runs for r in record.results if r.task.kind == "square"]
    if not found:
        return None
    return '<h2 id="squares">Squares</h2>' + "".join(f"<p>{r.task.params['x']}^2 = {r.value:g}</p>" for r in found)


SQUARE = register(Kind(name="square", runner=run_square, preparer=prepare_square, table=square_table,
                       outputs={".squares": write_squares}, report=square_section, report_title="Squares"))


def square_tasks(*xs: int) -> list[Task]:
    return [Task("toy", f"square[{x}]", "square", {"x": x}) for x in xs]


def test_a_kind_from_a_test_file_runs_in_workers(tmp_path):
    PREPARED.clear()
    events = []
    record = harness.run_tasks(square_tasks(3, 4), harness.RunOptions(output=str(tmp_path / "run.json")),
                               on_event=events.append)
    assert [r.value for r in record.results] == [9.0, 16.0]
    assert all(r.ok and r.unit == "squares" for r in record.results)
    import os

    assert {r.extra["pid"] for r in record.results} != {os.getpid()}  # measured in a worker, not here
    assert PREPARED == [["square[3]", "square[4]"]]  # the preparer ran once, here, with both tasks
    assert ("status", "preparing 2 square(s)") in [(e.kind, e.message) for e in events]
    assert [e.done for e in events if e.kind == "result"] == [1, 2]
    stored = load(tmp_path / "run.json")
    assert [(r.task.kind, r.value) for r in stored.results] == [("square", 9.0), ("square", 16.0)]


def test_a_kind_writes_its_own_output_layout(tmp_path):
    out = tmp_path / "run.squares"
    harness.run_tasks(square_tasks(5), harness.RunOptions(output=str(out), in_process=True))
    assert out.read_text() == "5 25\n"


def test_a_kind_table_and_report_section():
    from rich.console import Console

    from harness.present.table import print_results

    record = harness.run_tasks(square_tasks(2), harness.RunOptions(in_process=True))
    console = Console(record=True, width=120)
    print_results(record.results, console)
    text = console.export_text()
    assert "toy: squares" in text and "x squared" in text
    page = build_report([("run.json", record)])
    assert 'id="squares"' in page and "2^2 = 4" in page


def test_registering_conflicts_are_refused():
    with pytest.raises(UsageError, match="built into harness"):
        register(Kind(name="timer", runner=run_square))
    with pytest.raises(UsageError, match="already registered by other code"):
        register(Kind(name="square", runner=square_table))
    assert register(Kind(name="square", runner=run_square, preparer=prepare_square, table=square_table,
                         outputs={".squares": write_squares}, report=square_section,
                         report_title="Squares")) is not None  # the same code again: harmless
    with pytest.raises(UsageError, match="no kind 'nonesuch' is registered"):
        kinds.get("nonesuch")


def test_a_task_of_an_unknown_kind_fails_with_the_reason(tmp_path):
    record = harness.run_tasks([Task("toy", "mystery", "nonesuch", {})], harness.RunOptions(in_process=True))
    (result,) = record.results
    assert not result.ok and "no kind 'nonesuch' is registered" in result.error


# -- the worked example of docs/architecture.md, run as written ------------------------------------------


def architecture_example() -> str:
    text = (REPO / "docs" / "architecture.md").read_text()
    section = text[text.index("### A kind of benchmark"):]
    match = re.search(r"```python\n(# benchmarks/imports/suite.py\n.*?)```", section, re.S)
    assert match, "the worked example of a kind is missing from docs/architecture.md"
    return match.group(1)


def test_the_architecture_example_runs_through_bench(cli, tmp_path):
    root = suite_root(tmp_path, "imports", architecture_example())
    out = tmp_path / "run.json"
    r = cli("bench", "imports", "--path", str(root), "--output", str(out), cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    # The kind's own table, not the generic one.
    assert "imports: import time in a fresh interpreter" in " ".join(r.stdout.split())
    assert re.search(r"json\s*│\s*\d+\.\d", r.stdout) and re.search(r"decimal\s*│\s*\d+\.\d", r.stdout)
    record = json.loads(out.read_text())
    assert [(res["task"]["kind"], res["task"]["name"], res["status"]) for res in record["results"]] == [
        ("import_time", "import[json]", "ok"), ("import_time", "import[decimal]", "ok"),
    ]
    assert all(len(res["samples"]) == 3 and min(res["samples"]) > 0 for res in record["results"])
    listed = cli("list", "imports", "--path", str(root), cwd=tmp_path)
    assert listed.returncode == 0 and "import[json]" in listed.stdout


def test_an_example_kind_error_in_the_worker_is_a_failed_result(cli, tmp_path):
    """A runner that raises fails its task only; the run goes on and says which failed."""
    source = architecture_example().replace('ImportTime("json", "decimal"', 'ImportTime("json", "no_such_mod"')
    root = suite_root(tmp_path, "imports", source)
    r = cli("bench", "imports", "--path", str(root), cwd=tmp_path)
    assert r.returncode == 1
    assert "FAILED imports/import[no_such_mod]" in r.stderr and "CalledProcessError" in r.stderr
    assert "Traceback" not in r.stdout


def test_kind_docs_example_is_the_registered_shape():
    """The example's objects are what the registry takes (a guard against the docs drifting)."""
    namespace: dict = {}
    exec(compile(textwrap.dedent(architecture_example()), "<architecture.md>", "exec"), namespace)
    kind = kinds.get("import_time")
    assert kind.runner is namespace["run_import_time"] and kind.table is namespace["import_time_table"]
    tasks = namespace["suite"].definitions[0].expand("imports")
    assert [t.kind for t in tasks] == ["import_time", "import_time"]
