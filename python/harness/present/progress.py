"""Progress of a run on the terminal: a spinner while preparing, a bar while benchmarking.

Renders ``bench.Event``s (it never measures); the files written are printed
after the result tables, where a reader looks for them.
"""

from __future__ import annotations

from types import TracebackType

from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TaskID, TextColumn, TimeElapsedColumn
from rich.status import Status

from harness.bench import Event


class RunProgress:
    """``with RunProgress(console) as p: run_tasks(..., on_event=p.on_event)``."""

    def __init__(self, console: Console) -> None:
        self.console = console
        self._status: Status | None = None
        self._progress: Progress | None = None
        self._bar: TaskID | None = None
        self._nodes: dict[str, TaskID] = {}  # a row per node of a cluster (--executor ray)
        self.written: list[Event] = []

    def __enter__(self) -> RunProgress:
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        self._stop_status()
        if self._progress is not None:
            self._progress.stop()
            self._progress = None

    def _stop_status(self) -> None:
        if self._status is not None:
            self._status.stop()
            self._status = None

    def on_event(self, event: Event) -> None:
        if event.kind == "status":
            if self._status is None:
                self._status = self.console.status(escape(event.message))
                self._status.start()
            else:
                self._status.update(escape(event.message))
        elif event.kind == "warning":
            self._stop_status()
            self.console.print(f"[yellow]warning:[/yellow] {escape(event.message.removeprefix('warning: '))}",
                               highlight=False)
        elif event.kind == "start":
            self._stop_status()
            self._progress = Progress(
                TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                console=self.console, transient=True,
            )
            self._progress.start()
            self._bar = self._progress.add_task("benchmarking", total=event.total)
        elif event.kind == "result" and self._progress is not None and self._bar is not None:
            assert event.result is not None
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
            if event.message == "run record":
                verb = "appended to" if event.appended else "written to"
                self.console.print(f"run record {verb} {event.path}", highlight=False, markup=False)
            else:
                self.console.print(f"written {event.path}", highlight=False, markup=False)
