"""HTML report of one or more runs: a single self-contained file.

Everything is inline (CSS, SVG plots from matplotlib, a small script that
makes tables sortable), so the file can be mailed, attached to CI, or opened
offline. The report has the runs, then one section per kind that has a
section of its own (``Kind.report`` in ``harness.kinds``: dispatch overhead
for grouped results, compile time, kernel efficiency), then the history
across runs, the trends (a chart per benchmark, each point telling its run on
hover, steps marked: ``present.trends``) and every result. Sections whose data no run has are left out
with a note saying why.
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable, Sequence
from datetime import UTC, datetime

from harness import kinds
from harness._version import __version__
from harness.files.atomic import atomic_write_text
from harness.files.oserrors import path_error
from harness.model.record import RunRecord
from harness.model.result import TaskResult
from harness.options import NOISY_IQR_FRACTION
from harness.present import plots, trends
from harness.present.cache_table import cache_section
from harness.present.flame_graph import flame_section
from harness.present.html_parts import Runs, escape, results_table, run_label
from harness.present.table import format_value
from harness.records.store import load_runs

CSS = """
body { font-family: -apple-system, "Segoe UI", Helvetica, Arial, sans-serif; margin: 2em auto; max-width: 70em;
       padding: 0 1em; color: #222; background: #fff; }
h1 { font-size: 1.6em; border-bottom: 2px solid #4c72b0; padding-bottom: .2em; }
h2 { font-size: 1.3em; margin-top: 2em; border-bottom: 1px solid #ddd; }
h3 { font-size: 1.05em; margin-top: 1.4em; }
table { border-collapse: collapse; margin: .6em 0 1.2em; font-size: .9em; }
th, td { border: 1px solid #ddd; padding: .25em .6em; text-align: left; vertical-align: top; }
th { background: #f3f5f9; cursor: pointer; user-select: none; }
td.num { text-align: right; font-variant-numeric: tabular-nums; }
caption { text-align: left; font-weight: 600; padding: .2em 0; }
tr.noisy td { background: #fff6db; }
tr.failed td { background: #fde8e8; }
.flag { color: #b35c00; font-weight: bold; }
.note { color: #555; font-style: italic; }
.notes { background: #f7f7f7; border-left: 4px solid #bbb; padding: .5em 1em; }
.warn { background: #fff6db; border-left: 4px solid #e0a800; padding: .5em 1em; }
.plot svg { max-width: 100%; height: auto; }
.hover circle { fill: transparent; stroke: none; pointer-events: all; }
.hover circle:hover { fill: rgba(196, 78, 82, .35); }
code { background: #f3f3f3; padding: 0 .2em; }
footer { margin-top: 3em; color: #777; font-size: .85em; }
"""

# Sortable tables, and a marker the render test reads to know scripts ran without error.
SCRIPT = """
(function () {
  function cellValue(row, i) {
    var c = row.cells[i];
    var v = c.getAttribute("data-sort");
    return v === null ? c.textContent.trim() : parseFloat(v);
  }
  document.querySelectorAll("table.sortable").forEach(function (table) {
    table.querySelectorAll("th").forEach(function (th, i) {
      th.title = "click to sort";
      th.addEventListener("click", function () {
        var body = table.tBodies[0];
        var rows = Array.prototype.slice.call(body.rows);
        var asc = th.getAttribute("data-asc") !== "1";
        rows.sort(function (a, b) {
          var x = cellValue(a, i), y = cellValue(b, i);
          var r = (typeof x === "number" && typeof y === "number") ? x - y : String(x).localeCompare(String(y));
          return asc ? r : -r;
        });
        th.setAttribute("data-asc", asc ? "1" : "0");
        rows.forEach(function (r) { body.appendChild(r); });
      });
    });
  });
  var status = document.getElementById("script-status");
  status.textContent = "interactive";
  status.setAttribute("data-ready", "1");
})();
"""


def _runs_section(runs: Runs) -> str:
    head = ("run", "source", "started (UTC)", "host", "CPU", "torch", "commit", "results", "noise")
    rows = []
    for i, (source, record) in enumerate(runs):
        env = record.environment
        torch_env = env.get("torch") or {}
        torch_text = " ".join(
            str(x) for x in (torch_env.get("version"), torch_env.get("build"), torch_env.get("cuda_version")) if x
        )
        gpus = torch_env.get("gpus") or []
        cpu = str(env.get("cpu_model") or "")
        if env.get("cpu_count"):
            cpu += f" ({env['cpu_count']} cores)"
        if gpus:
            cpu += " + " + ", ".join(map(str, gpus))
        ok = sum(r.ok for r in record.results)
        failed = len(record.results) - ok
        noise = env.get("noise") or {}
        findings = noise.get("findings") or []
        noise_text = (
            "<br>".join(escape(f) for f in findings) if findings
            else ("none found" if noise.get("checked") else "not checked")
        )
        rows.append(
            "<tr>" + "".join([
                f"<td>#{i + 1}</td>", f"<td>{escape(source)}</td>",
                f"<td>{escape(str(env.get('start_time') or '').replace('T', ' '))}</td>",
                f"<td>{escape(env.get('hostname') or '')}</td>", f"<td>{escape(cpu)}</td>",
                f"<td>{escape(torch_text)}</td>",
                f"<td><code>{escape(str(env.get('git_commit') or '')[:10])}</code></td>",
                f"<td>{ok} ok" + (f', <span class="flag">{failed} failed</span>' if failed else "")
                + (f'<br><span class="flag">{escape(record.describe_interruption())}</span>'
                   if record.interrupted else "") + "</td>",
                f"<td>{noise_text}</td>",
            ]) + "</tr>"
        )
    return (
        "<h2 id=\"runs\">Runs</h2>\n<table class=\"sortable\"><thead><tr>"
        + "".join(f"<th>{h}</th>" for h in head)
        + "</tr></thead><tbody>" + "".join(rows) + "</tbody></table>"
    )


def _history_section(runs: Runs) -> str | None:
    if len(runs) < 2:
        return None
    labels = [run_label(i, rec, src) for i, (src, rec) in enumerate(runs)]
    series: dict[tuple[str, str], dict[str, list[TaskResult | None]]] = {}
    for i, (_, record) in enumerate(runs):
        for r in record.results:
            if not r.ok or not math.isfinite(r.value):
                continue
            key = (r.task.suite, r.value_unit)
            line = series.setdefault(key, {}).setdefault(r.task.name, [None] * len(runs))
            line[i] = r
    out = [
        "<h2 id=\"history\">History across runs</h2>",
        "<p>Each benchmark's value in every run, relative to its first run (0% = unchanged); "
        "hollow red circles mark noisy measurements.</p>",
    ]
    shown = 0
    for (suite, unit), lines in series.items():
        lines = {name: rs for name, rs in lines.items() if sum(r is not None for r in rs) >= 2}
        if not lines:
            continue
        shown += 1
        relative: dict[str, list[float | None]] = {}
        noisy: dict[str, list[bool]] = {}
        for name, rs in lines.items():
            first = next(r.value for r in rs if r is not None)
            relative[name] = [None if r is None or first == 0 else (r.value / first - 1) * 100 for r in rs]
            noisy[name] = [bool(r is not None and r.noisy) for r in rs]
        unit_label = {"s": "time", "instructions": "instructions"}.get(unit, unit)
        out.append(f"<h3>{escape(suite)} ({escape(unit_label)})</h3>")
        out.append(f'<div class="plot">{plots.history(labels, relative, noisy, "change vs first run (%)")}</div>')
        head = "".join(f"<th>{escape(label)}</th>" for label in labels)
        rows = []
        for name, rs in lines.items():
            cells = []
            for r in rs:
                if r is None:
                    cells.append('<td class="num"></td>')
                else:
                    flag = f' <span class="flag">! {r.relative_iqr:.0%}</span>' if r.noisy else ""
                    text = format_value(r.value, unit) if unit in ("s", "instructions") else f"{r.value:.4g}"
                    cells.append(f'<td class="num" data-sort="{r.value!r}">{escape(text)}{flag}</td>')
            rows.append(f"<tr><td>{escape(name)}</td>{''.join(cells)}</tr>")
        out.append(
            f"<table class=\"sortable\"><thead><tr><th>benchmark</th>{head}</tr></thead><tbody>"
            + "".join(rows) + "</tbody></table>"
        )
    if not shown:
        return None
    return "\n".join(out)


def _trends_section(runs: Runs) -> str | None:
    return trends.trends_section(trends.trends_from_runs(runs)) if len(runs) >= 2 else None


def _all_results_section(runs: Runs) -> str:
    out = [
        "<h2 id=\"results\">All results</h2>",
        f"<p>Rows marked <span class=\"flag\">!</span> have an IQR above {NOISY_IQR_FRACTION:.0%} of their "
        "median: the machine was noisy while they ran, so treat them with care.</p>",
    ]
    for i, (_, record) in enumerate(runs):
        by_suite: dict[str, list[TaskResult]] = {}
        for r in record.results:
            by_suite.setdefault(r.task.suite, []).append(r)
        latest = i == len(runs) - 1
        out.append(f"<details{' open' if latest else ''}><summary>Run #{i + 1}: "
                   f"{len(record.results)} results</summary>")
        for suite, rs in by_suite.items():
            noisy = sum(r.noisy for r in rs)
            note = f' <span class="flag">({noisy} noisy)</span>' if noisy else ""
            out.append(f"<h3>{escape(suite)}{note}</h3>")
            out.append(results_table(rs))
        out.append("</details>")
    return "\n".join(out)


def sections() -> list[tuple[str, Callable[[Runs], str | None], str]]:
    """(title, section, why it may be missing): each kind's own section, then the history."""
    out: list[tuple[str, Callable[[Runs], str | None], str]] = []
    for kind in kinds.registered():
        if kind.report is not None:
            title = kind.report_title or kind.name
            out.append((title, kinds.resolve(kind.report, f"the report section of kind {kind.name!r}"),
                        f"no run has results of kind {kind.name!r} to show"))
    out.append(("Flame graphs", flame_section, "no run has call trees (bench --mode instructions --flame keeps them)"))
    out.append(("Cache figures", cache_section, "no run has cache figures (bench --mode instructions --cache-sim)"))
    out.append(("History", _history_section, "needs at least two runs with a benchmark in common"))
    out.append(("Trends", _trends_section, "needs at least two runs with a benchmark in common"))
    return out


def build_report(runs: Runs, title: str = "harness report") -> str:
    """The report's HTML for ``(source name, record)`` pairs, oldest run first."""
    body: list[str] = []
    omitted: list[str] = []
    for name, section, why in sections():
        content = section(runs)
        if content is None:
            omitted.append(f"<li>{escape(name)}: {escape(why)}</li>")
        else:
            body.append(content)
    noisy_runs = [i + 1 for i, (_, rec) in enumerate(runs) if (rec.environment.get("noise") or {}).get("findings")]
    parts = []
    if noisy_runs:
        parts.append(
            '<p class="warn">Noise sources were found before run(s) '
            + ", ".join(f"#{i}" for i in noisy_runs)
            + " (see the Runs table): their wall times may be slow and spread out.</p>"
        )
    if omitted:
        parts.append('<div class="notes"><p>Sections not shown:</p><ul>' + "".join(omitted) + "</ul></div>")
    parts.append(_runs_section(runs))
    parts.extend(body)
    parts.append(_all_results_section(runs))
    return page(title, parts, f"{len(runs)} run(s)")


def page(title: str, sections: Sequence[str], what: str = "") -> str:
    """A self-contained page: the report's style, ``sections`` (HTML), the sorting script."""
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        f"<title>{escape(title)}</title><style>{CSS}</style></head><body>",
        f"<h1>{escape(title)}</h1>",
        f"<p>{escape(what) + '; ' if what else ''}generated {datetime.now(UTC).isoformat(timespec='seconds')} "
        f'by harness {escape(__version__)}. Tables sort by clicking a column (<span id="script-status" '
        'data-ready="0">static</span>).</p>',
        *sections,
        f"<footer>harness {escape(__version__)}</footer>",
        f"<script>{SCRIPT}</script>",
        "</body></html>",
    ]
    return "\n".join(parts) + "\n"


def write_report(paths: Sequence[str | os.PathLike[str]], output: str | os.PathLike[str]) -> int:
    """Load every run from ``paths`` (files may hold several) and write the report; returns the run count."""
    runs: list[tuple[str, RunRecord]] = []
    for path in paths:
        runs.extend((str(path), record) for record in load_runs(path))
    if all(rec.environment.get("start_time") for _, rec in runs):
        # History reads left to right in time, whatever order the files were given in.
        runs.sort(key=lambda item: str(item[1].environment["start_time"]))
    page = build_report(runs)
    try:
        atomic_write_text(output, page)
    except OSError as exc:
        raise path_error(
            exc, output, "write the report", "give report -o a path in a directory you can write"
        ) from None
    return len(runs)
