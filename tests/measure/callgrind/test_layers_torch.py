"""Layers of real torch statements counted under real callgrind (``bench --layers``).

Cost: the session's one `bench --mode instructions --layers` run (conftest's
``layers_run``, about a minute on a 2-core machine) and one more run with a
user's rules file (about 30 s).
"""

from __future__ import annotations

from conftest import TINY_SUITE, suite_root
from harness.model.result import TaskResult
from harness.present.layer_table import result_layers
from harness.records.store import load_runs


def _results(record) -> dict[str, TaskResult]:
    return {r.task.name: r for r in load_runs(record)[-1].results}


def test_layers_add_up_to_the_total_exactly(layers_run):
    _, record, _ = layers_run
    results = _results(record)
    assert len(results) == 5
    for name, r in results.items():
        assert r.ok, (name, r.error)
        counts = r.extra["layers"]
        assert all(isinstance(c, int) for c in counts.values())
        # Integer counts of `number` runs, baseline subtracted as the total is: exact.
        assert sum(counts.values()) / r.number_per_run == r.samples[0], name


def _mul(results, language):
    return next(r for r in results.values() if r.task.params.get("group") == "mul"
                and r.task.params.get("language") == language)


def test_cpp_has_no_python_layers_and_python_has_all(layers_run):
    results = _results(layers_run[1])
    py, cpp = result_layers(_mul(results, "python")), result_layers(_mul(results, "cpp"))
    assert py is not None and cpp is not None
    assert cpp["interpreter"] == 0 and cpp["bindings"] == 0
    # The GIL is released before the counted region; inside it, the statement
    # only checks once per block of `number` runs that it does not hold it.
    assert round(cpp["gil"]) == 0
    for layer in ("interpreter", "bindings", "gil"):
        assert py[layer] > 100, (layer, py)
    # Below Python, the same C++ runs: the dispatcher's share agrees closely.
    assert abs(py["dispatcher"] - cpp["dispatcher"]) < 0.1 * cpp["dispatcher"]


def test_other_is_at_most_five_percent(layers_run):
    for name, r in _results(layers_run[1]).items():
        layers = result_layers(r)
        assert layers is not None
        assert layers["other"] <= 0.05 * sum(layers.values()), (name, layers["other"])


def test_known_causes_land_in_their_layers(layers_run):
    results = _results(layers_run[1])
    plain = result_layers(_mul(results, "python"))
    wrapped, grad, profiled = (result_layers(results[n]) for n in ("wrapped", "grad", "profiled"))
    # A pure-Python function around the op: the extra frame is the interpreter's.
    extra = sum(wrapped.values()) - sum(plain.values())
    assert wrapped["interpreter"] - plain["interpreter"] > 0.5 * extra > 0
    # requires_grad: the op records a graph node.
    assert grad["autograd"] > plain["autograd"] + 500
    # A record_function range: RecordFunction starts and ends with callbacks to run.
    assert profiled["profiler"] > plain["profiler"] + 200


def test_bench_prints_the_layer_table_and_the_rules_behind_it(layers_run):
    out = layers_run[2].stdout
    assert "instructions per run by layer" in out
    assert "top functions per layer" in out and "THPVariable" in out  # --explain-layers
    assert "Python adds" in out  # the grouped table's summary per op


def test_a_users_rules_file_overrides_the_shipped_one(layers_run, tmp_path, cli):
    root, _, _ = layers_run
    rules = tmp_path / "mine.toml"
    rules.write_text('[[rule]]\nlayer = "kernel"\nsymbol = "TensorIterator"\n')
    record = tmp_path / "mine.json"
    done = cli("bench", "--path", str(root), "layers_causes", "--only", "grad", "--mode", "instructions",
               "--layers-rules", str(rules), "--output", str(record))
    assert done.returncode == 0, done.stdout + done.stderr
    (r,) = load_runs(record)[-1].results
    layers = result_layers(r)
    assert {n for n, v in layers.items() if v} == {"kernel", "other"}
    assert layers["kernel"] > 500  # TensorIterator's build, alone
    assert r.task.params["layers"] == str(rules.resolve())


def test_an_invalid_rules_file_fails_before_the_run(layers_run, tmp_path, cli):
    rules = tmp_path / "bad.toml"
    rules.write_text('[[rule]]\nlayer = "kernal"\nsymbol = "x"\n')
    done = cli("bench", "--path", str(layers_run[0]), "--mode", "instructions", "--layers-rules", str(rules))
    assert done.returncode == 2
    assert f"{rules.resolve()}:2: unknown layer 'kernal'" in done.stderr
    assert "Traceback" not in done.stderr


def test_layers_need_callgrind_instruction_counts(tmp_path, cli):
    suite_root(tmp_path, "one", TINY_SUITE, folder="")
    for flags, message in (
        ((), "--layers splits instruction counts: add --mode instructions"),
        (("--mode", "instructions", "--counter", "perf"), "--layers needs callgrind's per-function counts"),
    ):
        done = cli("bench", "--path", str(tmp_path), "--layers", *flags)
        assert done.returncode == 2 and message in done.stderr, done.stderr
