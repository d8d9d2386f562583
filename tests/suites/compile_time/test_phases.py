"""Compile-time counts per torch compile phase (``bench --phases``), with real torch.compile under callgrind.

One bench run counts two tiny real cases (one add and a sin, compiled with the
``eager`` and the ``inductor`` backend) with phases, shared by the tests
through a module fixture: about 1.5-2.5 minutes on a loaded 2-core machine.
"""

from __future__ import annotations

import copy
import json
import shutil
from pathlib import Path

import pytest

from harness.model.phases import SEP, Phases, moved_phase, phase_changes, phase_metric, split_phase_metric

SUITE = """
import dataclasses

import harness
from harness.suites.compile_time import CompileTimeBenchmark
from harness.suites.compile_time.benchmark import fresh_inductor_cache


@dataclasses.dataclass(kw_only=True)
class Tiny(CompileTimeBenchmark):
    \"\"\"One add and a sin, compiled.\"\"\"

    category: str = "tiny"
    variant: str = "addsin"

    def prepare_once(self):
        import torch

        self.x = torch.randn(8)

    def work(self):
        import torch

        with fresh_inductor_cache():
            torch.compile(lambda x: (x + 1).sin(), backend=self.backend)(self.x)


suite = harness.Suite(default=False)
suite.add(Tiny(backend="eager"))
suite.add(Tiny(backend="inductor"))
"""

EAGER, INDUCTOR = "tiny_addsin_eager", "tiny_addsin_inductor"
METRIC = "compile_time_instruction_count"
needs_valgrind = pytest.mark.skipif(
    shutil.which("valgrind") is None, reason="needs valgrind (apt-get install valgrind)"
)


@pytest.fixture(scope="module")
def suite_root(tmp_path_factory) -> Path:
    import conftest  # its suite_root, which this fixture's name hides

    return conftest.suite_root(tmp_path_factory.mktemp("phases"), "tiny", SUITE)


@pytest.fixture(scope="module")
def counted(suite_root: Path):
    from conftest import run_cli

    out = suite_root.parent / "phases.json"
    r = run_cli("bench", "tiny", "--path", str(suite_root), "--mode", "instructions", "--phases",
                "--counter", "callgrind", "--jobs", "2", "--keep-worker", "0", "--output", str(out), timeout=1800)
    assert r.returncode == 0, r.stdout + r.stderr
    record = json.loads(out.read_text())
    return out, r, {res["extra"]["case"]: res for res in record["results"]}


def _phases(result) -> Phases:  # noqa: ANN001 - a result as JSON (a record's) or a TaskResult
    extra = result["extra"] if isinstance(result, dict) else result.extra
    phases = Phases.from_json(extra["phases"])
    assert phases is not None
    return phases


def _names(phases: Phases) -> set[str]:
    return {name for path in phases.exclusive for name in path.split(SEP)} | set(phases.entered and
                                                                                  {n for p in phases.entered
                                                                                   for n in p.split(SEP)})


@needs_valgrind
def test_phases_add_up_to_the_total_exactly(counted):
    _, _, results = counted
    for case, result in results.items():
        phases = _phases(result)
        assert phases.unit == "instructions"
        # Integers from callgrind's dumps: the sum is the total the gate sees, to the instruction.
        assert sum(phases.exclusive.values()) == result["extra"]["actual"], case
        assert all(v >= 0 for v in phases.exclusive.values())
        assert phases.inclusive()["dynamo"] <= result["extra"]["actual"]
        metrics = result["extra"]["metrics"]
        assert metrics[METRIC] == result["extra"]["actual"]
        assert metrics[phase_metric(METRIC, "dynamo/entire_frame_compile")] == phases.inclusive()[
            "dynamo/entire_frame_compile"]


