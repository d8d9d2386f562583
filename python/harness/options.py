"""Every default of a run, and every environment variable harness reads: defined here, once.

``RunOptions`` is what ``bench.run_tasks`` takes (the CLI builds one from its
flags, the pytest plugin and Python callers build their own); its field
defaults are the defaults everywhere else too (``Timer.blocked_autorange``,
``harness.timeit``, the worker pool). Environment variables are read through
``env(NAME)``, which knows only the variables listed in ``ENVIRONMENT`` (and
documented in docs/environment.md), so a new one cannot appear unlisted.

Imports nothing of harness but ``errors``: every layer may import it.
"""

from __future__ import annotations

import dataclasses
import os
import shutil
from collections.abc import Sequence
from typing import Any

from harness.errors import UsageError

# -- defaults -------------------------------------------------------------------
DEFAULT_MIN_RUN_TIME = 0.2  # seconds of timing per benchmark (torch's blocked_autorange default)
DEFAULT_TIMEOUT = 600.0  # seconds before a hung task is killed, unless the task sets its own limit
WORKER_START_TIMEOUT = 600.0  # seconds a worker may take to start (under valgrind: ~10 s, more on a busy machine)
KEPT_ANSWER_TIMEOUT = 30.0  # seconds a kept worker may take to answer a client that connects (it forks a session)
CALLGRIND_TIMEOUT = 1800.0  # seconds for one collect_callgrind call: callgrind is ~50x slower than native
# A measurement whose IQR exceeds this share of its median is noisy: torch's
# Measurement warns from here on, and every harness table and report flags it.
NOISY_IQR_FRACTION = 0.10
MAX_KEEP_IDLE = 24 * 3600.0  # seconds a kept worker may wait for its next client
# Seconds a kept counting worker waits for its next client when nothing says otherwise
# (docs/instruction-counts.md): long enough to edit and count again, short enough that a
# forgotten one is gone within the quarter hour. Not kept by default where CI is set.
DEFAULT_KEEP_IDLE = 900.0
# compare: a wall-time change is real when the U test's p < ALPHA and it is at least
# MIN_EFFECT; an instruction-count change when it exceeds NOISE_MARGIN (fractions).
DEFAULT_ALPHA = 0.05
DEFAULT_MIN_EFFECT = 0.02
DEFAULT_NOISE_MARGIN = 0.005

MODE_CHOICES = ("wall", "instructions", "both")
COUNTER_CHOICES = ("auto", "callgrind", "perf")
EXECUTOR_CHOICES = ("local", "ray")
# The Ray resource every node offers once: a wall-time task holds it, so no two
# wall-time measurements share a machine. Nodes of an existing cluster declare it
# with `ray start --resources='{"harness_wall": 1}'`.
WALL_RESOURCE = "harness_wall"
RAY_INSTALL = "pip install -e '.[ray]'"  # (or pip install 'ray>=2.9')
RAY_MAX_RETRIES = 3  # times a Ray task is retried after its node is lost (a failed benchmark is never retried)

# -- environment variables --------------------------------------------------------
CACHE_DIR_ENV = "HARNESS_CACHE_DIR"
CALLGRIND_DIR_ENV = "HARNESS_CALLGRIND_DIR"
CACHE_SIM_ENV = "HARNESS_CACHE_SIM"
COUNTER_ENV = "HARNESS_COUNTER"
CPP_PCH_ENV = "HARNESS_CPP_PCH"
CI_ENV = "CI"
CXX_ENV = "CXX"
GPT_FAST_SIZE_ENV = "HARNESS_GPT_FAST_SIZE"
STEP_SUMMARY_ENV = "GITHUB_STEP_SUMMARY"
HISTORY_ENV = "HARNESS_HISTORY"
KEEP_WORKER_ENV = "HARNESS_KEEP_WORKER"
MAX_JOBS_ENV = "MAX_JOBS"
PCH_LOG_ENV = "HARNESS_PCH_LOG"
TEST_KILL_AT_ENV = "HARNESS_TEST_KILL_AT"
TMPDIR_ENV = "TMPDIR"  # read by Python's tempfile, on harness's behalf (workers.private_dir)
# The steps of an atomic write (files.atomic) where HARNESS_TEST_KILL_AT makes the writer SIGKILL itself.
TEST_KILL_POINTS = ("temporary", "fsync", "rename")
XDG_CACHE_HOME_ENV = "XDG_CACHE_HOME"
XDG_DATA_HOME_ENV = "XDG_DATA_HOME"

