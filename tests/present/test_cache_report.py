"""The report's cache figures of real counts: per benchmark, per layer (as `compare --layers` prints them), and
the estimated cycles' trend; rendered in headless Chromium.

The two records are tests/conftest.py's ``cache_runs``: `bench --mode instructions --cache-sim --layers` of
one gather over contiguous, then strided indices (the instructions stay, the cache misses move).
Cost: those two counts (~1-2 min on 2 cores), shared with tests/history/test_cache_figures.py.
"""

from __future__ import annotations

import html
import re
from pathlib import Path

import pytest
from test_html_report import CHROMIUM, _chromium

from conftest import run_cli
from harness.measure.callgrind.layers import title
from harness.present.cache_table import SHOWN, cache_of, cycles_layers
from harness.present.html_report import build_report
from harness.records.store import load_runs


def _section(page: str) -> str:
    start = page.index('<h2 id="cache">')
    return page[start:page.index("<h2", start + 1)]


def _rows(table: str) -> dict[str, list[str]]:
    """A table's body rows by their first cell: the texts of the other cells."""
    rows = {}
    for row in re.findall(r"<tr>(.*?)</tr>", table.split("<tbody>", 1)[1]):
        cells = [html.unescape(re.sub(r"<[^>]+>", "", c)) for c in re.findall(r"<td[^>]*>(.*?)</td>", row)]
        rows[cells[0]] = cells[1:]
    return rows


def test_the_report_has_the_figures_per_benchmark_and_the_cycles_per_layer_as_compare_has_them(cache_runs, tmp_path):
    contiguous, strided = cache_runs
    report = tmp_path / "report.html"
    done = run_cli("report", str(contiguous), str(strided), "-o", str(report))
    assert done.returncode == 0, done.stderr
    page = report.read_text()
    section = _section(page)
    (a,), (b,) = (load_runs(p)[-1].results for p in cache_runs)
    # Per benchmark: the newest run's figures, each as the record has it.
    figures, layers = section.split('<h3 id="cache-layers">')
    row = _rows(figures)[b.task.full_name]
    assert row == [f"{cache_of(b)[name]:,.0f}" for name in SHOWN]
    # Per layer: base and new estimated cycles per run, the change and its share, the numbers compare prints.
    assert re.search(r"<caption>gathers/gather: estimated cycles per run by layer, #1 .*\(base\) → "
                     r"#2 .*\(new\)</caption>", layers)
    by_layer = _rows(layers)
    base, new = cycles_layers(a), cycles_layers(b)
    kernel = by_layer[title("kernel")]
    assert kernel[:3] == [f"{base['kernel']:,.0f}", f"{new['kernel']:,.0f}", f"{new['kernel'] - base['kernel']:+,.0f}"]
    assert new["kernel"] - base["kernel"] > 0.5 * base["kernel"]
    compared = run_cli("compare", str(contiguous), str(strided), "--layers", env={"COLUMNS": "200"})
    assert compared.returncode == 0, compared.stderr
    printed = compared.stdout[compared.stdout.index("estimated cycles per run by layer"):]
    cells = [[c.strip() for c in line.strip().strip("│").split("│")] for line in printed.splitlines()
             if line.startswith("│")]
    assert {c[0]: c[1:] for c in cells} == by_layer  # every layer, every figure, as compare --layers prints it
    # The history's default series in the report's trends: the count, and its estimated cycles.
    assert "gathers/gather [estimated_cycles]" in page and "gathers/gather [instructions]" in page


def test_one_run_shows_each_layers_share_of_its_estimated_cycles(cache_runs):
    (b,) = load_runs(cache_runs[1])[-1].results
    layers = _section(build_report([("strided.json", load_runs(cache_runs[1])[-1])])).split('id="cache-layers"')[1]
    shares, cycles = _rows(layers), cycles_layers(b)
    total = sum(cycles.values())
    assert shares[title("kernel")] == [f"{cycles['kernel']:,.0f}", f"{cycles['kernel'] / total:.1%}"]


@pytest.mark.skipif(CHROMIUM is None, reason="Chromium not installed (bash scripts/setup.sh --test installs it)")
def test_the_cache_section_renders_in_headless_chromium(cache_runs, tmp_path: Path):
    report = tmp_path / "report.html"
    report.write_text(build_report([(p.name, load_runs(p)[-1]) for p in cache_runs]))
    dom = _chromium(tmp_path, report, "--dump-dom", "--window-size=1200,900")
    assert dom.returncode == 0 and "Uncaught" not in dom.stderr, dom.stderr[-2000:]
    assert re.search(r'id="script-status" data-ready="1">interactive<', dom.stdout)
    rendered = _section(dom.stdout)
    assert rendered.count("<table") == 2 and "estimated cycles per run by layer" in rendered
    assert title("kernel") in _rows(rendered.split('id="cache-layers"')[1])
