"""C++ statements built without ``import torch``: cpp_extension's recorded rules replayed with ninja.

The first statement module of a toolchain is built by cpp_extension, which
leaves its build.ninja's rules as the toolchain's recipe; later modules are
built from it by a process that never imports torch (a script counting a
new statement with a warm worker). Real compiler, real torch, the shared
cache: a few small modules, ~10-20 s of CPU with the lean PCH.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import uuid
from pathlib import Path

import torch

from harness.measure.cpp import ninja_build
from harness.measure.cpp.build import build
from harness.measure.cpp.pch import pch_enabled, pch_header, plain_header, wait_for_pch
from harness.measure.cpp.statement import CppStatement
from harness.measure.cpp.toolchain import _torch_install, load_extension, toolchain

REPO = Path(__file__).resolve().parents[3]
SETUP = "auto x = torch::ones({4, 4});"

BUILD_IN_A_FRESH_PROCESS = textwrap.dedent("""
    import json, sys
    from harness.measure.cpp.build import build
    from harness.measure.cpp.statement import CppStatement
    report = build([CppStatement(stmt=sys.argv[1], setup=sys.argv[2], output="y")])
    (compiled,) = report.compiled.values() if report.compiled else (None,)
    print(json.dumps({"torch": "torch" in sys.modules, "built": report.built, "failed": report.failed,
                      "so": str(compiled.so) if compiled else None,
                      "pch_used": compiled.pch_used if compiled else None}))
""")


def _fresh_build(stmt: str, setup: str = SETUP) -> dict:
    proc = subprocess.run([sys.executable, "-c", BUILD_IN_A_FRESH_PROCESS, stmt, setup], cwd=REPO,
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout.strip().splitlines()[-1])


def _recipe_exists() -> None:
    """The toolchain's recipe, left by a module built here by cpp_extension where there is none yet."""
    if ninja_build.recipe() is None:
        report = build([CppStatement(stmt=f"auto y = x + 1; // {uuid.uuid4()}", setup=SETUP)])
        assert not report.failed
    assert ninja_build.recipe() is not None


def test_torch_version_and_headers_are_read_without_importing_torch():
    version, include = _torch_install()
    assert version == torch.__version__
    assert Path(include) == Path(torch.__file__).resolve().parent / "include"
    assert toolchain().torch_version == torch.__version__


def test_a_new_statement_builds_in_a_process_that_never_imports_torch():
    _recipe_exists()
    wait_for_pch()  # so the module below is built with the PCH, as a warm user's would be
    stmt = f"auto y = x * 3; // {uuid.uuid4()}"
    out = _fresh_build(stmt)
    assert out["torch"] is False and out["built"] == 1 and not out["failed"]
    assert out["pch_used"] is pch_enabled()
    so = Path(out["so"])
    rules = (so.parent / "build.ninja").read_text()
    recipe = json.loads((toolchain().root / ninja_build.RECIPE).read_text())
    # cpp_extension's rules, word for word, but for the module's name and its include set's header.
    expected = (
        recipe["rules"]
        .replace(recipe["name"], so.stem)
        .replace(f"-include {recipe['include']} ", f"-include {pch_header() if pch_enabled() else plain_header()} ")
    )
    assert rules.startswith(expected)
    # This process loads and runs what the other built.
    report = build([CppStatement(stmt=stmt, setup=SETUP, output="y")])
    assert report.built == 0  # found where the other process built it
    (compiled,) = report.compiled.values()
    compiled.prepare()
    output, *_ = compiled.probe()
    assert torch.equal(output, torch.full((4, 4), 3.0))


def test_a_statement_that_does_not_compile_is_reported_from_the_replayed_build():
    _recipe_exists()
    out = _fresh_build(f"auto y = x * not_declared_{uuid.uuid4().hex[:8]};")
    assert out["torch"] is False and out["built"] == 0
    (message,) = out["failed"].values()
    assert "not_declared_" in message and "stmt" in message  # the user's line, named as the statement's


