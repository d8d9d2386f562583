"""CallgrindCounter: exact instruction counts from ``valgrind --tool=callgrind``, per function.

Callgrind workers run ``sys.executable`` under ``valgrind --tool=callgrind``
with instrumentation off at start: interpreter start-up and ``import torch``
run at valgrind's uninstrumented speed, and the C++ core switches
instrumentation and collection on around exactly the measured region. Each
region is dumped to a private directory, parsed and removed; in a counting
child of a worker, the dump is left unread for the process that receives the
result (``measure_dumps``, ``details.finish``).

Besides the rules every counter follows (``measure.counters.base``), each
repeat of a Timer measurement runs in a ``fork()`` of the warmed-up worker,
so every repeat starts from the same heap: otherwise the state that malloc's
free lists reach after one run shifts the next run's count by up to ~0.5% for
small tensor ops. Where forking is unsafe (threads running, CUDA
initialised, more than one intra-op thread) repeats run in the worker
itself, each with a fresh code object and its own warm-up.
"""

from __future__ import annotations

import atexit
import functools
import os
import platform
import re
import shutil
import signal
import subprocess
import sys
import threading
import traceback
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from harness.core import native
from harness.errors import HarnessError, StatementError
from harness.measure.callgrind.details import discard, profile_of
from harness.measure.callgrind.details import finish as finish_details
from harness.measure.callgrind.logs import signal_name, tail, valgrind_log
from harness.measure.callgrind.profile import total_from_text
from harness.measure.counters.base import CollectorOff, InstructionCounter, Sampler, fresh_code, warm_up
from harness.measure.counters.cache import LL_BYTES
from harness.measure.counters.cache import valgrind_flags as cache_flags
from harness.measure.counters.profile import Profile
from harness.model.result import TaskResult
from harness.options import CACHE_DIR_ENV, CACHE_SIM_ENV, CALLGRIND_DIR_ENV
from harness.workers.zygote import parked_threads, pid_text

if TYPE_CHECKING:
    from harness.measure.callgrind.dump_dir import DumpDir

VALGRIND_INSTALL_HINT = (
    "install it with `apt-get install valgrind` (Debian/Ubuntu), `dnf install valgrind` (Fedora) "
    "or `conda install -c conda-forge valgrind`"
)


@functools.cache
def built_with_debug_symbols() -> bool:
    """Whether torch was built with debug symbols (RelWithDebInfo), as torch's CallgrindStats reports it.

    ``collect.torch_has_debug_symbols`` asks it once per torch install and remembers it; a
    counting child never asks (0.1 s of a count under valgrind), nor a worker before its
    zygote forks (torch's answer, which asks MKL and OpenMP, then made a kept worker count
    ``y = x * w`` 0.08% away from a run's own).
    """
    import torch

    found = re.search(r"BUILD_TYPE=(.+?),", torch.__config__.show())
    return bool(found) and found.group(1) == "RelWithDebInfo"


def valgrind_path() -> str | None:
    return shutil.which("valgrind")


