"""Layers where users look: `compare --layers` and the report's stacked bars, on the session's real run.

Uses conftest's ``layers_run`` (one `bench --layers` under callgrind, shared
with tests/measure/callgrind/test_layers_torch.py); what is added here costs
a CLI compare and a report, a few seconds.
"""

from __future__ import annotations

import dataclasses

import pytest

from harness.model.result import TaskResult
from harness.present.html_report import write_report
from harness.present.layer_table import layer_changes, python_overhead, result_layers
from harness.records.store import load_runs, save


def _by_name(record) -> dict[str, TaskResult]:
    return {r.task.name: r for r in record.results}


def _python_mul(results: dict[str, TaskResult]) -> TaskResult:
    return next(r for r in results.values() if r.task.params.get("group") == "mul"
                and r.task.params.get("language") == "python")


def test_compare_layers_shows_where_an_op_got_more_expensive(layers_run, tmp_path, cli):
    _, record_path, _ = layers_run
    base = load_runs(record_path)[-1]
    results = _by_name(base)
    plain, grad = _python_mul(results), results["grad"]
    # The "new" run: the same op, now with w requiring grad (a real result of the same run).
    swapped = dataclasses.replace(grad, task=plain.task)
    new = dataclasses.replace(base, results=[swapped if r is plain else r for r in base.results])
    new_path = tmp_path / "new.json"
    save(new, new_path)

    changes = {layer: b - a for layer, a, b in layer_changes(plain, swapped)}
    assert changes["autograd"] > 500 and abs(changes["interpreter"]) < 0.1 * changes["autograd"]
    total_change = sum(result_layers(swapped).values()) - sum(result_layers(plain).values())
    assert sum(changes.values()) == pytest.approx(total_change)
    done = cli("compare", str(record_path), str(new_path), "--layers")
    assert done.returncode == 0, done.stdout + done.stderr
    flat = " ".join(done.stdout.split())  # rich wraps a title to its table's width
    assert f"{plain.task.full_name}: instructions per run by layer" in flat
    autograd_row = next(line for line in done.stdout.splitlines() if line.strip("│ ").startswith("autograd"))
    assert "+" in autograd_row


def test_python_overhead_line_names_the_python_layers(layers_run):
    results = _by_name(load_runs(layers_run[1])[-1])
    py = _python_mul(results)
    cpp = next(r for r in results.values() if r.task.params.get("group") == "mul"
               and r.task.params.get("language") == "cpp")
    line = python_overhead(py, cpp)
    assert line is not None
    added = py.samples[0] - cpp.samples[0]
    assert line.startswith(f"Python adds {added:,.0f} instructions: interpreter ")
    assert "bindings" in line and "GIL" in line


def test_report_draws_stacked_layer_bars(layers_run, tmp_path):
    out = tmp_path / "report.html"
    write_report([layers_run[1]], out)
    text = out.read_text()
    section = text[text.index('id="layers"'):]
    assert "<svg" in section
    for label in ("interpreter", "Python bindings", "GIL", "dispatcher"):
        assert label in section


def test_compare_layers_between_the_sides_of_an_ab_record(layers_run, tmp_path, cli):
    """One A/B record (`bench --python A=... --python B=...`): `compare RECORD --layers` compares its sides."""
    _, record_path, _ = layers_run
    base = load_runs(record_path)[-1]
    results = _by_name(base)
    plain, grad = _python_mul(results), results["grad"]
    side_a = dataclasses.replace(plain, task=dataclasses.replace(plain.task, side="A"))
    side_b = dataclasses.replace(grad, task=dataclasses.replace(plain.task, side="B"))  # B: w requires grad
    ab = dataclasses.replace(base, results=[side_a, side_b],
                             environment={**base.environment, "sides": {"A": {}, "B": {}}})
    ab_path = tmp_path / "ab.json"
    save(ab, ab_path)
    done = cli("compare", str(ab_path), "--layers")
    assert done.returncode == 0, done.stdout + done.stderr
    flat = " ".join(done.stdout.split())
    assert f"{plain.task.full_name}: instructions per run by layer" in flat
    autograd_row = next(line for line in done.stdout.splitlines() if line.strip("│ ").startswith("autograd"))
    assert "+" in autograd_row
