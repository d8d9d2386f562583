"""Instruction counters: callgrind (exact, slow) and the hardware counter (fast, approximate).

An ``InstructionCounter`` says how to start a worker process in which it
works (``worker_prefix()``, ``worker_env()``) and, inside that process,
counts the instructions of a function (``count(fn)``) or of a sampler's runs
(``measure``). ``get_counter("auto")`` picks the hardware counter where the
kernel exposes it and callgrind otherwise.

Callgrind workers run ``sys.executable`` under ``valgrind --tool=callgrind``
with instrumentation off at start: interpreter start-up and ``import torch``
run at valgrind's uninstrumented speed, and the C++ core switches
instrumentation and collection on around exactly the measured region. Each
region is dumped to a private directory, parsed and removed.

Determinism (the point of counting instructions):
- workers run with ``PYTHONHASHSEED=0`` (dict and set layouts, hence lookup
  costs, are the same in every run);
- the garbage collector is collected before and disabled during a region;
- a warm-up run precedes counting (CPython's specialising interpreter and
  torch's lazy initialisation settle before the region);
- each repeat of a Timer measurement runs in a ``fork()`` of the warmed-up
  worker, so every repeat starts from the same heap: otherwise the state
  that malloc's free lists reach after one run shifts the next run's count
  by up to ~0.5% for small tensor ops. Where forking is unsafe (threads
  running, CUDA initialised, more than one intra-op thread) repeats run in
  the worker itself, each with a fresh code object and its own warm-up.
"""

from __future__ import annotations

import atexit
import gc
import os
import shutil
import signal
import sys
import tempfile
import threading
import traceback
import types
from collections.abc import Callable
from pathlib import Path
from typing import Any

from .callgrind_output import Profile, parse_text, total_from_text
from .core_loader import native
from .errors import HarnessError, StatementError, UsageError

COUNTER_ENV = "HARNESS_COUNTER"
CALLGRIND_DIR_ENV = "HARNESS_CALLGRIND_DIR"
COUNTER_NAMES = ("auto", "callgrind", "perf")
VALGRIND_INSTALL_HINT = (
    "install it with `apt-get install valgrind` (Debian/Ubuntu), `dnf install valgrind` (Fedora) "
    "or `conda install -c conda-forge valgrind`"
)
LOG_TAIL_CHARS = 4000

Sampler = Callable[[int], Any]


class InstructionCounter:
    """How to count instructions: in which worker process, and how inside it."""

    name = ""
    exact = False  # bit-exact across runs (callgrind) or close (hardware counter)

    def worker_prefix(self) -> list[str]:
        """Command prefix starting a worker process in which ``count()`` works."""
        return []

    def worker_env(self) -> dict[str, str]:
        """Environment of such a worker: what removes run-to-run jitter, and which counter it uses."""
        return {"PYTHONHASHSEED": "0", COUNTER_ENV: self.name}

    def count(self, fn: Callable[[], object]) -> int:
        """Instructions executed by ``fn()`` in this process."""
        raise NotImplementedError

    def clock(self) -> Callable[[], int]:
        """A stand-in for the clock of a generated Python block: its two reads bracket the region."""
        raise NotImplementedError

    def measure(
        self, sampler: Sampler, number: int, repeats: int, *, clocked: bool, detail: bool = False
    ) -> list[Profile]:
        """Count ``repeats`` runs of ``sampler(number)`` after a warm-up.

        ``clocked``: the sampler brackets its own region through ``clock()``
        (a generated Python block, whose loop is then exactly the region);
        otherwise the region is the whole call (a native sampler). ``detail``
        asks for per-function counts where the counter has them.
        """
        raise NotImplementedError

    def diagnostics(self, pid: int) -> str:
        """What the counter's tool said about worker ``pid`` (for failed tasks)."""
        return ""

    def close(self) -> None:
        """Remove what ``worker_prefix()`` created (temporary files)."""


def warmup_runs(number: int) -> int:
    return max(1, min(number, 10))


def _fresh(sampler: Sampler) -> Sampler:
    """A copy of a Python function with a new, unspecialised code object.

    CPython 3.11+ specialises bytecode as it runs and backs off failed
    specialisations exponentially; reusing one code object across repeats
    makes each repeat start from a different specialisation state.
    """
    if isinstance(sampler, types.FunctionType):
        code = sampler.__code__.replace()
        return types.FunctionType(code, sampler.__globals__, sampler.__name__, sampler.__defaults__, sampler.__closure__)
    return sampler


