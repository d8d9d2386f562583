"""torch's own examples of torch.utils.benchmark, run with that module bound to harness.

The examples are read from the installed torch (torch/utils/benchmark/examples/),
unchanged; while one runs, ``torch.utils.benchmark`` (and its op fuzzers) is
harness, so every Timer, Compare and Fuzzer it builds is ours. Each must end as
it does with torch and print what torch prints, numbers aside: the same
tables (title, columns, rows, thread groups, unit line) and the same
Measurement reprs. ``fuzzer.py`` and ``op_benchmark.py`` stop inside torch
2.13's own Fuzzer (its distribution check is inverted); harness carries the
corrected one, so here they run to the end.

Reduced configurations, so the file takes seconds (said where used):
``fuzzer.py`` times 250 inputs for 0.1 s each and ``op_benchmark.py`` 3 x 100
pairs for 1 s each; here each block loop runs for ``FAST_RUN_TIME``, and
``op_benchmark.run`` is called for 2 inputs per statement. ``simple_timeit.py``
(about 2 s) and ``compare.py`` (about 11 s) run as they are.
"""

from __future__ import annotations

import contextlib
import importlib.util
import re
import sys
import types
from collections.abc import Iterator
from pathlib import Path

import pytest
import torch
import torch.utils.benchmark as tb

import harness
from harness.define import fuzzer as harness_fuzzer

EXAMPLES = Path(tb.__file__).parent / "examples"
FAST_RUN_TIME = 0.002
OP_FUZZER_MODULES = {
    "binary": "BinaryOpFuzzer",
    "unary": "UnaryOpFuzzer",
    "spectral": "SpectralOpFuzzer",
    "sparse_binary": "BinaryOpSparseFuzzer",
    "sparse_unary": "UnaryOpSparseFuzzer",
}


def _torch_refuses_custom_distributions() -> bool:
    """torch 2.13's inverted check (a torch that fixed it runs these examples itself)."""
    try:
        tb.FuzzedParameter("d", distribution={1: 1.0})
    except AssertionError:
        return True
    return False


class _FastTimer(harness.Timer):
    """harness.Timer whose block loops run for FAST_RUN_TIME (the reduced configurations)."""

    def blocked_autorange(self, callback=None, min_run_time: float = 0.2):
        return super().blocked_autorange(callback, min_run_time=min(min_run_time, FAST_RUN_TIME))


@contextlib.contextmanager
def bound_to_harness(monkeypatch: pytest.MonkeyPatch, timer: type = harness.Timer) -> Iterator[None]:
    """``torch.utils.benchmark`` (and ``...op_fuzzers.<name>``) resolve to harness while an example loads and runs."""
    module = types.ModuleType("harness_as_torch_utils_benchmark")
    for name in harness.TORCH_NAMES:
        setattr(module, name, getattr(harness, name))
    module.Timer = timer
    op_fuzzers = types.ModuleType("harness_op_fuzzers")
    monkeypatch.setitem(sys.modules, "torch.utils.benchmark", module)
    monkeypatch.setitem(sys.modules, "torch.utils.benchmark.op_fuzzers", op_fuzzers)
    for submodule, cls in OP_FUZZER_MODULES.items():
        bound = types.ModuleType(f"harness_op_fuzzers.{submodule}")
        setattr(bound, cls, getattr(harness_fuzzer, cls))
        setattr(op_fuzzers, submodule, bound)
        monkeypatch.setitem(sys.modules, f"torch.utils.benchmark.op_fuzzers.{submodule}", bound)
    module.op_fuzzers = op_fuzzers
    monkeypatch.setattr(torch.utils, "benchmark", module)  # `import torch.utils.benchmark as b` reads the attribute
    yield


