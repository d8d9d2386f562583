"""Metadata of the machine and software a run measured on, for run records."""

from __future__ import annotations

import importlib.metadata
import json
import os
import platform
import re
import socket
import subprocess
import sys
import uuid
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from harness._version import __version__
from harness.errors import UsageError


def _git_commit() -> str | None:
    repo = Path(__file__).resolve().parents[2]
    try:
        out = subprocess.run(
            ["git", "-C", str(repo), "rev-parse", "HEAD"], capture_output=True, text=True, timeout=5, check=False
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.strip() or None if out.returncode == 0 else None


def cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def cpu_governor() -> str | None:
    try:
        return Path("/sys/devices/system/cpu/cpu0/cpufreq/scaling_governor").read_text().strip()
    except OSError:
        return None


def torch_info() -> dict[str, Any]:
    import torch

    info: dict[str, Any] = {
        "version": torch.__version__,
        "build": "cuda" if torch.version.cuda else ("rocm" if getattr(torch.version, "hip", None) else "cpu"),
        "cuda_version": torch.version.cuda,
        "num_threads": torch.get_num_threads(),
    }
    if torch.cuda.is_available():
        info["gpus"] = [torch.cuda.get_device_name(i) for i in range(torch.cuda.device_count())]
        info["gpu_driver"] = _nvidia_driver()
    return info


def _nvidia_driver() -> str | None:
    try:
        out = subprocess.run(
            ["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"],
            capture_output=True, text=True, timeout=10, check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.strip().splitlines()[0] if out.returncode == 0 and out.stdout.strip() else None


def fingerprint(environment: dict[str, Any]) -> dict[str, str]:
    """What must be equal for results to belong in one run: harness, torch and Python versions."""
    torch = environment.get("torch") or {}
    return {
        "harness": str(environment.get("harness_version")),
        "torch": str(torch.get("version") if isinstance(torch, dict) else torch),
        "python": str(environment.get("python")),
    }


def local_fingerprint() -> dict[str, str]:
    """This process's fingerprint (the same fields as ``fingerprint``).

    torch's version comes from its installed metadata, which names the same build as
    ``torch.__version__``: a Ray worker asks before its first task and never needs torch
    itself (importing it would cost every node a second of CPU beside the benchmarks).
    """
    from harness import _version

    try:
        torch_version = importlib.metadata.version("torch")
    except importlib.metadata.PackageNotFoundError:  # a torch without metadata (a source tree on the path)
        import torch

        torch_version = str(torch.__version__)
    return {"harness": _version.__version__, "torch": torch_version, "python": sys.version.split()[0]}


def describe(fp: dict[str, str]) -> str:
    return f"harness {fp['harness']}, torch {fp['torch']}, Python {fp['python']}"


def collect(argv: list[str] | None = None) -> dict[str, Any]:
    """Everything a reader needs to judge whether two runs are comparable."""
    return {
        "run_id": uuid.uuid4().hex[:12],
        "harness_version": __version__,
        "git_commit": _git_commit(),
        "torch": torch_info(),
        "python": sys.version.split()[0],
        "python_implementation": platform.python_implementation(),
        "os": f"{platform.system()} {platform.release()}",
        "cpu_model": cpu_model(),
        "cpu_count": os.cpu_count(),
        "cpu_governor": cpu_governor(),
        "hostname": socket.gethostname(),
        "start_time": datetime.now(UTC).isoformat(timespec="seconds"),
        "command_line": list(sys.orig_argv if argv is None else argv),
    }


def side_fingerprint() -> dict[str, Any]:
    """What one side of an A/B run is: this interpreter, its torch build, this harness."""
    import torch

    config = torch.__config__.show()
    flags = re.search(r"CXX_FLAGS=(.*?)(?:, [A-Z_]+=|$)", config, re.S)
    build_type = re.search(r"BUILD_TYPE=(.+?),", config)
    return {
        "python": sys.version.split()[0],
        "executable": sys.executable,
        "torch": torch.__version__,
        "torch_git": getattr(torch.version, "git_version", None),
        "torch_path": str(Path(torch.__file__).parent),
        "build_type": build_type.group(1) if build_type else None,
        "cxx_flags": flags.group(1).strip() if flags else None,
        "harness": __version__,
        "harness_git": _git_commit(),
    }


# The directory holding the harness package, for another interpreter's PYTHONPATH.
_PACKAGE_PARENT = str(Path(__file__).resolve().parents[2])


def interpreter_fingerprint(python: str, label: str) -> dict[str, Any]:
    """``side_fingerprint()`` of another interpreter, run with this harness on its path.

    Fails with what to do when that interpreter cannot import harness or torch:
    the workers of its side could not either.
    """
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [_PACKAGE_PARENT, env.get("PYTHONPATH")]))
    code = (
        "import json; from harness.records.environment import side_fingerprint; print(json.dumps(side_fingerprint()))"
    )
    try:
        proc = subprocess.run([python, "-c", code], capture_output=True, text=True, env=env, timeout=300, check=False)
    except (OSError, subprocess.SubprocessError) as exc:
        raise UsageError(f"--python {label}={python}: cannot run it ({exc})") from None
    if proc.returncode != 0:
        last = (proc.stderr.strip().splitlines() or ["no output"])[-1]
        raise UsageError(
            f"--python {label}={python}: it cannot import harness and torch ({last}); that interpreter needs "
            f"torch installed and the harness dependencies (numpy, rich, scipy); harness itself comes from "
            f"{_PACKAGE_PARENT} on PYTHONPATH"
        )
    return json.loads(proc.stdout.strip().splitlines()[-1])
