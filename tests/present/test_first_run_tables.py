"""What a first run's tables say: noisy and bimodal rows marked with one line saying what
to do, no unmarked negative overhead, and names never cut on a narrow terminal."""

from __future__ import annotations

import io
import re

import pytest
from rich.console import Console

from harness.model.result import TaskResult
from harness.model.task import Task
from harness.present.grouped_table import NEGATIVE_NOTE, grouped_table
from harness.present.table import NOISE_NOTE, results_table

QUIET = [1.00e-6, 1.01e-6, 0.99e-6, 1.00e-6, 1.02e-6, 1.00e-6, 0.98e-6, 1.01e-6]
WIDE = [1.0e-6, 1.3e-6, 0.8e-6, 1.25e-6, 0.75e-6, 1.0e-6, 1.4e-6, 0.7e-6]  # IQR ~ 45% of the median
# Two of ten blocks ran about 70% slower: the IQR is under 10%, the median hides it.
BIMODAL = [1.00e-6, 1.01e-6, 1.00e-6, 1.70e-6, 1.01e-6, 1.71e-6, 1.00e-6, 1.02e-6, 1.01e-6, 1.00e-6]


def _result(name: str, samples: list[float], **params) -> TaskResult:
    return TaskResult(task=Task("basic", name, "timer", params), status="ok", unit="s", samples=samples)


def _render(renderable, width: int = 200) -> str:
    console = Console(width=width, file=io.StringIO(), color_system=None, legacy_windows=False)
    console.print(renderable)
    return console.file.getvalue()


def _row(text: str, name: str) -> str:
    return next(line for line in text.splitlines() if name in line)


def _unwrapped(text: str) -> str:
    return re.sub(r"\s+", " ", text)


def test_noisy_and_bimodal_rows_are_marked_with_one_line_saying_what_to_do():
    bimodal = _result("tensor_mul_4x4", BIMODAL)
    assert bimodal.relative_iqr < 0.10  # the IQR alone would not flag it
    text = _render(results_table("basic", [_result("quiet", QUIET), _result("wide", WIDE), bimodal]))
    assert "(!" not in _row(text, "quiet")
    assert re.search(r"\(! \d+%\)", _row(text, "wide"))
    assert "(! bimodal)" in _row(text, "tensor_mul_4x4")
    assert _unwrapped(NOISE_NOTE) in _unwrapped(text)
    assert "unreliable" in _unwrapped(text).split("tensor_mul_4x4")[-1]  # below the table


def test_a_quiet_table_has_no_noise_note():
    assert "(!" not in _render(results_table("basic", [_result("quiet", QUIET)]))


def _grouped(name: str, language: str, samples: list[float]) -> TaskResult:
    return _result(f"{name}[{language}]", samples, group=name, language=language, runtime="eager")


def test_negative_overhead_is_never_printed_without_a_mark():
    results = [
        _grouped("mul", "python", [1.0e-6] * 6),
        _grouped("mul", "cpp", [1.2e-6] * 6),  # noise made C++ slower than Python
        _grouped("add", "python", [2.0e-6] * 6),
        _grouped("add", "cpp", [1.0e-6] * 6),
    ]
    text = _render(grouped_table("dispatch", results))
    for line in text.splitlines():
        for negative in re.finditer(r"(?<![\w.])-\d[\d,]*", line):
            assert line[negative.end():].lstrip().startswith("(! <0)"), line
    assert "(! <0)" in _row(text, "mul") and "(! <0)" not in _row(text, "add")
    assert "%" not in _row(text, "mul").split("(! <0)")[1]  # no share of a negative overhead
    assert _unwrapped(NEGATIVE_NOTE) in _unwrapped(text)
    assert "-200" in _row(text, "mul")


LONG_NAMES = [
    "tensor_mul_broadcast_lhs[dtype=float32,shape=1024x1024,threads=4]",
    "a_rather_long_benchmark_name_without_any_spaces_in_it_at_all",
    "short",
]


@pytest.mark.parametrize("width", [80, 60])
def test_names_are_never_cut_on_a_narrow_terminal(width):
    generic = results_table("basic", [_result(n, WIDE) for n in LONG_NAMES])
    grouped = grouped_table("dispatch", [_grouped(n, lang, QUIET) for n in LONG_NAMES for lang in ("python", "cpp")])
    for table in (generic, grouped):
        text = _render(table, width)
        assert "…" not in text
        assert max(len(line) for line in text.splitlines()) <= width
        rows = [line.rstrip() for line in text.splitlines() if line.startswith("│")]
        assert rows and all(line.endswith("│") for line in rows), text  # not cropped on the right
        assert _unwrapped(NOISE_NOTE) in _unwrapped(text) or generic is not table
        # A folded name continues on the next lines of the first column.
        first_column = "".join(
            line.split("│")[1].strip() for line in text.splitlines() if line.startswith("│")
        )
        for name in LONG_NAMES:
            assert name in first_column, (name, text)
