"""The one run function: selected tasks and one ``RunOptions`` in, a run record out.

``run_tasks`` is what ``python -m harness bench`` calls (the CLI only parses
arguments and prints), and what Python callers call. In order, it

1. takes the run's environment and checks that the output can be written
   (so a bad path fails now, not after an hour of measuring);
2. picks the instruction counter when any task counts instructions (fails
   now when it cannot count);
3. calls each kind's preparer once with the run's tasks (``harness.kinds``:
   e.g. every C++ statement of the run compiled in one build), while the kept
   counting workers of a run that only counts start beside it
   (``run.executors.start_kept_workers_early``);
4. checks the machine for noise sources before wall-time tasks;
5. executes the tasks (``run.executors``), streaming each result;
6. writes the record through the one writer (``records.store``, or the
   files of the kind's own layout), also when interrupted: what finished is
   kept.

Progress goes to ``on_event`` as ``Event``s (``model.events``); nothing here prints. Ctrl-C (or
SIGTERM, turned into ``errors.Terminated`` by the CLI) raises
``RunInterrupted``, which carries the record of what finished.

``Run`` is the recording half on its own: the pytest plugin, which measures
callables in its own process, feeds its results into a ``Run`` so its record
has the same environment, the same writer and the same rules.
"""

from __future__ import annotations

import dataclasses
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from harness import kinds
from harness.define.selection import with_mode, with_phases, with_sides
from harness.errors import Terminated, UsageError
from harness.files.oserrors import owned
from harness.history import open_history, provenance
from harness.measure.callgrind.flame import with_flame
from harness.measure.callgrind.layers import load_rules
from harness.measure.counter_choice import get_counter
from harness.measure.counters.base import InstructionCounter
from harness.measure.counters.cache import record_geometry as cache_geometry
from harness.model.events import Event, OnEvent
from harness.model.record import RunRecord
from harness.model.result import TaskResult
from harness.model.task import Task
from harness.options import RunOptions
from harness.records import environment, store
from harness.records.noise import check_noise, warning_block
from harness.run import shards
from harness.run.executors import check_executor, check_in_process, execute, start_kept_workers_early


class RunInterrupted(KeyboardInterrupt):
    """Ctrl-C or SIGTERM during a run: ``record`` holds what finished (and was written)."""

    def __init__(self, record: RunRecord, total: int, cause: KeyboardInterrupt) -> None:
        super().__init__("interrupted")
        self.record = record
        self.total = total
        self.terminated = isinstance(cause, Terminated)
        self.exit_code = Terminated.exit_code if self.terminated else 130


def _ignore(event: Event) -> None:
    pass


class Run:
    """One run being recorded: its environment, its results as they come, and writing them."""

    def __init__(self, options: RunOptions, tasks: Sequence[Task] = (), argv: list[str] | None = None) -> None:
        self.options = options
        self.tasks = list(tasks)
        self.results: list[TaskResult] = []
        self.environment: dict[str, Any] = environment.collect(argv)
        if options.label:
            self.environment["label"] = options.label
        if options.history is not None:
            # The user's own commit and branch (not harness's): what the history orders runs by.
            self.environment["repository"] = provenance.repository()
        self._writer = self._kind_writer()

    def check_output(self) -> None:
        """Fail now, not after the run, when the output cannot take the record."""
        if self.options.output and self._writer is None:
            store.check_writable(self.options.output)
        elif self.options.output:  # a kind's own writer: its files go to the same directory
            store.check_output_directory(self.options.output)
        if self.options.history is not None:
            open_history(self.options.history).close()  # a foreign, damaged or newer database fails now

    def _kind_writer(self) -> Callable[[str, RunRecord], list[Path]] | None:
        """The writer of the run's one kind for the output's suffix, when it has one."""
        if not self.options.output:
            return None
        names = {t.kind for t in self.tasks}
        if len(names) != 1:
            return None
        name = names.pop()
        kind = kinds.find(name)
        target = kind.outputs.get(Path(self.options.output).suffix) if kind is not None else None
        if target is None:
            return None
        return kinds.resolve(target, f"the {Path(self.options.output).suffix} writer of kind {name!r}")

    def add(self, result: TaskResult) -> None:
        self.results.append(result)

    def record(self) -> RunRecord:
        """The results in task order (as they were selected), whatever order they finished in."""
        order = {(t.full_name, t.mode): i for i, t in enumerate(self.tasks)}
        results = sorted(self.results, key=lambda r: order.get((r.task.full_name, r.task.mode), len(order)))
        return RunRecord(environment=self.environment, results=results)

    def write(self, on_event: OnEvent = _ignore) -> RunRecord:
        """Write the record to the output (if any); every file written is reported as an event."""
        record = self.record()
        output = self.options.output
        if output and self._writer is not None:
            for path in self._writer(output, record):
                on_event(Event("written", path=str(path)))
        elif output:
            saved = store.write_record(record, output)
            on_event(Event("written", "run record", path=str(saved.path), appended=saved.appended, note=saved.note))
        if self.options.history is not None:  # after the record file: a history that fails keeps that one
            try:
                with open_history(self.options.history) as history:
                    stored = history.store(record)
            except UsageError as exc:
                kept = f"; the run is kept in {output} (history import {output} stores it later)" if output else ""
                raise UsageError(f"{exc}{kept}") from None
            on_event(Event("written", "history", path=history.location.shown, appended=not stored.added,
                           note=f"run {stored.run_id}"))
        return record

    def write_interrupted(self, cause: KeyboardInterrupt, total: int, on_event: OnEvent = _ignore) -> RunRecord:
        """Mark the run interrupted and write what finished; a run with nothing finished writes nothing."""
        self.environment["interrupted"] = {
            "signal": "SIGTERM" if isinstance(cause, Terminated) else "SIGINT",
            "finished": len(self.results),
            "total": total,
        }
        if not self.results:
            return self.record()
        return self.write(on_event)