# name -> (default, effect of each setting); docs/environment.md lists the same (a test keeps the
# defaults equal), and tests/test_environment_settings.py tests each setting.
ENVIRONMENT: dict[str, tuple[str, str]] = {
    CACHE_DIR_ENV: ("$XDG_CACHE_HOME/harness",
                    "DIR: the per-user cache root (compiled core, C++ statements, PCH, TorchScript files, "
                    "measured peaks), created with mode 0700 (an instruction-counting worker reaches it through "
                    "the cache's link in harness-$UID/caches/, one path for every worker of the cache, so the "
                    "cache's path does not move counts, and a C++ TorchScript statement reads it to find its "
                    "model, harness setting it, where unset "
                    "or empty, in the process that runs one); unset or empty: $XDG_CACHE_HOME/harness; "
                    "a DIR that cannot be created: an error"),
    XDG_CACHE_HOME_ENV: ("~/.cache",
                         "DIR: the cache root is DIR/harness when HARNESS_CACHE_DIR is unset or empty; "
                         "unset or empty: ~/.cache/harness"),
    HISTORY_ENV: ("$XDG_DATA_HOME/harness/history.sqlite",
                  "PATH or URL: the history database of bench --history and the history commands when they "
                  "name none (a file path, or a SQLAlchemy URL such as postgresql+psycopg://host/db); "
                  "unset or empty: $XDG_DATA_HOME/harness/history.sqlite"),
    XDG_DATA_HOME_ENV: ("~/.local/share",
                        "DIR: the default history database is DIR/harness/history.sqlite; "
                        "unset or empty: ~/.local/share/harness/history.sqlite"),
    CPP_PCH_ENV: ("1",
                  "1, unset or empty: C++ statements compile against a precompiled header of their include set "
                  "(g++ only), built once in the background; 0: they compile without one, and none is built; "
                  "anything else: an error"),
    CXX_ENV: ("c++",
              "COMPILER: the compiler (a name on PATH, or a path) that builds C++ statements, as "
              "torch.utils.cpp_extension reads it; unset: c++; empty, or one that does not run: an error"),
    MAX_JOBS_ENV: ("unset",
                   "N: C++ statement modules compile at most N translation units at once, as "
                   "torch.utils.cpp_extension reads it; unset, empty or not a number: ninja's default"),
    KEEP_WORKER_ENV: ("900",
                      "SECONDS: an instruction-counting worker is kept after a run for the next one, until idle "
                      "that long (at most 86400, and bench --keep-worker overrides it); unset or empty: 900, or not "
                      "kept where CI is true; 0: not kept; anything else: an error"),
    CI_ENV: ("unset",
             "true, 1 or yes (any case): instruction-counting workers are not kept after a run unless "
             "HARNESS_KEEP_WORKER or bench --keep-worker asks (CI services set it); anything else, unset or empty: "
             "they are kept (HARNESS_KEEP_WORKER)"),
    GPT_FAST_SIZE_ENV: ("auto",
                        "auto, unset or empty: gpu on a CUDA device, else cpu; tiny: the gpt_fast suite's smallest "
                        "shapes and models, seconds per experiment; cpu: its CPU shapes and models, minutes; "
                        "gpu: the reference's shapes and 7B-class models; anything else: an error"),
    STEP_SUMMARY_ENV: ("unset",
                       "FILE: compare, check and history changes with --markdown append their markdown summary to "
                       "FILE (GitHub Actions sets it to the job's summary), as well as printing it; unset or empty: "
                       "printed only"),
    COUNTER_ENV: ("set by harness",
                  "in an instruction-counting worker: the counter it was started for (callgrind or perf)"),
    CACHE_SIM_ENV: ("set by harness",
                    "in a callgrind worker: 1 when it runs callgrind's cache simulation (bench --cache-sim, "
                    "collect_callgrind(cache_sim=True)), so each count starts from the same simulated caches"),
    CALLGRIND_DIR_ENV: ("set by harness",
                        "in a callgrind worker: the directory its profiles and valgrind logs are written to"),
    PCH_LOG_ENV: ("set by harness",
                  "in the background PCH builder: the file its own output goes to (pch_build.out beside the PCH, "
                  "while a failed compile's messages go to failed.json there)"),
    TMPDIR_ENV: ("/tmp",
                 "DIR: counting workers' private directories (a kept worker's socket, lock and logs, a run's "
                 "callgrind dumps) are made in DIR/harness-$UID/workers when DIR/harness-$UID has at most 50 "
                 "characters (a socket's path has room for ~100 bytes), else in /tmp/harness-$UID/workers; "
                 "unset or empty: /tmp"),
    TEST_KILL_AT_ENV: ("unset",
                       "temporary: (a test hook) every atomic write (files.atomic) SIGKILLs its own process before "
                       "making its temporary file; fsync: after the temporary file's content is synced, before it "
                       "has a name; rename: once it is named, before it replaces the target; unset or empty: "
                       "never; anything else: an error"),
}