def test_the_replayed_rules_run_the_commands_cpp_extension_runs(tmp_path: Path):
    """The compiler and linker commands of one module, built by each, are the same but for its directory."""
    _recipe_exists()
    header = str(pch_header() if pch_enabled() and wait_for_pch() else plain_header())
    tc = toolchain()
    commands = []
    for how in ("cpp_extension", "recipe"):
        d = tmp_path / how
        d.mkdir()
        source = d / "tu0.cpp"
        source.write_text(f'extern "C" int harness_answer() {{ return 42; }}  // {uuid.uuid4()}\n')
        if how == "cpp_extension":
            load_extension("hstmt_same", [str(source)], d, ["-include", header, *tc.extra_cflags, "-Winvalid-pch"],
                           python_module=False)
        else:
            ninja_build.build_module(ninja_build.recipe(), "hstmt_same", [str(source)], d, header)
        assert (d / "hstmt_same.so").is_file()
        listed = subprocess.run(["ninja", "-t", "commands"], cwd=d, capture_output=True, text=True, check=True)
        commands.append(listed.stdout.replace(str(d), "DIR"))
    assert commands[0] == commands[1] and "-include" in commands[0]


MODULE_OF_TWO_UNITS = textwrap.dedent("""
    import json, sys
    from harness.measure.cpp.build import build
    from harness.measure.cpp.statement import CppStatement
    tag = sys.argv[1]
    # Another global setup, another translation unit: two compiles for ninja to schedule.
    report = build([CppStatement(stmt="auto y = x + 1;", setup="auto x = torch::ones({2});",
                                 global_setup=f"static int unit_{i}_{tag} = {i};") for i in range(2)])
    assert not report.failed and report.built == 2, report
    (module,) = {c.so.parent for c in report.compiled.values()}
    print(json.dumps({"dir": str(module), "torch": "torch" in sys.modules}))
""")


def _compile_intervals(max_jobs: str | None) -> list[tuple[int, int]]:
    env = {k: v for k, v in os.environ.items() if k != "MAX_JOBS"}
    if max_jobs is not None:
        env["MAX_JOBS"] = max_jobs
    proc = subprocess.run([sys.executable, "-c", MODULE_OF_TWO_UNITS, uuid.uuid4().hex[:12]], cwd=REPO, env=env,
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    assert out["torch"] is False  # built from the recipe
    # .ninja_log: start and end (ms) of each edge ninja ran; the compiles are the .o edges.
    log = (Path(out["dir"]) / ".ninja_log").read_text().splitlines()[1:]
    spans = sorted((int(f[0]), int(f[1])) for f in (line.split("\t") for line in log) if f[3].endswith(".o"))
    assert len(spans) == 2
    return spans


def test_max_jobs(tmp_path: Path):
    """MAX_JOBS=N: at most N translation units compile at once, as cpp_extension has ninja do; unset, empty
    or not a number: ninja's default (more than one at once)."""
    _recipe_exists()
    wait_for_pch()
    (_, first_end), (second_start, _) = _compile_intervals("1")
    assert second_start >= first_end  # one after the other
    for unlimited in (None, "", "many"):
        (first_start, first_end), (second_start, _) = _compile_intervals(unlimited)
        assert second_start < first_end  # side by side


def test_a_recipe_written_from_another_checkout_or_python_is_not_used(tmp_path: Path, monkeypatch):
    """The rules name harness's header directories and Python's, which the toolchain key does not: a
    recipe from elsewhere would compile against another checkout's headers (or ones deleted since)."""
    recipe = tmp_path / "recipe.json"
    monkeypatch.setattr(ninja_build, "_recipe_path", lambda: recipe)
    build_dir = tmp_path / "module"
    build_dir.mkdir()
    header = "/cache/pch/lean/harness_stmt_pch.h"
    (build_dir / "build.ninja").write_text(
        f"ninja_required_version = 1.3\ncxx = c++\ncflags = -DTORCH_EXTENSION_NAME=hstmt_a -include {header} -O2\n"
        "rule compile\n  command = $cxx $cflags -c $in -o $out\nrule link\n  command = $cxx $in -o $out\n"
        "\nbuild tu0.o: compile tu0.cpp\nbuild hstmt_a.so: link tu0.o\ndefault hstmt_a.so\n")
    ninja_build.record_recipe(build_dir, "hstmt_a", header)
    assert ninja_build.recipe() is not None
    written = json.loads(recipe.read_text())
    elsewhere = {**written, "context": written["context"].replace(str(REPO), "/another/checkout")}
    assert elsewhere["context"] != written["context"]
    recipe.write_text(json.dumps(elsewhere))
    assert ninja_build.recipe() is None
    ninja_build.record_recipe(build_dir, "hstmt_a", header)  # the next cpp_extension build's rules replace it
    assert json.loads(recipe.read_text()) == written and ninja_build.recipe() is not None
