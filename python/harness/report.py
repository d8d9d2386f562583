"""HTML report of one or more runs: a single self-contained file.

Everything is inline (CSS, SVG plots from matplotlib, a small script that
makes tables sortable), so the file can be mailed, attached to CI, or opened
offline. Sections whose data no run has are left out with a note saying why.

Data conventions the sections read (all from TaskResults):
- dispatch: suite "dispatch"; bars grouped by benchmark, one bar per
  ``params["language"]`` / ``params["variant"]``;
- compile time: suite "compile_time" results counted in instructions;
- kernel efficiency: suite "gpt_fast" results with ``extra["metric"]`` (name,
  with its unit), ``extra["actual"]``, and optionally ``extra["target"]`` and
  ``extra["peak"]`` in the metric's unit.
"""

from __future__ import annotations

import html
import math
import os
import re
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path

from . import __version__, plots
from .atomic import atomic_write_text
from .errors import UsageError
from .measurement import select_unit
from .records import RunRecord, load_runs
from .result import NOISY_IQR_FRACTION, TaskResult
from .table import format_value

SERIES_PARAMS = ("language", "variant")

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
tr.noisy td { background: #fff6db; }
tr.failed td { background: #fde8e8; }
.flag { color: #b35c00; font-weight: bold; }
.note { color: #555; font-style: italic; }
.notes { background: #f7f7f7; border-left: 4px solid #bbb; padding: .5em 1em; }
.warn { background: #fff6db; border-left: 4px solid #e0a800; padding: .5em 1em; }
.plot svg { max-width: 100%; height: auto; }
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


def _e(text: object) -> str:
    return html.escape(str(text), quote=True)


def _num_cell(text: str, sort_value: float | None) -> str:
    sort = "" if sort_value is None or not math.isfinite(sort_value) else f' data-sort="{sort_value!r}"'
    return f'<td class="num"{sort}>{_e(text)}</td>'


def run_label(index: int, record: RunRecord, source: str) -> str:
    env = record.environment
    start = str(env.get("start_time") or "")[:16].replace("T", " ")
    commit = str(env.get("git_commit") or "")[:8]
    parts = [f"#{index + 1}", start or Path(source).name]
    if commit:
        parts.append(commit)
    return " ".join(parts)


def _scaled(values: Sequence[float], unit: str) -> tuple[float, str]:
    """Scale and axis label for plotting ``values`` in ``unit``."""
    if unit == "s":
        u, scale = select_unit(max(values) if values else 0.0)
        return scale, {"us": "µs"}.get(u, u) + " per call"
    if unit == "instructions":
        return 1.0, "instructions per call"
    return 1.0, unit


# -- sections -------------------------------------------------------------------


def _runs_section(runs: Sequence[tuple[str, RunRecord]]) -> str:
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
            "<br>".join(_e(f) for f in findings) if findings
            else ("none found" if noise.get("checked") else "not checked")
        )
        rows.append(
            "<tr>" + "".join([
                f"<td>#{i + 1}</td>", f"<td>{_e(source)}</td>",
                f"<td>{_e(str(env.get('start_time') or '').replace('T', ' '))}</td>",
                f"<td>{_e(env.get('hostname') or '')}</td>", f"<td>{_e(cpu)}</td>", f"<td>{_e(torch_text)}</td>",
                f"<td><code>{_e(str(env.get('git_commit') or '')[:10])}</code></td>",
                f"<td>{ok} ok" + (f', <span class="flag">{failed} failed</span>' if failed else "") + "</td>",
                f"<td>{noise_text}</td>",
            ]) + "</tr>"
        )
    return (
        "<h2 id=\"runs\">Runs</h2>\n<table class=\"sortable\"><thead><tr>"
        + "".join(f"<th>{h}</th>" for h in head)
        + "</tr></thead><tbody>" + "".join(rows) + "</tbody></table>"
    )


def _latest_with(runs: Sequence[tuple[str, RunRecord]], pick) -> tuple[int, list[TaskResult]] | None:
    for index in range(len(runs) - 1, -1, -1):
        chosen = [r for r in runs[index][1].results if r.ok and pick(r)]
        if chosen:
            return index, chosen
    return None


def _strip_series(name: str) -> str:
    """A task name without its language/variant parts, e.g. "add[language=cpp,threads=1]" -> "add[threads=1]"."""
    def keep(part: str) -> bool:
        key = part.split("=", 1)[0].strip()
        return key not in SERIES_PARAMS

    def repl(m: re.Match[str]) -> str:
        parts = [p for p in m.group(1).split(",") if keep(p)]
        return f"[{','.join(parts)}]" if parts else ""

    return re.sub(r"\[([^\]]*)\]", repl, name)


def dispatch_group(r: TaskResult) -> str:
    p = r.task.params
    base = str(p.get("benchmark") or p.get("sub_label") or _strip_series(r.task.name))
    threads = p.get("num_threads")
    return f"{base} ({threads} threads)" if threads not in (None, 1) else base


def dispatch_series(r: TaskResult) -> str:
    p = r.task.params
    return " / ".join(str(p[k]) for k in SERIES_PARAMS if p.get(k) not in (None, "")) or "value"


def _dispatch_section(runs: Sequence[tuple[str, RunRecord]]) -> str | None:
    found = _latest_with(runs, lambda r: r.task.suite == "dispatch")
    if found is None:
        return None
    index, results = found
    out = [
        "<h2 id=\"dispatch\">Dispatch overhead</h2>",
        f"<p>Cost of one call of each small op by language, from run #{index + 1}. "
        "Bars with a red edge and <span class=\"flag\">!</span> are noisy "
        f"(IQR above {NOISY_IQR_FRACTION:.0%} of the median).</p>",
    ]
    by_unit: dict[str, list[TaskResult]] = {}
    for r in results:
        by_unit.setdefault(r.value_unit, []).append(r)
    for unit, rs in by_unit.items():
        scale, label = _scaled([r.value for r in rs], unit)
        groups = list(dict.fromkeys(dispatch_group(r) for r in rs))
        series = list(dict.fromkeys(dispatch_series(r) for r in rs))
        values = {(dispatch_group(r), dispatch_series(r)): r.value / scale for r in rs}
        noisy = {(dispatch_group(r), dispatch_series(r)) for r in rs if r.noisy}
        out.append(f"<h3>{_e(label)}</h3>")
        out.append(f'<div class="plot">{plots.grouped_bars(groups, series, values, noisy, label)}</div>')
        out.append(_results_table(rs))
    return "\n".join(out)


def _compile_time_section(runs: Sequence[tuple[str, RunRecord]]) -> str | None:
    found = _latest_with(runs, lambda r: r.task.suite == "compile_time" and r.counts_instructions)
    if found is None:
        return None
    index, results = found
    svg = plots.horizontal_bars(
        [r.task.name for r in results], [r.value for r in results], [r.noisy for r in results],
        "instructions",
    )
    return "\n".join([
        "<h2 id=\"compile-time\">Compile time (instructions)</h2>",
        f"<p>Instructions spent compiling each case, from run #{index + 1}; red bars are noisy.</p>",
        f'<div class="plot">{svg}</div>',
        _results_table(results, extra_columns=("counter",)),
    ])


def _number(x: object) -> float | None:
    if isinstance(x, int | float) and not isinstance(x, bool) and math.isfinite(x):
        return float(x)
    return None


def _gpt_fast_section(runs: Sequence[tuple[str, RunRecord]]) -> str | None:
    found = _latest_with(
        runs, lambda r: r.task.suite == "gpt_fast" and "metric" in r.extra and _number(r.extra.get("actual")) is not None
    )
    if found is None:
        return None
    index, results = found
    out = [
        "<h2 id=\"kernels\">Kernel efficiency</h2>",
        f"<p>Achieved bandwidth / FLOP utilisation against target and peak, from run #{index + 1}. "
        "Bar: achieved; black tick: target; grey tick: the device's peak.</p>",
    ]
    by_metric: dict[str, list[TaskResult]] = {}
    for r in results:
        by_metric.setdefault(str(r.extra["metric"]), []).append(r)
    for metric, rs in by_metric.items():
        actual = [float(r.extra["actual"]) for r in rs]
        target = [_number(r.extra.get("target")) for r in rs]
        peak = [_number(r.extra.get("peak")) for r in rs]
        out.append(f"<h3>{_e(metric)}</h3>")
        out.append(f'<div class="plot">{plots.against_targets([r.task.name for r in rs], actual, target, peak, metric)}</div>')
        rows = []
        for r, a, t, p in zip(rs, actual, target, peak, strict=True):
            cls = ' class="noisy"' if r.noisy else ""
            rows.append(
                f"<tr{cls}><td>{_e(r.task.name)}</td>"
                + _num_cell(f"{a:.4g}", a)
                + _num_cell("" if t is None else f"{t:.4g}", t)
                + _num_cell("" if t in (None, 0) else f"{a / t:.0%}", None if t in (None, 0) else a / t)
                + _num_cell("" if p is None else f"{p:.4g}", p)
                + _num_cell("" if p in (None, 0) else f"{a / p:.0%}", None if p in (None, 0) else a / p)
                + f"<td>{_e(r.extra.get('dtype', ''))}</td><td>{_e(r.extra.get('device', ''))}</td></tr>"
            )
        out.append(
            "<table class=\"sortable\"><thead><tr><th>benchmark</th><th>achieved</th><th>target</th>"
            "<th>of target</th><th>peak</th><th>of peak</th><th>dtype</th><th>device</th></tr></thead><tbody>"
            + "".join(rows) + "</tbody></table>"
        )
    return "\n".join(out)


def _history_section(runs: Sequence[tuple[str, RunRecord]]) -> str | None:
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
        out.append(f"<h3>{_e(suite)} ({_e(unit_label)})</h3>")
        out.append(f'<div class="plot">{plots.history(labels, relative, noisy, "change vs first run (%)")}</div>')
        head = "".join(f"<th>{_e(label)}</th>" for label in labels)
        rows = []
        for name, rs in lines.items():
            cells = []
            for r in rs:
                if r is None:
                    cells.append('<td class="num"></td>')
                else:
                    flag = f' <span class="flag">! {r.relative_iqr:.0%}</span>' if r.noisy else ""
                    text = format_value(r.value, unit) if unit in ("s", "instructions") else f"{r.value:.4g}"
                    cells.append(f'<td class="num" data-sort="{r.value!r}">{_e(text)}{flag}</td>')
            rows.append(f"<tr><td>{_e(name)}</td>{''.join(cells)}</tr>")
        out.append(
            f"<table class=\"sortable\"><thead><tr><th>benchmark</th>{head}</tr></thead><tbody>"
            + "".join(rows) + "</tbody></table>"
        )
    if not shown:
        return None
    return "\n".join(out)


def _results_table(results: Sequence[TaskResult], extra_columns: Sequence[str] = ()) -> str:
    head = ["benchmark", "value", "IQR", "runs", "status", *extra_columns]
    rows = []
    for r in results:
        extra_cells = "".join(f"<td>{_e(r.extra.get(c, ''))}</td>" for c in extra_columns)
        if not r.ok:
            first = (r.error or "failed").strip().splitlines()[0] if (r.error or "").strip() else "failed"
            rows.append(
                f'<tr class="failed"><td>{_e(r.task.name)}</td><td></td><td></td><td></td>'
                f"<td>failed: {_e(first)}</td>{extra_cells}</tr>"
            )
            continue
        unit = r.value_unit
        noisy = r.noisy
        iqr_text = format_value(r.iqr, r.unit) if r.samples else ""
        flag = f' <span class="flag">! {r.relative_iqr:.0%}</span>' if noisy else ""
        row_class = ' class="noisy"' if noisy else ""
        rows.append(
            f"<tr{row_class}><td>{_e(r.task.name)}</td>"
            + _num_cell(format_value(r.value, unit), r.value)
            + f'<td class="num" data-sort="{r.relative_iqr!r}">{_e(iqr_text)}{flag}</td>'
            + _num_cell(f"{len(r.samples)}x{r.number_per_run}", len(r.samples))
            + f"<td>ok</td>{extra_cells}</tr>"
        )
    return (
        "<table class=\"sortable\"><thead><tr>" + "".join(f"<th>{_e(h)}</th>" for h in head)
        + "</tr></thead><tbody>" + "".join(rows) + "</tbody></table>"
    )


def _all_results_section(runs: Sequence[tuple[str, RunRecord]]) -> str:
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
            out.append(f"<h3>{_e(suite)}{note}</h3>")
            out.append(_results_table(rs))
        out.append("</details>")
    return "\n".join(out)


SECTIONS = (
    ("Dispatch overhead", _dispatch_section, 'no results of suite "dispatch"'),
    ("Compile time", _compile_time_section, 'no instruction-count results of suite "compile_time"'),
    ("Kernel efficiency", _gpt_fast_section,
     'no results of suite "gpt_fast" carrying extra["metric"] and extra["actual"]'),
    ("History", _history_section, "needs at least two runs with a benchmark in common"),
)


def build_report(runs: Sequence[tuple[str, RunRecord]], title: str = "harness report") -> str:
    """The report's HTML for ``(source name, record)`` pairs, oldest run first."""
    body: list[str] = []
    omitted: list[str] = []
    for name, section, why in SECTIONS:
        content = section(runs)
        if content is None:
            omitted.append(f"<li>{_e(name)}: {_e(why)}</li>")
        else:
            body.append(content)
    noisy_runs = [i + 1 for i, (_, rec) in enumerate(runs) if (rec.environment.get("noise") or {}).get("findings")]
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        f"<title>{_e(title)}</title><style>{CSS}</style></head><body>",
        f"<h1>{_e(title)}</h1>",
        f"<p>{len(runs)} run(s); generated {datetime.now(UTC).isoformat(timespec='seconds')} by harness "
        f'{_e(__version__)}. Tables sort by clicking a column (<span id="script-status" data-ready="0">'
        "static</span>).</p>",
    ]
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
    parts.append(f"<footer>harness {_e(__version__)}</footer>")
    parts.append(f"<script>{SCRIPT}</script>")
    parts.append("</body></html>")
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
        raise UsageError(f"{output}: cannot write the report: {exc.strerror or exc}") from None
    return len(runs)
