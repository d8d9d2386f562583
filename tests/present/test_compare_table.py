"""Compare tables: layout, units, trimming, colours and warnings."""

from __future__ import annotations

import harness


def _m(median: float, sub: str, desc: str, threads: int = 1, spread: float = 0.01) -> harness.Measurement:
    raw = [median * (1 + spread * d) for d in (-1, 0, 0, 1, 0.5, -0.5)]
    spec = harness.TaskSpec("stmt", "pass", label="mul", sub_label=sub, description=desc, num_threads=threads)
    return harness.Measurement(1, raw, spec)


def test_table_layout_and_units():
    results = [
        _m(2e-6, "small", "eager"),
        _m(4e-6, "small", "jit"),
        _m(20e-6, "large", "eager"),
        _m(1e-6, "small", "eager", threads=2),
    ]
    text = str(harness.Compare(results))
    lines = text.splitlines()
    assert lines[0].startswith("[") and " mul " in lines[0]
    assert "eager" in lines[1] and "jit" in lines[1]
    assert any(line.startswith("1 threads:") for line in lines)
    assert any(line.startswith("2 threads:") for line in lines)
    assert "Times are in microseconds (us)." in text
    row = next(line for line in lines if "large" in line)
    assert "20.0" in row


def test_trim_colorize_highlight():
    results = [_m(1.234567e-6, "a", "x"), _m(5e-6, "a", "y", spread=0.5)]
    cmp = harness.Compare(results)
    cmp.trim_significant_figures()
    cmp.colorize(rowwise=True)
    cmp.highlight_warnings()
    text = str(cmp)
    assert "\033[92m" in text  # best cell is green
    assert "(! " in text  # the noisy cell carries its IQR percentage
