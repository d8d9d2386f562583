"""PyTorch's import_time cases: real children of this interpreter under ``-X importtime``, real workers."""

from __future__ import annotations

import subprocess
import time

import pytest

import harness
from harness.errors import HarnessError
from harness.model.task import Task
from harness.suites.compile_time.import_time import ImportTime, cumulative_us, importtime_command
from harness.suites.compile_time.runner import run_compile_time_task


def test_the_cumulative_time_of_the_module_line_is_read():
    child = subprocess.run(importtime_command("json"), capture_output=True, text=True, check=True)
    us = cumulative_us(child.stderr, "json")
    assert us is not None and us > 0
    # A submodule is its own (indented) line, within its parent's cumulative time.
    decoder = cumulative_us(child.stderr, "json.decoder")
    assert decoder is not None and 0 < decoder <= us
    assert cumulative_us(child.stderr, "not_imported_here") is None
    assert cumulative_us("import time: self [us] | cumulative | imported package\n", "package") is None


def test_work_returns_the_seconds_the_child_reports():
    case = ImportTime(module="json")
    start = time.perf_counter()
    seconds = case.work()
    wall = time.perf_counter() - start
    # The child's own figure leaves out its start-up and exit.
    assert 0 < seconds < wall


def test_a_failed_import_is_an_error_not_zero():
    with pytest.raises(HarnessError, match=r"(?s)import json\.no_such_module.*failed.*ModuleNotFoundError"):
        ImportTime(module="json.no_such_module").work()


def test_a_package_that_is_not_installed_expands_to_nothing_with_the_reason():
    case = ImportTime(module="no_such_package_here.sub")
    assert case.available() == (False, "no_such_package_here is not installed")
    assert case.expand("compile_time") == []


def test_pytorchs_names_and_one_wall_task():
    case = ImportTime(module="torch._dynamo")
    assert case.name() == "import_time_torch__dynamo"
    assert case.description() == "Import time for torch._dynamo"
    (task,) = case.expand("compile_time")
    assert task.name == "import_time_torch__dynamo[wall]" and task.mode == "wall"


def test_an_instruction_task_is_refused_with_the_reason():
    task = Task(suite="s", name="import_time_json[instructions]", kind="compile_time", mode="instructions",
                params={**ImportTime(module="json").expand("s")[0].params})
    with pytest.raises(HarnessError, match="wall time only"):
        run_compile_time_task(task, 0.1)


def test_a_run_reports_pytorchs_metric_in_microseconds(tmp_path):
    tasks = ImportTime(module="json").expand("compile_time")
    record = harness.run_tasks(tasks, harness.RunOptions())
    (result,) = record.results
    assert result.ok, result.error
    metrics = result.extra["metrics"]
    assert metrics["import_time_us"] == pytest.approx(min(result.samples) * 1e6)
    assert metrics["import_time_us"] <= metrics["import_time_us_median"]
    assert "import_time_us_cold" in metrics and result.extra["iterations"] == 5 and len(result.samples) == 4