@needs_valgrind
def test_inductor_shows_dynamo_aot_and_inductor_phases_and_eager_none_of_aot_or_inductor(counted):
    _, _, results = counted
    inductor, eager = _names(_phases(results[INDUCTOR])), _names(_phases(results[EAGER]))
    dynamo = {"entire_frame_compile", "build_guards", "bytecode_tracing"}
    aot = {"create_aot_dispatcher_function", "aot_collect_metadata"}
    lowering = {"inductor_compile", "GraphLowering.run", "Scheduler.__init__", "Scheduler.codegen",
                "PythonWrapperCodegen.generate", "compile_file"}
    assert dynamo <= inductor and aot <= inductor and lowering <= inductor
    assert dynamo <= eager and not (aot | lowering) & eager
    # The C++ compiler's work is in another process: marked on compile_file, not silently missing.
    external = _phases(results[INDUCTOR]).external_inclusive()
    assert any(path.endswith("compile_file") and seconds > 0 for path, seconds in external.items())


@needs_valgrind
def test_bench_prints_the_tree_per_case(counted):
    _, r, results = counted
    assert "by torch compile phase" in r.stdout
    assert "inductor_compile (compile_fx_inner)" in r.stdout  # torch's event name and its key
    total = results[INDUCTOR]["extra"]["actual"]
    assert f"total {total:,.0f}" in r.stdout


@needs_valgrind
def test_compare_names_the_one_phase_that_moved(counted, tmp_path, cli):
    out, _, _ = counted
    base = json.loads(out.read_text())
    new = copy.deepcopy(base)
    result = next(res for res in new["results"] if res["extra"]["case"] == INDUCTOR)
    phases = _phases(result)
    path = next(p for p in phases.exclusive if p.endswith("GraphLowering.run"))
    grown = phases.exclusive[path] * 0.5
    phases.exclusive[path] += grown
    total = result["extra"]["actual"] + grown
    result["extra"].update(phases=phases.to_json(), actual=total)
    result["extra"]["metrics"].update(phases.metrics(METRIC))
    result["extra"]["metrics"][METRIC] = total
    result["samples"] = [total]
    (tmp_path / "base.json").write_text(json.dumps(base))
    (tmp_path / "new.json").write_text(json.dumps(new))
    r = cli("compare", str(tmp_path / "base.json"), str(tmp_path / "new.json"), "--phases")
    assert r.returncode == 0, r.stdout + r.stderr
    line = next(line for line in r.stdout.splitlines() if INDUCTOR in line and "the phase that moved" in line)
    assert path in line and f"{grown:+,.0f}" in line
    assert any(EAGER in line and "no phase moved" in line for line in r.stdout.splitlines())

    # check gates a phase like a total: the phase's row passes on the same run and fails on the grown one.
    expected = tmp_path / "expected.csv"
    gated = phase_metric(METRIC, path)
    value = _phases(next(res for res in base["results"] if res["extra"]["case"] == INDUCTOR)).inclusive()[path]
    expected.write_text(f"name,metric,expected,noise_margin\n{INDUCTOR},{gated},{value:.0f},0.015\n")
    assert cli("check", str(tmp_path / "base.json"), "--expected", str(expected)).returncode == 0
    r = cli("check", str(tmp_path / "new.json"), "--expected", str(expected))
    assert r.returncode == 1 and "REGRESSION" in r.stdout


def test_a_phase_tree_sums_nests_and_names_what_moved():
    before = Phases("instructions", {"a": 10, "a/b": 5, "a/b/c": 1, "a/d": 3, "other": 2})
    assert before.total == 21
    assert before.inclusive() == {"a": 19, "a/b": 6, "a/b/c": 1, "a/d": 3, "other": 2}
    assert [path for _, path, _ in before.tree()] == ["a", "a/b", "a/b/c", "a/d", "other"]
    after = Phases("instructions", {**before.exclusive, "a/b/c": 4})
    # Every ancestor of c moved by 3 too; the exclusive change names c.
    assert moved_phase(before, after).path == "a/b/c"
    assert phase_changes(before, after)[0].delta == 3
    assert moved_phase(before, before) is None
    assert split_phase_metric(phase_metric(METRIC, "a/b")) == (METRIC, "a/b")
    assert split_phase_metric(METRIC) is None
    assert Phases.from_json(before.to_json()) == before


