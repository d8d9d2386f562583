"""``check --propose OUT.csv``: the expected file as it should be after a run, and what moved, in markdown.

Unlike ``--update`` (which also refreshes rows that drifted by a third of
their margin), a proposal changes only the rows the gate would flag: a
regression or an improvement beyond the row's margin takes the run's value
(the nearest mode of a case with modes), its margin kept; results without a
row are added with the new-row margin; every other line keeps its bytes. The
summary says, per row that moved, by how much and in which torch compile
phases (``bench --phases``): the phase rows of the expected file that moved
with it, else where this run's count of the case goes.
"""

from __future__ import annotations

from pathlib import Path

from harness.model.phases import SEP, split_phase_metric
from harness.present.check import (
    IMPROVED,
    NEW,
    REGRESSION,
    ExpectedFile,
    Key,
    Update,
    Verdict,
    check,
    updated,
)

TOP_PHASES = 3


def proposed(expected: ExpectedFile, actual: dict[Key, float],
             metrics: list[str] | None = None) -> tuple[Update, list[Verdict]]:
    """(the new file's text and what changed, the verdicts behind each change)."""
    verdicts = check(expected, actual, metrics)
    moved = [v for v in verdicts if v.verdict in (REGRESSION, IMPROVED, NEW)]
    wanted = {(v.name, v.metric): actual[(v.name, v.metric)] for v in moved}
    # Rows beyond their margin moved by more than a third of it, so updated() rewrites each one; others are absent.
    return updated(expected, wanted, metrics), moved


def _own_phases(actual: dict[Key, float], name: str, metric: str) -> list[tuple[str, float]]:
    """(path, own value) of the phases of ``name``'s ``metric`` in the results, largest first."""
    inclusive = {}
    for (row_name, row_metric), value in actual.items():
        split = split_phase_metric(row_metric)
        if row_name == name and split is not None and split[0] == metric:
            inclusive[split[1]] = value
    own = dict(inclusive)
    for path, value in inclusive.items():
        parent = path.rpartition(SEP)[0]
        if parent in own:
            own[parent] -= value
    return sorted(own.items(), key=lambda item: -item[1])


def _phase_note(verdict: Verdict, verdicts: list[Verdict], actual: dict[Key, float]) -> str:
    phase_rows = [v for v in verdicts if v.name == verdict.name and (s := split_phase_metric(v.metric))
                  and s[0] == verdict.metric]
    if phase_rows:
        moved = [v for v in phase_rows if v.verdict in (REGRESSION, IMPROVED)]
        # The deepest phases that moved name the cause; their parents moved with them.
        moved.sort(key=lambda v: (-v.metric.count(SEP), -abs((v.actual or 0) - (v.expected or 0))))
        return ", ".join(f"{split_phase_metric(v.metric)[1]} {_change(v)}" for v in moved[:TOP_PHASES]) \
            or "no gated phase moved beyond its margin"
    own = _own_phases(actual, verdict.name, verdict.metric)
    if not own:
        return ""
    total = sum(value for _, value in own)
    return "this run: " + ", ".join(
        f"{path.rpartition(SEP)[2]} {value / total:.0%}" for path, value in own[:TOP_PHASES]
    )


def _change(v: Verdict) -> str:
    if v.expected is None or v.actual is None or not v.expected:
        return ""
    return f"{(v.actual - v.expected) / v.expected:+.2%}"


def _cell(text: str) -> str:
    return text.replace("|", "\\|")


def summary(verdicts: list[Verdict], moved: list[Verdict], actual: dict[Key, float], expected_path: str,
            out: str) -> str:
    """Markdown for a pull request: each row that moved, how much, and the phases behind it."""
    totals = [v for v in moved if split_phase_metric(v.metric) is None]
    phases = [v for v in moved if split_phase_metric(v.metric) is not None]
    lines = [f"### Expected values proposed for `{expected_path}`", ""]
    if not moved:
        lines.append("Nothing moved beyond its margin: the proposed file is the current one.")
        return "\n".join(lines) + "\n"
    counts = {k: sum(1 for v in moved if v.verdict == k) for k in (REGRESSION, IMPROVED, NEW)}
    lines += [f"{counts[REGRESSION]} regression(s), {counts[IMPROVED]} improvement(s) and {counts[NEW]} new "
              f"row(s) beyond their margins; `{out}` has them, every other row as it was.", ""]
    lines += ["| case | metric | expected | this run | change | margin | verdict | phases |",
              "|---|---|---:|---:|---:|---:|---|---|"]
    for v in totals + phases:
        expected = "" if v.expected is None else f"{v.expected:,.0f}"
        actual_text = "" if v.actual is None else f"{v.actual:,.0f}"
        margin = "" if v.margin is None else f"{v.margin:.1%}"
        note = _phase_note(v, verdicts, actual) if v in totals else ""
        lines.append(f"| {_cell(v.name)} | {_cell(v.metric)} | {expected} | {actual_text} | {_change(v)} | {margin} | "
                     f"{v.verdict} | {_cell(note)} |")
    return "\n".join(lines) + "\n"


def markdown_path(out: str | Path) -> Path:
    """Where the summary goes: beside the proposed file, ``.md`` for its suffix."""
    return Path(out).with_suffix(".md")
