"""pytest plugin: the ``harness_bench`` fixture and ``--harness-output FILE.json``.

Registered as the ``pytest11`` entry point ``harness``, so it is loaded into
every pytest run of an environment where harness is installed. Hence: importing
it costs no more than ``import harness`` (torch and the C++ core load only when
a test calls ``harness_bench``), and a run whose tests do not use the fixture
behaves exactly as without the plugin (``-p no:harness`` turns it off).

In a test::

    def test_sort_speed(harness_bench):
        m = harness_bench(sorted, list(range(1000)))   # a harness.Measurement
        assert m.median > 0

Each call becomes one result of kind ``pytest``, named by the test's node id
(``#2``, ``#3``, ... for further calls in one test); ``--harness-output``
writes them all as a run record, the same schema as ``python -m harness bench
--output``, so ``harness`` tools can read, table and compare them.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from harness.options import DEFAULT_MIN_RUN_TIME

if TYPE_CHECKING:
    from harness.bench import Run
    from harness.model.measurement import Measurement
    from harness.model.result import TaskResult

SUITE = "pytest"
KIND = "pytest"


@dataclasses.dataclass
class BenchSession:
    """What the plugin keeps for one pytest session."""

    min_run_time: float
    output: Path | None
    argv: list[str]
    run: Run | None = None  # the run record being taken, when there is an output
    results: list[TaskResult] = dataclasses.field(default_factory=list)
    write_error: str | None = None


_SESSION = pytest.StashKey[BenchSession]()


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("harness", "harness measurements (harness_bench fixture)")
    group.addoption(
        "--harness-output",
        metavar="FILE.json",
        default=None,
        help="write every harness_bench measurement to this run record "
        "(the schema of `python -m harness bench --output`)",
    )
    group.addoption(
        "--harness-min-run-time",
        metavar="SECONDS",
        type=float,
        default=None,
        help=f"seconds each harness_bench call measures for (default {DEFAULT_MIN_RUN_TIME})",
    )


def pytest_configure(config: pytest.Config) -> None:
    output = config.getoption("harness_output")
    min_run_time = config.getoption("harness_min_run_time")
    if min_run_time is None:
        min_run_time = DEFAULT_MIN_RUN_TIME
    elif not min_run_time > 0:
        raise pytest.UsageError(f"--harness-min-run-time must be > 0 seconds, got {min_run_time}")
    if output is not None:
        if Path(output).suffix != ".json":
            raise pytest.UsageError(f"--harness-output {output}: use a .json file name")
        if getattr(config.option, "numprocesses", None) or hasattr(config, "workerinput"):
            # Each xdist worker would hold its own results and none would be
            # written; parallel workers also disturb each other's timings.
            raise pytest.UsageError("--harness-output cannot be used with pytest-xdist (-n); run with -n 0")
    config.stash[_SESSION] = BenchSession(
        min_run_time=float(min_run_time),
        output=Path(output) if output is not None else None,
        argv=["pytest", *config.invocation_params.args],
    )


def pytest_sessionstart(session: pytest.Session) -> None:
    state = session.config.stash[_SESSION]
    if state.output is not None:
        from harness.bench import Run
        from harness.options import RunOptions

        # Taken at the start, so start_time is when the measurements began.
        state.run = Run(RunOptions(min_run_time=state.min_run_time, output=str(state.output), in_process=True),
                        argv=state.argv)
        state.run.environment["pytest_version"] = pytest.__version__


class Bench:
    """The ``harness_bench`` fixture's value: call it like ``harness.timeit``."""

    def __init__(self, nodeid: str, state: BenchSession, node: pytest.Item) -> None:
        self._nodeid = nodeid
        self._state = state
        self._node = node
        self._calls = 0
        self.measurements: list[Measurement] = []

    @property
    def min_run_time(self) -> float:
        return self._state.min_run_time

    def __call__(self, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Measurement:
        """Time ``fn(*args, **kwargs)`` with ``harness.timeit`` and record the result.

        Keyword arguments that ``harness.timeit`` takes (``min_run_time``,
        ``label``, ``sub_label``, ``description``, ``num_threads``) go to it;
        the label defaults to the test's node id.
        """
        from harness.measure.callable_timer import describe_call, timeit
        from harness.model.result import TaskResult
        from harness.model.task import Task

        self._calls += 1
        name = self._nodeid if self._calls == 1 else f"{self._nodeid}#{self._calls}"
        options = {"min_run_time": self._state.min_run_time, "label": self._nodeid, **kwargs}
        params = {
            "nodeid": self._nodeid,
            "call": describe_call(fn, args, {k: v for k, v in kwargs.items() if k not in _TIMEIT_OPTIONS}),
            "min_run_time": options["min_run_time"],
        }
        task = Task(suite=SUITE, name=name, kind=KIND, params=params)
        try:
            m = timeit(fn, *args, **options)
        except Exception as exc:
            self._state.results.append(TaskResult(task=task, status="failed", error=f"{type(exc).__name__}: {exc}"))
            raise
        self._state.results.append(TaskResult.from_measurement(task, m))
        self._node.user_properties.append((f"harness_median_s[{name}]", m.median))
        self.measurements.append(m)
        return m


_TIMEIT_OPTIONS = frozenset({"min_run_time", "label", "sub_label", "description", "num_threads"})


@pytest.fixture
def harness_bench(request: pytest.FixtureRequest) -> Bench:
    """Time a callable with harness's C++ loop and record it: ``harness_bench(fn, *args, **kwargs)``."""
    return Bench(request.node.nodeid, request.config.stash[_SESSION], request.node)


def pytest_sessionfinish(session: pytest.Session) -> None:
    state = session.config.stash.get(_SESSION, None)
    if state is None or state.run is None:
        return
    from harness.errors import HarnessError

    state.run.results = list(state.results)
    try:
        state.run.write()
    except OSError as exc:
        state.write_error = f"cannot write {state.output}: {exc.strerror or exc}"
        session.exitstatus = pytest.ExitCode.USAGE_ERROR
    except HarnessError as exc:  # the writer names the file and the reason
        state.write_error = str(exc)
        session.exitstatus = pytest.ExitCode.USAGE_ERROR


def pytest_terminal_summary(terminalreporter: Any, config: pytest.Config) -> None:
    state = config.stash.get(_SESSION, None)
    if state is None or not (state.results or state.output):
        return
    tr = terminalreporter
    if state.results:
        from harness.present.table import format_value

        tr.write_sep("-", "harness measurements")
        width = max(len(r.task.name) for r in state.results)
        for r in state.results:
            if r.ok:
                line = (
                    f"{r.task.name:<{width}}  median {format_value(r.median, r.unit):>10}"
                    f"  IQR {format_value(r.iqr, r.unit):>10}  {len(r.samples)}x{r.number_per_run}"
                )
            else:
                first = ((r.error or "").splitlines() or ["failed"])[0]
                line = f"{r.task.name:<{width}}  failed: {first}"
            tr.write_line(line)
    if state.write_error:
        tr.write_line(f"harness: error: {state.write_error}", red=True)
    elif state.output is not None:
        tr.write_line(f"harness: run record with {len(state.results)} result(s) written to {state.output}")
