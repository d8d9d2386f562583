"""Timer against real torch: calibration, threads, multi-line code, batch_setup, bad input."""

from __future__ import annotations

import pytest
import torch

import harness


def test_blocked_autorange_reaches_min_run_time():
    t = harness.Timer("y = x * w", setup="x = torch.ones(4, 4)\nw = torch.ones(4, 4)")
    m = t.blocked_autorange(min_run_time=0.1)
    assert sum(m.raw_times) >= 0.1
    assert m.number_per_run >= 10  # a ~1 us op needs many runs per block
    assert 1e-8 < m.median < 1e-3
    assert len(m.times) == len(m.raw_times)
    # The calibrated block is long enough that the clock overhead is negligible.
    assert min(m.raw_times) >= 0.1 / 1000


def test_callback_sees_every_block():
    seen = []
    m = harness.Timer("pass").blocked_autorange(callback=lambda n, t: seen.append((n, t)), min_run_time=0.05)
    assert [t for _, t in seen] == m.raw_times
    assert all(n == m.number_per_run for n, _ in seen)


def test_timeit_runs_exactly_number():
    counter = {"n": 0}

    def bump():
        counter["n"] += 1

    m = harness.Timer("bump()", globals={"bump": bump}).timeit(500)
    assert m.number_per_run == 500 and len(m.raw_times) == 1
    assert counter["n"] == 500 + 5  # plus the warm-up block of max(number // 100, 2)


def test_adaptive_autorange_stops_on_confidence():
    m = harness.Timer("x + 1", setup="x = torch.ones(2)").adaptive_autorange(threshold=0.5, max_run_time=2.0)
    assert len(m.raw_times) > 3
    assert m.iqr / m.median < 0.5 or sum(m.raw_times) > 2.0


def test_num_threads_honoured_and_restored():
    before = torch.get_num_threads()
    seen: list[int] = []
    t = harness.Timer("seen.append(torch.get_num_threads())", globals={"seen": seen}, num_threads=3)
    t.timeit(3)
    assert set(seen) == {3}
    assert torch.get_num_threads() == before


def test_multiline_stmt_and_setup():
    setup = """
        import math
        xs = [1.0, 2.0]
        def f(v):
            return math.sqrt(v)
    """
    stmt = """
        total = 0.0
        for v in xs:
            total += f(v)
    """
    m = harness.Timer(stmt, setup=setup).timeit(100)
    assert m.median > 0


def test_setup_runs_once():
    calls: list[int] = []
    t = harness.Timer("pass", setup="calls.append(1)", globals={"calls": calls})
    t.blocked_autorange(min_run_time=0.05)
    t.timeit(10)
    assert calls == [1]


def test_batch_setup_gives_fresh_inputs_untimed():
    t = harness.Timer(
        "item.add_(1)\nassert item.item() == 1",
        setup="import torch",
        batch_setup="batch = [torch.zeros(()) for _ in range(number)]",
    )
    m = t.blocked_autorange(min_run_time=0.05)
    assert m.median > 0
    with pytest.raises(harness.StatementError, match="batch_setup"):
        harness.Timer("pass", batch_setup="batch = [1]").timeit(5)


def test_custom_timer_is_used():
    ticks = iter(range(0, 10**9, 2))
    m = harness.Timer("pass", timer=lambda: next(ticks)).timeit(10)
    assert m.raw_times == [2.0]  # our fake clock advances 2 s between reads


def test_drop_in_for_torch_utils_benchmark():
    import harness as benchmark

    t0 = benchmark.Timer(stmt="x * 2", setup="x = torch.ones(3)", label="mul", sub_label="3", description="eager")
    m = t0.blocked_autorange(min_run_time=0.05)
    assert isinstance(m, benchmark.Measurement)
    cmp = benchmark.Compare([m])
    cmp.trim_significant_figures()
    assert "mul" in str(cmp)
    assert benchmark.Timer("pass", language=benchmark.Language.PYTHON).language is benchmark.Language.PYTHON


# -- bad input -----------------------------------------------------------------


def test_syntax_error_names_section_and_line():
    with pytest.raises(harness.StatementError) as info:
        harness.Timer("x = 1\ny = (", setup="pass")
    msg = str(info.value)
    assert "stmt line 2" in msg and "y = (" in msg


def test_setup_syntax_error():
    with pytest.raises(harness.StatementError, match="setup line 1"):
        harness.Timer("pass", setup="def f(:")


def test_stmt_that_raises_names_line():
    t = harness.Timer("a = 1\nb = undefined_name + a", setup="pass")
    with pytest.raises(harness.StatementError) as info:
        t.timeit(10)
    msg = str(info.value)
    assert "stmt line 2" in msg and "NameError" in msg and "undefined_name" in msg
    assert isinstance(info.value.__cause__, NameError)


def test_setup_that_raises():
    with pytest.raises(harness.StatementError, match=r"setup line 2 .*ZeroDivisionError"):
        harness.Timer("pass", setup="x = 1\ny = 1 / 0").blocked_autorange()


@pytest.mark.parametrize("number", [0, -5, 1.5])
def test_bad_number(number):
    with pytest.raises(harness.UsageError, match="number must be a positive int"):
        harness.Timer("pass").timeit(number)


@pytest.mark.parametrize("value", [0, -1.0])
def test_bad_min_run_time(value):
    with pytest.raises(harness.UsageError, match="min_run_time must be a positive"):
        harness.Timer("pass").blocked_autorange(min_run_time=value)
    with pytest.raises(harness.UsageError, match="min_run_time must be a positive"):
        harness.Timer("pass").adaptive_autorange(min_run_time=value)


def test_bad_language():
    with pytest.raises(harness.UsageError, match="unknown language 'rust'"):
        harness.Timer("pass", language="rust")
