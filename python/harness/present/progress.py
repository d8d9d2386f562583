"""Progress of a run: a spinner and a bar on a terminal, plain lines in a log.

Renders a run's ``Event``s (``model.events``; it never measures). On a terminal, a spinner shows
each preparation step ("status" events) and a bar the benchmarks; each step
leaves one line with its elapsed time when it ends. When the output is not a
terminal (CI logs, ``| tee``), nothing animates: one line per preparation
step with its elapsed time, and one line per finished benchmark with its
value, so a log shows where a long run spends its time. The files written are
printed after the result tables, where a reader looks for them.
"""

from __future__ import annotations

import time
from types import TracebackType

from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TaskID, TextColumn, TimeElapsedColumn
from rich.status import Status

from harness.model.events import Event
from harness.model.result import TaskResult
from harness.present.table import format_value


def _finished(result: TaskResult) -> str:
    """A finished benchmark in one line: its value (and noise mark), or why it failed."""
    if not result.ok:
        return "failed: " + ((result.error or "").strip().splitlines() or [""])[0]
    mark = f" {result.noise_mark}" if result.noisy else ""
    return f"{format_value(result.median, result.unit)}{mark}"


class RunProgress:
    """``with RunProgress(console) as p: run_tasks(..., on_event=p.on_event)``."""

    def __init__(self, console: Console) -> None:
        self.console = console
        self.live = console.is_terminal
        self._status: Status | None = None
        self._progress: Progress | None = None
        self._bar: TaskID | None = None
        self._step: tuple[str, float] | None = None  # the preparation step under way, since when
        self._started = time.monotonic()
        self._nodes: dict[str, TaskID] = {}  # a row per node of a cluster (--executor ray)
        self.written: list[Event] = []

    def __enter__(self) -> RunProgress:
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        self._end_step()
        if self._progress is not None:
            self._progress.stop()
            self._progress = None

    def _line(self, text: str) -> None:
        self.console.print(text, highlight=False, markup=False, soft_wrap=True)

    def _end_step(self) -> None:
        """The step under way is over: stop its spinner and leave its line with the time it took."""
        if self._status is not None:
            self._status.stop()
            self._status = None
        if self._step is not None:
            message, since = self._step
            self._step = None
            self._line(f"{message}: {time.monotonic() - since:.1f} s")

    def on_event(self, event: Event) -> None:
        if event.kind == "status":
            self._end_step()
            self._step = (event.message, time.monotonic())
            if self.live:
                self._status = self.console.status(escape(event.message))
                self._status.start()
        elif event.kind == "warning":
            self._end_step()
            self.console.print(f"[yellow]warning:[/yellow] {escape(event.message.removeprefix('warning: '))}",
                               highlight=False)
        elif event.kind == "start":
            self._end_step()
            if not self.live:
                self._line(f"benchmarking {event.total} task{'s' if event.total != 1 else ''}")
                return
            self._progress = Progress(
                TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                console=self.console, transient=True,
            )
            self._progress.start()
            self._bar = self._progress.add_task("benchmarking", total=event.total)
        elif event.kind == "result":
            assert event.result is not None
            if not self.live:
                elapsed = time.monotonic() - self._started
                self._line(f"[{event.done}/{event.total}] {event.result.task.full_name}: "
                           f"{_finished(event.result)} ({elapsed:.1f} s)")
            elif self._progress is not None and self._bar is not None:
                self._progress.update(self._bar, advance=1, description=event.result.task.full_name)
        elif event.kind == "nodes" and self._progress is not None and event.nodes is not None:
            for node, counts in event.nodes.items():
                text = ", ".join(f"{n} {what}" for what, n in counts.items())
                if node not in self._nodes:
                    self._nodes[node] = self._progress.add_task("", total=None)
                self._progress.update(self._nodes[node], description=f"  {escape(node)}: {text}")
        elif event.kind == "written":
            self.written.append(event)

    def print_written(self) -> None:
        for event in self.written:
            if event.message == "history":
                kept = "already in" if event.appended else "stored in"
                self._line(f"run {kept} the history {event.path} ({event.note})")
            elif event.message == "run record":
                verb = "appended to" if event.appended else "written to"
                note = f" ({event.note})" if event.note else ""
                self._line(f"run record {verb} {event.path}{note}")
            else:
                self._line(f"written {event.path}")