def test_wall_time_phases_add_up_to_the_measured_time(suite_root: Path):
    """In this process, no valgrind: the eager case's wall task with phases."""
    import dataclasses

    from harness.define.discovery import load_suite
    from harness.run.dispatch import run_task

    task = next(t for t in load_suite("tiny", suite_root / "tiny" / "suite.py").tasks()
                if t.mode == "wall" and t.name.startswith(EAGER))
    result = run_task(dataclasses.replace(task, params={**task.params, "phases": True}))
    assert result.ok, result.error
    phases = Phases.from_json(result.extra["phases"])
    assert phases is not None and phases.unit == "s"
    # Nanosecond clock reads, the first and last of them the total's: equal but for float rounding.
    assert phases.total == pytest.approx(result.extra["actual"], rel=1e-9, abs=1e-9)
    assert {"entire_frame_compile", "build_guards"} <= _names(phases)
    assert "compile_time_s:phase:dynamo/entire_frame_compile" in result.extra["metrics"]


def test_wall_time_phases_on_ray_are_measured_on_the_node(suite_root: Path, cli, tmp_path):
    """`--phases --executor ray` is not refused: the phases are measured where the task runs and come back
    with its result. Instruction counts per phase come back the same way (made by the node's worker; a
    Ray run of the eager case took 44 s, too long to repeat here)."""
    pytest.importorskip("ray", reason="Ray is not installed: pip install -e '.[ray]' (scripts/setup.sh --test does)")
    out = tmp_path / "ray.json"
    r = cli("bench", "tiny", "--path", str(suite_root), "-k", EAGER, "--mode", "wall", "--phases", "--executor", "ray",
            "--min-run-time", "0.01", "--output", str(out))
    assert r.returncode == 0, r.stdout + r.stderr
    (result,) = json.loads(out.read_text())["results"]
    assert result["status"] == "ok" and result["extra"]["node"]["host"]
    phases = _phases(result)
    assert phases.unit == "s" and phases.total == pytest.approx(result["extra"]["actual"], rel=1e-9, abs=1e-9)
    assert {"entire_frame_compile", "build_guards"} <= _names(phases)
    assert "dynamo" in r.stdout and "entire_frame_compile" in r.stdout  # the tree, printed as for a local run


def test_phases_are_refused_where_nothing_would_be_split(cli):
    r = cli("bench", "basic", "--only", "empty", "--phases")
    assert r.returncode == 2 and "--phases splits compile-time cases" in r.stderr and "Traceback" not in r.stderr


@pytest.fixture(scope="module")
def repeated(suite_root: Path):
    """The eager case counted twice, each in a fresh worker with another environment size (the noise command's run)."""
    import dataclasses

    from harness.define.discovery import load_suite
    from harness.measure.counter_choice import get_counter
    from harness.run.repeats import run_repeats

    task = next(t for t in load_suite("tiny", suite_root / "tiny" / "suite.py").tasks()
                if t.mode == "instructions" and t.name.startswith(EAGER))
    task = dataclasses.replace(task, params={**task.params, "phases": True, "functions": True})
    counter = get_counter("callgrind")
    results = []
    try:
        assert run_repeats([task], counter, 2, 2, None, lambda _, r: results.append(r), lambda *_: None)
    finally:
        counter.close()
    assert all(r.ok for r in results), [r.error for r in results]
    return results


@needs_valgrind
def test_the_same_case_counted_twice_has_the_same_phases_within_the_spread(repeated):
    from harness.present.noise_table import spread, suggested_margin

    totals = [r.extra["actual"] for r in repeated]
    margin = suggested_margin(spread(totals))
    a, b = (_phases(r) for r in repeated)
    assert set(a.exclusive) == set(b.exclusive)
    for path, value in a.inclusive().items():
        if value > 0.01 * a.total:  # phases of at least 1% of the count: each within the case's margin
            assert abs(b.inclusive()[path] - value) <= margin * value, path


@needs_valgrind
def test_noise_names_the_functions_and_phases_behind_the_spread(repeated):
    from rich.console import Console

    from harness.present.noise_table import function_table, phase_spread_table, varying_functions

    varying = varying_functions(repeated)
    totals = [r.extra["actual"] for r in repeated]
    if totals[0] == totals[1]:
        pytest.skip("both repeats counted the same: nothing varied to name")
    assert varying and varying[0][2] == max(width for _, _, width in varying)  # the widest first
    # Each function's counts are real: they add up to each repeat's total.
    for i, r in enumerate(repeated):
        assert sum(r.extra["functions"].values()) == r.extra["actual"], i
    console = Console(width=400, record=True)
    console.print(phase_spread_table(EAGER, repeated))
    console.print(function_table(EAGER, repeated, top=5))
    text = console.export_text()
    assert "spread per torch compile phase" in text and "bytecode_tracing" in text
    assert varying[0][0].split(":")[-1].split(" ")[0] in text


