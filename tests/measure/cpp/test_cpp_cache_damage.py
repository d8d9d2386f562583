"""A damaged C++ build cache heals: truncated statement modules and PCH are rebuilt, concurrent builds share one.

Everything runs in real processes on a private cache (``HARNESS_CACHE_DIR``
in ``tmp_path``), with the real compiler. Cost, from that empty cache: one
module build without the PCH (~20-35 s CPU), the PCH built in the background
(~40 s CPU), the damaged module and statement runtime rebuilt side by side
(~20-35 s each), one more module built by two processes at once (~8 s), and
the damaged PCH rebuilt (~40 s): about 3 minutes of CPU, 3-6 minutes of wall
time on the shared 2-core VM.
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

from harness.measure.cpp.pch import pch_enabled

REPO = Path(__file__).resolve().parents[3]

TIME_STATEMENT = textwrap.dedent("""
    import sys
    import harness
    from harness.measure.cpp.pch import wait_for_pch
    stmt, wait = sys.argv[1], sys.argv[2] == "wait"
    m = harness.Timer(stmt, setup="auto x = torch::ones({2});", language="cpp").timeit(20)
    assert m.median > 0
    if wait:
        assert wait_for_pch(900), "no PCH"
    print("ok")
""")


def _run(cache: Path, stmt: str, wait: bool = False) -> subprocess.Popen[str]:
    env = {**os.environ, "HARNESS_CACHE_DIR": str(cache)}
    return subprocess.Popen([sys.executable, "-c", TIME_STATEMENT, stmt, "wait" if wait else "no"], cwd=REPO, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _done(proc: subprocess.Popen[str]) -> str:
    out, err = proc.communicate(timeout=1800)
    assert proc.returncode == 0 and out.strip() == "ok", err
    return err


def _truncate(path: Path) -> None:
    with open(path, "r+b") as f:
        f.truncate(path.stat().st_size // 2)


def _log(cache: Path) -> list[dict]:
    (log,) = cache.glob("cpp/*/build.log")
    return [json.loads(line) for line in log.read_text().splitlines() if line.strip()]


@pytest.mark.skipif(not pch_enabled(), reason="the PCH needs g++ and HARNESS_CPP_PCH not 0")
def test_damaged_module_and_pch_are_rebuilt_and_concurrent_builds_share_one(tmp_path: Path):
    cache = tmp_path / "cache"
    stmt = f"auto y = x + 1; // {uuid.uuid4()}"
    _done(_run(cache, stmt, wait=True))  # builds the module, then the PCH in the background
    (so,) = cache.glob("cpp/*/modules/*/hstmt_*.so")
    (gch,) = cache.glob("cpp/*/pch/lean/*.gch")
    (runtime,) = cache.glob("cpp/*/runtime/hstmt_runtime_*.so")
    _truncate(so)
    _truncate(gch)
    _truncate(runtime)

    err = _done(_run(cache, stmt))
    assert f"harness: cached C++ module {so} is damaged" in err and "rebuilding it" in err
    assert f"harness: the precompiled torch header {gch} is damaged" in err
    assert err.count(f"harness: the cached C++ statement runtime {runtime} is damaged") == 1
    assert runtime.exists()  # rebuilt under the same name
    marker = json.loads((so.parent / "complete.json").read_text())
    assert so.stat().st_size == marker["bytes"]  # rebuilt whole, under the same name

    # Two processes build the same new statement at once: both succeed, one build.
    new = f"auto y = x * 2; // {uuid.uuid4()}"
    seen = len(_log(cache))
    first, second = _run(cache, new), _run(cache, new, wait=True)
    for proc in (first, second):
        assert "damaged" not in _done(proc)
    events = [e["event"] for e in _log(cache)[seen:] if e["event"] in ("builds", "shared_builds")]
    # One compiled it; the other waited for its lock and loaded it (or, starting late, found it cached).
    assert events.count("builds") == 1 and events.count("shared_builds") <= 1
    # The second waited for the PCH build the damaged one's removal started: it is whole again.
    assert gch.exists() and gch.stat().st_size == json.loads((gch.parent / "pch.json").read_text())["bytes"]
