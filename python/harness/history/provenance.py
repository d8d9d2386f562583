"""Where a run came from: its identity in the history, and the user's own git commit and branch.

A run's identity is its record's ``run_id`` (every record harness writes has
one), else a hash of its content, so the same run imported twice, from the
same file or from a copy in another format, is stored once.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
from pathlib import Path

from harness.model.record import RunRecord


def run_key(record: RunRecord) -> str:
    """``id:RUN_ID``, or ``sha256:...`` of the record's JSON for a record without an id."""
    if record.run_id:
        return f"id:{record.run_id}"
    text = json.dumps(record.to_json(), sort_keys=True, separators=(",", ":"), default=str)
    return "sha256:" + hashlib.sha256(text.encode()).hexdigest()[:40]


def repository(cwd: str | os.PathLike[str] | None = None) -> dict[str, str]:
    """``{"commit", "branch"}`` of the git repository the command runs in ({} outside one, or without git)."""
    try:
        out = subprocess.run(["git", "rev-parse", "HEAD", "--abbrev-ref", "HEAD"], cwd=Path(cwd or os.getcwd()),
                             capture_output=True, text=True, timeout=10, check=False)
    except (OSError, subprocess.SubprocessError):
        return {}
    lines = out.stdout.split()
    if out.returncode != 0 or len(lines) != 2:
        return {}
    return {"commit": lines[0], "branch": "" if lines[1] == "HEAD" else lines[1]}  # HEAD: a detached checkout
