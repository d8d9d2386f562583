"""The pytest plugin (entry point pytest11 `harness`), driven through pytest's own pytester."""

from __future__ import annotations

import importlib.metadata
import json
import re
import subprocess
import sys

import pytest
import torch  # noqa: F401 - see below

from harness import records
from harness.model.record import SCHEMA, VERSION

pytest_plugins = ["pytester"]
# torch is imported above, before pytester's in-process inner runs: those import it
# (the run record's environment), and pytester then drops every module they
# imported from sys.modules; a later `import torch` would re-run torch's
# initialisation on top of its loaded C extension and crash.

# The inner runs have their own ini; an editable install's import redirector
# would otherwise add the same assert-rewrite warning the repo's ini filters.
INNER_INI = """
[pytest]
filterwarnings =
    ignore:Module already imported so cannot be rewritten; _editable_skbc_:pytest.PytestAssertRewriteWarning
"""

BENCH_TESTS = """
import pytest

def test_sort(harness_bench):
    m = harness_bench(sorted, [3, 1, 2])
    assert m.median > 0 and m.number_per_run >= 1

def test_two_calls(harness_bench):
    harness_bench(len, "abc")
    harness_bench(lambda x, *, y: x + y, 1, y=2, sub_label="add")

def test_raising(harness_bench):
    def fails():
        raise KeyError("from the timed function")
    harness_bench(fails)

def test_plain():
    assert sorted([3, 1, 2]) == [1, 2, 3]
"""


def normalized(lines: list[str]) -> list[str]:
    return [re.sub(r"in \d+\.\d+s", "in Ns", line) for line in lines if not line.startswith("plugins:")]


@pytest.fixture
def inner(pytester: pytest.Pytester) -> pytest.Pytester:
    pytester.makeini(INNER_INI)
    return pytester


def test_registered_as_pytest11_entry_point():
    eps = {ep.name: ep.value for ep in importlib.metadata.entry_points(group="pytest11")}
    assert eps.get("harness") == "harness.pytest_plugin"


def test_import_is_cheap():
    # The plugin is loaded into every pytest run: no torch, no C++ core, no rich.
    code = "import sys, harness.pytest_plugin\nprint(sorted({'torch', 'harness._C', 'rich'} & set(sys.modules)))"
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "[]"


def test_run_record_written_in_bench_schema(inner: pytest.Pytester):
    """A fresh pytest process (so the entry point really loads) writing --harness-output."""
    inner.makepyfile(test_bench=BENCH_TESTS)
    out = inner.path / "results" / "run.json"
    result = inner.runpytest_subprocess("--harness-output", str(out), "--harness-min-run-time", "0.01")
    result.assert_outcomes(passed=3, failed=1)
    record = records.load(out)
    by_name = {r.task.name: r for r in record.results}
    assert list(by_name) == [
        "test_bench.py::test_sort",
        "test_bench.py::test_two_calls",
        "test_bench.py::test_two_calls#2",
        "test_bench.py::test_raising",
    ]
    for name, r in by_name.items():
        assert r.task.kind == "pytest" and r.task.suite == "pytest"
        assert r.task.params["nodeid"] == name.split("#")[0]
        assert r.task.params["min_run_time"] == 0.01
    ok = [r for r in record.results if r.ok]
    assert len(ok) == 3
    for r in ok:
        assert r.unit == "s" and r.samples and all(s > 0 for s in r.samples) and r.number_per_run >= 1
        assert sum(r.samples) * r.number_per_run >= 0.01
    assert by_name["test_bench.py::test_sort"].task.params["call"] == "sorted(list)"
    # harness's own options (sub_label) are not part of the call.
    assert by_name["test_bench.py::test_two_calls#2"].task.params["call"].endswith("<lambda>(int, y=int)")
    failed = by_name["test_bench.py::test_raising"]
    assert failed.status == "failed" and "KeyError" in failed.error and "from the timed function" in failed.error
    env = record.environment
    assert env["harness_version"] and env["torch"]["version"] and env["pytest_version"] == pytest.__version__
    assert "--harness-output" in env["command_line"]
    # Same top-level schema as `python -m harness bench --output`.
    raw = json.loads(out.read_text())
    assert raw["schema"] == SCHEMA and raw["version"] == VERSION
    result.stdout.fnmatch_lines(
        [
            "*harness measurements*",
            "test_bench.py::test_sort *median*IQR*",
            "test_bench.py::test_raising *failed: KeyError*",
            f"harness: run record with 4 result(s) written to {out}",
        ]
    )


