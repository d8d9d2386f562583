"""GitHub-flavoured markdown of ``compare``, ``check`` and ``history changes`` (``--markdown``), for a pull request.

Each summary is a heading, a one-line verdict, a table of what changed beyond
the noise (nothing else: a summary of fifty unchanged benchmarks hides the one
that moved), and under each changed benchmark, where the records have them,
the layers and functions that moved most, folded in a ``<details>`` block.
The functions here are handed data (comparisons, verdicts, steps and their
reasons) and return text; they never measure or query. ``step_summary``
appends a summary to ``$GITHUB_STEP_SUMMARY`` when that names a file, as a
GitHub Actions job shows it on the run's page.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from harness.files.oserrors import owned
from harness.measure.callgrind.layers import title as layer_title
from harness.options import DEFAULT_NOISE_MARGIN, STEP_SUMMARY_ENV, env
from harness.present.cache_table import cache_changes, cycles_layers
from harness.present.layer_table import layer_changes
from harness.present.run_comparison import Comparison, Row, symbol_deltas
from harness.present.table import format_value

if TYPE_CHECKING:
    from harness.history.changes import Change
    from harness.present.check import Verdict
    from harness.present.history_table import Why

TOP = 5  # layers and functions listed per changed benchmark
ICON = {"slower": "🔴", "worse": "🔴", "failed": "❌", "REGRESSION": "🔴", "missing": "❌",
        "faster": "🟢", "better": "🟢", "improved": "🟢", "noisy": "🟡", "incomparable": "🟡", "new": "🆕"}


def cell(text: object) -> str:
    """One table cell: pipes escaped, line breaks folded, so the row stays one row."""
    return str(text).replace("\\", "\\\\").replace("|", "\\|").replace("\r", " ").replace("\n", " ").strip()


def markdown_table(headers: Sequence[str], rows: Iterable[Sequence[object]], align: str = "") -> str:
    """A GitHub-flavoured markdown table. ``align``: one letter per column, ``l`` or ``r`` (default: the
    first column left, the rest right, as numbers read best)."""
    align = align or "l" + "r" * (len(headers) - 1)
    marks = {"l": ":---", "r": "---:", "c": ":---:"}
    lines = ["| " + " | ".join(cell(h) for h in headers) + " |",
             "|" + "|".join(marks[a] for a in align) + "|"]
    lines += ["| " + " | ".join(cell(c) for c in row) + " |" for row in rows]
    return "\n".join(lines)


def step_summary(text: str) -> Path | None:
    """Append ``text`` to ``$GITHUB_STEP_SUMMARY`` when it names a file (one write, in append mode, so
    summaries of several steps follow one another whole); the path, or None when unset."""
    target = env(STEP_SUMMARY_ENV)
    if not target:
        return None
    path = Path(target)
    data = (text.rstrip("\n") + "\n\n").encode("utf-8")
    with owned(path, "append the markdown summary", f"point ${STEP_SUMMARY_ENV} at a writable file, or unset it"):
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            os.write(fd, data)
        finally:
            os.close(fd)
    return path


# -- compare ----------------------------------------------------------------------------------------

def _value(r_ok: bool, value: float, unit: str) -> str:
    return format_value(value, unit) if r_ok else "failed"


def _pct(change: float | None) -> str:
    return "" if change is None else f"{change * 100:+.2f}%"


def _moved_layers(base, new) -> list[tuple[str, float, float]]:  # noqa: ANN001 - TaskResults
    changes = [(layer_title(n), a, b) for n, a, b in layer_changes(base, new) if round(b - a)]
    return sorted(changes, key=lambda t: -abs(t[2] - t[1]))[:TOP]


def _moved_functions(base, new) -> list[tuple[str, float, float]]:  # noqa: ANN001 - TaskResults
    deltas = sorted(symbol_deltas(base, new), key=lambda t: -abs(t[3]))
    return [(s, a, b) for s, a, b, d in deltas if d][:TOP]


def _moved_cycles(base, new) -> list[tuple[str, float, float]]:  # noqa: ANN001 - TaskResults
    """(layer, before, after) estimated cycles per run of the layers that moved most (--cache-sim --layers)."""
    a, b = cycles_layers(base), cycles_layers(new)
    if a is None or b is None:
        return []
    changes = [(layer_title(n), a.get(n, 0.0), b.get(n, 0.0)) for n in dict.fromkeys([*a, *b])
               if round(b.get(n, 0.0) - a.get(n, 0.0))]
    return sorted(changes, key=lambda t: -abs(t[2] - t[1]))[:TOP]


def _moved_block(label: str, layers: list[tuple[str, float, float]], functions: list[tuple[str, float, float]],
                 phases: str = "", cycles: Sequence[tuple[str, float, float]] = ()) -> str:
    """A folded block: the layers and functions that moved most (instructions per run), and the layers whose
    estimated cycles moved most."""
    if not (layers or functions or phases or cycles):
        return ""
    parts = [f"<details><summary>{cell(label)}: what moved</summary>", ""]
    if phases:
        parts += [f"torch compile phases: {cell(phases)}", ""]
    for header, items in (("layer", layers), ("function", functions), ("layer (estimated cycles)", cycles)):
        if items:
            rows = [(f"`{name}`" if header == "function" else name, f"{a:,.0f}", f"{b:,.0f}", f"{b - a:+,.0f}")
                    for name, a, b in items]
            parts += [markdown_table([header, "before", "after", "change"], rows), ""]
    parts.append("</details>")
    return "\n".join(parts)


def _cycles_change(row: Row) -> float | None:
    """The relative change of estimated cycles per run, when both results simulated the caches."""
    found = {name: (a, b) for name, a, b in cache_changes(row.base, row.new)}.get("estimated_cycles")
    return (found[1] - found[0]) / found[0] if found and found[0] else None


def _is_change(row: Row, noise_margin: float) -> bool:
    """Changed beyond the noise: by its verdict, or by its estimated cycles (same margin as a count)."""
    cycles = _cycles_change(row)
    return row.verdict != "same" or (cycles is not None and abs(cycles) > noise_margin)


def comparison_markdown(comparison: Comparison, *, base_label: str = "base", new_label: str = "new",
                        heading: str = "harness compare", noise_margin: float = DEFAULT_NOISE_MARGIN) -> str:
    """The markdown of ``compare``: verdict, the benchmarks that changed beyond the noise (also by their
    estimated cycles, beyond ``noise_margin``, where both runs simulated the caches), and per changed
    benchmark what moved most."""
    changed = [r for r in comparison.rows if _is_change(r, noise_margin)]
    regressions = [r for r in comparison.rows if r.regression or (r.base.ok and not r.new.ok)]
    improved = [r for r in comparison.rows if r.verdict in ("faster", "better")]
    lines = [f"### {heading}: {cell(base_label)} vs {cell(new_label)}", ""]
    if regressions:
        verdict = f"🔴 **{len(regressions)} regression(s)**"
    elif changed:
        verdict = "🟡 **no regression**"
    else:
        verdict = "🟢 **no change beyond the noise**"
    cycles_moved = [r for r in changed if (c := _cycles_change(r)) is not None and abs(c) > noise_margin]
    counts = f"{len(improved)} improved, {len(changed) - len(improved) - len(regressions)} other change(s), " \
             f"{len(comparison.rows) - len(changed)} unchanged of {len(comparison.rows)} benchmark(s)"
    if cycles_moved:
        counts += f"; estimated cycles moved beyond {noise_margin:.1%} in {len(cycles_moved)}"
    lines += [f"{verdict}: {counts}" + (f"; {len(comparison.added)} added, {len(comparison.removed)} removed"
                                        if comparison.added or comparison.removed else "") + ".", ""]
    if changed:
        with_cache = any(cache_changes(r.base, r.new) for r in changed)
        headers = ["benchmark", base_label, new_label, "change", "verdict"]
        if with_cache:
            headers.insert(4, "estimated cycles")
        rows = []
        for r in changed:
            row = [f"{r.suite}/{r.name}", _value(r.base.ok, r.base.value, r.base.value_unit),
                   _value(r.new.ok, r.new.value, r.new.value_unit), _pct(r.change),
                   f"{ICON.get(r.verdict, '')} {r.verdict}" + (f" ({r.note})" if r.note else "")]
            if with_cache:
                cycles = {n: (a, b) for n, a, b in cache_changes(r.base, r.new)}.get("estimated_cycles")
                row.insert(4, f"{cycles[0]:,.0f} → {cycles[1]:,.0f} ({_pct(_cycles_change(r))})" if cycles else "")
            rows.append(row)
        lines += [markdown_table(headers, rows, "lrrrrl" if with_cache else "lrrrl"), ""]
        for r in changed:
            if r.base.ok and r.new.ok:
                block = _moved_block(f"{r.suite}/{r.name}", _moved_layers(r.base, r.new),
                                     _moved_functions(r.base, r.new), cycles=_moved_cycles(r.base, r.new))
                if block:
                    lines += [block, ""]
    for label, results in (("added (only in new)", comparison.added), ("removed (only in base)", comparison.removed)):
        if results:
            lines += [f"{label}: " + ", ".join(f"`{r.task.full_name}`" for r in results), ""]
    return "\n".join(lines).rstrip() + "\n"


# -- check ------------------------------------------------------------------------------------------

def check_markdown(verdicts: Sequence[Verdict], *, expected: str = "", heading: str = "harness check") -> str:
    """The markdown of ``check``: the gate's verdict and the rows that are not ok."""
    counts: dict[str, int] = {}
    for v in verdicts:
        counts[v.verdict] = counts.get(v.verdict, 0) + 1
    failed = counts.get("REGRESSION", 0) + counts.get("missing", 0)
    judged = sum(counts.values()) - counts.get("new", 0)
    source = f" against `{cell(expected)}`" if expected else ""
    if failed:
        verdict = (f"🔴 **gate failed**{source}: {counts.get('REGRESSION', 0)} regression(s), "
                   f"{counts.get('missing', 0)} missing result(s)")
    else:
        verdict = f"🟢 **gate passed**{source}: {counts.get('ok', 0)} of {judged} row(s) within their margin"
    extras = [f"{counts[k]} {k}" for k in ("improved", "new") if counts.get(k)]
    lines = [f"### {heading}", "", verdict + (f"; {', '.join(extras)}" if extras else "") + ".", ""]
    shown = [v for v in verdicts if v.verdict != "ok"]
    if shown:
        rows = [(v.name, v.metric, _number(v.expected), _number(v.actual), _pct(v.delta),
                 "" if v.margin is None else f"±{v.margin * 100:g}%",
                 f"{ICON.get(v.verdict, '')} {v.verdict.lower()}") for v in shown]
        lines += [markdown_table(["name", "metric", "expected", "actual", "change", "margin", "verdict"], rows,
                                 "llrrrrl"), ""]
    return "\n".join(lines).rstrip() + "\n"