def env(name: str) -> str | None:
    """The value of a documented environment variable (None when unset)."""
    if name not in ENVIRONMENT:
        raise KeyError(f"{name} is not in harness.options.ENVIRONMENT; list it there and in docs/environment.md")
    return os.environ.get(name)


CPP_PCH_CHOICES = ("1", "0")


def env_choice(name: str, choices: Sequence[str]) -> str:
    """A documented variable that takes one of ``choices``: its value, or its default when unset or empty.

    Anything else is a UsageError naming the variable, the value and the
    choices, so a typo (``HARNESS_CPP_PCH=off``) is not silently the default.
    """
    raw = env(name)
    if not raw:
        return ENVIRONMENT[name][0]
    if raw not in choices:
        raise UsageError(f"{name}={raw!r}: use one of {', '.join(choices)} (unset: {ENVIRONMENT[name][0]})")
    return raw


# -- checks -----------------------------------------------------------------------
def require_positive(name: str, value: Any, kind: type = float) -> None:
    """UsageError unless ``value`` is a positive number (of ``kind``): the one check of counts and durations."""
    what = "int" if kind is int else "number"
    if not isinstance(value, (int, float)) or isinstance(value, bool) or not value > 0:
        raise UsageError(f"{name} must be a positive {what}, got {value!r}")
    if kind is int and not isinstance(value, int):
        raise UsageError(f"{name} must be a positive int, got {value!r}")


def parse_shard(text: str) -> tuple[int, int]:
    """``"K/N"`` -> (K, N): the K-th of N parts, 1 <= K <= N."""
    k, sep, n = str(text).partition("/")
    try:
        shard = (int(k), int(n))
    except ValueError:
        shard = None
    if not sep or shard is None:
        raise UsageError(f"--shard {text!r}: give K/N, the K-th of N parts, e.g. --shard 1/3")
    check_shard(shard)
    return shard


def check_shard(shard: tuple[int, int]) -> None:
    k, n = shard
    if not (isinstance(k, int) and isinstance(n, int) and 1 <= k <= n):
        raise UsageError(
            f"--shard {k}/{n}: K must be between 1 and N, e.g. --shard 1/{max(n, 1) if isinstance(n, int) else 3}"
        )


def on_ci() -> bool:
    """``$CI`` says this is a CI job (``true``, ``1`` or ``yes``, as CI services set it)."""
    return (env(CI_ENV) or "").strip().lower() in ("true", "1", "yes")