def test_fixture_without_output_writes_nothing(inner: pytest.Pytester):
    inner.makepyfile(test_bench=BENCH_TESTS)
    before = {p.name for p in inner.path.iterdir()}
    result = inner.runpytest("--harness-min-run-time", "0.01")
    result.assert_outcomes(passed=3, failed=1)
    # Caches of pytest and of pytest-benchmark (if installed) may appear; nothing of ours.
    after = {p.name for p in inner.path.iterdir()} - {".pytest_cache", "__pycache__", ".benchmarks"}
    assert after == before
    result.stdout.fnmatch_lines(["*harness measurements*"])
    assert "run record" not in result.stdout.str()


def test_no_change_when_unused(inner: pytest.Pytester):
    """Tests that do not use the fixture see no difference from a run without the plugin."""
    inner.makepyfile(
        test_plain="""
        import pytest
        def test_ok(): pass
        def test_fail(): assert sorted([3, 1, 2]) == [3, 1, 2]
        @pytest.mark.skip(reason="r")
        def test_skip(): pass
        """
    )
    with_plugin = inner.runpytest("-p", "no:cacheprovider")
    without = inner.runpytest("-p", "no:cacheprovider", "-p", "no:harness")
    assert with_plugin.ret == without.ret == pytest.ExitCode.TESTS_FAILED
    with_plugin.assert_outcomes(passed=1, failed=1, skipped=1)
    without.assert_outcomes(passed=1, failed=1, skipped=1)
    # Identical output but for the header's list of plugins and the durations.
    assert normalized(with_plugin.outlines) == normalized(without.outlines)
    assert "plugins: harness-" in with_plugin.stdout.str()
    # The plugin is active in the first run (its fixture exists) and off in the second.
    assert "harness_bench" in inner.runpytest("--fixtures").stdout.str()
    assert "harness_bench" not in inner.runpytest("--fixtures", "-p", "no:harness").stdout.str()


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--harness-output", "out.csv"], "--harness-output out.csv: use a .json file name"),
        (["--harness-min-run-time", "0"], "--harness-min-run-time must be > 0 seconds, got 0.0"),
        (["--harness-min-run-time", "-1"], "--harness-min-run-time must be > 0 seconds, got -1.0"),
    ],
)
def test_bad_options_are_usage_errors(inner: pytest.Pytester, args: list[str], message: str):
    inner.makepyfile(test_x="def test_x(): pass")
    result = inner.runpytest(*args)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert message in result.stderr.str()


def test_unwritable_output_is_reported(inner: pytest.Pytester):
    inner.makepyfile(test_x="def test_x(harness_bench): harness_bench(len, 'x')")
    (inner.path / "blocker").write_text("a file, not a directory")
    result = inner.runpytest("--harness-output", "blocker/run.json", "--harness-min-run-time", "0.01")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stdout.fnmatch_lines(["harness: error: *blocker/run.json*cannot write*"])


def test_the_test_run_loads_only_the_plugins_the_project_names(pytestconfig):
    """Plugins installed in the system's site-packages (which the venv sees on purpose)
    stay out of this run; harness's own plugin is in (pyproject's addopts)."""
    loaded = {
        getattr(plugin, "__name__", type(plugin).__module__)
        for _, plugin in pytestconfig.pluginmanager.list_name_plugin()
        if plugin is not None
    }
    addopts = pytestconfig.getini("addopts")
    named = {addopts[i + 1] for i, word in enumerate(addopts[:-1]) if word == "-p"}
    installed = {
        ep.value.split(":")[0]
        for ep in importlib.metadata.entry_points(group="pytest11")
        if ep.value.split(":")[0] not in named
    }
    assert {"harness.pytest_plugin", "xdist.plugin"} <= named
    assert "harness.pytest_plugin" in loaded
    assert not installed & loaded, f"foreign plugins loaded: {sorted(installed & loaded)}"
    assert pytestconfig.getini("addopts") and "--disable-plugin-autoload" in pytestconfig.getini("addopts")


def test_the_test_run_shows_no_torch_internal_deprecations(tmp_path, repo):
    """Inductor imports torch.utils.mkldnn, whose classes use the deprecated
    `torch.jit.script_method`: the project's ini filters that one message (and only it)."""
    (tmp_path / "test_inner.py").write_text(
        "import warnings\n"
        "import torch.utils.mkldnn\n\n"
        "def test_other_deprecations_still_show():\n"
        "    warnings.warn('still shown', DeprecationWarning)\n"
    )
    r = subprocess.run(
        [sys.executable, "-m", "pytest", "-c", str(repo / "pyproject.toml"), "--rootdir", str(tmp_path),
         "-p", "no:cacheprovider", "-n", "0", str(tmp_path / "test_inner.py")],
        capture_output=True, text=True, timeout=300,
    )
    assert r.returncode == 0, r.stdout + r.stderr
    assert "script_method" not in r.stdout
    assert "still shown" in r.stdout
