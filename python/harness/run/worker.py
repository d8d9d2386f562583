"""The worker process's main: runs Tasks sent as JSON lines and answers with TaskResults.

``python -m harness.run.worker --result-fd N`` reads one request per line on
stdin and writes one JSON line per answer on fd N (``workers.protocol``);
with ``--listen SOCKET`` it serves the same lines to one client at a time on
a Unix socket (a kept worker, ``workers.kept``). Results get their own
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
    from harness.run import dispatch  # noqa: F401 - loaded before saying ready

    out = os.fdopen(result_fd, "w", buffering=1, encoding="utf-8")

    def send(message: dict[str, Any]) -> None:
        out.write(json.dumps(message) + "\n")
        out.flush()

    send({"ready": os.getpid()})
    for line in sys.stdin:
        if not line.strip():
            continue
        answer = handle(line)
        if answer is None:
            break
        send(answer)
    return 0


def handle(line: str | bytes) -> dict[str, Any] | None:
    """The answer to one request line; None for the request to exit."""
    from harness import kinds
    from harness.model.task import Task
    from harness.options import DEFAULT_MIN_RUN_TIME
    from harness.run.dispatch import run_task

    request = json.loads(line)
    if request.get("op") == "exit":
        return None
    task = Task.from_json(request["task"])
    if request.get("kind"):
        kinds.ensure(request["kind"])
    result = run_task(task, request.get("min_run_time") or DEFAULT_MIN_RUN_TIME)
    return {"result": result.to_json()}


# Waits for the process to end (gone, or a zombie), then removes the file it
# wrote last, and the log valgrind opened for this shell between fork and exec.
_CLEAN_AFTER_EXIT = (
    'while [ -e "/proc/$0" ] && ! grep -q "^[0-9]* (.*) Z" "/proc/$0/stat" 2>/dev/null; do sleep 0.2; done; '
    'rm -f -- "$1" "$2/valgrind.$$.log"'
)


def _remove_own_files(directory: str) -> None:
    """A kept worker's files, as it exits idle (nobody else will).

    callgrind writes its final dump after Python has exited, so a small
    detached shell (not under valgrind) removes that one.
    """
    import subprocess

    pid = os.getpid()
    for name in os.listdir(directory):
        # Its own log, its sessions' crash logs, its stderr; not the lock or a successor's socket.
        if name.startswith("valgrind.") or name == "stderr.log":
            _unlink(directory, name)
    final_dump = os.path.join(directory, f"callgrind.out.{pid}")
    from harness.options import CALLGRIND_DIR_ENV, env

    if env(CALLGRIND_DIR_ENV):
        try:
            subprocess.Popen(
                ["sh", "-c", _CLEAN_AFTER_EXIT, str(pid), final_dump, directory],
                stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                start_new_session=True,
            )
        except OSError:
            pass  # the next kept worker of this directory removes it


def serve_kept(path: str, idle_timeout: float) -> int:
    """A kept worker: start-up done once, then a fork of it per client (see ``workers.kept``)."""
    import torch  # noqa: F401 - the start-up every client would pay

    from harness.run import dispatch  # noqa: F401
    from harness.workers.kept_server import serve_socket

    directory = os.path.dirname(path)

    def session_ended(pid: int, status: int) -> None:
        # Its final callgrind dump is of no use; its valgrind log is kept
        # after a crash, for the client's report (removed with the worker).
        _unlink(directory, f"callgrind.out.{pid}")
        if status == 0:
            _unlink(directory, f"valgrind.{pid}.log")

    try:
        return serve_socket(path, idle_timeout, handle, session_ended)
    finally:
        _remove_own_files(directory)


def _unlink(directory: str, name: str) -> None:
    try:
        os.unlink(os.path.join(directory, name))
    except OSError:
        pass


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m harness.run.worker")
    parser.add_argument("--result-fd", type=int, help="answer on this fd; requests come on stdin")
    parser.add_argument("--listen", metavar="SOCKET", help="serve clients on this Unix socket (a kept worker)")
    parser.add_argument("--idle-timeout", type=float, required=False, default=None,
                        help="with --listen: exit after this many idle seconds (given by the client)")
    args = parser.parse_args(argv)
    if (args.result_fd is None) == (args.listen is None):
        parser.error("give exactly one of --result-fd and --listen")
    # A segfault in a statement then prints the Python stack to stderr,
    # which the pool attaches to the failed result.
    faulthandler.enable()
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    # The pool owns interruption: it kills workers on Ctrl-C.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    if args.listen is not None:
        if args.idle_timeout is None:
            parser.error("--listen needs --idle-timeout")
        return serve_kept(args.listen, args.idle_timeout)
    return serve(args.result_fd)


if __name__ == "__main__":
    sys.exit(main())
