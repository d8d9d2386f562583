"""The lean, lean+api, frontend, script and full include sets: chosen automatically, cached, logged; real g++,
real torch.

Cost: the ``chosen`` fixture builds fresh statements (a per-session tag) once:
a lean module, a lean+api module (torch::nn, torch::optim, a name behind a namespace alias), a frontend
module (an #include of torch/torch.h), a script module, one failed lean build retried with the full
set and one genuine error (its lean build fails, it is not retried). Each
build is ~3 s (lean) or ~7-9 s (frontend, script, full) with the PCHs of the
session's cache, ~20-40 s without. ``test_a_stale_pch_is_rebuilt`` damages the lean PCH and waits for
its rebuild (~20-40 s of CPU in the background). Measured on the shared
2-core VM at load ~13 (five engineers building): 12 minutes for the file from
its own cache with no PCH yet (fixture 390 s, the stale-PCH test 314 s,
--prepare 23 s); expect a few times less on a quiet machine.
"""

from __future__ import annotations

import dataclasses
import os
import subprocess
import sys
import time
import uuid

import pytest

import harness
from harness.errors import StatementError
from harness.measure.cpp.block import CppBlock
from harness.measure.cpp.build import build
from harness.measure.cpp.include_set import choose, static_choice
from harness.measure.cpp.log import read_log
from harness.measure.cpp.pch import pch_enabled, pch_file, wait_for_pch
from harness.measure.cpp.statement import CppStatement
from harness.measure.cpp.toolchain import toolchain

TAG = f"// {uuid.uuid4()}"
SETUP = f"auto x = torch::ones({{4, 4}}); {TAG}"
TENSOR = ("auto y = torch::relu(x * 2);", SETUP)
LINEAR = ("auto y = lin(x);", f"torch::nn::Linear lin(4, 2);\n{SETUP}")
OPTIM = ("opt.zero_grad();", f"{SETUP}\ntorch::optim::SGD opt({{x}}, torch::optim::SGDOptions(0.1));")
# A name behind a namespace alias (as torch's C++ docs write it): read through, so lean+api.
ALIAS = ("auto y = F::relu(x);", SETUP, "namespace F = torch::nn::functional;")
# The user asks for torch/torch.h: the frontend set holds it.
INCLUDES_TORCH = ("auto y = torch::nn::functional::gelu(x);", SETUP, "#include <torch/torch.h>")
PICKLE = ("auto y = torch::jit::pickle_save(x);", SETUP)
# torch::OrderedDict is declared by torch/torch.h, not by the lean set; nothing in the text says so.
MISSING = ('torch::OrderedDict<std::string, int> d;\nd.insert("a", 1);\nauto y = x * d["a"];', SETUP)
GENUINE = ("auto y = x * 2;\nauto z = y + misspelt_name;", SETUP)


def _statement(pair: tuple[str, ...]) -> CppStatement:
    return CppBlock(*pair).statement


def _events(statement: CppStatement, events: list[dict]) -> list[dict]:
    return [e for e in events if e.get("key") == statement.key]


@pytest.fixture(scope="module")
def chosen():
    logged = len(read_log())
    t0 = time.monotonic()
    report = build([_statement(p) for p in (TENSOR, LINEAR, OPTIM, ALIAS, INCLUDES_TORCH, PICKLE, MISSING, GENUINE)])
    events = [e for e in read_log()[logged:] if e["pid"] == os.getpid()]
    print(f"\ninclude-set batch: {report.built} built, {len(report.failed)} failed, {time.monotonic() - t0:.1f} s")
    return report, events


