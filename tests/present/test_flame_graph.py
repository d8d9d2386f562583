"""Flame graphs of real counts: `bench --flame --keep-profiles` under real callgrind, the report's
graphs (and a differential of the run against itself) rendered in headless Chromium.

Cost: one `bench --mode instructions` of one small torch statement (~30-60 s on a 2-core machine).
"""

from __future__ import annotations

import html
import json
import re
import shutil
from pathlib import Path

import pytest
from test_html_report import CHROMIUM, _chromium

from harness.measure.callgrind.call_tree import from_json
from harness.measure.callgrind.profile import parse_file
from harness.present.flame_graph import own_counts
from harness.present.html_report import build_report
from harness.present.table import format_value
from harness.records.store import load_runs
from speedscope_schema import schema_errors

SUITE = '''
import harness

suite = harness.Suite(description="one op, for flame graphs")
suite.timer("add", "y = x + 1", setup="import torch\\nx = torch.ones(4)")
'''


@pytest.fixture(scope="module")
def flame_run(tmp_path_factory):
    """(record, kept profiles' directory, the CLI's completed process) of one counted statement."""
    if shutil.which("valgrind") is None:
        pytest.skip("valgrind is not installed: call trees come from callgrind")
    from conftest import run_cli, suite_root

    root = suite_root(tmp_path_factory.mktemp("flame"), "flame_ops", SUITE, folder="")
    record, kept = root / "run.json", root / "profiles"
    done = run_cli("bench", "--path", str(root), "flame_ops", "--mode", "instructions", "--flame",
                   "--keep-profiles", str(kept), "--output", str(record))
    assert done.returncode == 0, done.stdout + done.stderr
    return record, kept, done


def _result(record: Path):
    (result,) = load_runs(record)[-1].results
    assert result.ok, result.error
    return result


def test_the_flame_graph_adds_up_to_the_count_in_the_table_exactly(flame_run):
    result = _result(flame_run[0])
    flame = result.extra["flame"]
    number = result.number_per_run
    root = flame["tree"][1]
    # The count in the table is the first repeat's total less the baseline, per run; the tree's root is
    # that count of `number` runs, an integer, equal exactly.
    assert root == result.extra["totals"][0] - round(result.extra["baseline"] * number)
    assert root / number == result.samples[0] == result.value
    assert abs(sum(own_counts(flame).values()) - result.value) < 1e-6
    tree = from_json(flame)
    assert all(n.value >= 0 and n.self_value >= 0 for n in tree.walk())
    names = " ".join(flame["names"])
    assert "PyNumber_Add" in names and "THPVariable_add" in names and "add_Tensor" in names
    assert {"interpreter", "bindings", "dispatcher"} <= set(flame["layers"])
    # The record stays small: a compact tree, not the profile.
    assert len(json.dumps(flame)) < 200_000


def test_kept_profiles_open_in_kcachegrind_and_speedscope(flame_run):
    record, kept, _ = flame_run
    result = _result(record)
    dump, scope = (Path(p) for p in result.extra["profiles"])
    assert dump.parent == scope.parent == kept
    assert dump.name == "flame_ops.add.callgrind.out" and scope.name == "flame_ops.add.speedscope.json"
    # The callgrind file is the count's own dump: its total is the first repeat's.
    assert parse_file(dump).total == result.extra["totals"][0]
    assert dump.read_text().startswith("# callgrind format")
    doc = json.loads(scope.read_text())
    (prof,) = doc["profiles"]
    assert doc["$schema"] == "https://www.speedscope.app/file-format-schema.json"
    assert schema_errors(doc) == []  # speedscope's own file-format schema (tests/data/speedscope/)
    assert prof["type"] == "sampled" and len(prof["samples"]) == len(prof["weights"])
    assert sum(prof["weights"]) == result.extra["flame"]["tree"][1]


def test_a_count_with_a_flame_graph_counts_the_same(flame_run, cli, tmp_path):
    root = Path(flame_run[0]).parent
    plain = tmp_path / "plain.json"
    done = cli("bench", "--path", str(root), "flame_ops", "--mode", "instructions", "--output", str(plain))
    assert done.returncode == 0, done.stdout + done.stderr
    again = _result(plain)
    assert "flame" not in again.extra and "profiles" not in again.extra
    assert again.samples == _result(flame_run[0]).samples


