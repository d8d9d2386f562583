"""Children that a test interrupts with SIGINT start with SIGINT's default disposition.

A shell that runs the suite as a background job (``cmd &`` in a script, ``nohup cmd &``, some CI
runners) hands it SIGINT ignored, and an ignored signal stays ignored in every child: Python
installs its KeyboardInterrupt handler only where SIGINT is not ignored, and subprocess's
``restore_signals`` restores SIGPIPE and SIGXFSZ, not SIGINT. Such a child would shrug off the
test's SIGINT, so every test that sends one starts its child through ``popen`` or ``run`` here,
as a terminal would start it, however the suite itself was started
(tests/test_started_in_background.py checks that).
"""

from __future__ import annotations

import signal
import subprocess
from typing import Any


def default_sigint() -> None:
    """In the child, before exec: SIGINT back to its default (a KeyboardInterrupt in Python)."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def popen(args: Any, **kwargs: Any) -> subprocess.Popen:
    return subprocess.Popen(args, preexec_fn=default_sigint, **kwargs)


def run(args: Any, **kwargs: Any) -> subprocess.CompletedProcess:
    return subprocess.run(args, preexec_fn=default_sigint, **kwargs)
