"""Worker process: runs Tasks sent as JSON lines and answers with TaskResults.

``python -m harness.worker --result-fd N`` reads one request per line on
stdin and writes one JSON line per answer on fd N. Results get their own
pipe because user statements may print to stdout; the worker's stdout is
pointed at its stderr, which the pool keeps as the task's diagnostic output.
A crash (segfault, abort) kills only this process; the pool reports it and
starts another.
"""

from __future__ import annotations

import argparse
import faulthandler
import json
import os
import signal
import sys
from typing import Any


def serve(result_fd: int) -> int:
    # Imports after the redirect so even import-time prints stay off the pipe.
    from .result import TaskResult
    from .runner import DEFAULT_MIN_RUN_TIME, run_task
    from .task import Task

    out = os.fdopen(result_fd, "w", buffering=1, encoding="utf-8")

    def send(message: dict[str, Any]) -> None:
        out.write(json.dumps(message) + "\n")
        out.flush()

    send({"ready": os.getpid()})
    for line in sys.stdin:
        if not line.strip():
            continue
        request = json.loads(line)
        if request.get("op") == "exit":
            break
        task = Task.from_json(request["task"])
        result: TaskResult = run_task(task, request.get("min_run_time") or DEFAULT_MIN_RUN_TIME)
        send({"result": result.to_json()})
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m harness.worker")
    parser.add_argument("--result-fd", type=int, required=True)
    args = parser.parse_args(argv)
    # A segfault in a statement then prints the Python stack to stderr,
    # which the pool attaches to the failed result.
    faulthandler.enable()
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    # The pool owns interruption: it kills workers on Ctrl-C.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    return serve(args.result_fd)


if __name__ == "__main__":
    sys.exit(main())
