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
import contextlib
import faulthandler
import gc
import json
import os
import signal
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

from harness.model.task import Task
from harness.run.instructions import baseline_first, counted_request
from harness.workers.zygote import Zygote


def serve_spec(spec: str) -> int:
    """``--serve SPEC``: start-up, then answer on a pipe or serve a socket as SPEC says.

    Everything up to the zygote's fork is the same for both, SPEC read only
    after it: what start-up allocates is the heap every count starts from,
    and a run's own worker and a kept one must count alike.
    """
    # Imports after the redirect so even import-time prints stay off the pipe.
    from harness.run import dispatch  # noqa: F401 - loaded before saying ready

    zygote = start_zygote()
    try:
        result_fd, path, idle_timeout = _parse_serve(spec)
    except ValueError as exc:
        raise SystemExit(f"python -m harness.run.worker: {exc}") from None
    if path is not None and idle_timeout is not None:
        return _serve_socket(path, idle_timeout, zygote)
    assert result_fd is not None
    return _serve_pipe(result_fd, zygote)


def serve(result_fd: int) -> int:
    """``--result-fd N``: answer on fd N, requests on stdin."""
    from harness.run import dispatch  # noqa: F401 - loaded before saying ready

    return _serve_pipe(result_fd, start_zygote())


def _serve_pipe(result_fd: int, zygote: Zygote | None) -> int:
    answer_line = _answerer(zygote)
    out = os.fdopen(result_fd, "w", buffering=1, encoding="utf-8")

    def send(message: dict[str, Any]) -> None:
        out.write(json.dumps(message) + "\n")
        out.flush()

    send({"ready": os.getpid()})
    for line in sys.stdin:
        if not line.strip():
            continue
        answer = answer_line(line)
        if answer is None:
            break
        send(answer)
    if zygote is not None:
        zygote.close()
    return 0


def start_zygote() -> Zygote | None:
    """The end of start-up: in a callgrind worker, the zygote every request runs in a fresh child of
    (``workers.zygote``); None elsewhere.

    Only there: callgrind's counts are exact, so the heap a count starts from
    shows in it; a hardware counter's noise is larger than that. Either way,
    the working directory joins sys.path here, first, as ``python -m`` would
    have put it: workers start with ``-P`` so that start-up imports never list
    it, because the names in it would become the heap every count starts from
    (a file created beside a run, its output or a lock, moved the count of the
    same statement: 970,243 and 970,619 instructions for ``y = x * w``).
    Statements and suites still import from it as before.
    """
    from harness.core import native
    from harness.options import CALLGRIND_DIR_ENV, COUNTER_ENV, env

    directory = env(CALLGRIND_DIR_ENV)
    counting = env(COUNTER_ENV) == "callgrind" and directory and native().callgrind.running_on_valgrind()
    if counting and threading.active_count() == 1:  # a fork copies only this thread
        # What requests use, imported once here rather than in every child.
        import torch  # noqa: F401

        from harness.run import grouped_task, instructions, sampler_task, timer_task  # noqa: F401

        _warm_up_torch()
        _find_cpp_toolchain()
        # Everything start-up made, out of the collector's sight: otherwise each counting child's
        # first collection (``counters.base.CollectorOff``) walked torch's objects again, ~0.25 s
        # of a 1.3 s count under valgrind.
        gc.collect()
        gc.freeze()
    else:
        counting = False
    if sys.path[:1] != [os.getcwd()]:
        sys.path.insert(0, os.getcwd())
    return Zygote(directory, handle) if counting else None


def _warm_up_torch() -> None:
    """A small tensor op run a few times with instrumentation on, once, before the zygote is forked.

    Otherwise every child would pay again, under valgrind, what the first
    count in a process pays: torch's one-time initialisation (CPU capability,
    allocator, dispatcher) and valgrind's instrumented translation of the
    interpreter and torch's dispatch (~0.4 s of CPU per child). Nothing is
    dumped or read back: what a dump holds (pids, times) varies from process
    to process, and reading it would leave the heap of each worker different.
    """
    from harness.core import native
    from harness.measure.counter_choice import worker_counter
    from harness.measure.counters.base import warm_up
    from harness.measure.python_block import PythonBlock

    C = native().callgrind
    block = PythonBlock("y = x * w + 1", "x = torch.ones(4, 4)\nw = torch.ones(4, 4)", "",
                        clock_ns=worker_counter().clock())
    sampler = block.sampler()
    C.start_instrumentation()
    try:
        warm_up(sampler, 10)
    finally:
        C.region_end()
        C.stop_instrumentation()


def _find_cpp_toolchain() -> None:
    """Ask the C++ compiler what it is (``--version``, its linker) once, before the zygote is forked.

    Otherwise each child measuring a C++ statement would start three
    processes and read their output through pipes before its count, in as
    many chunks as the output happened to arrive in: the same statement
    counted 559,218 or 558,582 instructions from one call to the next.
    Without a usable compiler there is nothing to find; a C++ statement then
    reports that itself.
    """
    from harness.errors import BuildError
    from harness.measure.cpp.toolchain import toolchain

    with contextlib.suppress(BuildError):
        toolchain()


