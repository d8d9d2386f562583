"""compare: verdicts on synthetic samples with known shifts, the U-test path, symbols, exit codes."""

from __future__ import annotations

from pathlib import Path

import pytest
from scipy.stats import mannwhitneyu

from harness.model.record import RunRecord
from harness.present.run_comparison import (
    Thresholds,
    compare_results,
    compare_runs,
    environment_notes,
    min_p_value,
    symbol_deltas,
)
from harness.records import save
from synthetic_runs import environment, failed, full_run, instructions, normal, wall

T = Thresholds(alpha=0.05, min_effect=0.02, noise_margin=0.005)


@pytest.mark.parametrize(("shift", "verdict"), [(1.10, "slower"), (0.90, "faster")])
def test_known_shift_is_significant(shift: float, verdict: str):
    base = wall("s", "op", normal(1e-6, 0.02, 40, seed=1))
    new = wall("s", "op", normal(1e-6 * shift, 0.02, 40, seed=2))
    row = compare_results(base, new, T)
    assert row.verdict == verdict
    assert row.p_value is not None and row.p_value < 1e-6
    assert row.change == pytest.approx(shift - 1, abs=0.02)
    assert row.regression is (verdict == "slower")


def test_no_shift_is_not_significant():
    base = wall("s", "op", normal(1e-6, 0.02, 40, seed=3))
    new = wall("s", "op", normal(1e-6, 0.02, 40, seed=4))
    row = compare_results(base, new, T)
    assert row.verdict == "same" and not row.regression
    assert row.p_value is not None and row.p_value >= T.alpha


def test_u_test_on_raw_samples_decides():
    # The medians differ by 10%, but the samples overlap completely: half of each
    # run is fast, half slow. Only a test on the raw samples sees it is no change.
    base = wall("s", "op", [1.0] * 10 + [1.2] * 11)
    new = wall("s", "op", [1.0] * 11 + [1.2] * 10)
    row = compare_results(base, new, T)
    assert row.change == pytest.approx(-1 / 6)
    assert row.p_value == pytest.approx(mannwhitneyu(base.samples, new.samples, alternative="two-sided").pvalue)
    assert row.verdict == "noisy" and row.note == "not significant"
    # A real but tiny shift: significant, yet below the minimum effect size.
    small_base = wall("s", "op", normal(1e-6, 0.001, 200, seed=5))
    small_new = wall("s", "op", normal(1.005e-6, 0.001, 200, seed=6))
    row = compare_results(small_base, small_new, T)
    assert row.p_value < 1e-6 and row.verdict == "same"
    assert compare_results(small_base, small_new, Thresholds(min_effect=0.001)).verdict == "slower"


def test_too_few_samples_can_never_be_significant():
    assert min_p_value(3, 3) == pytest.approx(0.1)
    row = compare_results(wall("s", "op", [1.0, 1.01, 0.99]), wall("s", "op", [2.0, 2.01, 1.99]), T)
    assert row.p_value == pytest.approx(0.1)
    assert row.verdict == "noisy" and "3 vs 3 samples cannot reach p < 0.05" in row.note
    row = compare_results(wall("s", "op", [1.0]), wall("s", "op", [2.0]), T)
    assert row.verdict == "noisy" and row.p_value is None


def test_instruction_counts_use_the_noise_margin():
    base = instructions("c", "case", [1_000_000, 1_000_000])
    within = compare_results(base, instructions("c", "case", [1_004_000, 1_004_000]), T)
    assert within.verdict == "same" and within.p_value is None
    more = compare_results(base, instructions("c", "case", [1_006_000, 1_006_000]), T)
    assert more.verdict == "slower" and more.regression and more.change == pytest.approx(0.006)
    fewer = compare_results(base, instructions("c", "case", [900_000]), T)
    assert fewer.verdict == "faster"


def test_higher_is_better_and_failures():
    base, new = wall("g", "bw", normal(1e-3, 0.01, 20, 7)), wall("g", "bw", normal(1e-3, 0.01, 20, 8))
    for r, actual in ((base, 100.0), (new, 80.0)):
        r.extra.update(actual=actual, metric="memory_bandwidth(GB/s)", higher_is_better=True)
    new.samples = [x * 1.25 for x in new.samples]  # lower bandwidth: the kernel got slower
    row = compare_results(base, new, T)
    assert row.verdict == "worse" and row.regression and row.change == pytest.approx(-0.2)
    row = compare_results(base, failed("g", "bw", "boom"), T)
    assert row.verdict == "failed" and row.note == "failed in new" and not row.regression


def test_different_units_are_not_compared():
    row = compare_results(wall("s", "op", [1.0, 1.1]), instructions("s", "op", [1000.0]), T)
    assert row.verdict == "incomparable" and row.note == "s vs instructions" and not row.regression


def test_environment_notes():
    base, new = full_run(), full_run()
    new.environment["torch"] = dict(new.environment["torch"], version="2.14.0+cpu")
    new.environment["noise"] = {"checked": True, "findings": ["load average 3.00"]}
    assert environment_notes(base, new) == [
        "torch differs: 2.13.0+cpu (base) vs 2.14.0+cpu (new)", "new run had noise warnings: load average 3.00",
    ]
    assert environment_notes(base, full_run()) == []


