"""What spreading a run costs and gains: serial, --jobs 2 and Ray with 2 workers, in one run; then
longest-task-first schedules of the full default suites on 4 to 64 workers.

Prints, from one run on this machine:
  1. the dispatch suite (or the -k selection of it) in instruction mode: wall time of a serial run,
     of --jobs 2 and of --executor ray on a local Ray of 2 CPUs, each with its speedup over serial
     (the C++ statements are built before, so no run pays for the build; each run still starts
     its own workers, and the Ray run its local Ray). Each configuration runs --rounds times
     (default 2) in mirrored order, serial, jobs, Ray, Ray, jobs, serial, and the means are
     compared: this shared VM drifts by 10-15% within minutes, which in one fixed order
     landed on whichever configuration ran last.
     Every run starts its own workers (--keep-worker 0); with --warm, serial, --jobs 2 and Ray run
     again with kept workers (the default) that untimed runs started first. Ray runs twice over:
     "ray, 2 workers" starts and stops a local Ray of its own, as `bench --executor ray` without
     --address does (what that costs alone, ray.init, a first task on each worker and
     ray.shutdown, is timed too and shown); "ray cluster, 2 workers" joins a Ray of 2 CPUs that
     this script started before with `ray start --head` (--address), as a run joins the cluster
     it spreads over, each run a Ray job of its own: cold, with new Ray worker processes (what
     such a job costs alone, the driver's connection, a first task on each CPU and its
     disconnection, is timed too and shown); warm, on the kept actors (cluster.kept_actors) that
     the untimed run left, as a run that keeps its workers does.
                                     targets: --jobs 2 >= 1.6x serial (cold), >= 1.8x (warm);
                                     Ray within 10% of --jobs 2
  2. whether Ray's and --jobs 2's counts are identical to the serial counts (task by task)
                                     target: identical
  3. from the durations recorded in (1)'s serial run and in a compile-time run (--compile-time FILE,
     a record of `bench compile_time --mode both`; else each kind's estimate, said so), the
     predicted wall time and efficiency (serial seconds / (workers x wall time)) of the full
     default dispatch (instruction mode) and compile-time suites on 4, 8, 16, 32 and 64 workers,
     scheduled longest task first (`harness.run.shards.makespan`, the rule --shard uses). Tasks of
     the full suite that (1) did not run weigh the mean of those it did.

Run: .venv/bin/python benchmarks/self/scale.py [-k PATTERN] [--counter callgrind] [--compile-time FILE] [--rounds N]
It is slow under callgrind (the whole dispatch suite six times: about 16 minutes on 2 cores;
--rounds 1, 8 minutes); -k narrows (1) and (2) to a part of the suite.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from harness import kinds
from harness.bench import prepare, run_tasks
from harness.cluster.executor import OBJECT_STORE_BYTES
from harness.define.discovery import select_suites
from harness.define.selection import select, with_mode
from harness.model.task import Task
from harness.options import WALL_RESOURCE, RunOptions
from harness.records.store import load_runs
from harness.run.shards import durations_of, makespan
from harness.workers.registry import stop_all

ROOT = Path(__file__).resolve().parents[1]
WORKERS = (4, 8, 16, 32, 64)


def _tasks(suite: str, pattern: str | None = None, mode: str | None = None) -> list[Task]:
    found = [t for s in select_suites(ROOT, [suite]) for t in s.tasks()]
    return with_mode(select(found, pattern), mode)


def _timed(tasks: list[Task], options: RunOptions) -> tuple[float, dict]:
    start = time.perf_counter()
    record = run_tasks(tasks, options)
    return time.perf_counter() - start, record


def _nothing() -> None:
    return None


def _ray_job(**init: object) -> float:
    """Seconds a Ray job with no harness in it takes: ``ray.init(**init)``, a task on each of 2 CPUs, and
    ``ray.shutdown``. A local Ray started as harness starts one, or a job on a running cluster (new
    worker processes: each job gets its own): what every run pays Ray."""
    import ray

    start = time.perf_counter()
    ray.init(include_dashboard=False, log_to_driver=False, **init)
    nothing = ray.remote(_nothing)
    ray.get([nothing.remote() for _ in range(2)])
    ray.shutdown()
    return time.perf_counter() - start


@contextmanager
def _ray_cluster() -> Iterator[str]:
    """A Ray head of 2 CPUs, started as a cluster's head is (`ray start --head`, the resource
    harness schedules wall-time tasks by), its address while it runs; stopped after. Without
    token authentication: Ray 2.60's default, which a fresh driver joining by address (not
    `auto`) fails, until a local Ray has run in its process."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    ray = [sys.executable, "-m", "ray.scripts.scripts"]
    subprocess.run([*ray, "start", "--head", f"--port={port}", "--num-cpus=2",
                    f"--resources={json.dumps({WALL_RESOURCE: 1})}", f"--object-store-memory={OBJECT_STORE_BYTES}",
                    "--include-dashboard=false", "--disable-usage-stats"],
                   check=True, capture_output=True, env={**os.environ, "RAY_AUTH_MODE": "disabled"})
    try:
        yield f"127.0.0.1:{port}"
    finally:
        subprocess.run([*ray, "stop", "--force"], capture_output=True, check=False)


