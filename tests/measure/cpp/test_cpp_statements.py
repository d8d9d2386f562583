"""C++ statements, TorchScript and grouped definitions with a real compiler, real torch, real workers.

Cost: every C++ statement used here is compiled in one batch by the
``compiled`` fixture (module scope, so once per session). On an empty cache
that is two compiles of ~20 s of CPU each (the batch holds two statements
that do not compile, so it fails once and the rest is rebuilt) while the torch
PCH is built in the background at the lowest priority (~40 s of CPU);
``test_pch_is_used`` waits for that PCH and compiles one more statement
(~8 s of CPU). Measured on a shared 2-core VM at load ~4: the file took 3-3.5
minutes from an empty cache (150 s of it the fixture); from a warm cache the
fixture is a cache hit and the file takes under a minute.
"""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
import textwrap
import time
import uuid
import warnings
from pathlib import Path

import pytest
import torch

import harness
from conftest import suite_root
from harness.define.torchscript import Signature, ensure_scripted, function_source, quiet_deprecation
from harness.define.torchscript import load as load_torchscript
from harness.errors import StatementError, UsageError
from harness.measure.cpp.block import CppBlock
from harness.measure.cpp.build import BuildReport, build
from harness.measure.cpp.include_set import choose, static_choice
from harness.measure.cpp.log import read_log
from harness.measure.cpp.pch import pch_enabled, wait_for_pch
from harness.measure.cpp.statement import CppStatement
from harness.run.grouped_task import probe, run_grouped_task
from harness.run.prepare import cpp_statement

MUL_SETUP = "auto x = torch::ones({4, 4});\nauto w = torch::ones({4, 4});\nw.set_requires_grad(true);"
SETUP_COUNT = dict(
    stmt="auto y = torch::full({1}, static_cast<double>(setup_runs));",
    setup="++setup_runs;",
    global_setup="static int setup_runs = 0;",
)
THROWS = 'throw std::runtime_error("boom from stmt");'
SEGFAULT = "*static_cast<volatile int*>(nullptr) = 1;"
SHAPE_ERROR = dict(stmt="auto y = torch::mm(x, torch::ones({3, 3}));", setup="auto x = torch::ones({4, 4});")
BAD_STMT = "auto a = x + 1;\nauto y = undefined_name * x;"
BAD_SETUP = "auto x = torch::ones({2});\nauto w = x +;"
BATCH_SETUP = (
    "std::vector<torch::Tensor> batch;\nfor (int64_t i = 0; i < number; ++i) batch.push_back(torch::zeros({2}));"
)

DETERMINISTIC = harness.GroupedSetup(
    py_setup="""
        x = torch.arange(16, dtype=torch.float32).reshape(4, 4) / 7
        w = torch.linspace(-1, 1, 16).reshape(4, 4).requires_grad_()
    """,
    cpp_setup="""
        auto x = torch::arange(16, torch::kFloat32).reshape({4, 4}) / 7;
        auto w = torch::linspace(-1, 1, 16).reshape({4, 4}).requires_grad_();
    """,
)
FORWARD = harness.GroupedStmts(
    "y = torch.relu(x * w + 0.5)", "auto y = torch::relu(x * w + 0.5);", setup=DETERMINISTIC,
    signature="f(x, w) -> y", torchscript=True, name="fwd_only",
)
AUTOGRAD = harness.GroupedStmts(
    "y = (torch.tanh(x * w) * x).sum()", "auto y = (torch::tanh(x * w) * x).sum();", setup=DETERMINISTIC,
    signature="f(x, w) -> y", torchscript=True, autograd=True, name="with_grad",
)
LINEAR = harness.GroupedModules(
    "model = nn.Linear(4, 2)", "auto model = torch::nn::Linear(4, 2);",
    setup=harness.GroupedSetup("x = torch.ones(3, 4)", "auto x = torch::ones({3, 4});"),
    signature="f(x) -> y", torchscript=True, name="linear",
)


def _plain(stmt: str, setup: str = "", global_setup: str = "", batch_setup: str = "") -> CppStatement:
    return CppBlock(stmt, setup, global_setup, batch_setup=batch_setup).statement


