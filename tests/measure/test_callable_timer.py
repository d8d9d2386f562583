"""harness.timeit: any Python callable timed from the C++ loop."""

from __future__ import annotations

import subprocess
import sys

import pytest

import harness


def test_returns_measurement_that_reaches_min_run_time():
    m = harness.timeit(sorted, [3, 1, 2], min_run_time=0.05)
    assert isinstance(m, harness.Measurement)
    assert m.number_per_run >= 1 and len(m.raw_times) >= 1
    assert sum(m.raw_times) >= 0.05
    assert m.median > 0 and m.iqr >= 0
    assert m.stmt == "sorted(list)"
    assert "sorted(list)" in repr(m)


def test_calls_fn_with_args_and_kwargs_every_run():
    seen = []

    def record(a, b, *, scale, fn):  # a kwarg named `fn` reaches the callable
        seen.append((a, b, scale, fn))

    m = harness.timeit(record, 1, "x", scale=2.5, fn="f", min_run_time=0.02)
    assert set(seen) == {(1, "x", 2.5, "f")}
    # Warm-up and calibration call it too; the measured runs are a lower bound.
    assert len(seen) >= m.number_per_run * len(m.raw_times)
    assert (
        m.stmt
        == f"{__name__}.test_calls_fn_with_args_and_kwargs_every_run.<locals>.record(int, str, scale=float, fn=str)"
    )


def test_labels_go_into_compare():
    a = harness.timeit(len, "abc", min_run_time=0.01, label="len", sub_label="str", description="short")
    b = harness.timeit(len, "abc" * 100, min_run_time=0.01, label="len", sub_label="str", description="long")
    table = str(harness.Compare([a, b]))
    assert "len" in table and "short" in table and "long" in table


def test_exception_from_fn_propagates_unchanged():
    class Boom(Exception):
        pass

    error = Boom("from the callable")

    def fails():
        raise error

    with pytest.raises(Boom) as info:
        harness.timeit(fails, min_run_time=0.01)
    assert info.value is error


@pytest.mark.parametrize("bad", [0, -1.0, float("nan"), "0.1", True, None])
def test_rejects_bad_min_run_time(bad):
    with pytest.raises(harness.UsageError, match="min_run_time must be a positive number"):
        harness.timeit(len, "x", min_run_time=bad)


def test_rejects_non_callable():
    with pytest.raises(harness.UsageError, match="fn must be callable, got str"):
        harness.timeit("len(x)")


@pytest.mark.parametrize("bad", [0, -2, 1.5, True])
def test_rejects_bad_num_threads(bad):
    with pytest.raises(harness.UsageError, match="num_threads must be a positive int"):
        harness.timeit(len, "x", num_threads=bad)


def test_num_threads_set_during_run_and_restored():
    import torch

    before = torch.get_num_threads()
    target = 1 if before != 1 else 2
    seen = set()
    m = harness.timeit(lambda: seen.add(torch.get_num_threads()), num_threads=target, min_run_time=0.01)
    assert seen == {target}
    assert m.num_threads == target
    assert torch.get_num_threads() == before


def test_does_not_import_torch_for_plain_callables():
    code = (
        "import sys, harness\n"
        "m = harness.timeit(sum, [1, 2, 3], min_run_time=0.01)\n"
        "assert m.median > 0 and m.num_threads == 1\n"
        "print('torch' in sys.modules)\n"
    )
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "False"