def _order(labels: list[str], rounds: int) -> list[str]:
    """Each configuration ``rounds`` times, every other round reversed (serial, jobs, Ray, Ray,
    jobs, serial): a machine that slows down or speeds up over the run weighs on every
    configuration alike, instead of on the last one."""
    return [label for r in range(rounds) for label in (labels if r % 2 == 0 else labels[::-1])]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-k", dest="pattern", help="only these dispatch benchmarks in (1) and (2)")
    parser.add_argument("--counter", default="auto", choices=("auto", "callgrind", "perf"))
    parser.add_argument("--min-run-time", type=float, default=0.01)
    parser.add_argument("--compile-time", metavar="FILE", help="run record of a compile-time run (its durations)")
    parser.add_argument("--rounds", type=int, default=2, choices=(1, 2, 3, 4),
                        help="runs of each configuration, in mirrored order (default 2)")
    parser.add_argument("--warm", action="store_true",
                        help="also serial and --jobs 2 with kept workers started by an untimed run")
    args = parser.parse_args()

    tasks = _tasks("dispatch", args.pattern, "instructions")
    common = {"mode": "instructions", "counter": args.counter, "min_run_time": args.min_run_time}
    print(f"(1) dispatch suite, instruction mode ({args.counter}): {len(tasks)} tasks, {args.rounds} round(s)")
    prepare(tasks)  # C++ statements built and cached before any timed run, so no run pays for them
    # Cold: every run starts its own workers (--keep-worker 0), as Ray's runs always do. Warm: kept
    # workers (the default) that an untimed run started, in a TMPDIR of this script's own.
    private = tempfile.mkdtemp(prefix="hsc", dir="/tmp")
    os.environ["TMPDIR"] = private
    tempfile.tempdir = None
    try:
        with _ray_cluster() as address:
            cluster = {"executor": "ray", "jobs": 2, "address": address}
            configs = {
                "serial": RunOptions(keep_worker=0, **common),
                "--jobs 2": RunOptions(jobs=2, keep_worker=0, **common),
                "ray, 2 workers": RunOptions(executor="ray", jobs=2, keep_worker=0, **common),
                "ray cluster, 2 workers": RunOptions(keep_worker=0, **cluster, **common),
            }
            if args.warm:
                configs["serial, warm"] = RunOptions(keep_worker=900, **common)
                configs["--jobs 2, warm"] = RunOptions(jobs=2, keep_worker=900, **common)
                configs["ray, 2 workers, warm"] = RunOptions(executor="ray", jobs=2, keep_worker=900, **common)
                configs["ray cluster, 2 workers, warm"] = RunOptions(keep_worker=900, **cluster, **common)
                run_tasks(tasks, configs["--jobs 2, warm"])  # starts the kept workers of both slots
                run_tasks(tasks, configs["ray, 2 workers, warm"])  # and Ray's (slots of their own)
                run_tasks(tasks, configs["ray cluster, 2 workers, warm"])  # and the cluster's Ray workers'
            ray_alone = _ray_job(address="local", num_cpus=2, object_store_memory=OBJECT_STORE_BYTES)
            job_alone = _ray_job(address=address)
            seconds, records = _run_all(tasks, configs, args.rounds)
    finally:
        stop_all()  # this script's kept workers: its TMPDIR's
        shutil.rmtree(private, ignore_errors=True)
    _report(seconds, records, ray_alone, job_alone, args.warm)
    _predict(records, args.compile_time)