def _grouped_tasks() -> list[harness.Task]:
    return [t for d in (FORWARD, AUTOGRAD, LINEAR) for t in d.expand("t")]


def _all_statements() -> list[CppStatement]:
    plain = [
        _plain("auto y = x * w;", MUL_SETUP),
        CppBlock(**SETUP_COUNT, output="y").statement,
        _plain(THROWS),
        _plain(SEGFAULT),
        _plain(**SHAPE_ERROR),
        _plain("item.add_(1);", batch_setup=BATCH_SETUP),
        _plain(BAD_STMT, "auto x = torch::ones({2});"),
        _plain("auto y = x;", BAD_SETUP),
    ]
    return plain + [s for s in map(cpp_statement, _grouped_tasks()) if s is not None]


@pytest.fixture(scope="module")
def compiled() -> BuildReport:
    """Every C++ statement of this file in one build (a cache hit when an earlier session built them)."""
    t0 = time.monotonic()
    report = build(_all_statements())
    print(f"\nC++ batch: {len(report.compiled)} compiled, {len(report.failed)} failed, "
          f"{report.built} built now, {time.monotonic() - t0:.1f} s")
    return report


def test_batch_compiles_the_good_statements_and_records_the_bad(compiled):
    statements = _all_statements()
    bad = {_plain(BAD_STMT, "auto x = torch::ones({2});").key, _plain("auto y = x;", BAD_SETUP).key}
    assert set(compiled.failed) == bad
    assert set(compiled.compiled) == {s.key for s in statements} - bad
    # Tensor code is for the lean set, torch::nn::Linear for lean+api (the lean
    # set and its header), torch::jit (the TorchScript rows) for script.
    good = [s for s in statements if s.key not in bad]
    assert {static_choice(s)[0] for s in good} == {"lean", "lean+api", "script"}
    assert static_choice(_plain("auto y = x * w;", MUL_SETUP))[0] == "lean"
    # What this call compiled went into one module per set, each statement with
    # its set. A statement an earlier run compiled is a cache hit with the set
    # it was built with: a cache kept by an older harness, whose rules gave
    # Linear the frontend set, is reused, not rebuilt (the code is the same).
    built_now = [c for c in compiled.compiled.values() if c.module.name in compiled.modules]
    assert all(c.include_set == choose(c.statement)[0] for c in built_now)
    assert len(compiled.modules) == len({c.include_set for c in built_now})
    assert {c.module.name for c in built_now} == set(compiled.modules)


def test_compile_error_names_the_users_line(compiled):
    message = compiled.failed[_plain(BAD_STMT, "auto x = torch::ones({2});").key]
    assert "stmt:2:" in message and "undefined_name" in message
    assert "2 | auto y = undefined_name * x;" in message
    assert "~" not in message and "harness_s" not in message  # no codegen artefacts
    setup_message = compiled.failed[_plain("auto y = x;", BAD_SETUP).key]
    assert "setup:2:" in setup_message
    with pytest.raises(StatementError, match=r"stmt:2:"):
        harness.Timer(BAD_STMT, setup="auto x = torch::ones({2});", language="cpp").timeit(10)


def test_cpp_timer_positive_and_close_to_python(compiled):
    cpp = harness.Timer("auto y = x * w;", setup=MUL_SETUP, language="cpp")
    py = harness.Timer("y = x * w", setup="x = torch.ones(4, 4)\nw = torch.ones(4, 4, requires_grad=True)")
    m_cpp = cpp.blocked_autorange(min_run_time=0.2)
    m_py = py.blocked_autorange(min_run_time=0.2)
    assert m_cpp.median > 0 and all(t > 0 for t in m_cpp.times)
    assert m_cpp.number_per_run > 1
    assert 0.1 < m_cpp.median / m_py.median < 10
    assert cpp.timeit(100).number_per_run == 100
    adaptive = cpp.adaptive_autorange(threshold=0.5, max_run_time=1.0)
    assert adaptive.median > 0 and len(adaptive.times) >= 1