def run_tasks(tasks: Sequence[Task], options: RunOptions | None = None, on_event: OnEvent | None = None,
              argv: list[str] | None = None) -> RunRecord:
    """Run ``tasks`` as ``options`` say and return the run record (written to ``options.output``).

    ``options.mode`` re-measures the tasks in that mode (``define.selection.with_mode``).

    ``argv``: the command line recorded in the environment (default: this process's).
    Raises ``RunInterrupted`` on Ctrl-C or SIGTERM, after writing what finished.
    """
    options = options or RunOptions()
    emit = on_event or _ignore
    # Shards split benchmarks, not sides: both sides of an A/B pair land in the same part.
    tasks, shard_note = shards.pick(with_mode(list(tasks), options.mode), options)
    tasks = with_sides(tasks, list(options.sides))
    run = Run(options, tasks, argv if argv is not None else list(sys.orig_argv))
    if shard_note is not None:
        run.environment["shard"] = shard_note
    run.check_output()
    if options.sides:
        # Each side's interpreter, torch build and harness, asked now: one that cannot
        # import harness fails here, before anything runs.
        run.environment["sides"] = {label: environment.interpreter_fingerprint(python, label)
                                    for label, python in options.sides.items()}
    if options.layers:
        tasks = with_layers(tasks, options.layers_rules)
    if options.phases:
        tasks = with_phases(tasks)
    if options.flame or options.keep_profiles:
        tasks = with_flame(tasks, options.flame, options.keep_profiles)
        if options.keep_profiles:  # a directory that cannot be made fails now, not after the counts
            with owned(options.keep_profiles, "keep profiles in it", "give --keep-profiles a directory you can write"):
                Path(options.keep_profiles).mkdir(parents=True, exist_ok=True)
    counter: InstructionCounter | None = None
    if any(t.mode == "instructions" for t in tasks):
        # Only callgrind sees functions (and cuts a count at torch's phases), so layers, call trees and phases
        # choose it.
        wants_callgrind = ((options.layers or options.flame or options.keep_profiles or options.phases)
                           and options.counter == "auto")
        # It fails here, before anything runs, when it cannot count.
        counter = get_counter("callgrind" if wants_callgrind else options.counter, cache_sim=options.cache_sim)
        if options.cache_sim:
            run.environment["cache_sim"] = cache_geometry()  # the one geometry every count of the run simulated
    try:
        check_in_process(options, counter)
        check_executor(options)
        workers_started = start_kept_workers_early(tasks, options, counter)
        prepare(tasks, emit)
        workers_started()
        if any(t.mode == "wall" for t in tasks):
            run.environment["noise"] = check_noise()
            warning = warning_block(run.environment["noise"])
            if warning:
                emit(Event("warning", warning))
            if options.jobs > 1 and options.executor == "local":  # Ray gives each wall-time task a node
                emit(Event("warning", f"--jobs {options.jobs} runs wall-time benchmarks concurrently; "
                                      "they compete for cores and caches, so their times are distorted"))
        emit(Event("start", total=len(tasks)))

        def done(result: TaskResult) -> None:
            run.add(result)
            emit(Event("result", result=result, done=len(run.results), total=len(tasks)))

        try:
            # Per-node progress only for a caller that listens: on Ray it costs a tracker process.
            on_nodes = (lambda nodes: emit(Event("nodes", nodes=nodes))) if on_event is not None else None
            execute(tasks, options, counter, done, on_nodes)
        except KeyboardInterrupt as exc:
            raise RunInterrupted(run.write_interrupted(exc, len(tasks), emit), len(tasks), exc) from None
    finally:
        if counter is not None:
            counter.close()  # its temporary files, also on Ctrl-C
    try:
        return run.write(emit)
    except KeyboardInterrupt as exc:
        # While waiting for another writer's lock, or just after our write (the
        # signal is deferred until the file is replaced; saving again is then a no-op).
        raise RunInterrupted(run.write_interrupted(exc, len(tasks), emit), len(tasks), exc) from None


def with_layers(tasks: Sequence[Task], rules: str | None) -> list[Task]:
    """Instruction-count tasks that also split their count into layers (``run.instructions``).

    The rules are read here first, so a bad file fails before anything runs;
    workers get the resolved path ("" for the shipped rules).
    """
    rules_path = load_rules(rules).path if rules else ""
    if not any(t.mode == "instructions" for t in tasks):
        raise UsageError("--layers splits instruction counts: add --mode instructions (or both)")
    out = []
    for t in tasks:
        if t.mode == "instructions":
            params = {**t.params, "layers": rules_path}
            if params.get("detail") == "total":
                params["detail"] = "symbols"  # layers need the per-function counts
            t = dataclasses.replace(t, params=params)
        out.append(t)
    return out


def prepare(tasks: Sequence[Task], emit: OnEvent = _ignore) -> None:
    """Each kind's preparer, once, with every task of the kinds that name it."""
    preparers: dict[Any, list[Task]] = {}
    for task in tasks:
        kind = kinds.find(task.kind)  # an unknown kind fails its tasks when they run, with the reason
        target = kind.preparer if kind is not None else None
        if target is not None:
            preparers.setdefault(target, []).append(task)
    for target, chosen in preparers.items():
        prepare = kinds.resolve(target, "a kind's preparer")
        prepare(chosen, lambda message: emit(Event("status", message)))
