"""benchmarks/compile_time/noise.py --write-expected: the expected file the gate reads, margins from measured spreads."""

from __future__ import annotations

import importlib.util
from pathlib import Path

REPO = Path(__file__).resolve().parents[3]


def _noise():
    spec = importlib.util.spec_from_file_location("compile_time_noise", REPO / "benchmarks" / "compile_time" / "noise.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_written_expected_file_gates_with_margins_from_the_spread(tmp_path, cli):
    noise = _noise()
    path = tmp_path / "expected.csv"
    rows = [
        ("add_loop_eager", "compile_time_instruction_count", 3844914920.0, noise.suggested_margin(0.002), 0.002),
        ("disable_overhead", "instruction_count", 6199.0, noise.suggested_margin(0.01), 0.01),
    ]
    noise.write_expected(str(path), rows, "callgrind", 3, "python benchmarks/compile_time/noise.py --repeats 3")
    text = path.read_text()
    assert "# Written by: python benchmarks/compile_time/noise.py --repeats 3" in text
    assert "counter callgrind" in text and "median of 3 runs" in text and "0.20%-1.00%" in text
    assert text.splitlines()[-2:] == [
        "add_loop_eager,compile_time_instruction_count,3844914920,0.015",  # 3 x 0.2% is under the 1.5% floor
        "disable_overhead,instruction_count,6199,0.03",  # 3 x 1%
    ]
    results = tmp_path / "results.csv"
    results.write_text(
        "name,metric,value\nadd_loop_eager,compile_time_instruction_count,3900000000\n"
        "disable_overhead,instruction_count,6500\n"
    )
    r = cli("check", str(results), "--expected", str(path))
    # +1.4% is within 1.5%; +4.9% is beyond 3%.
    assert r.returncode == 1 and r.stdout.count("REGRESSION") == 1 and " ok " in r.stdout