def _number(value: float | None) -> str:
    """A metric's value: counts with thousands separators, small values to 6 significant digits."""
    if value is None:
        return ""
    return f"{value:,.0f}" if abs(value) >= 1000 else f"{value:.6g}"


# -- history changes --------------------------------------------------------------------------------

def changes_markdown(changes: Sequence[Change], reasons: Sequence[Why], *, runs: int, benchmarks: int,
                     heading: str = "harness history changes") -> str:
    """The markdown of ``history changes``: each step beyond the noise (of a benchmark's own value or of a
    cache figure), the runs on its two sides, and what moved with it (``reasons``: one per change, as
    ``present.history_table.why`` finds them)."""
    worse = [c for c in changes if c.worse]
    if worse:
        verdict = f"🔴 **{len(worse)} step(s) the bad way**, {len(changes) - len(worse)} the good way"
    elif changes:
        verdict = f"🟢 **{len(changes)} step(s), none the bad way**"
    else:
        verdict = "🟢 **no step beyond the noise**"
    lines = [f"### {heading}", "", f"{verdict} in {benchmarks} benchmark(s) over {runs} run(s).", ""]
    if changes:
        from harness.present.history_table import value_text  # the history's formats (history_table reads SQL)

        rows = []
        for c in changes:
            unit = c.benchmark.unit
            rows.append((c.benchmark.full_name, f"{ICON['slower' if c.worse else 'faster']} {_pct(c.step.change)}",
                         value_text(c.step.before, unit), value_text(c.step.after, unit),
                         _run_text(c.before), _run_text(c.after)))
        lines += [markdown_table(["benchmark", "step", "before", "after", "last run before", "first run after"],
                                 rows, "lrrrll"), ""]
        for c, why in zip(changes, reasons, strict=True):
            block = _moved_block(c.benchmark.full_name, [(layer_title(n), a, b) for n, a, b in why.layers],
                                 why.symbols, why.phases, [(layer_title(n), a, b) for n, a, b in why.cycles])
            if block:
                lines += [block, ""]
    return "\n".join(lines).rstrip() + "\n"


def _run_text(run) -> str:  # noqa: ANN001 - history.query.RunInfo
    parts = [run.label, run.commit[:10], run.started.replace("T", " ")[:16]]
    return " ".join(p for p in parts if p)