def test_tensor_code_is_lean_api_names_their_headers_and_torch_jit_script_without_being_asked(chosen):
    report, events = chosen
    assert report.compiled[_statement(TENSOR).key].include_set == "lean"
    linear = report.compiled[_statement(LINEAR).key]
    assert linear.include_set == "lean+api"
    (choice,) = [e for e in _events(_statement(LINEAR), events) if e["event"] == "include_set"]
    assert choice["include_set"] == "lean+api"
    assert choice["reason"] == "setup uses torch::nn::Linear (torch/nn/modules/linear.h)"
    # Built together with OPTIM and ALIAS, in one module whose TU includes the one header
    # each needs (and not torch/torch.h), on top of the lean set.
    (module,) = [e["module"] for e in events if e["event"] == "builds" and e["include_set"] == "lean+api"]
    source = (toolchain().root / "modules" / module.removeprefix("hstmt_") / "tu0.cpp").read_text()
    assert [line for line in source.splitlines() if line.startswith("#include")] == [
        "#include <torch/nn/modules/linear.h>", "#include <torch/optim/sgd.h>",
        "#include <torch/nn/functional/activation.h>"]
    assert [e["include_set"] for e in events if e["event"] == "builds"].count("lean") == 1
    m = harness.Timer(*LINEAR, language="cpp").timeit(20)
    assert m.median > 0
    optim = report.compiled[_statement(OPTIM).key]
    assert optim.include_set == "lean+api"
    (choice,) = [e for e in _events(_statement(OPTIM), events) if e["event"] == "include_set"]
    assert choice["reason"] == "setup uses torch::optim::SGD, torch::optim::SGDOptions (torch/optim/sgd.h)"
    assert harness.Timer(*OPTIM, language="cpp").timeit(5).median > 0
    alias = report.compiled[_statement(ALIAS).key]
    assert alias.include_set == "lean+api"
    (choice,) = [e for e in _events(_statement(ALIAS), events) if e["event"] == "include_set"]
    assert choice["reason"] == "stmt uses torch::nn::functional::relu (torch/nn/functional/activation.h)"
    assert harness.Timer(*ALIAS, language="cpp").timeit(5).median > 0
    included = report.compiled[_statement(INCLUDES_TORCH).key]
    assert included.include_set == "frontend"
    (choice,) = [e for e in _events(_statement(INCLUDES_TORCH), events) if e["event"] == "include_set"]
    assert choice["reason"] == "global_setup includes <torch/torch.h>"
    assert harness.Timer(*INCLUDES_TORCH, language="cpp").timeit(5).median > 0
    pickle = report.compiled[_statement(PICKLE).key]
    assert pickle.include_set == "script"
    (choice,) = [e for e in _events(_statement(PICKLE), events) if e["event"] == "include_set"]
    assert choice["reason"] == "stmt uses torch::jit"
    assert harness.Timer(*PICKLE, language="cpp").timeit(5).median > 0


def test_a_missing_declaration_is_retried_with_the_full_set_and_remembered(chosen):
    report, events = chosen
    statement = _statement(MISSING)
    assert static_choice(statement)[0] == "lean"  # only the failed compile can tell
    assert report.compiled[statement.key].include_set == "full"
    (choice,) = [e for e in _events(statement, events) if e["event"] == "include_set"]
    assert "lacks a declaration" in choice["reason"]
    lean_failures = [e for e in events if e["event"] == "failed_builds" and e["include_set"] == "lean"]
    assert len(lean_failures) == 1
    # Its value is right: x * 1.
    assert harness.Timer(*MISSING, language="cpp").timeit(5).median > 0
    # The second time it goes straight to the full set, without a lean compile.
    include_set, reason = choose(statement)
    assert include_set == "full" and reason.startswith("cached:")
    (toolchain().root / "index" / f"{statement.key}.json").unlink()  # as if its module were gone
    logged = len(read_log())
    again = build([statement])
    later = [e for e in read_log()[logged:] if e["pid"] == os.getpid()]
    assert again.compiled[statement.key].include_set == "full"
    assert not [e for e in later if e["event"] == "failed_builds"]
    # Its module is still on disk: loaded (logged as shared_builds), not compiled again, and from the full set.
    assert [e["include_set"] for e in later if e["event"] in ("builds", "shared_builds")] == ["full"]


