"""``python -m harness noise``: how much each case's count moves between fresh processes, per phase, and why.

Under callgrind, runs in identical environments give identical counts (to a
few hundred instructions): what moves a count is the heap layout, through
torch.compile's sets and dicts keyed by object addresses, and the layout
follows the process environment. The spread of a case is (max - min) / min
over its repeats; a row's noise_margin in an expected file should sit well
above it (``suggested_margin``: three times the spread, at least 1.5%).

Beyond the spread, the functions behind it: each repeat's instructions per
function (callgrind's exclusive counts), and the functions whose counts
differ most between repeats, largest first; and the same per torch compile
phase. A case whose values fall into groups more than 10% apart has modes
(its work follows the heap layout: ``symint_sum_loop`` counts 4.36e9 or
6.15e9): the expected file gets the median of each.
"""

from __future__ import annotations

import csv
import math
import os
import statistics
import time
from pathlib import Path
from typing import NamedTuple

from rich import box
from rich.markup import escape
from rich.table import Table

from harness.files.atomic import atomic_open
from harness.files.lock import locked
from harness.model.phases import phases_of
from harness.model.result import TaskResult
from harness.present.check import MODE_SEPARATOR, ExpectedRow
from harness.records.metrics import METRIC_COLUMNS, format_number

MIN_MARGIN = 0.015
SAFETY = 3.0
# Values of one case further apart than this are different modes (a different
# amount of work), not noise: the spread within a mode is well under 1%.
MODE_GAP = 0.10


class Recorded(NamedTuple):
    """One row of the expected file as measured: its modes (one for most cases) and the spread within them."""

    name: str
    metric: str
    modes: list[float]
    margin: float
    spread: float
    kept: tuple[float, ...] = ()  # modes of the file it replaces that no repeat met


def suggested_margin(spread: float) -> float:
    """Three times the spread, rounded up to half a percent, never under MIN_MARGIN."""
    return max(MIN_MARGIN, math.ceil(SAFETY * spread * 200) / 200)


def spread(values: list[float]) -> float:
    return (max(values) - min(values)) / min(values) if values and min(values) > 0 else float("nan")


def modes(values: list[float]) -> list[list[float]]:
    """The values grouped into modes: sorted, split where one is more than MODE_GAP above the last."""
    groups: list[list[float]] = []
    for value in sorted(values):
        if groups and value <= groups[-1][-1] * (1 + MODE_GAP):
            groups[-1].append(value)
        else:
            groups.append([value])
    return groups


def with_known_modes(measured: list[float], known: tuple[float, ...]) -> tuple[list[float], list[float]]:
    """(every mode, the known ones kept): the measured modes and each known one no measured mode is near."""
    kept = [k for k in known if all(abs(m - k) > k * MODE_GAP for m in measured)]
    return sorted(measured + kept), kept


def total_metric(result: TaskResult) -> str:
    """compile_time_instruction_count or instruction_count, by the case's region: its one headline metric."""
    return next(m for m in result.extra["metrics"] if not m.endswith("_cold") and ":" not in m)


class Summary(NamedTuple):
    table: Table
    medians: list[tuple[str, str, float]]
    rows: list[Recorded]


def spread_table(runs: dict[str, list[TaskResult]], repeats: int, counter: str,
                 current: dict[tuple[str, str], ExpectedRow]) -> Summary:
    """A row per case: median (each mode's), spread, suggested and current margins."""
    table = Table(title=f"instruction-count spread over {repeats} runs ({counter})", title_justify="left",
                  box=box.SIMPLE_HEAD)
    for col in ("case", "median", "spread", "suggested margin", "current margin"):
        table.add_column(col, justify="left" if col == "case" else "right")
    medians: list[tuple[str, str, float]] = []
    rows: list[Recorded] = []
    for name, results in runs.items():
        ok = [r for r in results if r.ok]
        case = ok[0].extra["case"] if ok else name
        if not ok:
            table.add_row(escape(case), "", f"0 of {len(results)} runs ok", "", "")
            continue
        values = [r.extra["actual"] for r in ok]
        metric = total_metric(ok[0])
        medians.append((case, metric, statistics.median_low(values)))
        if len(ok) < 2:
            table.add_row(escape(case), f"{values[0]:,.0f}", f"{len(ok)} of {repeats} runs", "", "")
            continue
        groups = modes(values)
        s = max(spread(g) for g in groups)
        row = current.get((case, metric))
        every, kept = with_known_modes([statistics.median_low(g) for g in groups], row.modes if row else ())
        rows.append(Recorded(case, metric, every, suggested_margin(s), s, tuple(kept)))
        margin = row.margin if row else None
        table.add_row(
            escape(case),
            " | ".join(f"{statistics.median_low(g):,.0f}" for g in groups)
            + "".join(f" | {k:,.0f} (kept)" for k in kept),
            f"{s:.3%}" + (f" within each of {len(groups)} modes" if len(groups) > 1 else ""),
            f"{suggested_margin(s):.1%}",
            "" if margin is None else f"{margin:.1%}" + ("" if margin >= suggested_margin(s) else " (too tight)"),
        )
    return Summary(table, medians, rows)


