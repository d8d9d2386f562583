"""``HARNESS_CPP_PCH=0``: C++ statements build and run without the precompiled header, and mean the same.

Real compiler, real torch, each run in its own process with the variable set
before harness is imported. Cost: the PCH-off run in a fresh cache compiles
the statement runtime and one lean module side by side (~30 s on the shared
2-core VM); the two runs in the session's cache compile one lean module each,
with the session's PCH (a few seconds) and without it (~10 s). No PCH is
built: the fresh cache has it off, and the session's is the one
``scripts/setup.sh`` builds (where a session has none yet, the PCH-on run
starts the build that tests/measure/cpp/test_cpp_statements.py waits for).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import uuid
from pathlib import Path

import pytest

from harness.measure.cpp.pch import pch_header
from harness.measure.cpp.toolchain import toolchain

REPO = Path(__file__).resolve().parents[3]

# What the statement's code sees of its compile: torch's arithmetic (45), and
# macros that differ when the headers or flags differ: cpp_extension's
# TORCH_API_INCLUDE_EXTENSION_H (which the headers hide from torch's headers
# and restore: g++ would keep it through a .gch's #undef, so it is defined with
# the PCH either way), pybind11 (which that macro would pull in), the language
# standard and the optimisation flags.
SETUP = """
auto x = torch::arange(10);
std::vector<int64_t> seen = {0, 0, __cplusplus, 0};
#ifdef TORCH_API_INCLUDE_EXTENSION_H
seen[0] = 1;
#endif
#ifdef PYBIND11_VERSION_MAJOR
seen[1] = 1;
#endif
#ifdef __OPTIMIZE__
seen[3] = 1;
#endif
"""
STMT = "auto y = torch::cat({x.sum().reshape({1}), torch::tensor(seen)});"
EXPECTED = [45, 1, 0, 202002, 1]

RUN = textwrap.dedent("""
    import json, sys
    import harness
    from harness.measure.cpp.block import CppBlock
    from harness.measure.cpp.build import build
    from harness.measure.cpp.pch import pch_enabled, pch_intact, wait_for_pch
    stmt, setup = sys.argv[1], sys.argv[2]
    wait_for_pch()  # a PCH build in progress ends first: its .gch is then there to be used, or not
    had_pch = pch_intact()
    probed = CppBlock(stmt, setup, output="y")
    # Both statements in one module: one compile.
    report = build([CppBlock(stmt, setup).statement, probed.statement])
    assert not report.failed, report.failed
    median = harness.Timer(stmt, setup=setup, language="cpp").timeit(100).median
    (y,) = probed.probe()
    print(json.dumps({"median": median, "y": y.tolist(), "pch_enabled": pch_enabled(), "had_pch": had_pch,
                      "pch_used": bool(report.compiled[probed.statement.key].module.pch_used),
                      "built": report.built}))
""")


def _start(pch: str, cache: Path | None) -> subprocess.Popen[str]:
    env = {**os.environ, "HARNESS_CPP_PCH": pch}
    if cache is not None:
        env["HARNESS_CACHE_DIR"] = str(cache)
    # A new tag: the statement is compiled now, under this setting, not found in the cache.
    stmt = f"{STMT} // {uuid.uuid4()}"
    return subprocess.Popen([sys.executable, "-c", RUN, stmt, SETUP], cwd=REPO, env=env, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)


def _result(proc: subprocess.Popen[str]) -> dict:
    out, err = proc.communicate(timeout=900)
    assert proc.returncode == 0, err
    return json.loads(out.strip().splitlines()[-1])


@pytest.mark.skipif(toolchain().gcc_major is None, reason="the PCH is g++'s: other compilers never use one")
def test_pch_off_builds_runs_and_means_the_same(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    cache = tmp_path / "cache"
    # A cache from before the plain header existed: the PCH's headers are there, nothing else.
    with monkeypatch.context() as m:
        m.setenv("HARNESS_CACHE_DIR", str(cache))
        old = pch_header("lean")
    assert old.is_file() and not (old.parent / "harness_stmt_plain.h").exists()
    fresh = _start("0", cache)
    on, off = _result(_start("1", None)), _result(_start("0", None))
    fresh_off = _result(fresh)

    for result in (on, off, fresh_off):
        assert result["median"] > 0
        assert result["built"] == 2
    # What the code sees does not depend on the setting (nor on the cache).
    assert on["y"] == off["y"] == fresh_off["y"] == EXPECTED
    assert on["pch_enabled"] and not off["pch_enabled"] and not fresh_off["pch_enabled"]
    # With the setting on the session's PCH is used; off, it is not, though its .gch is right there.
    assert on["pch_used"] == on["had_pch"]
    assert off["had_pch"] == on["had_pch"] and not off["pch_used"]
    assert not fresh_off["pch_used"] and not fresh_off["had_pch"]

    # Off, no PCH is built nor started: no .gch, no builder command, nothing in the log about one.
    assert list(cache.rglob("*.gch")) == []
    (root,) = cache.glob("cpp/*")
    assert list(root.glob("pch/*/command.json")) == []
    events = [json.loads(line)["event"] for line in (root / "build.log").read_text().splitlines()]
    assert "builds" in events and not any(e.startswith("pch_") for e in events)
    assert (root / "pch" / "lean" / "harness_stmt_plain.h").is_file()
    assert root == old.parents[2]  # the cache whose old headers were there
