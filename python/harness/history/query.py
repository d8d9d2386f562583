"""Benchmarks' values over runs, read from the history for ``show``, ``changes`` and the trend charts.

The runs are read with their packed series (``schema.pack_series``): one row
per run, whatever the number of benchmarks, into a matrix of benchmark x
run (NaN where a run has no value for a benchmark: not run, or failed).
A benchmark here is one series: a result's own value, or one of its cache
figures (``Benchmark.metric``, ``history.metrics``); ``load``'s ``keep``
picks which. Runs are ordered by start time; ``regroup`` merges them by label or by the
user's commit (the median of each group), in order of label (natural
order: v2 before v10) or of the commit's first run.
"""

from __future__ import annotations

import dataclasses
import json
import re
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
from sqlalchemy import select

from harness.history import schema
from harness.history.database import History

ORDERS = ("time", "label", "commit")


@dataclasses.dataclass(frozen=True)
class RunInfo:
    """One run (or, regrouped, one label or commit: ``runs`` counts the runs merged)."""

    id: int
    key: str
    started: str
    label: str
    commit: str
    branch: str
    torch: str
    harness: str
    hostname: str
    counter: str
    interrupted: bool
    runs: int = 1

    @property
    def name(self) -> str:
        """How tables and charts name it: label, else short commit, else start time."""
        return self.label or self.commit[:10] or self.started.replace("T", " ")[:19]


@dataclasses.dataclass(frozen=True)
class Benchmark:
    id: int
    suite: str
    name: str
    mode: str
    side: str
    kind: str
    unit: str
    higher_is_better: bool
    metric: str = ""  # "": the result's own value; else a cache figure (history.metrics)

    @property
    def full_name(self) -> str:
        """``suite/name``, with ``@side`` for an A/B side, `` [instructions]`` for a count and
        `` [estimated_cycles]`` (the figure's name) for a cache figure of one."""
        text = f"{self.suite}/{self.name}" + (f"@{self.side}" if self.side else "")
        if self.metric:
            return text + f" [{self.metric}]"
        return text + (" [instructions]" if self.mode == "instructions" else "")

    @property
    def identity(self) -> tuple[str, str, str, str]:
        """The benchmark whose series this is, whatever its metric."""
        return (self.suite, self.name, self.mode, self.side)


@dataclasses.dataclass
class Trends:
    """``values[i, j]``: benchmark ``benchmarks[i]`` in run ``runs[j]`` (NaN: none)."""

    runs: list[RunInfo]
    benchmarks: list[Benchmark]
    values: np.ndarray

    def series(self, i: int) -> tuple[np.ndarray, np.ndarray]:
        """(run positions, values) of benchmark ``i`` where it has a value."""
        row = self.values[i]
        points = np.flatnonzero(~np.isnan(row))
        return points, row[points]


def benchmarks(history: History) -> list[Benchmark]:
    t = schema.BENCHMARKS
    with history.errors("read the benchmarks"), history.read() as conn:
        rows = conn.execute(select(t.c.id, t.c.suite, t.c.name, t.c.mode, t.c.side, t.c.kind, t.c.unit,
                                   t.c.higher_is_better, t.c.metric)
                            .order_by(t.c.suite, t.c.name, t.c.mode, t.c.side, t.c.metric))
        return [Benchmark(*row) for row in rows]


def load(history: History, keep: Callable[[Benchmark], bool] | None = None, last: int | None = None) -> Trends:
    """Every run (the newest ``last`` when given), oldest first, and the benchmarks ``keep`` accepts."""
    chosen = [b for b in benchmarks(history) if keep is None or keep(b)]
    r = schema.RUNS
    columns = (r.c.id, r.c.run_key, r.c.started, r.c.label, r.c.repo_commit, r.c.repo_branch, r.c.torch_version,
               r.c.harness_version, r.c.hostname, r.c.counter, r.c.interrupted, r.c.series)
    query = select(*columns).order_by(r.c.started.desc(), r.c.id.desc())
    if last:
        query = query.limit(last)
    with history.errors("read the runs"), history.read() as conn:
        rows = conn.execute(query).all()[::-1]
    runs = [RunInfo(*row[:-1]) for row in rows]
    values = np.full((len(chosen), len(runs)), np.nan)
    if chosen and runs:
        parts = [schema.unpack_series(row[-1] or b"") for row in rows]
        lengths = np.fromiter((len(ids) for ids, _ in parts), int, len(parts))
        ids = np.concatenate([ids for ids, _ in parts]) if lengths.sum() else np.zeros(0, int)
        vals = np.concatenate([v for _, v in parts]) if lengths.sum() else np.zeros(0)
        columns_of = np.repeat(np.arange(len(runs)), lengths)
        position = np.full(max(int(ids.max(initial=0)), max(b.id for b in chosen)) + 1, -1)
        position[[b.id for b in chosen]] = np.arange(len(chosen))
        where = position[ids]
        mine = where >= 0
        values[where[mine], columns_of[mine]] = vals[mine]
    return Trends(runs, chosen, values)


def _natural(text: str) -> list[Any]:
    return [(0, int(part), "") if part.isdigit() else (1, 0, part) for part in re.split(r"(\d+)", text) if part]


def regroup(trends: Trends, by: str) -> Trends:
    """Runs merged per label or per commit (``by``: "label" or "commit"; "time" keeps every run).

    Runs without a label (commit) are left out; each group's value is the
    median of its runs' values.
    """
    if by == "time":
        return trends
    field = "label" if by == "label" else "commit"
    groups: dict[str, list[int]] = {}
    for j, run in enumerate(trends.runs):
        value = getattr(run, field)
        if value:
            groups.setdefault(value, []).append(j)
    names = sorted(groups, key=_natural) if by == "label" else list(groups)
    runs, columns = [], []
    for name in names:
        members = groups[name]
        newest = trends.runs[members[-1]]
        runs.append(dataclasses.replace(newest, runs=len(members)))
        block = trends.values[:, members]
        with np.errstate(all="ignore"):
            counted = (~np.isnan(block)).sum(axis=1)
            median = np.full(len(block), np.nan)
            has = counted > 0
            if has.any():
                median[has] = np.nanmedian(block[has], axis=1)
        columns.append(median)
    values = np.stack(columns, axis=1) if columns else np.zeros((len(trends.benchmarks), 0))
    return Trends(runs, trends.benchmarks, values)


def own_id(history: History, benchmark: Benchmark) -> int | None:
    """The id of the series of a benchmark's own value (a cache figure's result keeps no ``extra``:
    its benchmark's own result does)."""
    if not benchmark.metric:
        return benchmark.id
    t = schema.BENCHMARKS
    query = select(t.c.id).where(t.c.suite == benchmark.suite, t.c.name == benchmark.name, t.c.mode == benchmark.mode,
                                 t.c.side == benchmark.side, t.c.metric == "")
    with history.errors("read the benchmarks"), history.read() as conn:
        return conn.execute(query).scalar()


def details(history: History, benchmark_id: int, run_ids: Sequence[int]) -> dict[int, tuple[dict[str, Any], int]]:
    """A benchmark's results in some runs: {run id: (extra (layers, symbols), number per run)}."""
    t = schema.RESULTS
    query = select(t.c.run_id, t.c.extra, t.c.number_per_run).where(t.c.benchmark_id == benchmark_id,
                                                                    t.c.run_id.in_(list(run_ids)))
    with history.errors("read results"), history.read() as conn:
        return {run_id: (json.loads(extra) if extra else {}, number or 1)
                for run_id, extra, number in conn.execute(query)}