def keep_worker_seconds(value: str | float | None = None) -> float | None:
    """Idle timeout of kept workers: ``value``, else ``$HARNESS_KEEP_WORKER``; None: do not keep."""
    raw = env(KEEP_WORKER_ENV) if value is None else value
    if raw is None or raw == "":
        return None if on_ci() else DEFAULT_KEEP_IDLE
    try:
        seconds = float(raw)
    except (TypeError, ValueError):
        raise UsageError(
            f"{KEEP_WORKER_ENV}={raw!r}: give the idle timeout in seconds, e.g. {KEEP_WORKER_ENV}=600"
        ) from None
    if not 0 <= seconds <= MAX_KEEP_IDLE:
        if value is None:
            raise UsageError(f"{KEEP_WORKER_ENV}={raw!r}: the kept-worker idle timeout must be between 0 and "
                             f"{MAX_KEEP_IDLE:g} seconds (0: not kept)")
        raise UsageError(f"kept-worker idle timeout must be between 0 and {MAX_KEEP_IDLE:g} seconds, got {raw!r}")
    return seconds or None  # 0: do not keep (overrides the environment)


@dataclasses.dataclass(frozen=True)
class RunOptions:
    """How ``bench.run_tasks`` runs a selection of tasks.

    ``mode``: "wall", "instructions" or "both" re-measure every task that way;
    None keeps each suite's own. ``counter``: the instruction counter
    ("auto": the hardware counter where readable, else callgrind).
    ``keep_worker``: seconds to keep instruction-counting workers for the next
    run (None: ``$HARNESS_KEEP_WORKER``; 0: never). ``output``: where the run
    record goes (by suffix; a kind may write files of its own, see
    ``harness.kinds``). ``in_process``: run tasks here, without crash
    isolation or timeouts (debugging). ``timeout``: seconds before a hung task
    is killed, for every task; None: a task's own limit where its suite sets
    one (the compile-time suite's counted cases), else DEFAULT_TIMEOUT. ``layers``: split each instruction
    count into PyTorch's layers (needs callgrind's per-function counts; "auto"
    then means callgrind) by the rules of ``layers_rules`` (a TOML file; None:
    the shipped rules). ``cache_sim``: count with callgrind's cache simulation at a fixed geometry
    (``measure.counters.cache``: data accesses, misses, estimated cycles; "auto" then means callgrind).
    ``phases``: split each compile-time measurement by torch's compile phases (``model.phases``; instructions
    need callgrind, "auto" then means callgrind). ``shard``: (K, N), run only the K-th of
    N balanced parts of the tasks (``run.shards``), balanced by the durations
    in the run record ``durations`` when given. ``executor``: "local" (this
    machine) or "ray" (``harness.cluster``: a local Ray of ``jobs`` CPUs started
    for the run, or the cluster at ``address``). ``history``: also store the run
    in the history database at that path or URL ("": ``$HARNESS_HISTORY``, else
    the default file; None: not stored there); ``label``: a free text kept with the run.
    """

    min_run_time: float = DEFAULT_MIN_RUN_TIME
    jobs: int = 1
    timeout: float | None = None  # None: each task's own limit (params["timeout"]), else DEFAULT_TIMEOUT
    mode: str | None = None
    counter: str = "auto"
    keep_worker: float | None = None
    in_process: bool = False
    output: str | None = None
    # ``--python [LABEL=]PATH``: the interpreters (sides) every task runs under, A/B style.
    pythons: tuple[str, ...] = ()
    layers: bool = False
    layers_rules: str | None = None
    # ``--flame``: keep each count's call tree for the report's flame graphs (measure.callgrind.flame).
    flame: bool = False
    # ``--keep-profiles DIR``: write each count's callgrind.out and speedscope JSON into DIR (None: not kept).
    keep_profiles: str | None = None
    cache_sim: bool = False  # ``--cache-sim``: callgrind simulates the caches (``measure.counters.cache``)
    phases: bool = False  # ``--phases``: compile-time cases measured per torch compile phase
    shard: tuple[int, int] | None = None
    durations: str | None = None
    executor: str = "local"
    address: str | None = None
    # ``--history [PATH|URL]``: also store the run in the history database ("": the default one; None: not).
    history: str | None = None
    label: str = ""  # ``--label``: a free text kept with the run (its record and its history)

    def __post_init__(self) -> None:
        if (
            isinstance(self.min_run_time, bool)
            or not isinstance(self.min_run_time, int | float)
            or not self.min_run_time > 0
        ):
            raise UsageError(f"--min-run-time must be > 0, got {self.min_run_time}")
        if isinstance(self.jobs, bool) or not isinstance(self.jobs, int) or self.jobs < 1:
            raise UsageError(f"--jobs must be >= 1, got {self.jobs}")
        if self.timeout is not None and (
            isinstance(self.timeout, bool) or not isinstance(self.timeout, int | float) or not self.timeout > 0
        ):
            raise UsageError(f"--timeout must be > 0, got {self.timeout}")
        if self.mode is not None and self.mode not in MODE_CHOICES:
            raise UsageError(f"unknown mode {self.mode!r}: use one of {', '.join(MODE_CHOICES)}")
        if self.counter not in COUNTER_CHOICES:
            raise UsageError(f"unknown instruction counter {self.counter!r}: use one of {', '.join(COUNTER_CHOICES)}")
        if self.layers and self.counter == "perf":
            raise UsageError("--layers needs callgrind's per-function counts; use --counter callgrind (or auto)")
        if self.phases and self.counter == "perf":
            raise UsageError("--phases cuts instruction counts at torch's compile events with callgrind; "
                             "use --counter callgrind (or auto)")
        if self.cache_sim and self.counter == "perf":
            raise UsageError("--cache-sim is callgrind's cache simulation; use --counter callgrind (or auto)")
        if (self.flame or self.keep_profiles) and self.counter == "perf":
            raise UsageError(f"{'--flame' if self.flame else '--keep-profiles'} needs callgrind's call graph; "
                             "use --counter callgrind (or auto)")
        if self.layers_rules is not None and not self.layers:
            raise UsageError("--layers-rules is used only with --layers")
        if self.shard is not None:
            check_shard(tuple(self.shard))
        if self.durations is not None and self.shard is None:
            raise UsageError("--durations balances shards: give --shard K/N with it")
        if self.executor not in EXECUTOR_CHOICES:
            raise UsageError(f"unknown executor {self.executor!r}: use one of {', '.join(EXECUTOR_CHOICES)}")
        if self.address is not None and self.executor != "ray":
            raise UsageError("--address names a Ray cluster: give --executor ray with it")
        if self.in_process and self.executor != "local":
            raise UsageError("--in-process runs tasks in this process: it cannot be combined with --executor ray")
        if self.pythons and self.executor != "local":
            # Ray's workers run the cluster's interpreter; the sides need theirs, side by side on one machine.
            raise UsageError("--python (an A/B run) runs both sides on this machine: drop --executor ray")
        keep_worker_seconds(self.keep_worker)  # a bad value (or $HARNESS_KEEP_WORKER) fails before the run
        env_choice(CPP_PCH_ENV, CPP_PCH_CHOICES)  # likewise a bad $HARNESS_CPP_PCH, before any C++ task
        self.sides  # noqa: B018 - a bad --python fails before the run
        if self.pythons and self.output and self.output.endswith(".csv"):
            raise UsageError(f"--output {self.output}: an A/B run (--python) needs a .json or .jsonl record, "
                             "which keep each result's side; .csv rows do not")

    @property
    def sides(self) -> dict[str, str]:
        """``--python`` as {label: interpreter}; unlabelled values are A, B, ... in order."""
        return parse_pythons(self.pythons)

    @property
    def keep_seconds(self) -> float | None:
        """The kept-worker idle timeout this run uses (the flag, else the environment)."""
        return keep_worker_seconds(self.keep_worker)


def parse_pythons(values: Sequence[str]) -> dict[str, str]:
    """``[LABEL=]PATH`` values as {label: absolute path}, each an executable file."""
    sides: dict[str, str] = {}
    for i, value in enumerate(values):
        label, sep, path = value.partition("=")
        if not sep:
            label, path = chr(ord("A") + i), value
        if not label or not label.replace("_", "").replace("-", "").isalnum():
            raise UsageError(f"--python {value!r}: give LABEL=PATH with a label of letters, digits, - or _")
        if label in sides:
            raise UsageError(f"--python: label {label!r} is given twice; give each interpreter its own label")
        found = shutil.which(path) if os.sep not in path else path
        if not found or not os.path.isfile(found) or not os.access(found, os.X_OK):
            raise UsageError(
                f"--python {value!r}: {path} is not an executable file; give the path of a python interpreter"
            )
        sides[label] = os.path.abspath(found)
    return sides
