"""``python -m harness workers``: the kept counting workers, one line each."""

from __future__ import annotations

from typing import Any

from harness.options import KEEP_WORKER_ENV
from harness.workers.private_dir import workers_dir


def _duration(seconds: float) -> str:
    seconds = max(0, int(seconds))
    if seconds < 60:
        return f"{seconds} s"
    if seconds < 3600:
        return f"{seconds // 60} min {seconds % 60} s"
    return f"{seconds // 3600} h {seconds % 3600 // 60} min"


def describe(worker: dict[str, Any]) -> str:
    """One worker: pid, age, idle limit, memory, fingerprint (harness sources, env digest), where it serves."""
    # (torch's fingerprint: [[its __init__.py, size, modification time]])
    found = worker.get("torch") or [["-"]]
    torch = str(found[0][0]).removesuffix("/__init__.py")
    return (
        f"pid {worker['server']}  age {_duration(worker['age'])}  exits after {worker['idle_timeout']:g} s idle  "
        f"memory {worker['memory'] / 2**20:.0f} MiB  harness {str(worker.get('harness'))[:12]}  "
        f"env {worker.get('env')}  slot {worker.get('slot')}\n"
        f"    python {worker.get('python')}  torch {torch}  cache {worker.get('cache', '-')}\n"
        f"    cwd {worker.get('cwd')}  in {worker['directory']}"
    )


def print_workers(workers: list[dict[str, Any]]) -> None:
    if not workers:
        print(f"no kept instruction-counting workers (in {workers_dir()})")
        return
    total = sum(w["memory"] for w in workers)
    print(f"{len(workers)} kept instruction-counting worker{'' if len(workers) == 1 else 's'}, "
          f"{total / 2**20:.0f} MiB in all (idle timeout: {KEEP_WORKER_ENV}; "
          "end them: python -m harness workers stop)")
    for worker in workers:
        print(describe(worker))
