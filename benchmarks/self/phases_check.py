"""Checks `bench compile_time --phases` on every case of a run: the phases add up, and show the backend's work.

For each counted case of a compile-time run record (``X.json`` beside
``bench --output X.csv``), or of a run it starts itself, it checks:

  1. the top-level phases (and "other") add up to the case's count exactly,
     and no phase holds less than its nested phases together;
  2. a case that counts torch.compile's compile step shows the phases its
     backend must run, and none it must not: ``eager`` dynamo only (no AOT
     autograd, no inductor); ``aot_*`` dynamo and AOT autograd, no inductor;
     ``inductor`` dynamo, AOT autograd and inductor; ``export`` dynamo's
     capture. A case that counts a call of compiled code or all of its work
     (region ``work``) is only held to 1.

It prints a row per case and exits 1 if any case fails.

Run: .venv/bin/python benchmarks/self/phases_check.py [--record X.json] [-k PATTERN] [--all]
(without --record: counts every default case with --phases under callgrind,
about 45 minutes on a loaded 2-core machine).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

# What each backend's compile must show (first) and must not (second), by phase name.
DYNAMO = ("entire_frame_compile", "fullgraph_capture")
AOT = "create_aot_dispatcher_function"
INDUCTOR = "inductor_compile"


def expectations(backend: str) -> tuple[list[str], list[str]]:
    """(phases that must appear, phases that must not) for a compile with ``backend``."""
    if backend == "eager":
        return ["dynamo"], [AOT, INDUCTOR]
    if backend.startswith("aot_"):
        return ["dynamo", AOT], [INDUCTOR]
    if backend == "inductor":
        return ["dynamo", AOT, INDUCTOR], []
    if backend == "export":
        return ["dynamo"], []
    return [], []


def check(result: dict[str, Any]) -> tuple[str, str, list[str]]:
    """(case, backend/region, problems) of one result of the record."""
    params = result["task"]["params"]
    fields = params.get("fields", {})
    case, backend, region = params.get("case", result["task"]["name"]), fields.get("backend", "?"), fields.get("region")
    problems: list[str] = []
    phases = result.get("extra", {}).get("phases")
    if result.get("status") != "ok":
        return case, f"{backend}/{region}", [f"status {result.get('status')}: {result.get('error')}"]
    if not phases:
        return case, f"{backend}/{region}", ["no phases in the result (was it counted with --phases?)"]
    metrics = result["extra"]["metrics"]
    total_metric = next(m for m in ("compile_time_instruction_count", "instruction_count") if m in metrics)
    prefix = f"{total_metric}:phase:"
    tree = {m[len(prefix):]: v for m, v in metrics.items() if m.startswith(prefix)}
    top = sum(v for path, v in tree.items() if "/" not in path)
    if top != metrics[total_metric]:
        problems.append(f"top-level phases add up to {top:,.0f}, the count is {metrics[total_metric]:,.0f}")
    for path, value in tree.items():
        nested = sum(v for p, v in tree.items() if p.startswith(path + "/") and "/" not in p[len(path) + 1:])
        if nested > value:
            problems.append(f"{path} holds {value:,.0f}, less than its nested phases' {nested:,.0f}")
    if region == "compile":
        names = {name for path in tree for name in path.split("/")}
        names |= {"dynamo"} if names & set(DYNAMO) else set()
        needed, barred = expectations(backend)
        problems += [f"no {name} phase" for name in needed if name not in names]
        problems += [f"a phase named {name} (which {backend} does not run)" for name in barred if name in names]
    return case, f"{backend}/{region}", problems


def count(scratch: Path, pattern: str | None, extended: bool) -> Path:
    """The record of ``bench compile_time --phases`` run into ``scratch``."""
    out = scratch / "results.csv"
    command = [sys.executable, "-m", "harness", "bench", "compile_time", "--mode", "instructions", "--phases",
               "--output", str(out)]
    command += ["-k", pattern] if pattern else []
    command += ["--all"] if extended else []
    subprocess.run(command, check=True)
    return out.with_suffix(".json")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--record", type=Path, help="a run record of bench compile_time --phases (X.json)")
    parser.add_argument("-k", dest="pattern", help="without --record: the cases to count (bench's -k)")
    parser.add_argument("--all", action="store_true", help="without --record: the extended cases too")
    args = parser.parse_args(argv)
    if args.record is not None:
        return report(args.record)
    with tempfile.TemporaryDirectory(prefix="harness-phases-check-") as scratch:
        return report(count(Path(scratch), args.pattern, args.all))


def report(record: Path) -> int:
    """Prints a row per counted case of ``record``; 1 if any failed."""
    results = [r for r in json.loads(record.read_text())["results"] if r["task"].get("mode") == "instructions"]
    table = Table("case", "backend/region", "phases", "verdict", title=f"phases of {record}")
    failed = 0
    for result in results:
        case, kind, problems = check(result)
        failed += bool(problems)
        nodes = sum(":phase:" in m for m in result.get("extra", {}).get("metrics", {}))
        table.add_row(case, kind, str(nodes), "; ".join(problems) or "ok")
    Console(width=160).print(table)
    print(f"{len(results) - failed} of {len(results)} case(s) ok" + (f", {failed} failed" if failed else ""))
    return 1 if failed or not results else 0


if __name__ == "__main__":
    sys.exit(main())