def test_added_removed_and_regressions():
    base = RunRecord(environment(), [wall("s", "a", [1.0] * 5 + [1.01] * 5), wall("s", "gone", [1.0] * 5)])
    new = RunRecord(environment(), [wall("s", "a", [1.2] * 5 + [1.21] * 5), wall("s", "fresh", [1.0] * 5)])
    comparison = compare_runs(base, new, T)
    assert [r.task.name for r in comparison.added] == ["fresh"]
    assert [r.task.name for r in comparison.removed] == ["gone"]
    assert [r.name for r in comparison.regressions(beyond=0.1)] == ["a"]
    assert comparison.regressions(beyond=0.25) == []


def test_symbol_deltas():
    base = instructions("c", "case", [100], symbols={"f": 50, "g": 30, "h": 20})
    new = instructions("c", "case", [130], symbols={"f": 50, "g": 55, "k": 25})
    assert symbol_deltas(base, new) == [
        ("g", 30.0, 55.0, 25.0), ("k", 0.0, 25.0, 25.0), ("f", 50.0, 50.0, 0.0), ("h", 20.0, 0.0, -20.0),
    ]


def _runs(tmp_path: Path, slowdown: float) -> tuple[Path, Path]:
    base = full_run(seed=0)
    new = full_run(seed=50)
    for r in new.results:
        if r.task.suite == "dispatch" and r.task.name == "add[language=cpp]":
            r.samples = [x * slowdown for x in r.samples]
        if r.task.suite == "compile_time" and r.task.name == "basic_InlineMod_eager":
            r.samples = [x * 1.15 for x in r.samples]
    base.results[9].extra["symbols"] = {"torch::dynamo::eval_frame": 1.0e8, "cheap_helper": 5.0e6}
    new.results[9].extra["symbols"] = {"torch::dynamo::eval_frame": 1.3e8, "cheap_helper": 4.0e6}
    paths = tmp_path / "base.json", tmp_path / "new.csv"
    save(base, paths[0])
    save(new, paths[1])
    return paths


def test_cli_compare_and_fail_on_regression(cli, tmp_path: Path):
    base, new = _runs(tmp_path, slowdown=1.5)
    r = cli("compare", str(base), str(new), "--fail-on-regression", "10")
    assert r.returncode == 1, r.stdout + r.stderr
    assert "dispatch: base vs new" in r.stdout and "compile_time: base vs new" in r.stdout
    assert "aotdispatcher_inference_nosubclass_cpu" in r.stdout  # a log gets whole names, not 80 columns
    assert "dispatch/add[language=cpp]: +5" in r.stderr and "compile_time" in r.stderr
    r = cli("compare", str(base), str(new), "--fail-on-regression", "60")
    assert r.returncode == 0, r.stderr
    assert "slower" in r.stdout
    r = cli("compare", str(base), str(new), "--symbols", "--top", "5")
    assert r.returncode == 0
    assert "torch::dynamo::eval_frame" in r.stdout and "+30,000,000" in r.stdout
    assert "cheap_helper" not in r.stdout  # it got cheaper: not listed as more expensive
    r = cli("compare", str(base), str(base), "--fail-on-regression", "0")
    assert r.returncode == 0 and "slower" not in r.stdout


def test_fail_on_regression_counts_a_benchmark_that_now_fails(cli, tmp_path: Path):
    base = RunRecord(environment(), [wall("s", "op", [1e-6] * 5), wall("s", "other", [1e-6] * 5),
                                     failed("s", "broken", "ValueError: always")])
    new = RunRecord(environment(run_id="run-b"), [failed("s", "op", "RuntimeError: boom\nmore"),
                                                  wall("s", "other", [1e-6] * 5), failed("s", "broken", "x")])
    save(base, tmp_path / "base.json")
    save(new, tmp_path / "new.json")
    r = cli("compare", str(tmp_path / "base.json"), str(tmp_path / "new.json"), "--fail-on-regression", "50")
    assert r.returncode == 1, r.stdout + r.stderr
    assert "1 benchmark(s) that ran in the base run fail in the new one" in r.stderr
    assert "s/op: RuntimeError: boom" in r.stderr and "s/broken" not in r.stderr  # failed in both: not new
    r = cli("compare", str(tmp_path / "base.json"), str(tmp_path / "new.json"))
    assert r.returncode == 0  # without the gate, failures are shown, not judged


@pytest.mark.parametrize(
    ("args", "message"),
    [(["--alpha", "1.5"], "--alpha must be between 0 and 1"), (["--min-effect", "-1"], "--min-effect must be >= 0")],
)
def test_cli_compare_usage_errors(cli, tmp_path: Path, args, message):
    base, new = _runs(tmp_path, slowdown=1.0)
    r = cli("compare", str(base), str(new), *args)
    assert r.returncode == 2 and message in r.stderr and "Traceback" not in r.stderr
