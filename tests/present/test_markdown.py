"""Results ready for a pull request: `compare`, `check` and `history changes` with `--markdown`.

Two real runs of `bench --mode instructions --cache-sim --layers` (one gather whose indices go from
contiguous to strided between the runs: the instructions stay, the cache misses move) are compared;
the markdown is parsed as GitHub-flavoured markdown (markdown-it's table rule), appended to the file
`$GITHUB_STEP_SUMMARY` names, and every exit status is the one the command gives without
`--markdown` (`history changes`: tests/history/test_changes_markdown.py).
Cost: none of its own: the two `bench --mode instructions --cache-sim` runs are tests/conftest.py's ``cache_runs``,
shared with tests/history/test_cache_figures.py and tests/present/test_cache_report.py (one xdist group).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from markdown_it import MarkdownIt

from conftest import run_cli
from harness.records.store import load_runs


def tables(text: str) -> list[list[list[str]]]:
    """Every table of ``text`` parsed as GitHub-flavoured markdown: rows of cell texts, header first."""
    tokens = MarkdownIt("commonmark").enable("table").parse(text)
    out: list[list[list[str]]] = []
    row: list[str] = []
    for i, t in enumerate(tokens):
        if t.type == "table_open":
            out.append([])
        elif t.type == "tr_open":
            row = []
        elif t.type in ("th_open", "td_open"):
            row.append(tokens[i + 1].content)
        elif t.type == "tr_close":
            out[-1].append(row)
    return out


@pytest.fixture(scope="module")
def runs(cache_runs, tmp_path_factory) -> tuple[Path, Path, Path]:
    """(folder, contiguous run, strided run): the same benchmark counted with --cache-sim --layers
    (tests/conftest.py's ``cache_runs``), copied into a folder of this module's."""
    root = tmp_path_factory.mktemp("markdown")
    for name, record in zip(("base.json", "new.json"), cache_runs, strict=True):
        shutil.copyfile(record, root / name)
    return root, root / "base.json", root / "new.json"


def test_cache_figures_are_in_the_record_and_a_strided_gather_moves_them_not_the_instructions(runs):
    _, base, new = runs
    (a,), (b,) = (load_runs(p)[-1].results for p in (base, new))
    record = load_runs(base)[-1]
    assert record.environment["cache_sim"]["geometry"] == {"I1": [32768, 8, 64], "D1": [32768, 8, 64],
                                                           "LL": [8388608, 16, 64]}
    ca, cb = a.extra["cache"], b.extra["cache"]
    assert ca["Ir"] == a.median and cb["Ir"] == b.median  # the figures' Ir is the count, baseline subtracted
    assert abs(cb["Ir"] - ca["Ir"]) <= 0.01 * ca["Ir"]
    assert cb["estimated_cycles"] > 1.5 * ca["estimated_cycles"]
    assert ca["estimated_cycles"] == pytest.approx(ca["L1_hits"] + 5 * ca["LL_hits"] + 35 * ca["RAM_hits"])
    # Per layer, the cycles add up to the benchmark's (number runs of them).
    assert sum(a.extra["cycles_layers"].values()) == pytest.approx(ca["estimated_cycles"] * a.number_per_run)


def test_compare_markdown_is_a_table_of_what_changed_appended_to_the_step_summary(runs):
    root, base, new = runs
    summary = root / "summary.md"
    summary.write_text("# earlier step\n")
    done = run_cli("compare", str(base), str(new), "--markdown", env={"GITHUB_STEP_SUMMARY": str(summary)})
    plain = run_cli("compare", str(base), str(new))
    assert done.returncode == plain.returncode == 0, done.stderr
    text = done.stdout
    assert summary.read_text() == "# earlier step\n" + text  # appended, whole
    (header, row), *moved = tables(text)
    # The instructions are the same (verdict), the estimated cycles are not: the row is there for them.
    assert header == ["benchmark", "base", "new", "change", "estimated cycles", "verdict"]
    assert row[0] == "gathers/gather" and "same" in row[-1]
    assert "(+" in row[4] and float(row[4].split("(+")[1].rstrip("%)")) > 50
    assert "no regression" in text and "estimated cycles moved beyond 0.5% in 1" in text
    assert any(t[0][0] == "layer (estimated cycles)" for t in moved)


def test_compare_markdown_lists_a_change_with_the_layers_and_functions_that_moved(runs, tmp_path):
    root, base, new = runs
    # The base run with its count made 10% smaller: a regression beyond the noise for the new run.
    data = json.loads(base.read_text())
    results = data["results"] if "results" in data else data["runs"][-1]["results"]
    results[0]["samples"] = [s * 0.9 for s in results[0]["samples"]]
    smaller = tmp_path / "smaller.json"
    smaller.write_text(json.dumps(data))
    done = run_cli("compare", str(smaller), str(new), "--markdown", "--fail-on-regression", "1")
    plain = run_cli("compare", str(smaller), str(new), "--fail-on-regression", "1")
    assert done.returncode == plain.returncode == 1, done.stderr
    (header, row), *moved = tables(done.stdout)
    assert row[0] == "gathers/gather" and "slower" in row[-1] and row[3].startswith("+")
    assert "1 regression" in done.stdout
    assert "<details><summary>gathers/gather: what moved</summary>" in done.stdout
    assert moved and moved[-1][0][0] == "layer (estimated cycles)"


def test_check_markdown_gates_estimated_cycles_with_the_exit_status_of_check(runs, tmp_path):
    root, base, new = runs
    (a,) = load_runs(base)[-1].results
    expected = tmp_path / "expected.csv"
    expected.write_text(
        f"name,metric,expected,noise_margin\ngather,estimated_cycles,{a.extra['cache']['estimated_cycles']},0.02\n"
    )
    ok = run_cli("check", str(base), "--expected", str(expected), "--markdown")
    assert ok.returncode == 0, ok.stderr
    assert "gate passed" in ok.stdout and tables(ok.stdout) == []
    summary = tmp_path / "summary.md"
    bad = run_cli("check", str(new), "--expected", str(expected), "--markdown",
                  env={"GITHUB_STEP_SUMMARY": str(summary)})
    plain = run_cli("check", str(new), "--expected", str(expected))
    assert bad.returncode == plain.returncode == 1
    ((header, row),) = tables(bad.stdout)
    assert header == ["name", "metric", "expected", "actual", "change", "margin", "verdict"]
    assert row[:2] == ["gather", "estimated_cycles"] and "regression" in row[-1]
    assert bad.stdout.startswith(summary.read_text())  # the markdown, then check's own advice


def test_without_the_variable_nothing_is_written_and_a_summary_that_cannot_be_written_is_one_clear_error(tmp_path):
    from harness.records import save
    from synthetic_runs import full_run

    save(full_run(), tmp_path / "a.json")
    save(full_run(scale=1.2, run_id="run-b"), tmp_path / "b.json")
    done = run_cli("compare", "a.json", "b.json", "--markdown", cwd=tmp_path, unset=("GITHUB_STEP_SUMMARY",))
    assert done.returncode == 0, done.stderr
    empty = run_cli("compare", "a.json", "b.json", "--markdown", cwd=tmp_path, env={"GITHUB_STEP_SUMMARY": ""})
    assert empty.returncode == 0 and empty.stdout == done.stdout
    assert tables(done.stdout) and sorted(p.name for p in tmp_path.iterdir() if not p.name.startswith(".")) == [
        "a.json",
        "b.json",
    ]
    bad = run_cli("compare", "a.json", "b.json", "--markdown", cwd=tmp_path, env={"GITHUB_STEP_SUMMARY": str(tmp_path)})
    assert bad.returncode != 0 and "Traceback" not in bad.stderr
    assert "cannot append the markdown summary" in bad.stderr and "GITHUB_STEP_SUMMARY" in bad.stderr
