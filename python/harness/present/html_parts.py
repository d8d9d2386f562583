"""The pieces of HTML the report's sections share: escaping, number cells, result tables, labels.

Sections (``present.html_report`` and each kind's ``Kind.report``) build on
these so every table and label of the report looks and sorts the same.
"""

from __future__ import annotations

import html
import math
from collections.abc import Callable, Sequence
from pathlib import Path

from harness.model.measurement import select_unit
from harness.model.record import RunRecord
from harness.model.result import TaskResult
from harness.options import NOISY_IQR_FRACTION
from harness.present.table import format_value

Runs = Sequence[tuple[str, RunRecord]]  # (source file, record), oldest first


def escape(text: object) -> str:
    return html.escape(str(text), quote=True)


def num_cell(text: str, sort_value: float | None) -> str:
    sort = "" if sort_value is None or not math.isfinite(sort_value) else f' data-sort="{sort_value!r}"'
    return f'<td class="num"{sort}>{escape(text)}</td>'


def run_label(index: int, record: RunRecord, source: str) -> str:
    env = record.environment
    start = str(env.get("start_time") or "")[:16].replace("T", " ")
    commit = str(env.get("git_commit") or "")[:8]
    parts = [f"#{index + 1}", start or Path(source).name]
    if commit:
        parts.append(commit)
    if record.interrupted:
        parts.append("(interrupted)")
    return " ".join(parts)


def scaled(values: Sequence[float], unit: str) -> tuple[float, str]:
    """Scale and axis label for plotting ``values`` in ``unit``."""
    if unit == "s":
        u, scale = select_unit(max(values) if values else 0.0)
        return scale, {"us": "µs"}.get(u, u) + " per call"
    if unit == "instructions":
        return 1.0, "instructions per call"
    return 1.0, unit


# -- sections -------------------------------------------------------------------


def latest_with(runs: Runs, pick: Callable[[TaskResult], bool]) -> tuple[int, list[TaskResult]] | None:
    for index in range(len(runs) - 1, -1, -1):
        chosen = [r for r in runs[index][1].results if r.ok and pick(r)]
        if chosen:
            return index, chosen
    return None


def results_table(results: Sequence[TaskResult], extra_columns: Sequence[str] = ()) -> str:
    head = ["benchmark", "value", "IQR", "runs", "status", *extra_columns]
    rows = []
    for r in results:
        extra_cells = "".join(f"<td>{escape(r.extra.get(c, ''))}</td>" for c in extra_columns)
        if not r.ok:
            first = (r.error or "failed").strip().splitlines()[0] if (r.error or "").strip() else "failed"
            rows.append(
                f'<tr class="failed"><td>{escape(r.task.name)}</td><td></td><td></td><td></td>'
                f"<td>failed: {escape(first)}</td>{extra_cells}</tr>"
            )
            continue
        unit = r.value_unit
        noisy = r.noisy
        iqr_text = format_value(r.iqr, r.unit) if r.samples else ""
        flag = f' <span class="flag">! {r.relative_iqr:.0%}</span>' if noisy else ""
        row_class = ' class="noisy"' if noisy else ""
        rows.append(
            f"<tr{row_class}><td>{escape(r.task.name)}</td>"
            + num_cell(format_value(r.value, unit), r.value)
            + f'<td class="num" data-sort="{r.relative_iqr!r}">{escape(iqr_text)}{flag}</td>'
            + num_cell(f"{len(r.samples)}x{r.number_per_run}", len(r.samples))
            + f"<td>ok</td>{extra_cells}</tr>"
        )
    return (
        "<table class=\"sortable\"><thead><tr>" + "".join(f"<th>{escape(h)}</th>" for h in head)
        + "</tr></thead><tbody>" + "".join(rows) + "</tbody></table>"
    )


NOISE_NOTE = NOISY_IQR_FRACTION  # flagged above this IQR / median
