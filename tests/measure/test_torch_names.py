"""Every public name of torch.utils.benchmark is in harness and behaves as torch's.

Includes torch's ``Timer._timer_cls`` hook: a Timer subclass whose timer class
returns scripted times must get, from harness, the numbers torch gets from the
same script (the same calls in the same order: calibration, block sizes,
stopping rules, statistics to the last bit).
"""

from __future__ import annotations

import numbers
import random

import numpy as np
import pytest
import torch
import torch.utils.benchmark as tb

import harness


def test_every_public_name_of_torchs_module_is_in_harness():
    modules = {"math", "torch", "utils", "op_fuzzers", "timer"}  # modules and torch's default clock function
    theirs = {n for n in dir(tb) if not n.startswith("_")} - modules
    assert theirs == set(harness.TORCH_NAMES)
    for name in harness.TORCH_NAMES:
        assert name in harness.__all__
        getattr(harness, name)
    assert harness.Number is numbers.Number
    assert harness.CopyIfCallgrind is tb.CopyIfCallgrind
    assert [(c.name, c.value) for c in harness.Colorize] == [(c.name, c.value) for c in tb.Colorize]


def test_helpers_give_torchs_results():
    rng = random.Random(4)
    for _ in range(200):
        x = 10 ** rng.uniform(-10, 2) * rng.choice([1, -1])
        n = rng.randint(1, 4)
        assert harness.trim_sigfig(x, n) == tb.trim_sigfig(x, n)
        if x > 1e-9:
            assert harness.select_unit(x) == tb.select_unit(x)
    for unit in ("ns", "us", "ms", "s"):
        assert harness.unit_to_english(unit) == tb.unit_to_english(unit)
    items = [3, 1, 3, "a", 1, None, "a"]
    assert harness.ordered_unique(items) == tb.ordered_unique(items)
    before = torch.get_num_threads()
    with harness.set_torch_threads(1):
        assert torch.get_num_threads() == 1
    assert torch.get_num_threads() == before


def test_fuzzer_generates_what_torchs_generates():
    def take(module):
        fuzzer = module.Fuzzer(
            parameters=[module.FuzzedParameter("n", minval=1, maxval=64, distribution="loguniform"),
                        module.FuzzedParameter("k", minval=1, maxval=8, distribution="uniform")],
            tensors=[module.FuzzedTensor("x", size=("n", "k"), probability_contiguous=0.5),
                     module.FuzzedTensor("y", size=("k",), dtype=torch.int32)],
            seed=7,
        )
        return list(fuzzer.take(5))

    for (ours, our_props, our_params), (theirs, their_props, their_params) in zip(take(harness), take(tb), strict=True):
        assert our_params == their_params
        assert our_props["x"]["numel"] == their_props["x"]["numel"]
        for name in ("x", "y"):
            assert torch.equal(ours[name], theirs[name])


def test_custom_distributions_can_be_built_and_sample_as_torch_would():
    try:
        tb.FuzzedParameter("d", distribution={1: 0.5, 2: 0.5})  # torch 2.13's inverted check raises
    except AssertionError as e:
        assert "Distribution is not normalized" in str(e)
    ours = harness.FuzzedParameter("d", distribution={1: 0.3, 2: 0.7})
    theirs = tb.FuzzedParameter("d", minval=1, maxval=2, distribution="uniform")
    theirs._distribution, theirs._minval, theirs._maxval = {1: 0.3, 2: 0.7}, None, None  # past the check
    a, b = np.random.RandomState(3), np.random.RandomState(3)
    assert [ours.sample(a) for _ in range(50)] == [theirs.sample(b) for _ in range(50)]
    for bad, message in (({1: 0.5, 2: 0.4}, "not normalized"), ({1: 1.5, 2: -0.5}, "cannot be negative")):
        with pytest.raises(AssertionError, match=message):
            harness.FuzzedParameter("d", distribution=bad)
    with pytest.raises(AssertionError, match="'minval' must be None"):
        harness.FuzzedParameter("d", minval=1, distribution={1: 1.0})


class _Scripted:
    """A timer class for ``_timer_cls``: each block's time drawn from a seeded generator.

    Costs per statement (seconds per run); 300 ns of clock overhead per block.
    """

    costs = {"pass": 9e-9, "cheap()": 3e-6, "dear()": 40e-6, "with torch.no_grad():\n    y = x + 1": 7e-6}
    clock = 300e-9

    def __init__(self, stmt, setup, timer, globals):
        assert callable(timer) and globals["torch"] is torch  # what torch's Timer passes
        self.rng = np.random.RandomState(11)
        self.cost = self.costs[stmt]

    def timeit(self, number):
        noisy = lambda mean: max(self.rng.normal(mean, mean * 0.04), 5e-9)  # noqa: E731
        return noisy(self.clock) + noisy(self.cost * number)


@pytest.mark.parametrize("stmt", list(_Scripted.costs))
def test_timer_cls_is_timed_as_torch_times_it(stmt):
    def run(module):
        timer = type("ScriptedTimer", (module.Timer,), {"_timer_cls": _Scripted})
        calls = []
        stmt_text = f"\n        {stmt.replace(chr(10), chr(10) + '        ')}\n    " if "\n" in stmt else stmt
        blocked = timer(stmt_text, label="L", num_threads=2).blocked_autorange(
            callback=lambda n, t: calls.append((n, t)), min_run_time=3)
        adaptive = timer(stmt, sub_label="s").adaptive_autorange(threshold=0.05, max_run_time=2)
        single = timer(stmt).timeit(1000)
        return [(m.number_per_run, m.raw_times, repr(m.mean), m.median, m.iqr, repr(m).splitlines()[1:])
                for m in (blocked, adaptive, single)], calls

    assert run(harness) == run(tb)