def _warm_up(sampler: Sampler, number: int) -> None:
    """Run ``warmup_runs(number)`` runs (a capsule sampler only the core can call)."""
    runs = warmup_runs(number)
    if callable(sampler):
        sampler(runs)
    else:
        native().fixed_blocks(sampler, runs, 1)


class _Gc:
    """Collect now, keep the collector off inside (a collection inside a region is noise).

    Survivors are frozen (moved out of the collector's sight; reference
    counting still frees them): a worker holds torch's hundreds of thousands
    of objects, and walking them all before every measurement costs ~0.3 s
    under valgrind.
    """

    def __enter__(self) -> None:
        gc.collect()
        gc.freeze()
        self._was_enabled = gc.isenabled()
        gc.disable()

    def __exit__(self, *exc: object) -> None:
        if self._was_enabled:
            gc.enable()


# --------------------------------------------------------------------------- callgrind


def valgrind_path() -> str | None:
    return shutil.which("valgrind")


class CallgrindCounter(InstructionCounter):
    """Exact counts from ``valgrind --tool=callgrind``, with per-function detail."""

    name = "callgrind"
    exact = True

    def __init__(self, out_dir: str | None = None) -> None:
        # In the harness process the counter owns a private directory for
        # its workers' dumps and logs; in a worker it is handed the path.
        self._dir: Path | None = Path(out_dir) if out_dir else None
        self._owned = out_dir is None
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
                self._dir = Path(tempfile.mkdtemp(prefix="harness-callgrind-"))
                atexit.register(self.close)
            return self._dir

    def worker_prefix(self) -> list[str]:
        valgrind = self.require_valgrind()
        d = self.out_dir()
        return [
            valgrind,
            "--tool=callgrind",
            "--instr-atstart=no",
            "--collect-atstart=no",
            # No "fn'2" copies of recursive functions: with instrumentation
            # switched on mid-stack, callgrind's recursion depth is arbitrary
            # and would split one function's count between two names.
            "--separate-recs=1",
            f"--callgrind-out-file={d}/callgrind.out.%p",
            # One log per process (workers and the children they fork), so a
            # crash report carries exactly that process's valgrind messages.
            f"--log-file={d}/valgrind.%p.log",
        ]

    def worker_env(self) -> dict[str, str]:
        return {**super().worker_env(), CALLGRIND_DIR_ENV: str(self.out_dir())}

    def diagnostics(self, pid: int) -> str:
        if self._dir is None:
            return ""
        return _valgrind_log(self._dir / f"valgrind.{pid}.log")

    def close(self) -> None:
        if self._owned and self._dir is not None:
            shutil.rmtree(self._dir, ignore_errors=True)

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
            with _Gc():
                C.zero_stats()
                C.count_call(fn)
                C.dump_stats("harness count")
        finally:
            C.stop_instrumentation()
        return sum(total_from_text(text) for text in self._take(os.getpid()))

    def measure(
        self, sampler: Sampler, number: int, repeats: int, *, clocked: bool, detail: bool = False, keep_text: bool = False
    ) -> list[Profile]:
        C, _ = self._in_worker()
        texts: list[str] = []  # the dumps, parsed once instrumentation is off
        try:
            with _Gc():
                if _fork_is_safe():
                    # Warm up with instrumentation on, so the children
                    # inherit the translated code instead of each
                    # translating it again.
                    C.start_instrumentation()
                    _warm_up(sampler, number)
                    C.region_end()
                    for pid in self._measure_in_children(C, sampler, number, clocked, repeats):
                        texts.extend(self._take(pid))
                else:
                    for _ in range(repeats):
                        run = _fresh(sampler)
                        _warm_up(run, number)
                        C.region_end()
                        _counted_run(C, run, number, clocked)
                        texts.extend(self._take(os.getpid()))
        finally:
            C.region_end()
            # Parsing below runs at valgrind's uninstrumented speed, several
            # times faster.
            C.stop_instrumentation()
        return [self._profile(text, detail, keep_text) for text in texts]

    @staticmethod
    def _profile(text: str, detail: bool, keep_text: bool) -> Profile:
        if not detail:
            return Profile(total=total_from_text(text), exclusive={}, inclusive={})
        profile = parse_text(text)
        if keep_text:
            profile.source = text
        return profile

    def _measure_in_children(self, C: Any, sampler: Sampler, number: int, clocked: bool, repeats: int) -> list[int]:
        """Fork one child per repeat, back to back, and wait for all of them.

        Nothing runs in this process between the forks but the forks
        themselves: any allocation here (reading a child's answer) would
        change the heap the next child starts from, and with it the count.
        """
        pipes = [os.pipe() for _ in range(repeats)]
        pids = [0] * repeats
        try:
            for i in range(repeats):
                pid = os.fork()
                if pid == 0:  # pragma: no cover - runs in the child
                    self._child(C, sampler, number, clocked, pipes[i][1])
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

    def _child(self, C: Any, sampler: Sampler, number: int, clocked: bool, answer_fd: int) -> None:
        """Measure once and exit without running any Python clean-up (nothing to flush, faster)."""
        assert self._dir is not None
        code = 0
        try:
            err = os.open(self._dir / f"stderr.{os.getpid()}", os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            os.dup2(err, 2)
            _counted_run(C, sampler, number, clocked)
        except BaseException as exc:  # noqa: BLE001 - reported to the parent
            code = 1
            text = f"{type(exc).__name__}: {exc}\n{''.join(traceback.format_exception(exc))}"
            os.write(answer_fd, text[-16000:].encode("utf-8", "replace"))
        os._exit(code)

    def _fail_child(self, pid: int, status: int, message: str) -> None:
        assert self._dir is not None
        log = _valgrind_log(self._dir / f"valgrind.{pid}.log")
        stderr = _tail(self._dir / f"stderr.{pid}")
        self._remove(pid)
        if os.WIFSIGNALED(status):
            what = f"the statement crashed under valgrind ({_signal_name(os.WTERMSIG(status))})"
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
            elif name in (f"valgrind.{pid}.log", f"stderr.{pid}") and pid != os.getpid():
                other.append(path)
        return [p for _, p in sorted(dumps)], other

    def _take(self, pid: int) -> list[str]:
        """The text of process ``pid``'s dumps; its files are removed."""
        dumps, other = self._dumps(pid)
        try:
            if not dumps:
                raise HarnessError(f"callgrind wrote no profile for process {pid} into {self._dir}")
            return [path.read_text(encoding="utf-8", errors="replace") for path in dumps]
        finally:
            for path in (*dumps, *other):
                path.unlink(missing_ok=True)

    def _remove(self, pid: int) -> None:
        dumps, other = self._dumps(pid)
        for path in (*dumps, *other):
            path.unlink(missing_ok=True)


def _counted_run(C: Any, sampler: Sampler, number: int, clocked: bool) -> None:
    """One measurement: counts zeroed, the region run, its profile dumped."""
    C.zero_stats()
    if clocked:
        sampler(number)  # the block's own clock reads are the region markers
    else:
        C.run_sampler(sampler, number)
    C.region_end()
    C.dump_stats("harness measure")


def _fork_is_safe() -> bool:
    """Forking copies only the calling thread: unsafe with other threads or a GPU context."""
    if not hasattr(os, "fork") or threading.active_count() > 1:
        return False
    torch = sys.modules.get("torch")
    if torch is not None:
        if torch.get_num_threads() > 1:
            return False
        cuda = getattr(torch, "cuda", None)
        if cuda is not None and cuda.is_initialized():
            return False
    return True


def _signal_name(sig: int) -> str:
    try:
        return signal.Signals(sig).name
    except ValueError:
        return f"signal {sig}"


def _tail(path: Path, chars: int = LOG_TAIL_CHARS) -> str:
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return ""
    return text[-chars:]


def _valgrind_log(path: Path) -> str:
    """The log without valgrind's banner (tool, copyright, command line)."""
    lines = _tail(path, 64 * 1024).splitlines()
    body = [ln for ln in lines if not _is_banner(ln)]
    text = "\n".join(body).strip()
    return text[-LOG_TAIL_CHARS:]


def _is_banner(line: str) -> bool:
    content = line.split("== ", 1)[1] if line.startswith("==") and "== " in line else line
    return (
        not content.strip()
        or content.startswith(("Callgrind, a call-graph", "Copyright (C)", "Using Valgrind", "Command:", "For interactive control"))
        or content.startswith(("Events    :", "Collected :", "I   refs:", "Parent PID:"))
    )


# --------------------------------------------------------------------------- perf


_perf_status: tuple[bool, str] | None = None


def perf_status() -> tuple[bool, str]:
    """(usable, why not): whether this process can read the hardware instruction counter."""
    global _perf_status
    if _perf_status is None:
        handle = native().perf.open()
        _perf_status = (bool(handle.ok), str(handle.reason))
    return _perf_status


class PerfCounter(InstructionCounter):
    """The CPU's retired-instruction counter (perf_event_open): fast, close but not bit-exact.

    Counts user-space instructions of the calling thread; work a statement
    hands to other threads is not counted.
    """

    name = "perf"
    exact = False
    MAX_ATTEMPTS = 5

    def __init__(self) -> None:
        self._handle: Any = None

    def require_available(self) -> None:
        ok, reason = perf_status()
        if not ok:
            raise HarnessError(f"the hardware instruction counter is unavailable: {reason}; use --counter callgrind")

    def _counter(self) -> Any:
        if self._handle is None:
            self.require_available()
            self._handle = native().perf.open()
            if not self._handle.ok:
                raise HarnessError(f"the hardware instruction counter is unavailable: {self._handle.reason}")
        return self._handle

    def clock(self) -> Callable[[], int]:
        return self._counter().toggle

    def _retry(self, attempt: Callable[[], int]) -> int:
        for _ in range(self.MAX_ATTEMPTS):
            n = attempt()
            if n >= 0:
                return int(n)
        raise HarnessError(
            f"the hardware instruction counter was multiplexed with other events in {self.MAX_ATTEMPTS} attempts "
            "(another perf session is using the PMU); stop it or use --counter callgrind"
        )

    def count(self, fn: Callable[[], object]) -> int:
        handle = self._counter()
        with _Gc():
            return self._retry(lambda: handle.count(fn))

    def measure(
        self, sampler: Sampler, number: int, repeats: int, *, clocked: bool, detail: bool = False, keep_text: bool = False
    ) -> list[Profile]:
        handle = self._counter()
        profiles = []
        for _ in range(repeats):
            with _Gc():
                total = self._retry(lambda: self._once(handle, _fresh(sampler), number, clocked))
            profiles.append(Profile(total=total, exclusive={}, inclusive={}))
        return profiles

    @staticmethod
    def _once(handle: Any, run: Sampler, number: int, clocked: bool) -> int:
        _warm_up(run, number)
        if clocked:
            run(number)
            return int(handle.last)
        return int(handle.count_sampler(run, number))


# --------------------------------------------------------------------------- choosing

_told_fallback = False


def get_counter(name: str = "auto") -> InstructionCounter:
    """The counter called ``name``; "auto": perf where readable, else callgrind (said once on stderr).

    Inside a worker started with a counter's ``worker_prefix()`` and
    ``worker_env()``, "auto" and that counter's name give the worker's own
    counter, whose ``count()`` works there.
    """
    global _told_fallback
    if name not in COUNTER_NAMES:
        raise UsageError(f"unknown instruction counter {name!r}: use one of {', '.join(COUNTER_NAMES)}")
    started_for = os.environ.get(COUNTER_ENV)
    if started_for and name in ("auto", started_for):
        return worker_counter()  # inside a worker started for this counter
    if name == "perf":
        counter = PerfCounter()
        counter.require_available()
        return counter
    if name == "callgrind":
        CallgrindCounter.require_valgrind()
        return CallgrindCounter()
    ok, reason = perf_status()
    if ok:
        return PerfCounter()
    if valgrind_path() is None:
        raise HarnessError(
            f"cannot count instructions: the hardware counter is unavailable ({reason}) and valgrind is not "
            f"installed; {VALGRIND_INSTALL_HINT}"
        )
    if not _told_fallback:
        _told_fallback = True
        print(f"harness: hardware instruction counter unavailable ({reason}); counting with callgrind", file=sys.stderr)
    return CallgrindCounter()


_worker_counter: InstructionCounter | None = None


def worker_counter() -> InstructionCounter:
    """The counter this (worker) process was started for, from its environment."""
    global _worker_counter
    if _worker_counter is None:
        name = os.environ.get(COUNTER_ENV)
        if name is None:
            name = "callgrind" if native().callgrind.running_on_valgrind() else "perf"
        if name == "callgrind":
            _worker_counter = CallgrindCounter(out_dir=os.environ.get(CALLGRIND_DIR_ENV))
        elif name == "perf":
            _worker_counter = PerfCounter()
        else:
            raise UsageError(f"{COUNTER_ENV}={name!r}: use callgrind or perf")
    return _worker_counter
