"""The callgrind output parser and FunctionCounts/CallgrindStats, on a recorded callgrind dump.

tests/data/callgrind.out.fixture is a real dump: callgrind 3.19 counting a
small Python function (dict inserts and a sort) between harness's region
markers, with PYTHONHASHSEED=0.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

from harness.measure.callgrind.profile import CallgrindFormatError, parse_file, parse_text, total_from_text
from harness.measure.callgrind.stats import CallgrindStats, FunctionCount, FunctionCounts, standardize_symbol
from harness.model.measurement import TaskSpec

FIXTURE = Path(__file__).resolve().parents[2] / "data" / "callgrind.out.fixture"


@pytest.fixture(scope="module")
def profile():
    return parse_file(FIXTURE)


def _annotate(path: Path, inclusive: bool, cwd: Path) -> dict[str, int]:
    out = subprocess.run(
        ["callgrind_annotate", f"--inclusive={'yes' if inclusive else 'no'}", "--threshold=100", "--show-percs=no",
         str(path)],
        capture_output=True, text=True, check=True, cwd=cwd,
    ).stdout
    counts: dict[str, int] = {}
    started = False
    for line in out.splitlines():
        if re.match(r"Ir\s+file:function", line):
            started = True
            continue
        if not started:
            continue
        m = re.match(r"^\s*([0-9,]+)\s+(.+:.+)$", line)
        if m:
            counts[m.group(2)] = int(m.group(1).replace(",", ""))
        elif not re.match(r"-+$", line):
            break
    return counts


@pytest.mark.skipif(shutil.which("callgrind_annotate") is None, reason="callgrind_annotate (valgrind) is not installed")
def test_parser_matches_callgrind_annotate_exactly(profile, tmp_path: Path):
    # cwd elsewhere: annotate strips the working directory from file names.
    assert _annotate(FIXTURE, inclusive=False, cwd=tmp_path) == profile.exclusive
    assert _annotate(FIXTURE, inclusive=True, cwd=tmp_path) == profile.inclusive


def test_parser_totals_and_names(profile):
    assert profile.total == 50144  # the file's "totals:" line
    assert sum(profile.exclusive.values()) == profile.total
    assert profile.trigger == "Client Request: fixture"
    assert total_from_text(FIXTURE.read_text()) == profile.total
    # Object suffixes as annotate prints them; code inlined from headers has none.
    assert any(k.endswith("[/usr/lib/x86_64-linux-gnu/libc.so.6]") for k in profile.exclusive)
    assert any(k.startswith("???:") and "[" not in k for k in profile.exclusive) or any(
        "/Include/" in k and "[" not in k for k in profile.exclusive
    )
    # The region's entry point includes everything it called.
    assert max(profile.inclusive.values()) >= profile.total - 10


def test_parser_rejects_other_files():
    with pytest.raises(CallgrindFormatError, match="not callgrind output"):
        parse_text("hello\nworld\n")
    with pytest.raises(CallgrindFormatError, match="not Ir"):
        parse_text("events: Dr Dw\nfn=x\n0 1 2\n")
    with pytest.raises(CallgrindFormatError, match=r"used before it was defined"):
        parse_text("events: Ir\nfn=(3)\n0 5\n")


def test_parser_handles_compression_subpositions_and_calls():
    text = "\n".join(
        [
            "positions: instr line",
            "events: Ir Dr",
            "ob=(1) /lib/a.so",
            "fl=(1) a.c",
            "fn=(1) main",
            "0x10 3 5 1",
            "+2 +1 7",  # missing Dr is zero
            "cfl=(2) b.c",
            "cfn=(2) helper",
            "calls=2 0x40 10",
            "* * 100 4",
            "fn=(2)",
            "fi=(2)",
            "-1 * 9",
            "fe=(1)",
            "0x11 4 1",
            "totals: 122 5",
        ]
    )
    p = parse_text(text)
    assert p.exclusive == {"a.c:main [/lib/a.so]": 12, "a.c:helper [/lib/a.so]": 1, "b.c:helper": 9}
    assert p.inclusive["a.c:main [/lib/a.so]"] == 112  # own 12 + the call's 100
    assert p.inclusive["b.c:helper"] == 100  # called: the cost of the calls into it
    assert p.total == 122


def _counts(data: dict[str, int], inclusive: bool = False) -> FunctionCounts:
    return FunctionCounts.from_mapping(data, inclusive=inclusive)


def test_function_counts_sequence_behaviour(profile):
    fc = _counts(profile.exclusive)
    assert len(fc) == len(profile.exclusive)
    assert [c for c, _ in fc] == sorted((c for c, _ in fc), reverse=True)
    first = fc[0]
    assert isinstance(first, FunctionCount) and first.count == max(profile.exclusive.values())
    top = fc[:5]
    assert isinstance(top, FunctionCounts) and len(top) == 5 and not top.truncate_rows
    assert fc.sum() == profile.total
    assert sorted(fc, reverse=True) == list(fc)  # FunctionCount tuples sort by count


def test_function_counts_arithmetic_and_filters(profile):
    fc = _counts(profile.exclusive)
    assert (fc - fc).sum() == 0 and len(fc - fc) == 0  # zero entries are dropped
    assert (fc + fc).sum() == 2 * fc.sum()
    assert (fc * 3).sum() == sum(int(c * 3) for c, _ in fc)
    libc = fc.filter(lambda fn: "libc.so" in fn)
    assert 0 < libc.sum() < fc.sum()
    assert all("libc.so" in fn for _, fn in libc)
    assert (fc - libc).sum() == fc.sum() - libc.sum()
    # transform merges entries that map to one name
    by_object = fc.transform(lambda fn: fn.rsplit("[", 1)[-1] if "[" in fn else "inlined")
    assert by_object.sum() == fc.sum() and len(by_object) < len(fc)
    with pytest.raises(AssertionError, match="inclusive and exclusive"):
        _ = fc - _counts(profile.inclusive, inclusive=True)


def test_denoise_drops_unicode_dict_lookups(profile):
    fc = _counts(profile.exclusive)
    noisy = fc.filter(lambda fn: "unicodekeys_lookup_unicode" in fn or "lookdict_unicode" in fn)
    assert noisy.sum() > 0  # the fixture inserts into a dict with str keys
    # every_python (harness only): the lookups by the name they have in 3.11+ as well
    assert fc.denoise(every_python=True).sum() == fc.sum() - noisy.sum()
    # torch's filter: lookdict_unicode alone, which 3.11's profile (this fixture) does not have
    torch_noisy = fc.filter(lambda fn: "dictobject.c:lookdict_unicode" in fn)
    assert fc.denoise().sum() == fc.sum() - torch_noisy.sum()


def test_function_counts_repr(profile):
    fc = FunctionCounts(_counts(profile.exclusive)._data, inclusive=False, _linewidth=80)
    lines = repr(fc).splitlines()
    assert lines[-1] == f"Total: {fc.sum()}"
    assert "..." in lines[10]  # long listings show head and tail
    assert all(len(line) <= 80 for line in lines[1:])


def _stats(profile, baseline: dict[str, int]) -> CallgrindStats:
    return CallgrindStats(
        task_spec=TaskSpec(stmt="work()", setup="pass"),
        number_per_run=10,
        built_with_debug_symbols=False,
        baseline_inclusive_stats=_counts({}, inclusive=True),
        baseline_exclusive_stats=_counts(baseline),
        stmt_inclusive_stats=_counts(profile.inclusive, inclusive=True),
        stmt_exclusive_stats=_counts(profile.exclusive),
        stmt_callgrind_out=None,
    )


def test_callgrind_stats_counts_delta_standardized(profile):
    fn, c = next(iter(profile.exclusive.items()))
    stats = _stats(profile, baseline={fn: c})
    noisy = sum(v for k, v in profile.exclusive.items() if "unicodekeys_lookup_unicode" in k)
    assert stats.counts() == profile.total
    # torch's figure: the loop included, torch's noise filter
    torch_noisy = sum(v for k, v in profile.exclusive.items() if "dictobject.c:lookdict_unicode" in k)
    assert stats.counts(denoise=True) == profile.total - torch_noisy
    # own_counts (harness only): every noisy lookup dropped and the baseline subtracted
    assert stats.own_counts() == profile.total - noisy - c
    assert stats.own_counts(denoise=False) == profile.total - c
    assert stats.stats() is stats.stmt_exclusive_stats
    assert stats.stats(inclusive=True).inclusive

    halved = {k: v // 2 for k, v in profile.exclusive.items()}
    other = _stats(parse_file(FIXTURE), baseline={})
    object.__setattr__(other, "stmt_exclusive_stats", _counts(halved))
    delta = stats.delta(other)
    assert delta.sum() == profile.total - sum(halved.values())

    std = stats.as_standardized()
    assert std.stmt_callgrind_out is None
    assert std.counts() == stats.counts()
    names = [f for _, f in std.stats()]
    assert not any(n.endswith("]") for n in names)
    assert any(n.startswith("Objects/") for n in names)
    assert standardize_symbol("/x/y/Python-3.11/Objects/dictobject.c:insertdict [/lib/libpython.so]") == (
        "Objects/dictobject.c:insertdict"
    )
    text = repr(stats)
    assert "Instructions:" in text and "Baseline:" in text and "10 runs per measurement, 1 thread" in text
