"""The examples of README.md and docs/ however they are selected: one page alone with two xdist
workers keeps its order and its skip markers, and an example that would wait for ever is stopped,
named by page and line (tests/doc_examples.py)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import uuid
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
TESTS = REPO / "tests"


def _clean_env(**extra: str) -> dict[str, str]:
    """A pytest run of its own: not a third worker of this one's machine share (tests/parallel.py)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_XDIST", "PYTEST_CURRENT"))}
    return {**env, **extra}


def _pytest(args: list[str], cwd: Path, env: dict[str, str], timeout: float) -> subprocess.CompletedProcess[str]:
    """Run pytest in a session of its own, killed whole (a hung ``ray start`` included) past ``timeout``."""
    with subprocess.Popen([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", *args], cwd=cwd, env=env,
                          text=True, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, start_new_session=True) as p:
        try:
            out, _ = p.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(p.pid, signal.SIGKILL)
            out, _ = p.communicate()
            out += f"\n[killed after {timeout} s]"
    return subprocess.CompletedProcess(p.args, p.returncode, out, "")


def test_one_page_alone_with_two_workers_keeps_its_order_and_skips():
    r = _pytest(["-n", "2", "docs/many-machines.md"], REPO, _clean_env(), timeout=420)
    assert r.returncode == 0, r.stdout[-4000:]
    assert " passed" in r.stdout and " skipped" in r.stdout and " failed" not in r.stdout


def test_an_example_past_its_time_limit_fails_with_its_page_and_line(tmp_path: Path):
    sleeper = f"{uuid.uuid4().int % 1000}.{uuid.uuid4().int % 1000:03d}"  # a sleep no other process runs
    page = tmp_path / "page.md"
    page.write_text(textwrap.dedent(f"""\
        # A page

        ```bash
        sleep 1{sleeper} &
        wait
        ```

        ```python
        import time
        time.sleep(60)
        ```

        ```bash
        echo fine
        ```
        """))
    (tmp_path / "conftest.py").write_text(
        "from pathlib import Path\nfrom doc_examples import sybil\n"
        "pytest_collect_file = sybil(Path(__file__).parent, ('page.md',)).pytest()\n"
    )
    (tmp_path / "pytest.ini").write_text("[pytest]\n")
    env = _clean_env(PYTHONPATH=str(TESTS), HARNESS_TEST_EXAMPLE_TIMEOUT="3")
    r = _pytest(["-n", "0", "page.md"], tmp_path, env, timeout=300)
    assert r.returncode == 1, r.stdout[-4000:]
    assert f"example at {page}:3 ran past 3 s" in r.stdout
    assert f"example at {page}:8 ran past 3 s" in r.stdout
    assert "2 failed, 1 passed" in r.stdout
    # The bash block's background sleep went with it.
    left = subprocess.run(["pgrep", "-f", f"sleep 1{sleeper}"], capture_output=True, text=True).stdout
    assert not left.strip()