def _run_all(tasks: list[Task], configs: dict[str, RunOptions], rounds: int) -> tuple[dict, dict]:
    seconds: dict[str, list[float]] = {label: [] for label in configs}
    records: dict[str, list] = {label: [] for label in configs}
    for label in _order(list(configs), rounds):
        taken, record = _timed(tasks, configs[label])
        seconds[label].append(taken)
        records[label].append(record)
    return seconds, records


def _report(seconds: dict[str, list[float]], records: dict[str, list], ray_alone: float, job_alone: float,
            warm: bool) -> None:
    mean = {label: statistics.fmean(values) for label, values in seconds.items()}
    for label, values in seconds.items():
        base = mean["serial, warm" if label.endswith("warm") else "serial"]
        each = " ".join(f"{v:.1f}" for v in values)
        print(f"  {label:<30} {mean[label]:8.1f} s   speedup {base / mean[label]:5.2f}x   (runs: {each} s)")
    print(f"  a local Ray's own start and stop (no harness): {ray_alone:.1f} s; "
          f"a Ray job on the running cluster (no harness): {job_alone:.1f} s")
    for state in ("",) + ((", warm",) if warm else ()):
        jobs_s = mean[f"--jobs 2{state}"]
        serial_s = mean[f"serial{state}"]
        own, joined = mean[f"ray, 2 workers{state}"], mean[f"ray cluster, 2 workers{state}"]
        target = "1.8x" if state else "1.6x"
        print(f"  {'warm' if state else 'cold'}: --jobs 2 {serial_s / jobs_s:.2f}x serial (target >= {target}); "
              f"Ray against --jobs 2 (target within 10%): a running cluster {(joined / jobs_s - 1) * 100:+.1f}%, "
              f"a local Ray of its own {(own / jobs_s - 1) * 100:+.1f}% "
              f"({((own - ray_alone) / jobs_s - 1) * 100:+.1f}% less that Ray's own start)")

    print("(2) counts identical to the (first) serial run's")
    serial = {r.task.key: r.samples for r in records["serial"][0].results}
    for label, runs in records.items():
        for n, record in enumerate(runs[1:] if label == "serial" else runs, start=2 if label == "serial" else 1):
            results = record.results
            same = sum(serial.get(r.task.key) == r.samples for r in results)
            worst = max((abs(r.samples[0] / serial[r.task.key][0] - 1) for r in results
                         if r.ok and r.samples and serial.get(r.task.key) and serial[r.task.key][0]), default=0.0)
            print(f"  {label:<30} run {n}: {same} of {len(results)} identical; largest difference {worst * 100:.2f}%")
            for r in results:
                if r.ok and r.samples and serial.get(r.task.key) and serial[r.task.key] != r.samples:
                    print(f"    {r.task.key}: {r.samples[0]:.2f} against {serial[r.task.key][0]:.2f} serial")



def _predict(records: dict[str, list], compile_time: str | None) -> None:
    print("(3) predicted wall time of the full default suites, longest task first")
    measured = durations_of(records["serial"][:1])
    mean = statistics.fmean(measured.values()) if measured else 1.0
    full_dispatch = _tasks("dispatch", None, "instructions")
    suites = {"dispatch (instructions)": [measured.get(t.key, mean) for t in full_dispatch]}
    compile_tasks = _tasks("compile_time")
    if compile_time:
        recorded = durations_of(load_runs(compile_time))
        source = f"durations from {compile_time}"
    else:
        recorded, source = {}, "each kind's estimate (give --compile-time FILE for measured durations)"
    suites["compile_time (both modes)"] = [recorded.get(t.key, kinds.estimated_seconds(t)) for t in compile_tasks]
    print(f"  compile_time: {source}")
    for name, costs in suites.items():
        total = sum(costs)
        print(f"  {name}: {len(costs)} tasks, {total:.0f} s serial, longest {max(costs):.0f} s")
        for workers in WORKERS:
            span = makespan(costs, workers)
            print(f"    {workers:>3} workers: {span:8.1f} s   efficiency {total / (workers * span):5.1%}")


if __name__ == "__main__":
    main()
