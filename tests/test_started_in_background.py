"""The suite passes however it is started: as a background job of a script (``cmd &``, ``nohup``,
CI runners) it inherits SIGINT ignored, and the tests that interrupt a child with SIGINT still work
(tests/interruptible.py starts those children with SIGINT's default). Runs two such tests in a
pytest started with SIGINT ignored: a Python writer, and ``bench`` with its worker."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
TESTS = (
    "tests/history/test_database.py::test_a_writer_killed_during_writes_leaves_a_consistent_database[ctrl-c]",
    "tests/records/test_interruption.py::test_signal_keeps_earlier_runs_and_marks_what_finished"
    "[SIGINT-before_first_result-.json]",
)


def _ignore_sigint() -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)


def test_sigint_tests_pass_when_the_suite_starts_with_sigint_ignored():
    # The inner pytest is a run of its own, not a third worker of this one's machine share (tests/parallel.py).
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_XDIST", "PYTEST_CURRENT"))}
    r = subprocess.run([sys.executable, "-m", "pytest", "-n", "0", "-q", "-p", "no:cacheprovider", *TESTS],
                       cwd=REPO, env=env, capture_output=True, text=True, timeout=600, preexec_fn=_ignore_sigint)
    assert r.returncode == 0, r.stdout[-4000:] + r.stderr[-2000:]
    assert f"{len(TESTS)} passed" in r.stdout