def test_the_report_draws_them_and_a_run_against_itself_changes_nowhere(flame_run, tmp_path):
    run = load_runs(flame_run[0])[-1]
    result = _result(flame_run[0])
    page = build_report([("a.json", run), ("b.json", run)])
    assert 'id="flame-graphs"' in page
    assert "No change: every function" in page
    data = json.loads(re.search(r'<script type="application/json" id="flame-data">(.*?)</script>', page, re.S)
                      .group(1).replace("<\\/", "</"))
    plain, diff = data["graphs"]
    assert plain["tree"][1] == diff["tree"][1] == result.extra["flame"]["tree"][1]
    stack = [diff["tree"]]
    while stack:
        item = stack.pop()
        assert item[3] == 0
        stack.extend(item[2])
    # The summary line says the table's own number.
    assert f"{format_value(result.value, 'instructions')} instructions per run" in html.unescape(page)
    # Self-contained: the renderer is inlined, nothing is fetched.
    assert not re.search(r"""(src|href)\s*=\s*["']?(https?:)?//""", page)
    if CHROMIUM is None:
        pytest.skip("Chromium not installed (bash scripts/setup.sh --test installs it)")
    report = tmp_path / "report.html"
    report.write_text(page)
    dom = _chromium(tmp_path, report, "--dump-dom", "--window-size=1200,900")
    assert dom.returncode == 0, dom.stderr[-2000:]
    assert "Uncaught" not in dom.stderr, dom.stderr[-2000:]
    assert re.search(r'id="flame-status" data-ready="1">2 flame graph\(s\)<', dom.stdout)
    assert dom.stdout.count('data-drawn="1"') == 2
    assert dom.stdout.count('class="frame"') > 20
    assert re.search(r'<g [^>]*name="all"', dom.stdout)


def test_under_the_cache_simulation_a_second_tree_adds_up_to_the_estimated_cycles(tmp_path):
    from harness.bench import run_tasks
    from harness.model.task import Task
    from harness.options import RunOptions

    record = tmp_path / "cache.json"
    task = Task(suite="flame_ops", name="add", kind="timer", mode="instructions",
                params={"stmt": "y = x + 1", "setup": "import torch\nx = torch.ones(4)"})
    run_tasks([task], RunOptions(mode="instructions", cache_sim=True, flame=True, keep_worker=0, output=str(record)))
    result = _result(record)
    number = result.number_per_run
    cycles = result.extra["flame_cycles"]
    assert cycles["metric"] == "estimated_cycles" and result.extra["flame"]["metric"] == "Ir"
    # The cycles tree's root is the table's estimated cycles (baseline subtracted) of `number` runs, exactly.
    assert cycles["tree"][1] == round(result.extra["cache"]["estimated_cycles"] * number)
    assert cycles["tree"][1] / number == result.extra["cache"]["estimated_cycles"]
    assert result.extra["flame"]["tree"][1] / number == result.value
    assert cycles["tree"][1] > result.extra["flame"]["tree"][1]  # every instruction costs at least a cycle
    assert all(n.self_value >= 0 for n in from_json(cycles).walk())
    page = build_report([("a.json", load_runs(record)[-1]), ("b.json", load_runs(record)[-1])])
    assert "call tree, by inclusive estimated cycles" in page and "differential of estimated cycles" in page


def test_flame_options_need_callgrind_instruction_counts(tmp_path, cli):
    from conftest import TINY_SUITE, suite_root

    suite_root(tmp_path, "one", TINY_SUITE, folder="")
    blocker = tmp_path / "file"
    blocker.write_text("")
    for flags, message in (
        (("--flame",), "--flame draws on instruction counts: add --mode instructions"),
        (("--keep-profiles", str(tmp_path / "p")), "--keep-profiles draws on instruction counts"),
        (("--flame", "--mode", "instructions", "--counter", "perf"), "--flame needs callgrind's call graph"),
        (("--keep-profiles", str(blocker / "p"), "--mode", "instructions"), "cannot keep profiles in it"),
    ):
        done = cli("bench", "--path", str(tmp_path), *flags)
        assert done.returncode == 2 and message in done.stderr, done.stderr
        assert "Traceback" not in done.stderr