def _load(name: str) -> types.ModuleType:
    spec = importlib.util.spec_from_file_location(f"torch_example_{name}", EXAMPLES / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _table_skeleton(text: str) -> list[tuple[str, ...]]:
    """Each table's title, column headers, row names, thread groups and unit line: what a table is, numbers aside."""
    skeleton = []
    for line in text.splitlines():
        if line.startswith("[") or re.match(r"\d+ threads: -+$", line) or line.startswith("Times are in"):
            skeleton.append((line,))
        elif "|" in line:
            cells = [c.strip() for c in re.sub(r"\x1b\[[0-9;]*m", "", line).split("|")]
            is_header = not any(re.fullmatch(r"[0-9.]+( \(! \d+%\))?", c) for c in cells[1:])
            skeleton.append(tuple(cells) if is_header else (cells[0], len(cells)))
    return skeleton


def test_simple_timeit_prints_torchs_measurements(monkeypatch, capsys):
    with bound_to_harness(monkeypatch):
        _load("simple_timeit").main()
    out = capsys.readouterr().out
    runs = out.split("Run: ")[1:]
    assert len(runs) == 3
    for run in runs:
        timeit_repr, autorange_repr = re.findall(
            r"(<harness\.model\.measurement\.Measurement object at .*?)\n\n", run, re.S
        )
        # timeit: one block of 10000 runs; torch's repr of a single measurement
        assert timeit_repr.splitlines()[1:] == [
            "Broadcasting add (4x8)",
            timeit_repr.splitlines()[2],
            "  1 measurement, 10000 runs , 1 thread",  # torch's spacing
        ]
        assert re.fullmatch(r"  \d+\.\d\d (ns|us)", timeit_repr.splitlines()[2])
        lines = autorange_repr.splitlines()
        assert lines[1] == "Broadcasting add (4x8)"
        assert re.fullmatch(r"  Median: \d+\.\d\d (ns|us)", lines[2])
        assert re.fullmatch(r"  IQR:    \d+\.\d\d (ns|us) \(\d+\.\d\d to \d+\.\d\d\)", lines[3])
        assert re.fullmatch(r"  \d+ measurements, (1|10)+0* runs per measurement, 1 thread", lines[4])


def test_compare_example_prints_torchs_tables(monkeypatch, capsys):
    with bound_to_harness(monkeypatch):
        example = _load("compare")
        example.main()
    out = capsys.readouterr().out
    unformatted, formatted = out.split("== Unformatted ")[1].split("== Formatted ")
    # What torch's Compare prints for measurements of the same tasks (times aside): the
    # example's 72 timers, 2 repeats each, the second repeat merged into the first.
    sizes = [1, 10, 100, 1000, 10000, 50000]
    theirs = []
    for branch in ("master", "my_branch", "severe_regression"):
        for sub_label, stmt in (("add", "torch.add(x, y)"), ("add (extra +0)", "torch.add(x, y + zero)")):
            for size in sizes:
                for threads in (1, 4):
                    spec = tb.utils.common.TaskSpec(stmt, "pass", label="add", sub_label=sub_label,
                                                    description=f"size: {size}", env=branch, num_threads=threads)
                    theirs.append(tb.Measurement(1, [1e-6 * (1 + size / 1e4)] * 2, spec))
    expected = _table_skeleton(str(tb.Compare(theirs)))
    units = [line for line in out.splitlines() if line.startswith("Times are in")]
    assert len(units) == 2 and all(re.fullmatch(r"Times are in (micro|milli)seconds \((us|ms)\)\.", u) for u in units)
    for table in (unformatted, formatted):
        ours = _table_skeleton(table)
        assert [s for s in ours if not s[0].startswith("Times")] == [
            s for s in expected if not s[0].startswith("Times")
        ]
    assert "\x1b[" in formatted and "\x1b[" not in unformatted  # colorize() applies to the second print only


def test_fuzzer_example_runs_to_the_end(monkeypatch, capsys):
    """torch 2.13 stops this example in Fuzzer's distribution check; harness's corrected one lets it run.
    Reduced configuration: each of the 250 timings runs for FAST_RUN_TIME, not 0.1 s."""
    if _torch_refuses_custom_distributions():
        with pytest.raises(AssertionError, match="Distribution is not normalized"):
            _load("fuzzer").main()  # torch's own, unbound: where torch stops
    capsys.readouterr()
    with bound_to_harness(monkeypatch, timer=_FastTimer):
        _load("fuzzer").main()
    out = capsys.readouterr().out
    assert "250 / 250" in out
    assert re.search(r"Average attempts per valid config: \d+\.\d", out)
    best, worst = out.split("Best:")[1].split("Worst:")
    for listing in (best, worst):
        rows = re.findall(r"^ *\d+\.\d ns / element +\d+ \| .+ \| .+ \| .+ \| $", listing, re.M)
        assert len(rows) == 15, listing


def test_op_benchmark_example_runs_to_the_end(monkeypatch, capsys):
    """torch 2.13 cannot build its op fuzzers; bound to harness, the example's run() completes for
    each of its three statements. Reduced configuration: 2 inputs per statement (torch's main
    takes 100) and blocks for FAST_RUN_TIME instead of _MEASURE_TIME (1 s)."""
    from torch.utils.benchmark.op_fuzzers import unary

    if _torch_refuses_custom_distributions():
        with pytest.raises(AssertionError, match="Distribution is not normalized"):
            unary.UnaryOpFuzzer(seed=0)  # torch's own: where torch stops
    with bound_to_harness(monkeypatch):
        example = _load("op_benchmark")
        monkeypatch.setattr(example, "_MEASURE_TIME", FAST_RUN_TIME)
        for stmt, fuzzer in (("torch.median(x, dim=0)", example.UnaryOpFuzzer),
                             ("torch.square(x)", example.UnaryOpFuzzer),
                             ("x + y", example.BinaryOpFuzzer)):
            assert fuzzer is getattr(harness_fuzzer, fuzzer.__name__)
            example.run(n=2, stmt=stmt, fuzzer_cls=fuzzer)
    out = capsys.readouterr().out
    assert out.count("2 / 2") == 3
    for stmt in ("torch.median(x, dim=0)", "torch.square(x)", "x + y"):
        assert f"stmt: {stmt}\n diff    faster" in out
    assert len(re.findall(r"^ *\d+\.\d%    (int|float) ", out, re.M)) == 3 * 2 * 2  # each result in both halves