def _answerer(zygote: Zygote | None) -> Callable[[str | bytes], dict[str, Any] | None]:
    """``handle``, or the same answer from a fresh child of the zygote."""
    if zygote is None:
        return handle

    def answer(line: str | bytes) -> dict[str, Any] | None:
        raw = line.encode() if isinstance(line, str) else line
        request = json.loads(raw)
        if request.get("op") == "exit":
            return None
        task = Task.from_json(request["task"])
        first = baseline_first(task, zygote)
        if first is not None:
            # Its failure is the statement's to report: a child measures the baseline itself then.
            done = zygote.run(counted_request(first, 0.0))
            _remove_child_files(zygote.directory, done.pid, keep_log=False)
        outcome = zygote.run(counted_request(task, request.get("min_run_time") or 0.0, request.get("kind")))
        _remove_child_files(zygote.directory, outcome.pid, keep_log=outcome.answer is None)
        if outcome.answer is not None:
            if isinstance(outcome.answer.get("result"), dict):
                outcome.answer["result"]["task"] = request["task"]
            return outcome.answer
        return {"result": _failed_child(request, zygote.directory, outcome.pid, outcome.status).to_json()}

    return answer


def _failed_child(request: dict[str, Any], directory: Path, pid: int, status: int) -> Any:
    """The result of a task whose child died without answering: how it died, and valgrind's report."""
    from harness.measure.callgrind.logs import signal_name, valgrind_log
    from harness.model.result import TaskResult
    from harness.model.task import Task

    if os.WIFSIGNALED(status):
        what = f"the measuring process crashed under valgrind ({signal_name(os.WTERMSIG(status))})"
    else:
        what = f"the measuring process exited with status {os.waitstatus_to_exitcode(status)} without an answer"
    log = valgrind_log(directory / f"valgrind.{pid}.log")
    _unlink(str(directory), f"valgrind.{pid}.log")
    error = f"{what}\n--- valgrind ---\n{log}" if log else what
    return TaskResult(task=Task.from_json(request["task"]), status="failed", error=error)


def _remove_child_files(directory: Path, pid: int, keep_log: bool) -> None:
    """A child's final dump and, unless it is needed for a report, its valgrind log."""
    _unlink(str(directory), f"callgrind.out.{pid}")
    if not keep_log:
        _unlink(str(directory), f"valgrind.{pid}.log")


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

    from harness.measure.callgrind.counter import PENDING_DUMP

    pid = os.getpid()
    for name in os.listdir(directory):
        # Its own log, its sessions' crash logs, its stderr, and counts' dumps no client came to
        # read (a client killed between answer and ``details.finish``); not the lock or a
        # successor's socket.
        if name.startswith(("valgrind.", PENDING_DUMP)) or name == "stderr.log":
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
    """``--listen SOCKET``: a kept worker, start-up done once, then a fork of it per client (``workers.kept``)."""
    from harness.run import dispatch  # noqa: F401

    return _serve_socket(path, idle_timeout, start_zygote())


def _serve_socket(path: str, idle_timeout: float, zygote: Zygote | None) -> int:
    answer_line = _answerer(zygote)
    from harness.workers.kept_server import serve_socket

    directory = os.path.dirname(path)

    def session_ended(pid: int, status: int) -> None:
        # Its final callgrind dump is of no use; its valgrind log is kept
        # after a crash, for the client's report (removed with the worker).
        _unlink(directory, f"callgrind.out.{pid}")
        if status == 0:
            _unlink(directory, f"valgrind.{pid}.log")

    try:
        return serve_socket(path, idle_timeout, answer_line, session_ended)
    finally:
        if zygote is not None:
            zygote.close()
        _remove_own_files(directory)


def _unlink(directory: str, name: str) -> None:
    try:
        os.unlink(os.path.join(directory, name))
    except OSError:
        pass


def _parse_serve(spec: str) -> tuple[int | None, str | None, float | None]:
    """``--serve``'s value (``workers.process.serve_args``): (result fd, socket, idle timeout)."""
    spec = spec.rstrip(" ")
    if spec.startswith("fd:"):
        return int(spec[3:]), None, None
    if spec.startswith("listen:") and " idle:" in spec:
        path, idle = spec[len("listen:"):].rsplit(" idle:", 1)
        return None, path, float(idle)
    raise ValueError(f"--serve {spec!r}: give fd:N or listen:SOCKET idle:SECONDS")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m harness.run.worker")
    parser.add_argument("--serve", metavar="SPEC", help="fd:N (answer on fd N, requests on stdin) or "
                        "listen:SOCKET idle:SECONDS (a kept worker); what harness starts workers with")
    parser.add_argument("--result-fd", type=int, help="answer on this fd; requests come on stdin")
    parser.add_argument("--listen", metavar="SOCKET", help="serve clients on this Unix socket (a kept worker)")
    parser.add_argument("--idle-timeout", type=float, required=False, default=None,
                        help="with --listen: exit after this many idle seconds (given by the client)")
    args = parser.parse_args(argv)
    # --serve's value is read only after start-up (serve_spec), even to check it.
    if args.serve is None and (args.result_fd is None) == (args.listen is None):
        parser.error("give exactly one of --serve, --result-fd and --listen")
    # A segfault in a statement then prints the Python stack to stderr,
    # which the pool attaches to the failed result.
    faulthandler.enable()
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    # The pool owns interruption: it kills workers on Ctrl-C.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    if args.serve is not None:
        return serve_spec(args.serve)
    if args.listen is not None:
        if args.idle_timeout is None:
            parser.error("--listen needs --idle-timeout")
        return serve_kept(args.listen, args.idle_timeout)
    return serve(args.result_fd)


if __name__ == "__main__":
    sys.exit(main())
