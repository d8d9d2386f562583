"""Shared fixtures: real compiler, real torch; expensive builds happen once per session."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="session")
def repo() -> Path:
    return REPO


def run_cli(*args: str, cwd: Path | None = None, env: dict[str, str] | None = None, timeout: float = 600):
    """Run `python -m harness ...` in a fresh interpreter, as a user would."""
    full_env = dict(os.environ)
    full_env.update(env or {})
    return subprocess.run(
        [sys.executable, "-m", "harness", *args],
        cwd=cwd or REPO,
        env=full_env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


@pytest.fixture
def cli():
    return run_cli