def test_a_genuine_error_is_reported_once_against_the_users_line(chosen):
    report, events = chosen
    statement = _statement(GENUINE)
    message = report.failed[statement.key]
    assert message.count("misspelt_name' was not declared") + message.count("misspelt_name’ was not declared") == 1
    assert message.count("2 | auto z = y + misspelt_name;") == 1
    assert "stmt:2:" in message and "~" not in message
    # A name of the user's own is not torch's: no second compile with the full set.
    assert not [e for e in _events(statement, events) if e["event"] == "include_set"]
    with pytest.raises(StatementError, match=r"stmt:2:"):
        harness.Timer(*GENUINE, language="cpp").timeit(5)


def test_the_text_chooses_the_smallest_set_that_declares_it():
    assert static_choice(CppStatement("auto m = torch::jit::load(path);")) == ("script", "stmt uses torch::jit")
    # The frontend and TorchScript together need both.
    both = CppStatement(
        "auto y = m.forward({lin(x)});", setup="torch::nn::Linear lin(4, 4);\nauto m = torch::jit::load(p);"
    )
    assert static_choice(both) == (
        "script+api", "setup uses torch::jit; setup uses torch::nn::Linear (torch/nn/modules/linear.h)")
    alias_jit = CppStatement("auto y = F::relu(x);", setup="auto m = torch::jit::load(p);",
                             global_setup="namespace F = torch::nn::functional;")
    assert static_choice(alias_jit) == (
        "script+api", "setup uses torch::jit; stmt uses torch::nn::functional::relu (torch/nn/functional/activation.h)")
    # The frontend and TorchScript together need both: torch/torch.h asked for, and torch::jit.
    torch_jit = CppStatement("auto m = torch::jit::load(p);", global_setup="#include <torch/torch.h>")
    assert static_choice(torch_jit) == ("full", "global_setup includes <torch/torch.h> and stmt uses torch::jit")
    assert static_choice(CppStatement("torch::save(x, path);")) == (
        "lean+api",
        "stmt uses torch::save (torch/serialize.h)",
    )
    # torch::nn names each get the header that defines them; one the index cannot resolve needs the frontend.
    functional = CppStatement("auto y = torch::nn::functional::relu(x) + torch::nn::init::xavier_uniform_(w);")
    assert static_choice(functional) == (
        "lean+api",
        "stmt uses torch::nn::functional::relu, torch::nn::init::xavier_uniform_ "
        "(torch/nn/functional/activation.h, torch/nn/init.h)",
    )
    alias = CppStatement("auto y = F::relu(x);", global_setup="namespace F = torch::nn::functional;")
    assert static_choice(alias) == (
        "lean+api",
        "stmt uses torch::nn::functional::relu (torch/nn/functional/activation.h)",
    )
    # An alias nothing uses: its namespace is declared by torch/torch.h only.
    unused = CppStatement("auto y = x;", global_setup="namespace F = torch::nn::functional;")
    assert static_choice(unused) == (
        "frontend", "global_setup uses torch::nn::functional, which no one header of torch's API defines")
    assert static_choice(CppStatement("using namespace torch::nn;\nLinear lin(2, 2);"))[0] == "frontend"
    # An alias of torch::jit is read through too.
    assert static_choice(CppStatement("auto s = tj::pickle_save(x);", global_setup="namespace tj = torch::jit;")) == (
        "script", "stmt uses torch::jit")
    assert static_choice(CppStatement("struct F : torch::autograd::Function<F> {};"))[0] == "frontend"
    # An #include asks for the smallest set that holds the header; one of the user's own for the full set.
    def included(*headers: str) -> tuple[str, str]:
        return static_choice(CppStatement("auto y = 1;", global_setup="\n".join(f"#include {h}" for h in headers)))
    assert included("<vector>", "<cmath>", "<ATen/ATen.h>", "<torch/types.h>") == ("lean", "tensor code only")
    assert included("<torch/nn.h>") == ("frontend", "global_setup includes <torch/nn.h>")
    assert included("<torch/torch.h>")[0] == "frontend"
    assert included("<torch/script.h>") == ("script", "global_setup includes <torch/script.h>")
    assert included("<torch/torch.h>", "<torch/script.h>")[0] == "full"
    assert included('"mine.h"') == ("full", 'global_setup includes "mine.h"')
    for header in ("<torch/extension.h>", "<boost/any.hpp>", "HEADER_MACRO"):
        assert included(header) == ("full", f"global_setup includes {header}")
    assert static_choice(CppStatement("torch::optim::SGD opt(params, 0.1);")) == (
        "lean+api", "stmt uses torch::optim::SGD (torch/optim/sgd.h)")
    assert static_choice(CppStatement("torch::NoGradGuard g;")) == (
        "lean+api",
        "stmt uses torch::NoGradGuard (torch/utils.h)",
    )
    assert static_choice(CppStatement("auto y = torch::mm(x, x);"))[0] == "lean"