def phase_spread_table(case: str, results: list[TaskResult], top: int = 10) -> Table | None:
    """Per phase of ``case``: its own instructions in each repeat and their range, the widest first."""
    phases = [p for r in results if r.ok and (p := phases_of(r.extra)) is not None]
    if len(phases) < 2:
        return None
    paths = sorted({path for p in phases for path in p.exclusive})
    ranges = []
    for path in paths:
        values = [p.exclusive.get(path, 0.0) for p in phases]
        ranges.append((max(values) - min(values), path, values))
    ranges.sort(key=lambda item: (-item[0], item[1]))
    table = Table(title=f"{escape(case)}: spread per torch compile phase (own instructions in each repeat)",
                  title_justify="left", box=box.SIMPLE_HEAD)
    table.add_column("phase")
    for i in range(len(phases)):
        table.add_column(f"run {i + 1}", justify="right")
    table.add_column("range", justify="right")
    table.add_column("spread", justify="right")
    for width, path, values in ranges[:top]:
        low = min(values)
        table.add_row(escape(path), *(f"{v:,.0f}" for v in values), f"{width:,.0f}",
                      f"{width / low:.3%}" if low > 0 else "")
    return table


def varying_functions(results: list[TaskResult]) -> list[tuple[str, list[int], int]]:
    """(function, its count in each repeat, max - min) of every function whose count differs, largest first."""
    counts = [r.extra["functions"] for r in results if r.ok and isinstance(r.extra.get("functions"), dict)]
    if len(counts) < 2:
        return []
    names = set().union(*counts)
    out = []
    for name in names:
        values = [int(c.get(name, 0)) for c in counts]
        if max(values) != min(values):
            out.append((name, values, max(values) - min(values)))
    out.sort(key=lambda item: (-item[2], item[0]))
    return out


def function_table(case: str, results: list[TaskResult], top: int = 15) -> Table | None:
    """The functions whose counts vary between repeats, largest range first: why the count is noisy."""
    varying = varying_functions(results)
    totals = [r.extra["actual"] for r in results if r.ok]
    if not varying:
        return None
    table = Table(
        title=f"{escape(case)}: functions whose instructions differ between repeats ({len(varying)} of them; "
        f"the total moved by {max(totals) - min(totals):,.0f})", title_justify="left", box=box.SIMPLE_HEAD,
        caption="a function's count moves with the work the heap layout makes (dict and set probes, hashing by "
        "address, a different path through a cache); the ranges need not add up to the total's: they offset",
        caption_justify="left",
    )
    table.add_column("function", overflow="fold")
    for i in range(len(varying[0][1])):
        table.add_column(f"run {i + 1}", justify="right")
    table.add_column("range", justify="right")
    for name, values, width in varying[:top]:
        table.add_row(escape(name), *(f"{v:,}" for v in values), f"{width:,}")
    return table


def write_expected(path: str, rows: list[Recorded], counter: str, repeats: int, command: str) -> None:
    """The expected file, whole: what it was recorded on, then a row per case."""
    import platform

    import torch

    spreads = [row.spread for row in rows]
    cpuinfo = Path("/proc/cpuinfo")
    cpu = next(
        (line.split(":", 1)[1].strip() for line in cpuinfo.read_text().splitlines() if line.startswith("model name")),
        platform.processor(),
    ) if cpuinfo.exists() else platform.processor()
    header = [
        "# Expected instruction counts of the compile-time suite's default (gated) cases, gated by",
        "#   python -m harness check RESULTS --expected benchmarks/compile_time/expected_results.csv",
        f"# Written by: {command}",
        f"# Recorded on: {cpu} ({os.cpu_count()} CPUs), Linux {platform.release()}, "
        f"Python {platform.python_version()},",
        f"#   torch {torch.__version__}, counter {counter}, {time.strftime('%Y-%m-%d', time.gmtime())}.",
        (
            f"# Values: the median of {repeats} runs, each case in a fresh worker; spreads measured "
            f"{min(spreads):.2%}-{max(spreads):.2%};"
            if repeats > 1 and spreads
            else "# Values: ONE run per case, each in a fresh worker: spreads not measured, margins at the floor;"
        ),
        f"#   noise_margin = max({MIN_MARGIN:.1%}, {SAFETY:g}x the case's spread). Other machines, torch versions or",
        "#   counters give other counts: record your own with the command above.",
    ]
    multimodal = [row for row in rows if len(row.modes) > 1]
    if multimodal:
        header.append(
            f"# Cases with modes (values in groups more than {MODE_GAP:.0%} apart, each gated with the row's margin;"
            ' see the suite README, "A case with two modes"):'
        )
        header += [
            f"#   {row.name}: {' | '.join(f'{m:,.0f}' for m in row.modes)}"
            + "".join(f"; {k:,.0f} kept from the file this one replaced (no repeat met it)" for k in row.kept)
            for row in multimodal
        ]
    # Under the expected file's writers' lock, as check --update writes it: one writer at a time.
    with locked(path), atomic_open(path, "w") as f:
        f.write("\n".join(header) + "\n")
        writer = csv.writer(f, lineterminator="\n")
        writer.writerow(["name", "metric", "expected", "noise_margin"])
        writer.writerows(
            (name, metric, MODE_SEPARATOR.join(map(format_number, values)), f"{margin:g}")
            for name, metric, values, margin, *_ in rows
        )


def write_medians(path: str, rows: list[tuple[str, str, float]]) -> None:
    with atomic_open(path, "w") as f:
        writer = csv.writer(f, lineterminator="\n")
        writer.writerow(METRIC_COLUMNS)
        writer.writerows((name, metric, format_number(value)) for name, metric, value in rows)