def test_setup_runs_once_per_timer(compiled):
    timer = harness.Timer(SETUP_COUNT["stmt"], SETUP_COUNT["setup"], SETUP_COUNT["global_setup"], language="cpp")
    timer._block = CppBlock(**SETUP_COUNT, output="y")  # the same statement, with y reported by probes
    timer.timeit(50)
    timer.blocked_autorange(min_run_time=0.05)
    timer.timeit(10)
    # Probe the routine the Timer used, without resetting it: setup ran once.
    state = timer._block.compiled
    assert state.ready
    (count,) = state.probe()
    assert count.item() == 1.0


def test_cached_statement_does_not_rebuild(compiled):
    """A fresh process finds every statement in the cache: hits only, no compiler, module files untouched."""
    so = next(iter(compiled.compiled.values())).module.path
    mtime = os.stat(so).st_mtime_ns
    builds_before = sum(1 for e in read_log() if e["event"] == "builds")
    # tests/ goes before the working directory, whose conftest.py is the root one, not tests/conftest.py.
    code = textwrap.dedent(
        f"""
        import json, sys
        sys.path[:0] = [{str(Path(__file__).parent)!r}, {str(Path(__file__).parents[2])!r}]
        from test_cpp_statements import _all_statements
        from harness.measure.cpp.build import build
        from harness.measure.cpp.log import STATS
        report = build(_all_statements())
        print(json.dumps({{"stats": dict(STATS), "built": report.built}}))
        """
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300, check=True)
    data = json.loads(out.stdout.strip().splitlines()[-1])
    assert data["built"] == 0
    assert data["stats"].get("builds", 0) == 0 and data["stats"].get("misses", 0) == 0
    assert data["stats"]["hits"] == len(compiled.compiled) + len(compiled.failed)
    assert sum(1 for e in read_log() if e["event"] == "builds") == builds_before
    assert os.stat(so).st_mtime_ns == mtime


def test_uncaught_cpp_exception_is_a_statement_error(compiled):
    with pytest.raises(StatementError, match=r"stmt raised std::runtime_error: boom from stmt"):
        harness.Timer(THROWS, language="cpp").timeit(5)
    # A c10::Error reads like torch's message, without the C++ backtrace.
    with pytest.raises(StatementError) as info:
        harness.Timer(SHAPE_ERROR["stmt"], SHAPE_ERROR["setup"], language="cpp").timeit(5)
    message = str(info.value)
    assert message.startswith("C++ stmt raised c10::") and "cannot be multiplied" in message
    assert "Exception raised from" not in message and "frame #" not in message
    # The process carries on: the same Timer machinery still measures.
    assert harness.Timer("auto y = x * w;", setup=MUL_SETUP, language="cpp").timeit(5).median > 0


def test_batch_setup_binds_one_item_per_run(compiled):
    m = harness.Timer("item.add_(1);", batch_setup=BATCH_SETUP, language="cpp").timeit(200)
    assert m.number_per_run == 200 and m.median > 0


def test_cli_isolates_crashes_and_compile_errors(compiled, tmp_path, cli):
    root = suite_root(tmp_path, "crashy", f"""
        import harness
        suite = harness.Suite()
        suite.timer("ok", {"auto y = x * w;"!r}, setup={MUL_SETUP!r}, language="cpp", min_run_time=0.05)
        suite.timer("throws", {THROWS!r}, language="cpp")
        suite.timer("segfault", {SEGFAULT!r}, language="cpp")
        suite.timer("bad", {BAD_STMT!r}, setup="auto x = torch::ones({{2}});", language="cpp")
        suite.timer("after", {"auto y = x * w;"!r}, setup={MUL_SETUP!r}, language="cpp", min_run_time=0.05)
    """)
    out = tmp_path / "run.json"
    proc = cli("bench", "crashy", "--path", str(root), "-o", str(out), timeout=600)
    assert proc.returncode == 1, proc.stderr
    results = {r["task"]["name"]: r for r in json.loads(out.read_text())["results"]}
    assert results["ok"]["status"] == "ok" and results["after"]["status"] == "ok"
    assert "std::runtime_error: boom from stmt" in results["throws"]["error"]
    assert "SIGSEGV" in results["segfault"]["error"]
    assert "stmt:2:" in results["bad"]["error"]


