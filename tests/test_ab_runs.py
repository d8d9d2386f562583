"""A/B runs: ``bench --python A=X --python B=Y`` counts every task under two interpreters, in one command.

B is a second virtual environment on the same interpreter and the same torch,
whose ``sitecustomize.py`` wraps ``torch.mul`` in a Python function
doing extra work: known work, on exactly the benchmarks that multiply.

Cost (2-core machine): two bench runs of 2 statements on 2 sides, each side a
callgrind worker start-up; about 2-3 minutes.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import sysconfig
import textwrap
from pathlib import Path

import pytest

pytestmark = pytest.mark.skipif(shutil.which("valgrind") is None, reason="valgrind is not installed")

SUITE = textwrap.dedent(
    """
    import harness
    suite = harness.Suite()
    setup = "x = torch.ones(4, 4)\\nw = torch.ones(4, 4)"
    suite.timer("mul", "y = torch.mul(x, w)", setup=setup)
    suite.timer("add", "y = torch.add(x, w)", setup=setup)
    """
)

SLOWER_MUL = textwrap.dedent(
    """
    import torch

    _mul = torch.mul


    def _slower_mul(*args, **kwargs):
        for _ in range(20):
            pass
        return _mul(*args, **kwargs)


    # Replaced in place in torch's namespace: no other name's lookup changes. (Assigning
    # Tensor.__mul__ instead adds a key to the Tensor type's dict, and every other tensor
    # operator's lookup then costs ~1% more: real, but not the known work this test wants.)
    torch.mul = _slower_mul
    """
)


def make_env_with_slower_mul(where: Path) -> Path:
    """A venv on this interpreter that sees this environment's packages and wraps torch.mul."""
    base = getattr(sys, "_base_executable", sys.executable)
    # --system-site-packages: torch's own dependencies may live there (they do in setup.sh's .venv).
    subprocess.run([base, "-m", "venv", "--without-pip", "--system-site-packages", str(where)], check=True)
    site = Path(sysconfig.get_path("purelib", vars={"base": str(where), "platbase": str(where)}))
    ours = sysconfig.get_path("purelib")
    # addsitedir (not a plain path line) so this environment's .pth files (harness's editable install) apply too.
    (site / "ours.pth").write_text(f"import site; site.addsitedir({ours!r})\n")
    (site / "sitecustomize.py").write_text(SLOWER_MUL)
    return where / "bin" / "python"


def _bench(root: Path, out: Path, *pythons: str) -> subprocess.CompletedProcess:
    args = [sys.executable, "-m", "harness", "bench", "--path", str(root), "--mode", "instructions",
            "--counter", "callgrind", "--output", str(out)]
    for p in pythons:
        args += ["--python", p]
    return subprocess.run(args, capture_output=True, text=True, timeout=900)


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    root = tmp_path_factory.mktemp("ab")
    (root / "bench_ab.py").write_text(SUITE)
    env_b = make_env_with_slower_mul(root / "env_b")
    same = _bench(root, root / "same.json", f"A={sys.executable}", f"B={sys.executable}")
    differ = _bench(root, root / "ab.json", f"A={sys.executable}", f"B={env_b}")
    return root, same, differ


def _changes(out: Path) -> dict[str, float]:
    results = json.loads(out.read_text())["results"]
    by = {(r["task"]["name"], r["task"]["side"]): r["samples"][0] for r in results}
    return {name: by[(name, "B")] - by[(name, "A")] for name, _ in by}


def test_an_environment_against_itself_changes_nothing(runs):
    root, same, _ = runs
    assert same.returncode == 0, same.stderr
    assert _changes(root / "same.json") == {"mul": 0, "add": 0}
    assert "ab: A vs B" in same.stdout


def test_known_extra_work_shows_on_exactly_the_benchmarks_that_do_it(runs):
    root, _, differ = runs
    assert differ.returncode == 0, differ.stderr
    changes = _changes(root / "ab.json")
    # B's processes start differently (another sys.path, torch imported by sitecustomize), which
    # shifts every tensor op by the same ~140 instructions per run on this machine (README); the
    # known work is what comes on top, on exactly the benchmark that calls torch.mul.
    offset = changes["add"]
    assert abs(offset) < 0.03 * 9000
    assert changes["mul"] - offset > 1000  # a Python call, *args/**kwargs and a 20-step loop per run
    record = json.loads((root / "ab.json").read_text())
    sides = record["environment"]["sides"]
    assert set(sides) == {"A", "B"} and sides["B"]["executable"].startswith(str(root / "env_b"))
    assert sides["A"]["torch"] == sides["B"]["torch"] and sides["A"]["harness"]


def test_compare_symbols_names_the_interpreter_as_the_cause(runs):
    root, _, _ = runs
    proc = subprocess.run([sys.executable, "-m", "harness", "compare", str(root / "ab.json"), "--symbols"],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    mul_section = proc.stdout.split("ab/mul:")[1].split("ab/add:")[0]
    assert "_PyEval_EvalFrameDefault" in mul_section or "ceval.c" in mul_section
    assert "A vs B" in proc.stdout
