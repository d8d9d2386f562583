"""``python -m harness workers [list|start|stop]``: the kept instruction-counting workers.

Parsing and printing only: the workers are ``harness.workers`` (the registry of kept
ones, stopping them) and ``measure.counters.kept`` (starting the ones a counter borrows).
"""

from __future__ import annotations

import argparse
import os
import time

from harness.errors import HarnessError, UsageError
from harness.options import COUNTER_CHOICES, KEEP_WORKER_ENV, WORKER_START_TIMEOUT, keep_worker_seconds

ACTIONS = ("list", "start", "stop")


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    workers = subparsers.add_parser(
        "workers", help="list, start or stop the instruction-counting workers kept for the next run"
    )
    workers.add_argument(
        "action", nargs="?", choices=ACTIONS, default="list",
        help="list (the default): each kept worker's age, memory and fingerprint; start: start the workers "
        "that counts from this directory and environment will use (collect_callgrind, bench --jobs N), "
        "so that the first count does not wait for one (~15 s under valgrind); stop: end them all",
    )
    workers.add_argument(
        "--jobs",
        type=int,
        default=1,
        metavar="N",
        help="start: the workers of bench --jobs N (default 1: collect_callgrind's and a serial run's)",
    )
    workers.add_argument("--counter", choices=COUNTER_CHOICES, default="auto",
                         help="start: the counter they count with (default auto, as bench)")
    workers.add_argument(
        "--keep-worker", type=float, default=None, metavar="SECONDS",
        help=f"start: their idle timeout (default: ${KEEP_WORKER_ENV}, else 900; as bench --keep-worker)",
    )
    workers.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from harness.present.workers import print_workers
    from harness.workers.registry import kept_workers, stop_all

    if args.action == "stop":
        stopped = stop_all()
        print(f"stopped {len(stopped)} kept worker{'' if len(stopped) == 1 else 's'}")
        return 0
    if args.action == "start":
        return _start(args)
    print_workers(kept_workers())
    return 0


def _start(args: argparse.Namespace) -> int:
    from harness.measure.counter_choice import get_counter
    from harness.measure.counters.kept import start_counter_workers
    from harness.workers.protocol import WorkerStartFailed

    if args.jobs < 1:
        raise UsageError(f"workers start --jobs {args.jobs}: give the number of workers, 1 or more")
    keep = keep_worker_seconds(args.keep_worker)
    if keep is None:
        raise UsageError(
            f"workers start: counting workers are not kept here ({KEEP_WORKER_ENV}=0, or CI=true without "
            f"{KEEP_WORKER_ENV}), so the runs that follow would not use them; set {KEEP_WORKER_ENV}=SECONDS "
            "for this shell or job, then start them"
        )
    counter = get_counter(args.counter)
    if not counter.worker_prefix():
        print(f"{counter.name} counts without a worker of its own: nothing to start")
        return 0
    t0 = time.perf_counter()
    try:
        started = start_counter_workers(counter, keep, WORKER_START_TIMEOUT, args.jobs)()
    except WorkerStartFailed as exc:
        raise HarnessError(f"workers start: a {counter.name} worker did not start: {exc}") from None
    seconds = time.perf_counter() - t0
    for slot, state, pid in started:
        what = {"started": f"started in {seconds:.1f} s", "running": "already running",
                "busy": "running, busy with another client"}[state]
        print(f"slot {slot}: {counter.name} worker {what}" + (f" (pid {pid})" if pid else ""))
    print(f"kept until {keep:g} s idle, for counts from {os.getcwd()} in this environment; "
          "list them: python -m harness workers; end them: python -m harness workers stop")
    return 0