def _by_variant(tasks: list[harness.Task], autograd: str) -> dict[str, harness.Task]:
    return {t.params["variant"]: t for t in tasks if t.params["autograd"] == autograd}


def test_torchscript_from_python_and_cpp_match_eager(compiled):
    outputs = {v: probe(t)[0] for v, t in _by_variant(FORWARD.expand("t"), "forward").items()}
    assert set(outputs) == {"py-eager", "py-ts", "cpp-eager", "cpp-ts"}
    expected = outputs["py-eager"]
    assert expected.shape == (4, 4) and expected.abs().sum() > 0
    for variant, y in outputs.items():
        torch.testing.assert_close(y, expected, msg=f"{variant} differs from Python eager")


def test_torchscript_deprecation_warnings_are_silenced_and_only_those():
    source = function_source(f"y = x + 1  # {uuid.uuid4()}", Signature.parse("f(x) -> y"))
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        path = ensure_scripted(source, "function")
        model = load_torchscript(path)
        with quiet_deprecation():
            warnings.warn("something else is deprecated", DeprecationWarning, stacklevel=1)
    torch.testing.assert_close(model(torch.ones(2)), torch.full((2,), 2.0))
    messages = [str(w.message) for w in seen]
    assert not [m for m in messages if "torch.jit" in m], messages
    assert "something else is deprecated" in messages


def test_autograd_variants_compute_gradients(compiled):
    tasks = AUTOGRAD.expand("t")
    backward = _by_variant(tasks, "forward+backward")
    assert set(backward) == {"py-eager", "py-ts", "cpp-eager", "cpp-ts"}
    assert all(t.params["stmt"].rstrip().endswith(("y.backward()", "y.backward();", "y.toTensor().backward();"))
               for t in backward.values())
    x = torch.arange(16, dtype=torch.float32).reshape(4, 4) / 7
    w = torch.linspace(-1, 1, 16).reshape(4, 4)
    expected = x * x * (1 - torch.tanh(x * w) ** 2)  # d/dw of sum(tanh(x*w) * x)
    for variant, task in backward.items():
        y, grad_x, grad_w = probe(task)
        assert grad_x is None, variant  # x does not require grad
        assert grad_w is not None, f"{variant}: no gradient for w"
        torch.testing.assert_close(grad_w, expected, msg=f"{variant}: wrong gradient")
        assert y.numel() == 1
    # Forward-only variants leave gradients alone.
    for variant, task in _by_variant(tasks, "forward").items():
        assert probe(task)[2] is None, variant
    # Repeated backward in the timed loop works (a fresh graph per run).
    result = run_grouped_task(backward["cpp-eager"], min_run_time=0.05)
    assert result.ok and result.median > 0


def test_modules_run_in_all_four_variants(compiled):
    for task in LINEAR.expand("t"):
        result = run_grouped_task(task, min_run_time=0.05)
        assert result.ok, (task.name, result.error)
        assert result.median > 0
    y = probe(_by_variant(LINEAR.expand("t"), "forward")["cpp-ts"])[0]
    assert y.shape == (3, 2)


