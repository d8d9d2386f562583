"""benchmarks/self/gpu_check.py: without a GPU it says so and exits 0; its table and verdict work."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from rich.console import Console

REPO = Path(__file__).resolve().parents[1]
SCRIPT = REPO / "benchmarks" / "self" / "gpu_check.py"


@pytest.fixture(scope="module")
def gpu_check():
    spec = importlib.util.spec_from_file_location("gpu_check", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    sys.modules["gpu_check"] = module  # dataclasses look their module up there
    try:
        spec.loader.exec_module(module)
        yield module
    finally:
        sys.modules.pop("gpu_check", None)


@pytest.mark.skipif(torch.cuda.is_available(), reason="this machine has a GPU: the script checks it instead")
def test_without_a_gpu_it_says_so_and_exits_0():
    r = subprocess.run([sys.executable, str(SCRIPT)], cwd=REPO, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    assert "no CUDA device" in r.stdout and "nothing failed" in " ".join(r.stdout.split())


def test_the_table_names_every_path_and_a_failure_exits_non_zero(gpu_check):
    Check = gpu_check.Check
    ok = gpu_check.run_check("cuda events: gemv", "", 0.3, 1.0, lambda: (0.82, "gemv 8192x8192"))
    too_fast = gpu_check.run_check("L2 flush", "x", 1.05, 50, lambda: (0.98, "flush changed nothing"))
    raised = gpu_check.run_check("CUDA graphs", "x", 0.7, 1.3, lambda: 1 / 0)
    assert ok.passed and not too_fast.passed and not raised.passed
    assert raised.figure is None and raised.error == "ZeroDivisionError: division by zero"
    assert not Check("nan", float("nan"), "", 0, 1).passed

    console = Console(width=200, record=True)
    console.print(gpu_check.render([ok, too_fast, raised], "CUDA paths"))
    lines = console.export_text().splitlines()
    row = {name: next(line for line in lines if name in line) for name in ("cuda events", "L2 flush", "CUDA graphs")}
    assert "0.82" in row["cuda events"] and "0.3 .. 1" in row["cuda events"] and "pass" in row["cuda events"]
    assert "0.98 x" in row["L2 flush"] and "1.05 .. 50 x" in row["L2 flush"] and "FAIL" in row["L2 flush"]
    assert "FAIL" in row["CUDA graphs"] and "ZeroDivisionError" in row["CUDA graphs"]

    assert gpu_check.exit_code([ok]) == 0
    assert gpu_check.exit_code([ok, too_fast]) == 1 and gpu_check.exit_code([]) == 1