# Alone: it damages the session cache's lean PCH, which every other test's new C++ statement uses.
@pytest.mark.alone
def test_the_four_pchs_coexist_and_a_stale_one_is_rebuilt(chosen):
    if not pch_enabled():
        pytest.skip("PCH disabled (HARNESS_CPP_PCH=0 or not g++)")
    sets = ("lean", "frontend", "script", "full")
    for include_set in sets:
        assert wait_for_pch(timeout=900, include_set=include_set), include_set
    size = {s: pch_file(s).stat().st_size for s in sets}
    assert len({pch_file(s) for s in sets}) == 4
    # lean+api is built on the lean PCH: it has none of its own.
    assert not (toolchain().root / "pch" / "lean+api").exists()
    # The full set holds the frontend and script sets, each of which holds the lean one.
    assert (
        1e6
        < size["lean"]
        < min(size["frontend"], size["script"])
        <= max(size["frontend"], size["script"])
        < size["full"]
    )
    # A change of torch or compiler is a new toolchain key: a directory, and PCHs, of its own.
    tc = toolchain()
    assert dataclasses.replace(tc, torch_version=tc.torch_version + "+other").key != tc.key
    assert dataclasses.replace(tc, version=tc.version + " (other)").key != tc.key
    # A PCH g++ cannot use (stale or damaged) is detected, removed and rebuilt.
    pch_file("lean").write_bytes(b"not a precompiled header")
    logged = len(read_log())
    statement = CppStatement(f"auto y = x - 1; // {uuid.uuid4()}", "auto x = torch::ones({2});")
    assert not build([statement]).compiled[statement.key].pch_used
    assert wait_for_pch(timeout=900, include_set="lean")
    events = [e["event"] for e in read_log()[logged:]]
    # Caught by its size marker (damaged_pch) before g++ sees it, or by g++ (pch_rejected).
    assert {"pch_rejected", "damaged_pch"} & set(events) and "pch_built" in events
    fresh = CppStatement(f"auto y = x - 2; // {uuid.uuid4()}", "auto x = torch::ones({2});")
    assert build([fresh]).compiled[fresh.key].pch_used


def test_prepare_reports_the_runtime_and_pch_ready(chosen):
    """What scripts/setup.sh runs: with both already built it only says so (exit 0); bad usage exits 2."""
    if not pch_enabled():
        pytest.skip("PCH disabled (HARNESS_CPP_PCH=0 or not g++)")
    assert wait_for_pch(timeout=900)
    proc = subprocess.run([sys.executable, "-m", "harness.measure.cpp.pch", "--prepare"],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert "runtime and precompiled headers ready (already built)" in proc.stdout
    bad = subprocess.run([sys.executable, "-m", "harness.measure.cpp.pch", "--bogus"],
                         capture_output=True, text=True, timeout=300)
    assert bad.returncode == 2 and "usage:" in bad.stderr