def test_noise_says_which_cases_it_knows(cli):
    r = cli("noise", "no_such_case", "--repeats", "2")
    assert r.returncode == 2 and "no compile-time case matches no_such_case" in r.stderr


@needs_valgrind
def test_the_report_stacks_each_case_by_phase(counted, tmp_path, cli):
    out, _, _ = counted
    page = tmp_path / "report.html"
    r = cli("report", str(out), "-o", str(page))
    assert r.returncode == 0, r.stdout + r.stderr
    text = page.read_text()
    assert "by torch compile phase" in text and "smaller phases" in text
    assert text.count("<svg") >= 2  # the totals' bars and the stacked bars


@needs_valgrind
def test_history_changes_names_the_phase_that_moved(counted, tmp_path, cli):
    """Four runs as counted, then four where GraphLowering.run grew: the step names that phase."""
    out, _, _ = counted
    base = json.loads(out.read_text())
    grown = copy.deepcopy(base)
    result = next(res for res in grown["results"] if res["extra"]["case"] == INDUCTOR)
    phases = _phases(result)
    path = next(p for p in phases.exclusive if p.endswith("GraphLowering.run"))
    phases.exclusive[path] *= 2
    result["extra"].update(phases=phases.to_json(), actual=phases.total)
    result["extra"]["metrics"][METRIC] = phases.total
    result["samples"] = [phases.total]
    history = tmp_path / "history.sqlite"
    for i, record in enumerate([base] * 4 + [grown] * 4):
        record = copy.deepcopy(record)
        record["environment"].update(run_id=f"run{i}", start_time=f"2026-11-28T10:{i:02d}:00+00:00")
        (tmp_path / f"r{i}.json").write_text(json.dumps(record))
        assert cli("history", "import", str(tmp_path / f"r{i}.json"), "--history", str(history)).returncode == 0
    r = cli("history", "changes", "--history", str(history), env={"COLUMNS": "400"})
    assert r.returncode == 0, r.stdout + r.stderr
    # The last column folds its text over lines: read it back whole.
    moved = "".join(line.split("│")[-2].strip() for line in r.stdout.splitlines() if line.count("│") > 2)
    assert "phases:…/inductor_compile/fx_codegen_and_compile/GraphLowering.run+" in moved.replace(" ", "")


@needs_valgrind
def test_phases_check_passes_a_real_run_and_names_what_is_wrong_in_a_broken_one(counted, tmp_path):
    """benchmarks/self/phases_check.py (run on every default case for the docs) on this module's real counts."""
    import os
    import subprocess
    import sys

    out, _, _ = counted
    script = Path(__file__).resolve().parents[3] / "benchmarks" / "self" / "phases_check.py"
    r = subprocess.run([sys.executable, str(script), "--record", str(out)], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0 and "2 of 2 case(s) ok" in r.stdout, r.stdout + r.stderr
    broken = json.loads(out.read_text())
    for result in broken["results"]:
        metrics = result["extra"]["metrics"]
        if result["extra"]["case"] == EAGER:  # an eager compile that shows inductor's lowering
            metrics[phase_metric(METRIC, "dynamo/entire_frame_compile/inductor_compile")] = 1
        else:  # phases that no longer add up to the count
            metrics[METRIC] += 1
    path = tmp_path / "broken.json"
    path.write_text(json.dumps(broken))
    r = subprocess.run([sys.executable, str(script), "--record", str(path)], capture_output=True, text=True,
                       timeout=120, env={**os.environ, "COLUMNS": "300"})
    assert r.returncode == 1, r.stdout + r.stderr
    assert "a phase named inductor_compile (which eager does not run)" in r.stdout
    assert "top-level phases add up to" in r.stdout and "0 of 2 case(s) ok, 2 failed" in r.stdout
