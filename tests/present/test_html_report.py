"""The HTML report: its sections from real records, self-containment, and a render in headless Chromium."""

from __future__ import annotations

import html
import re
import shutil
import struct
import subprocess
import zlib
from pathlib import Path

import pytest

from harness.model.record import RunRecord
from harness.present.grouped_report import dispatch_group, dispatch_series
from harness.present.html_report import build_report
from harness.records import save
from synthetic_runs import full_run, wall

CHROMIUM = next((shutil.which(n) for n in ("chromium", "chromium-browser", "google-chrome") if shutil.which(n)), None)


def _three_runs(tmp_path: Path) -> list[Path]:
    paths = [tmp_path / "r1.json", tmp_path / "runs.jsonl", tmp_path / "r3.csv"]
    save(full_run(1.0, "2026-01-01T00:00:00+00:00", "a", seed=0), paths[0])
    save(full_run(1.1, "2026-01-02T00:00:00+00:00", "b", seed=1), paths[1])
    save(full_run(0.9, "2026-01-03T00:00:00+00:00", "c", seed=2), paths[2])
    return paths


def test_report_sections(cli, tmp_path: Path):
    paths = _three_runs(tmp_path)
    out = tmp_path / "out" / "report.html"
    # Given out of order: the report still reads oldest to newest.
    r = cli("report", str(paths[2]), str(paths[0]), str(paths[1]), "-o", str(out))
    assert r.returncode == 0, r.stderr
    assert "report of 3 run(s) written" in r.stdout
    page = out.read_text()
    for anchor in ("runs", "dispatch", "compile-time", "kernels", "history", "results"):
        assert f'id="{anchor}"' in page
    # Every section with data is shown; the flame graphs are not (no run was counted with bench --flame).
    omitted = re.findall(r"<li>([^:<]*):", page.split("Sections not shown", 1)[1].split("</ul>", 1)[0])
    assert "Flame graphs" in omitted
    assert not {"Dispatch overhead", "Compile time", "Kernel efficiency", "History", "Trends"} & set(omitted)
    assert page.count("<svg") >= 6  # dispatch, compile time, 2 gpt-fast metrics, 3 history plots
    # Self-contained: nothing is fetched when the page is opened.
    assert not re.search(r"<(link|img|iframe)\b", page)
    assert not re.search(r"""(src|href)\s*=\s*["']?(https?:)?//""", page)
    assert "@import" not in page and "url(http" not in page
    # Noisy measurements are flagged; the failed one says why.
    assert re.search(r'<tr class="noisy"><td>mul\[language=python\]</td>', page)
    assert "failed: StatementError: boom" in page
    # gpt-fast, from the latest run: achieved 70 / 0.9 GB/s against a target of 90 and a peak of 100.
    cell = "<td [^>]*>{}</td>"
    row = "<td>layer_norm</td>" + "".join(cell.format(v) for v in ("77.78", "90", "86%", "100", "78%"))
    assert re.search(row, page)
    # History in time order, whatever the order on the command line.
    order = [page.index(f"#{i} 2026-01-0{i}") for i in (1, 2, 3)]
    assert order == sorted(order)


def test_sections_without_data_are_left_out_with_a_note():
    run = RunRecord({"start_time": "2026-01-01T00:00:00"}, [wall("basic", "noop", [1e-8, 1.1e-8, 1e-8])])
    page = build_report([("one.json", run)])
    assert "Sections not shown" in page
    for what in ("Dispatch overhead: no run has results of kind 'grouped'", "kind 'compile_time'", "kind 'gpt_fast'",
                 "needs at least two runs"):
        assert what in html.unescape(page)
    assert 'id="dispatch"' not in page and 'id="history"' not in page and "<svg" not in page
    assert "noop" in page


def test_dispatch_grouping_from_params():
    python = wall("dispatch", "add[language=python,threads=2]", [1.0], language="python", num_threads=2)
    cpp = wall("dispatch", "add[language=cpp,threads=2]", [1.0], language="cpp", num_threads=2)
    variant = wall("dispatch", "add_out", [1.0], language="python", variant="out", benchmark="add")
    assert dispatch_group(python) == dispatch_group(cpp) == "add[threads=2] (2 threads)"
    assert (dispatch_series(python), dispatch_series(cpp)) == ("python", "cpp")
    assert (dispatch_group(variant), dispatch_series(variant)) == ("add", "python / out")


def test_report_bad_output_dir_is_an_error(cli, tmp_path: Path):
    paths = _three_runs(tmp_path)
    blocker = tmp_path / "file"
    blocker.write_text("")
    r = cli("report", str(paths[0]), "-o", str(blocker / "report.html"))
    assert r.returncode == 2 and "cannot write the report" in r.stderr and "Traceback" not in r.stderr


# -- rendering in a real browser --------------------------------------------------------------------------


def _chromium(tmp_path: Path, page: Path, *flags: str) -> subprocess.CompletedProcess:
    profile = tmp_path / f"profile-{len(list(tmp_path.glob('profile-*')))}"
    return subprocess.run(
        [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
         "--disable-component-update", "--disable-sync", "--no-first-run", f"--user-data-dir={profile}",
         "--enable-logging=stderr", "--v=0", *flags, page.as_uri()],
        capture_output=True, text=True, timeout=120,
    )


