"""Statistics of the C++ core and Measurement, against hand-computed values and torch."""

from __future__ import annotations

import math

import pytest
import torch.utils.benchmark as tb

import harness
from harness.core import native


def test_core_stats_hand_computed():
    s = native().compute_stats([10.0, 2.0, 4.0, 1.0, 3.0])
    assert s["n"] == 5
    assert s["median"] == 3.0
    assert s["p25"] == 2.0 and s["p75"] == 4.0 and s["iqr"] == 2.0
    assert s["mean"] == 4.0
    assert s["stddev"] == pytest.approx(math.sqrt(12.5))
    assert (s["min"], s["max"]) == (1.0, 10.0)
    even = native().compute_stats([4.0, 3.0, 2.0, 1.0])
    assert (even["p25"], even["median"], even["p75"]) == (1.75, 2.5, 3.25)


def test_quantile_matches_torch():
    import torch

    xs = [0.3, 1.7, 2.2, 9.0, 4.4, 5.1, 0.01]
    for q in (0.0, 0.1, 0.25, 0.5, 0.75, 0.9, 1.0):
        expected = torch.tensor(xs, dtype=torch.float64).quantile(q).item()
        assert native().quantile(xs, q) == pytest.approx(expected, rel=1e-12)


RAW = [1.0e-3, 1.1e-3, 0.9e-3, 1.05e-3, 2.0e-3, 1.02e-3, 0.98e-3]


def _pair(raw, number=10):
    spec = dict(stmt="y = x * w", setup="x = 1", num_threads=2, label="L", sub_label="S", description="D")
    ours = harness.Measurement(number, list(raw), harness.TaskSpec(**spec))
    theirs = tb.Measurement(number, list(raw), tb.utils.common.TaskSpec(**spec))
    return ours, theirs


@pytest.mark.parametrize("raw", [RAW, RAW[:4], [5e-6] * 6, [1e-6, 3e-6, 2e-6, 9e-6, 4e-6]])
def test_measurement_fields_match_torch(raw):
    ours, theirs = _pair(raw)
    assert ours.times == pytest.approx(theirs.times)
    assert ours.median == pytest.approx(theirs.median, rel=1e-12)
    assert ours.mean == pytest.approx(theirs.mean, rel=1e-12)
    assert ours.iqr == pytest.approx(theirs.iqr, rel=1e-9, abs=1e-18)
    assert ours.significant_figures == theirs.significant_figures
    assert ours.has_warnings == theirs.has_warnings
    assert ours.title == theirs.title
    assert ours.number_per_run == theirs.number_per_run
    assert ours.num_threads == 2 and ours.label == "L"
    # torch's Measurement.env reads a misspelt attribute and returns None; ours says what it means.
    assert ours.env == "Unspecified env"
    assert ours.as_row_name == theirs.as_row_name


def test_measurement_repr_matches_torch_after_first_line():
    ours, theirs = _pair(RAW)
    ours_lines, theirs_lines = repr(ours).splitlines(), repr(theirs).splitlines()
    assert ours_lines[0].startswith("<harness.model.measurement.Measurement object at 0x")
    assert ours_lines[1:] == theirs_lines[1:]


def test_warning_thresholds():
    quiet = harness.Measurement(1, [1.0, 1.01, 0.99, 1.0, 1.0], harness.TaskSpec("pass", "pass"))
    noisy = harness.Measurement(1, [1.0, 2.0, 0.5, 1.0, 3.0], harness.TaskSpec("pass", "pass"))
    assert not quiet.has_warnings and quiet.meets_confidence(0.1)
    assert noisy.has_warnings and "environmental influence" in repr(noisy)


def test_merge_pools_same_task():
    spec = harness.TaskSpec("pass", "pass")
    a = harness.Measurement(10, [1.0, 2.0], spec)
    b = harness.Measurement(5, [1.0], spec)
    (merged,) = harness.Measurement.merge([a, b])
    assert merged.number_per_run == 1
    assert sorted(merged.times) == pytest.approx([0.1, 0.2, 0.2])


@pytest.mark.parametrize(
    ("seconds", "unit"), [(3e-10, "ns"), (5e-9, "ns"), (2e-6, "us"), (0.004, "ms"), (2.0, "s"), (300.0, "s")]
)
def test_select_unit(seconds, unit):
    assert harness.select_unit(seconds)[0] == unit


def test_one_statistics_rule_for_results_measurements_and_the_core():
    """A TaskResult (tables, records, compare) and a Measurement give the core's figures for the same samples."""
    import torch

    from harness.model import stats
    from harness.model.result import TaskResult
    from harness.model.task import Task

    for samples in ([3.0, 1.0, 4.0, 1.0, 5.0, 9.0, 2.0, 6.0], [2.5, 1.5], [7.0], [1e-6, 3e-6, 2e-6, 8e-6, 5e-6]):
        core = native().compute_stats(samples)
        result = TaskResult(Task("s", "n", "timer", {}), "ok", samples=samples)
        measurement = harness.Measurement(1, list(samples), harness.TaskSpec(stmt="pass", setup="pass"))
        t = torch.tensor(samples, dtype=torch.float64)
        assert result.median == measurement.median == core["median"] == pytest.approx(t.quantile(0.5).item())
        if len(samples) > 1:
            assert result.iqr == measurement.iqr == core["iqr"]
            assert core["iqr"] == pytest.approx((t.quantile(0.75) - t.quantile(0.25)).item())
        assert stats.quantile(samples, 0.9) == native().quantile(samples, 0.9)
    empty = TaskResult(Task("s", "n", "timer", {}), "ok", samples=[])
    assert math.isnan(empty.median) and empty.iqr == 0.0 and not empty.noisy