class CallgrindCounter(InstructionCounter):
    """Exact counts from ``valgrind --tool=callgrind``, with per-function detail."""

    name = "callgrind"
    exact = True

    def __init__(self, out_dir: str | None = None, cache_sim: bool = False) -> None:
        # In the harness process the counter owns a private directory for
        # its workers' dumps and logs; in a worker it is handed the path.
        self._dir: Path | None = Path(out_dir) if out_dir else None
        # Its workers simulate the caches (``counters.cache``): their dumps carry data accesses and misses.
        self.cache_sim = cache_sim
        self._flush: bytearray | None = None  # read before each count of a simulation (``_counted_run``)
        self._owned: DumpDir | None = None
        self._lock = threading.Lock()

    # -- parent side ------------------------------------------------------------
    @staticmethod
    def require_valgrind() -> str:
        path = valgrind_path()
        if path is None:
            raise HarnessError(
                "valgrind is not installed (it is needed to count instructions with callgrind): "
                f"{VALGRIND_INSTALL_HINT}; where the hardware counter is readable, --counter perf needs no valgrind"
            )
        return path

    def out_dir(self) -> Path:
        with self._lock:
            if self._dir is None:
                # Only the owning harness process makes a directory: imported
                # here, a counting worker does not load it (nor fcntl) before
                # its zygote forks, which would move its start-up heap and so
                # its counts.
                from harness.measure.callgrind.dump_dir import DumpDir

                self._owned = DumpDir()
                self._dir = self._owned.path
                atexit.register(self.close)
            return self._dir

    def worker_prefix(self) -> list[str]:
        valgrind = self.require_valgrind()
        d = self.out_dir()
        return [
            *_fixed_layout(),
            valgrind,
            "--tool=callgrind",
            "--instr-atstart=no",
            "--collect-atstart=no",
            # No "fn'2" copies of recursive functions: with instrumentation
            # switched on mid-stack, callgrind's recursion depth is arbitrary
            # and would split one function's count between two names.
            "--separate-recs=1",
            *(cache_flags() if self.cache_sim else ()),
            f"--callgrind-out-file={d}/callgrind.out.%p",
            # One log per process (workers and the children they fork), so a
            # crash report carries exactly that process's valgrind messages.
            f"--log-file={d}/valgrind.%p.log",
        ]

    def worker_env(self) -> dict[str, str]:
        """The counter's variables; ``HARNESS_CACHE_DIR`` is the cache's link (``workers.private_dir.cache_link``),
        one path for every worker of that cache, whatever the cache's own path."""
        d = self.out_dir()
        env = {**super().worker_env(), CALLGRIND_DIR_ENV: str(d)}
        if self.cache_sim:
            env[CACHE_SIM_ENV] = "1"
        link = _cache_link()
        if link is not None:
            env[CACHE_DIR_ENV] = str(link)
        return env

    def diagnostics(self, pid: int) -> str:
        if self._dir is None:
            return ""
        return valgrind_log(self._dir / f"valgrind.{pid}.log")

    def kept_in(self, directory: Path | None) -> CallgrindCounter:
        """Dumps and logs go to the kept worker's own directory; its key cannot contain that directory, which
        comes from the key, so the key's stand-in points at a placeholder."""
        if directory is None:
            return CallgrindCounter(out_dir="/kept", cache_sim=self.cache_sim)
        from harness.workers.private_dir import private_directory  # parent side only, as in out_dir()

        private_directory(directory)
        return CallgrindCounter(out_dir=str(directory), cache_sim=self.cache_sim)

    def close(self) -> None:
        if self._owned is not None:
            self._owned.remove()

    def finish(self, result: TaskResult) -> TaskResult:
        """The samples, totals and per-function details of the dumps a counting child left (``details``), made here."""
        return finish_details(result)

    # -- worker side ------------------------------------------------------------
    def _in_worker(self) -> tuple[Any, Path]:
        C = native().callgrind
        if not C.running_on_valgrind():
            raise HarnessError(
                "callgrind counts only in a process started under valgrind: run this in a worker started "
                "with get_counter('callgrind').worker_prefix() and .worker_env() (python -m harness bench "
                "--mode instructions does this)"
            )
        if self._dir is None:
            raise HarnessError(f"{CALLGRIND_DIR_ENV} is not set: start the worker with the counter's worker_env()")
        return C, self._dir

    def clock(self) -> Callable[[], int]:
        return native().callgrind.toggle_region

    def count(self, fn: Callable[[], object]) -> int:
        C, _ = self._in_worker()
        try:
            with CollectorOff():
                C.zero_stats()
                C.count_call(fn)
                C.dump_stats("harness count")
        finally:
            C.stop_instrumentation()
        return sum(total_from_text(text) for text in self._take(os.getpid()))

    def count_marked(self, fn: Callable[[], object]) -> int:
        """Instructions ``fn()`` spends between the markers it calls itself
        (``marker_begin``, ``marker_end``; unbalanced or nested calls are
        harmless): for a region that starts and ends deep inside ``fn``."""
        return sum(self.count_marked_dumps(fn))

    def count_marked_dumps(self, fn: Callable[[], object], read: Callable[[str], Any] = total_from_text) -> list[Any]:
        """As ``count_marked``, each dump in order, as ``read`` makes it of the dump's text (its total, or
        ``parse_text``'s per-function Profile): ``fn`` may cut the region into intervals with dumps of its
        own (``dump_stats``), each the cost since the last; the final dump (the rest of the region) is
        last, and together they are the region's count exactly."""
        C, _ = self._in_worker()
        try:
            with CollectorOff():
                C.start_instrumentation()
                C.zero_stats()
                fn()
                C.region_end()
                C.dump_stats("harness count")
        finally:
            C.stop_instrumentation()
        return [read(text) for text in self._take(os.getpid())]

    @staticmethod
    def marker_begin() -> None:
        native().callgrind.region_begin()

    @staticmethod
    def marker_end() -> None:
        native().callgrind.region_end()

    def measure(
        self,
        sampler: Sampler,
        number: int,
        repeats: int,
        *,
        clocked: bool,
        detail: bool = False,
        keep_text: bool = False,
    ) -> list[Profile]:
        # The dumps are parsed once instrumentation is off: valgrind's uninstrumented speed, several times faster.
        texts = self._counts(sampler, number, repeats, clocked, self._take)
        return [profile_of(text, detail, keep_text) for text in texts]

    def measure_dumps(self, sampler: Sampler, number: int, repeats: int, *, clocked: bool) -> list[str]:
        """As ``measure``, but each count's dump is left where callgrind wrote it, unread: the paths,
        in order, for the process that receives the result to read, parse and remove
        (``details.finish``). Under valgrind, reading and parsing even its total took a counting
        child 0.1-0.2 s of code translated again once instrumentation stops."""
        left: list[Path] = []

        def leave(pid: int) -> list[Path]:
            # Renamed: callgrind, starting in the next process this one forks (a baseline's count),
            # removes the files named as the last one's dumps.
            kept = [path.rename(path.with_name(PENDING_DUMP + path.name)) for path in self._claim(pid)]
            left.extend(kept)
            return kept

        try:
            return [str(path) for path in self._counts(sampler, number, repeats, clocked, leave)]
        except BaseException:
            discard(left)
            raise

    def _counts(self, sampler: Sampler, number: int, repeats: int, clocked: bool,
                collect: Callable[[int], list[Any]]) -> list[Any]:
        """``repeats`` counts of ``sampler``; ``collect(pid)`` gathers what each counting process dumped."""
        C, _ = self._in_worker()
        out: list[Any] = []
        if self.cache_sim and self._flush is None:
            # Allocated before any fork: every counting child flushes through the same addresses.
            self._flush = bytearray(2 * LL_BYTES)
        try:
            with CollectorOff():
                if _fork_is_safe():
                    # Warm up with instrumentation on, so the children
                    # inherit the translated code instead of each
                    # translating it again.
                    C.start_instrumentation()
                    warm_up(sampler, number)
                    C.region_end()
                    for pid in self._measure_in_children(C, sampler, number, clocked, repeats):
                        out.extend(collect(pid))
                else:
                    for _ in range(repeats):
                        run = fresh_code(sampler)
                        warm_up(run, number)
                        C.region_end()
                        _counted_run(C, run, number, clocked, self._flush)
                        out.extend(collect(os.getpid()))
        finally:
            C.region_end()
            C.stop_instrumentation()
        return out

    def _measure_in_children(self, C: Any, sampler: Sampler, number: int, clocked: bool, repeats: int) -> list[int]:
        """Fork one child per repeat, back to back, and wait for all of them.

        Nothing runs in this process between the forks but the forks
        themselves: any allocation here (reading a child's answer) would
        change the heap the next child starts from, and with it the count.
        A fork does not inherit the parent-death signal this process has
        (``workers.parent_death``): each child sets its own, in C, before it
        counts, so that it goes with this process whatever its statement does.
        """
        parent = os.getpid()  # before the forks: the children only read it
        pipes = [os.pipe() for _ in range(repeats)]
        pids = [0] * repeats
        try:
            with warnings.catch_warnings():
                # Python 3.12 warns of fork() with a second thread; a zygote child's is parked.
                warnings.simplefilter("ignore", DeprecationWarning)
                for i in range(repeats):
                    pid = os.fork()
                    if pid == 0:  # pragma: no cover - runs in the child
                        self._child(C, sampler, number, clocked, pipes[i][1], parent)
                    pids[i] = pid
        except BaseException:  # fork failed (memory?) or Ctrl-C: leave nothing behind
            for pid in pids:
                if pid:
                    os.kill(pid, signal.SIGKILL)
                    os.waitpid(pid, 0)
                    self._remove(pid)
            for read_fd, write_fd in pipes:
                os.close(read_fd)
                os.close(write_fd)
            raise
        failure: tuple[int, int, str] | None = None
        for _, write_fd in pipes:
            os.close(write_fd)
        for (read_fd, _), pid in zip(pipes, pids, strict=True):
            _, status = os.waitpid(pid, 0)
            with os.fdopen(read_fd, "rb") as f:
                message = f.read().decode("utf-8", "replace")
            failed = os.WIFSIGNALED(status) or (os.WIFEXITED(status) and os.WEXITSTATUS(status) != 0)
            if failed and failure is None:
                failure = (pid, status, message)
        if failure is not None:
            for pid in pids:
                if pid != failure[0]:
                    self._remove(pid)
            self._fail_child(*failure)
        return pids

    def _child(self, C: Any, sampler: Sampler, number: int, clocked: bool, answer_fd: int, parent: int) -> None:
        """Measure once and exit without running any Python clean-up (nothing to flush, faster).

        First it is tethered to ``parent``: killed when the thread that forked it ends, at once
        if that has already happened. The same call in every child, outside the region, so no count moves.
        """
        assert self._dir is not None
        native().die_with_parent(parent)
        code = 0
        try:
            err = os.open(self._dir / _stderr_name(os.getpid()), os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            os.dup2(err, 2)
            _counted_run(C, sampler, number, clocked, self._flush)
        except BaseException as exc:  # noqa: BLE001 - reported to the parent
            code = 1
            text = f"{type(exc).__name__}: {exc}\n{''.join(traceback.format_exception(exc))}"
            os.write(answer_fd, text[-16000:].encode("utf-8", "replace"))
        os._exit(code)

    def _fail_child(self, pid: int, status: int, message: str) -> None:
        assert self._dir is not None
        log = valgrind_log(self._dir / f"valgrind.{pid}.log")
        stderr = tail(self._dir / _stderr_name(pid))
        self._remove(pid)
        if os.WIFSIGNALED(status):
            what = f"the statement crashed under valgrind ({signal_name(os.WTERMSIG(status))})"
        elif message:
            first = message.splitlines()[0]
            what = f"the statement raised in the measured run: {first}"
        else:
            what = f"the measuring process exited with status {os.WEXITSTATUS(status)}"
        parts = [what]
        if log:
            parts.append(f"--- valgrind ---\n{log}")
        if stderr.strip():
            parts.append(f"--- stderr ---\n{stderr}")
        if message and not os.WIFSIGNALED(status):
            parts.append(f"--- traceback ---\n{message}")
        raise StatementError("\n".join(parts))

    def _dumps(self, pid: int) -> tuple[list[Path], list[Path]]:
        """(numbered dumps in order, every other file of process ``pid``)."""
        assert self._dir is not None
        dumps: list[tuple[int, Path]] = []
        other: list[Path] = []
        base = f"callgrind.out.{pid}"
        for path in self._dir.iterdir():
            name = path.name
            if name == base:
                other.append(path)  # the dump callgrind writes when the process exits
            elif name.startswith(base + ".") and name[len(base) + 1 :].isdigit():
                dumps.append((int(name[len(base) + 1 :]), path))
            elif name in (f"valgrind.{pid}.log", _stderr_name(pid)) and pid != os.getpid():
                other.append(path)
        return [p for _, p in sorted(dumps)], other

    def _claim(self, pid: int) -> list[Path]:
        """Process ``pid``'s numbered dumps, in order; its other files (final dump, log, stderr) removed.
        HarnessError when it dumped nothing."""
        dumps, other = self._dumps(pid)
        for path in other:
            path.unlink(missing_ok=True)
        if not dumps:
            raise HarnessError(f"callgrind wrote no profile for process {pid} into {self._dir}")
        return dumps

    def _take(self, pid: int) -> list[str]:
        """The text of process ``pid``'s dumps; its files are removed."""
        dumps = self._claim(pid)
        try:
            return [path.read_text(encoding="utf-8", errors="replace") for path in dumps]
        finally:
            discard(dumps)

    def _remove(self, pid: int) -> None:
        dumps, other = self._dumps(pid)
        for path in (*dumps, *other):
            path.unlink(missing_ok=True)


# The prefix of a count's dump left for the result's receiver (``measure_dumps``).
PENDING_DUMP = "pending."


def _cache_link() -> Path | None:
    """The link to the cache a counting worker gets as its cache (made or mended here); None where the
    cache cannot be used (the worker then reports it, with the real path, if it ever needs the cache)."""
    # Parent side only, as in out_dir().
    from harness.files.cache import configured_root, link_to_root
    from harness.workers.private_dir import cache_link

    root, _ = configured_root()
    link = cache_link(root)
    return link if link_to_root(link) else None


def _stderr_name(pid: int) -> str:
    # Opened by the counting child just before its region: a name of one length for every pid.
    return f"stderr.{pid_text(pid)}"


def _fixed_layout() -> list[str]:
    """``setarch -R``: the worker's address space laid out the same in every process.

    With the kernel's randomisation, two workers place the stack, the heap and
    the libraries apart differently, and what is hashed or aligned by address
    (dict probes on identity-hashed keys, memcpy's alignment paths) costs a
    few instructions more or less per run from process to process. Without
    setarch, or where the kernel refuses, workers run as they are.
    """
    setarch = shutil.which("setarch")
    if setarch is None or not _setarch_works(setarch):
        return []
    return [setarch, platform.machine(), "-R"]


@functools.cache
def _setarch_works(setarch: str) -> bool:
    try:
        return (
            subprocess.run([setarch, platform.machine(), "-R", "true"], capture_output=True, timeout=30).returncode == 0
        )
    except (OSError, subprocess.SubprocessError):
        return False


def _counted_run(C: Any, sampler: Sampler, number: int, clocked: bool, flush: bytearray | None = None) -> None:
    """One measurement: counts zeroed, the region run, its profile dumped.

    ``flush`` (a cache simulation): read whole first, twice the last level's size, so every count
    starts from the same simulated caches. Without it a repeat started from the caches its parent
    left while forking the one before, and repeats of one statement differed by a few misses.
    """
    if flush is not None:
        flush.find(1)  # memchr over the buffer (all zeros): every line read, nothing allocated
    C.zero_stats()
    if clocked:
        sampler(number)  # the block's own clock reads are the region markers
    else:
        C.run_sampler(sampler, number)
    C.region_end()
    C.dump_stats("harness measure")


def _fork_is_safe() -> bool:
    """Forking copies only the calling thread: unsafe with other threads (but a zygote child's
    parked first one) or a GPU context."""
    if not hasattr(os, "fork") or threading.active_count() - parked_threads() > 1:
        return False
    torch = sys.modules.get("torch")
    if torch is not None:
        if torch.get_num_threads() > 1:
            return False
        cuda = getattr(torch, "cuda", None)
        if cuda is not None and cuda.is_initialized():
            return False
    return True