def _decode_png(png: Path) -> list[tuple[int, int, int]]:
    """RGB pixels of an 8-bit RGB/RGBA, non-interlaced PNG (what Chromium writes), without Pillow."""
    data = png.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    pos, idat = 8, b""
    while pos < len(data):
        length, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + length]
        if kind == b"IHDR":
            width, height, depth, color, _, _, interlace = struct.unpack(">IIBBBBB", body)
            assert depth == 8 and color in (2, 6) and interlace == 0, "unexpected PNG format"
            channels = 3 if color == 2 else 4
        elif kind == b"IDAT":
            idat += body
        pos += 12 + length
    raw, stride = zlib.decompress(idat), width * channels
    pixels: list[tuple[int, int, int]] = []
    prev = bytearray(stride)
    for y in range(height):
        start = y * (stride + 1)
        kind, line = raw[start], bytearray(raw[start + 1:start + 1 + stride])
        for i in range(stride):
            a = line[i - channels] if i >= channels else 0
            b = prev[i]
            c = prev[i - channels] if i >= channels else 0
            if kind == 1:
                line[i] = (line[i] + a) & 255
            elif kind == 2:
                line[i] = (line[i] + b) & 255
            elif kind == 3:
                line[i] = (line[i] + (a + b) // 2) & 255
            elif kind == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        pixels.extend(zip(line[0::channels], line[1::channels], line[2::channels], strict=True))
        prev = line
    return pixels


def _pixels(png: Path) -> list[tuple[int, int, int]]:
    """Pillow (a matplotlib dependency) when importable, else the decoder above."""
    try:
        from PIL import Image
    except ImportError:
        return _decode_png(png)
    with Image.open(png) as image:
        rgb = image.convert("RGB").tobytes()
    return list(zip(rgb[0::3], rgb[1::3], rgb[2::3], strict=True))


@pytest.mark.skipif(CHROMIUM is None, reason="Chromium not installed (bash scripts/setup.sh --test installs it)")
def test_report_renders_in_headless_chromium(cli, tmp_path: Path):
    paths = _three_runs(tmp_path)
    report = tmp_path / "report.html"
    assert cli("report", *map(str, paths), "-o", str(report)).returncode == 0

    dom = _chromium(tmp_path, report, "--dump-dom")
    assert dom.returncode == 0, dom.stderr[-2000:]
    assert "Uncaught" not in dom.stderr, dom.stderr[-2000:]
    # The inline script ran to its end: it marks the page as interactive.
    assert re.search(r'id="script-status" data-ready="1">interactive<', dom.stdout)
    assert dom.stdout.count("<svg") >= 6

    shot = tmp_path / "shot.png"
    r = _chromium(tmp_path, report, f"--screenshot={shot}", "--window-size=1000,1200", "--hide-scrollbars")
    assert r.returncode == 0 and shot.exists(), r.stderr[-2000:]
    pixels = _pixels(shot)
    assert len(pixels) == 1000 * 1200
    assert _decode_png(shot) == pixels  # the fallback decoder agrees with Pillow
    ink = sum(1 for p in pixels if p != (255, 255, 255)) / len(pixels)
    assert ink > 0.02, f"screenshot is almost blank ({ink:.2%} non-white)"
    assert len(set(pixels)) > 50  # text, plot colours and table shading, not one flat colour


@pytest.mark.skipif(CHROMIUM is None, reason="Chromium not installed (bash scripts/setup.sh --test installs it)")
def test_render_check_detects_script_errors(tmp_path: Path):
    # The same checks on a page whose script throws: they must catch it.
    page = build_report([("one.json", full_run())]).replace("(function () {", "(function () { undefinedCall();", 1)
    broken = tmp_path / "broken.html"
    broken.write_text(page)
    dom = _chromium(tmp_path, broken, "--dump-dom")
    assert "Uncaught" in dom.stderr
    assert 'data-ready="1"' not in dom.stdout


@pytest.mark.skipif(CHROMIUM is None, reason="Chromium not installed (bash scripts/setup.sh --test installs it)")
def test_flame_graphs_render_in_headless_chromium(tmp_path: Path):
    # The call tree of the real dump in tests/data, as bench --flame keeps it; two runs: a graph and a differential.
    from harness.measure.callgrind.call_tree import call_tree, to_json
    from harness.measure.callgrind.profile import parse_text
    from synthetic_runs import instructions

    dump = parse_text((Path(__file__).resolve().parents[1] / "data" / "callgrind.out.fixture").read_text())
    result = instructions("callgrind", "fixture", [dump.total / 10])
    result.number_per_run = 10
    result.extra["flame"] = to_json(call_tree(dump), lambda f: "interpreter", number=10)
    run = RunRecord({"start_time": "2026-01-01T00:00:00"}, [result])
    report = tmp_path / "flame.html"
    report.write_text(build_report([("a.json", run), ("b.json", run)]))
    dom = _chromium(tmp_path, report, "--dump-dom", "--window-size=1200,900")
    assert dom.returncode == 0 and "Uncaught" not in dom.stderr, dom.stderr[-2000:]
    assert re.search(r'id="flame-status" data-ready="1">2 flame graph\(s\)<', dom.stdout)
    assert re.search(r'id="script-status" data-ready="1">interactive<', dom.stdout)
    assert dom.stdout.count('data-drawn="1"') == 2 and dom.stdout.count('class="frame"') > 40
    shot = tmp_path / "flame.png"
    r = _chromium(tmp_path, report, f"--screenshot={shot}", "--window-size=1000,1400", "--hide-scrollbars")
    assert r.returncode == 0 and shot.exists(), r.stderr[-2000:]
    # The interpreter's colour (#8fb3e0 at the frames' opacity of 0.8 on white) fills the first graph's frames.
    assert sum(1 for r, g, b in _pixels(shot) if abs(r - 165) + abs(g - 194) + abs(b - 230) < 12) > 5000