def test_grouped_expansion_names_and_params():
    names = [t.name for t in AUTOGRAD.expand("s")]
    assert names == [
        "with_grad[py-eager,fwd,t1]", "with_grad[py-eager,bwd,t1]", "with_grad[py-ts,fwd,t1]",
        "with_grad[py-ts,bwd,t1]", "with_grad[cpp-eager,fwd,t1]", "with_grad[cpp-eager,bwd,t1]",
        "with_grad[cpp-ts,fwd,t1]", "with_grad[cpp-ts,bwd,t1]",
    ]
    t = AUTOGRAD.expand("s")[-1]
    assert t.kind == "grouped"
    assert t.params["language"] == "cpp" and t.params["runtime"] == "torchscript"
    assert t.params["autograd"] == "forward+backward" and t.params["signature"] == "f(x, w) -> y"
    threads = harness.GroupedStmts("x + 1", None, num_threads=(1, 2), name="add").expand("s")
    assert [t.name for t in threads] == ["add[py-eager,fwd,t1]", "add[py-eager,fwd,t2]"]
    variants = harness.GroupedVariants(
        """
        # @setup
        x = torch.ones(4)
        # @add
        x + 1
        x + x
        # @neg
        -x
        """,
        """
        // @setup
        auto x = torch::ones({4});
        // @add
        x + 1;
        x + x;
        """,
        name="pw",
    )
    names = [t.name for t in variants.expand("s")]
    assert names == [
        "pw.add.0[py-eager,fwd,t1]", "pw.add.0[cpp-eager,fwd,t1]",
        "pw.add.1[py-eager,fwd,t1]", "pw.add.1[cpp-eager,fwd,t1]", "pw.neg[py-eager,fwd,t1]",
    ]
    assert harness.parse_stmts(
        """
        Python   | C++
        -------- | --------
        y = x    | auto y = x;
        """
    ) == ("y = x", "auto y = x;")


def test_grouped_definitions_reject_bad_input():
    with pytest.raises(UsageError, match="autograd=True needs a signature"):
        harness.GroupedStmts("x", "x;", autograd=True)
    with pytest.raises(UsageError, match="torchscript=True needs a signature"):
        harness.GroupedStmts("x", "x;", torchscript=True)
    with pytest.raises(UsageError, match="invalid signature"):
        harness.GroupedStmts("x", "x;", signature="g(x) => y")
    with pytest.raises(UsageError, match="same number of lines|line\\(s\\)"):
        harness.GroupedVariants("# @a\nx\ny", "// @a\nx;", name="v")
    with pytest.raises(UsageError, match="needs a name"):
        harness.GroupedStmts("x", "x;").expand("s")


def test_exact_bracketed_name_selects_one_task(tmp_path, cli):
    root = suite_root(tmp_path, "g", """
        import harness
        suite = harness.Suite()
        suite.add(harness.GroupedStmts('x', 'x;', setup=harness.GroupedSetup('x = 1', 'int x = 1;'), name='n'))
    """)
    proc = cli("list", "g", "--path", str(root), "-k", "n[cpp-eager,fwd,t1]")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["g", "n[cpp-eager,fwd,t1]"]


def test_grouped_table_rows_and_overhead():
    from rich.console import Console

    from harness.model.result import TaskResult
    from harness.present.grouped_table import grouped_table

    results = []
    for task, median in zip(FORWARD.expand("t"), (3e-6, 9e-6, 1e-6, 4e-6), strict=True):
        results.append(TaskResult(task=task, status="ok", samples=[median] * 5, number_per_run=100))
    console = Console(width=200, record=True, file=io.StringIO())
    console.print(grouped_table("t", results))
    text = console.export_text()
    row = next(line for line in text.splitlines() if "fwd_only" in line)
    assert [c.strip() for c in row.split("│")[1:-1]] == ["fwd_only", "3", "9", "1", "4", "2,000", "67%"]


def test_pch_is_used(compiled):
    """Once the background PCH exists, a new statement compiles against it (flags match exactly)."""
    if not pch_enabled():
        pytest.skip("PCH disabled (HARNESS_CPP_PCH=0 or not g++)")
    assert wait_for_pch(timeout=600), "the PCH build did not produce a .gch"
    statement = CppStatement(f"auto y = x + 1; // {uuid.uuid4()}", "auto x = torch::ones({2});")
    report = build([statement])
    assert report.built == 1
    assert report.compiled[statement.key].pch_used


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
def test_cuda_statement_time_includes_the_gpu_work():
    # 2 * 2048^3 = 17 GFLOP per run: >= 40 us even on an H100 with TF32, while queueing the
    # launch alone takes a few us. Only a block that synchronises the device measures the former.
    t = harness.Timer("auto y = torch::mm(x, x);", setup="auto x = torch::ones({2048, 2048}, torch::kCUDA);",
                      language="cpp")
    assert t.timeit(20).median > 20e-6
