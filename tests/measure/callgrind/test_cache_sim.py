"""Cache-aware counts: callgrind's cache simulation at a fixed geometry, its figures in the results.

The parser and the figures are checked on a small dump written here; the
counts themselves on real valgrind: the same gather over contiguous and over
strided indices runs the same instructions but misses the caches differently,
and a count repeated gives the same figures.
"""

from __future__ import annotations

import pytest

from harness.measure.callgrind.details import (
    PENDING,
    count_details,
    finish,
    pending,
    profile_from_json,
    profile_json,
)
from harness.measure.callgrind.profile import parse_text, totals_from_text
from harness.measure.counters.cache import FIGURES, GEOMETRY, figures, valgrind_flags
from harness.model.result import TaskResult
from harness.model.task import Task

# Two functions, main calling helper; events as callgrind --cache-sim=yes writes them.
DUMP = "\n".join([
    "desc: I1 cache: 32768 B, 64 B, 8-way associative",
    "positions: line",
    "events: Ir Dr Dw I1mr D1mr D1mw ILmr DLmr DLmw",
    "fl=(1) a.c",
    "fn=(1) main",
    "3 100 40 20 2 10 5 1 4 2",
    "cfn=(2) helper",
    "calls=1 9",
    "4 50 30 0 1 6",  # trailing zero events left out
    "fn=(2)",
    "9 50 30",
    "totals: 150 70 20 3 16 5 1 4 2",
])


def test_the_parser_reads_every_event_per_function_and_keeps_ir_as_before():
    p = parse_text(DUMP)
    assert p.events[:3] == ["Ir", "Dr", "Dw"]
    assert p.total == 150 and p.exclusive == {"a.c:main": 100, "a.c:helper": 50}
    assert p.inclusive["a.c:main"] == 150
    assert p.totals == {"Ir": 150, "Dr": 70, "Dw": 20, "I1mr": 3, "D1mr": 16, "D1mw": 5,
                        "ILmr": 1, "DLmr": 4, "DLmw": 2}
    assert p.exclusive_of("D1mr") == {"a.c:main": 10}
    assert p.inclusive_of("D1mr") == {"a.c:main": 16, "a.c:helper": 6}
    assert p.exclusive_of("Dr") == {"a.c:main": 40, "a.c:helper": 30}
    assert totals_from_text(DUMP) == p.totals


def test_figures_are_iai_callgrinds():
    f = figures(parse_text(DUMP).totals)
    assert f["L1_hits"] == 150 + 70 + 20 - (3 + 16 + 5)
    assert f["LL_hits"] == (3 + 16 + 5) - (1 + 4 + 2)
    assert f["RAM_hits"] == 1 + 4 + 2
    assert f["estimated_cycles"] == f["L1_hits"] + 5 * f["LL_hits"] + 35 * f["RAM_hits"]
    assert list(f) == list(FIGURES)
    assert valgrind_flags() == ["--cache-sim=yes", "--I1=32768,8,64", "--D1=32768,8,64", "--LL=8388608,16,64"]


def test_a_count_gets_its_figures_per_run_less_the_baseline_and_its_cycles_per_layer(tmp_path):
    stmt, base = parse_text(DUMP), parse_text(DUMP.replace("totals: 150", "totals: 110"))
    extra = count_details([stmt], base, 10, "symbols", "")
    assert extra["cache"]["Ir"] == 4.0 and extra["cache"]["Dr"] == 0.0
    assert extra["cache_geometry"] == GEOMETRY
    assert sum(extra["cycles_layers"].values()) == figures(stmt.totals)["estimated_cycles"] - figures(base.totals)[
        "estimated_cycles"]
    # A result finished from the dump a counting child left, with its baseline kept as JSON, gets the same.
    dump = tmp_path / "callgrind.out.1.1"
    dump.write_text(DUMP)
    task = Task(suite="s", name="n", kind="timer", params={"stmt": "pass"}, mode="instructions")
    left = TaskResult(
        task=task,
        status="ok",
        unit="instructions",
        number_per_run=10,
        extra={PENDING: pending([str(dump)], profile_from_json(profile_json(base)), "total", None, False)},
    )
    done = finish(left)
    assert done.ok and done.extra["cache"] == pytest.approx(extra["cache"])


def test_an_instructions_only_dump_has_no_cache_figures():
    text = "events: Ir\nfl=(1) a.c\nfn=(1) f\n1 5\ntotals: 5\n"
    assert "cache" not in count_details([parse_text(text)], None, 1, "symbols", None)
    assert profile_json(parse_text(text)).keys() == {"total", "exclusive", "inclusive", "out"}


GATHER_SETUP = """
import torch
src = torch.zeros(1 << 22)
contiguous = torch.arange(1 << 16)
strided = torch.arange(1 << 16) * 64
"""


def test_contiguous_and_strided_gathers_count_alike_but_miss_the_caches_apart():
    from harness.measure.timer import Timer

    c1, c2 = Timer("torch.take(src, contiguous)", setup=GATHER_SETUP).collect_callgrind(
        number=2, repeats=2, cache_sim=True)
    (s,) = Timer("torch.take(src, strided)", setup=GATHER_SETUP).collect_callgrind(number=2, repeats=1, cache_sim=True)
    contiguous, strided = c1.own_cache(), s.own_cache()
    assert contiguous is not None and strided is not None
    assert c1.own_cache() == c2.own_cache()  # deterministic: a repeat gives the same figures, every one
    assert abs(strided["Ir"] - contiguous["Ir"]) <= 0.01 * contiguous["Ir"]
    assert strided["D1mr"] > 4 * contiguous["D1mr"]
    assert strided["estimated_cycles"] > 1.5 * contiguous["estimated_cycles"]
    assert contiguous["Ir"] == c1.own_counts(denoise=False)


def test_a_cache_sim_worker_gets_the_geometry_and_HARNESS_CACHE_SIM():
    import shutil

    from harness.measure.callgrind.counter import CallgrindCounter

    if shutil.which("valgrind") is None:
        pytest.skip("valgrind is not installed")
    sim, plain = CallgrindCounter(cache_sim=True), CallgrindCounter()
    try:
        prefix = sim.worker_prefix()
        assert prefix[prefix.index("--tool=callgrind"):][-len(valgrind_flags()) - 2:-2] == valgrind_flags()
        assert sim.worker_env()["HARNESS_CACHE_SIM"] == "1"
        assert "HARNESS_CACHE_SIM" not in plain.worker_env() and "--cache-sim=yes" not in plain.worker_prefix()
    finally:
        sim.close()
        plain.close()
