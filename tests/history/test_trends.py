"""Trend charts: history show --plot (HTML and PNG) and the report's Trends section, rendered in real Chromium."""

from __future__ import annotations

import html
import re
import sys
from pathlib import Path

import pytest
from history_runs import STEP_AT, run

from harness.history import open_history
from harness.present.html_report import build_report

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "present"))
from test_html_report import CHROMIUM, _chromium, _pixels  # noqa: E402


@pytest.fixture(scope="module")
def history_db(tmp_path_factory) -> Path:
    db = tmp_path_factory.mktemp("trends") / "h.sqlite"
    with open_history(db) as history:
        history.store_many([run(i) for i in range(50)])
    return db


def _hover_titles(page: str) -> list[str]:
    return [html.unescape(t) for t in re.findall(r'<circle class="point"[^>]*><title>(.*?)</title>', page, re.S)]


@pytest.fixture(scope="module")
def trends_page(history_db: Path) -> Path:
    """`history show --plot trends.html`, run in this process (the command's parsing and writing are the
    same; a process of its own would only add the imports)."""
    from harness.cli import main

    out = history_db.parent / "trends.html"
    assert main(["history", "show", "--history", str(history_db), "--plot", str(out)]) == 0
    return out


def test_plot_html_has_a_chart_per_benchmark_with_hover_and_steps(history_db: Path, trends_page: Path,
                                                                  tmp_path: Path, capsys):
    from harness.cli import main

    page = trends_page.read_text()
    assert page.count('class="plot trend"') == 3 and 'id="trends"' in page
    titles = _hover_titles(page)
    assert len(titles) == 3 * 50  # a tooltip over every point
    assert any(f"label v{STEP_AT}" in t and "commit c00000" in t and "(main)" in t and "value " in t for t in titles)
    assert "+10.0%" in page or "+9.9%" in page or "+10.1%" in page  # the wall-time step, marked
    assert "+2.0%" in page  # the count's step
    assert not re.search(r"""(src|href)\s*=\s*["']?(https?:)?//""", page)  # nothing fetched
    png = tmp_path / "trends.png"
    assert main(["history", "show", "--history", str(history_db), "--plot", str(png), "-k", "mul"]) == 0
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    blocker = tmp_path / "file"
    blocker.write_text("")
    capsys.readouterr()
    assert main(["history", "show", "--history", str(history_db), "--plot", str(blocker / "t.png"), "-k", "mul"]) == 2
    err = capsys.readouterr().err
    assert f"{blocker / 't.png'}: cannot write the plot" in err and "Traceback" not in err, err


def test_report_gains_trends_of_the_records_given():
    page = build_report([(f"r{i}.json", run(i, step_at=4)) for i in range(8)])
    assert 'id="trends"' in page and page.count('class="plot trend"') == 3
    assert len(_hover_titles(page)) == 3 * 8
    assert "+2.0%" in page  # the count's step at run 4 of 8, marked


@pytest.mark.skipif(CHROMIUM is None, reason="Chromium not installed (bash scripts/setup.sh --test installs it)")
def test_trends_page_renders_in_headless_chromium(trends_page: Path, tmp_path: Path):
    out = trends_page
    dom = _chromium(tmp_path, out, "--dump-dom")
    assert dom.returncode == 0 and "Uncaught" not in dom.stderr, dom.stderr[-2000:]
    assert re.search(r'id="script-status" data-ready="1">interactive<', dom.stdout)
    # The browser parsed the tooltips as SVG elements inside each chart's <svg>.
    tooltips = r"<svg[^>]*>.*?<g class=\"hover\">(?:<circle[^>]*><title>[^<]*</title></circle>)+</g>\s*</svg>"
    assert len(re.findall(tooltips, dom.stdout, re.S)) == 3
    shot = tmp_path / "shot.png"
    r = _chromium(tmp_path, out, f"--screenshot={shot}", "--window-size=1000,1400", "--hide-scrollbars")
    assert r.returncode == 0 and shot.exists(), r.stderr[-2000:]
    pixels = _pixels(shot)
    ink = sum(1 for p in pixels if p != (255, 255, 255)) / len(pixels)
    assert ink > 0.02, f"screenshot is almost blank ({ink:.2%} non-white)"
    assert sum(1 for p in pixels if p[0] > 150 and p[1] < 120 and p[2] < 120) > 50  # the red step markers
