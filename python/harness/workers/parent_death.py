"""Processes that end with the process they serve: Linux's parent-death signal, set before exec.

A run's worker runs in a session of its own (Ctrl-C is the harness's to
handle), so nothing that ends the harness's process group reaches it, and
a timeout is the harness's to enforce: when the harness process itself is
killed (``kill -9``, the OOM killer, a CI runner's hard stop), a worker
whose statement never returns would run for ever. Each one is therefore
started with ``PR_SET_PDEATHSIG`` = SIGKILL: the kernel kills it the moment
its parent goes, whatever it is doing (a spin in C++ holding the GIL, a
sleep, valgrind translating).

Two properties of that signal shape this module:

- it is set in the new process before it execs the command (``WRAPPER``, a
  few lines of Python with no site, ~20 ms), and survives every exec after
  (``setarch``, the ``valgrind`` script, ``valgrind.bin``, the Python it
  runs), since none of them is set-uid;
- it fires when the *thread* that forked the process ends, not the process:
  workers are started from pool threads and from whichever thread first
  asks for a count, and live longer than those threads. So every tethered
  process is forked by one thread that lives as long as the harness process
  (``spawn``).

A process forked by an already tethered one does not inherit the signal:
forks that must go with their parent call ``die_with_parent(parent)`` (a kept
worker's sessions, the forks a counting child counts each repeat in); the
zygote and its children set it in C (``harness._C.zygote_loop``). Both are
``tether_to`` in the C++ core, which allocates nothing, so a count taken
after it does not move.
"""

from __future__ import annotations

import concurrent.futures
import os
import queue
import sys
import threading
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")

# argv: the pid of the parent that must be alive, then the command. The parent may have died
# between fork and prctl, which the signal would then never report: checked after it is set.
# What the command gets is what the wrapper got: SIGPIPE and SIGXFSZ as subprocess's
# restore_signals left them (Python's start-up ignores them, and an ignored signal stays ignored
# through exec), and the environment as it was at exec (/proc/self/environ: Python's start-up
# adds LC_CTYPE under the C locale), in its order.
_WRAPPER_CODE = """\
import ctypes, os, signal, sys
ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
if os.getppid() != int(sys.argv[1]):
    os._exit(1)
for s in (signal.SIGPIPE, signal.SIGXFSZ):
    signal.signal(s, signal.SIG_DFL)
with open("/proc/self/environ", "rb") as f:
    env = dict(e.split(b"=", 1) for e in f.read().split(b"\\0") if b"=" in e)
try:
    os.execvpe(sys.argv[2], sys.argv[2:], env)
except OSError as exc:
    sys.stderr.write(f"{sys.argv[2]}: {exc.strerror}\\n")
    os._exit(127)
"""


def wrapped(command: list[str]) -> list[str]:
    """``command`` run so that it is killed when the process that starts it (this one) ends.

    Start it through ``spawn``. The process that runs ``command`` has the
    same pid, argv and environment as when started directly.
    """
    return [sys.executable, "-S", "-I", "-c", _WRAPPER_CODE, str(os.getpid()), *command]


def die_with_parent(parent: int) -> None:
    """In a process just forked by ``parent`` (its pid, read before the fork): be killed when the
    thread that forked it ends, and exit at once when that parent is already gone."""
    from harness.core import native  # loaded already in every process that forks one

    native().die_with_parent(parent)


_lock = threading.Lock()
_jobs: queue.SimpleQueue | None = None
# The process whose thread serves ``_jobs``: a fork has only the thread that forked, and starts
# a spawner of its own. (Not an at-fork hook: a zygote's children must allocate nothing.)
_owner = 0


def _serve(jobs: queue.SimpleQueue) -> None:
    while True:
        start, future = jobs.get()
        if not future.set_running_or_notify_cancel():
            continue
        try:
            future.set_result(start())
        except BaseException as exc:  # noqa: BLE001 - raised again in the caller's thread
            future.set_exception(exc)


def spawn(start: Callable[[], T], discard: Callable[[T], None] | None = None) -> T:
    """``start()`` (a ``subprocess.Popen`` of a ``wrapped`` command), run on the one thread that
    starts every tethered process, which lives as long as this process.

    ``discard(result)``: what to do with the result if the caller is interrupted (Ctrl-C) while
    waiting for it, so that a process nobody knows of is not left running.
    """
    global _jobs, _owner
    with _lock:
        if _jobs is None or _owner != os.getpid():
            _jobs, _owner = queue.SimpleQueue(), os.getpid()
            threading.Thread(target=_serve, args=(_jobs,), name="harness-spawner", daemon=True).start()
        jobs = _jobs
    future: concurrent.futures.Future[T] = concurrent.futures.Future()
    jobs.put((start, future))
    try:
        return future.result()
    except BaseException:
        if discard is not None and not future.done():

            def _discard(done: concurrent.futures.Future[T]) -> None:
                if done.exception() is None:
                    discard(done.result())

            future.add_done_callback(_discard)
        raise
