"""A count's samples and per-function details are made where its result is received, from a real
callgrind dump.

A counting child leaves its dumps unread and names them (and its baseline's
file) under ``PENDING``; ``finish`` (the worker pool's, ``collect_callgrind``'s)
reads and removes them and makes the samples, totals, symbols, layers and
whole profiles the child would have made. These run on the dump in
tests/data (no valgrind needed); test_callgrind_runs.py checks a real worker's
answer is left this way and finished by the pool.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest

from harness.measure.callgrind.details import PENDING, count_details, finish, pending, profile_json
from harness.measure.callgrind.profile import parse_text
from harness.model.result import TaskResult
from harness.model.task import Task

DUMP = (Path(__file__).resolve().parents[2] / "data" / "callgrind.out.fixture").read_text()
NUMBER = 10


@pytest.fixture
def unfinished(tmp_path: Path):
    """A counting child's answer whose dump (``text``) lies in a file of ``tmp_path``, as a worker leaves it."""
    made = iter(range(1000))

    def make(detail: str, layers: str | None = None, keep_text: bool = False, text: str = DUMP,
             baseline: object = None) -> TaskResult:
        dump = tmp_path / f"callgrind.out.4242.{next(made) + 1}"
        dump.write_text(text)
        task = Task(suite="s", name="n", kind="timer", params={"stmt": "pass"}, mode="instructions")
        return TaskResult(task=task, status="ok", unit="instructions", samples=[], number_per_run=NUMBER,
                          extra={"counter": "callgrind", "totals": [], "baseline": None, "elapsed_s": 1.5,
                                 PENDING: pending([str(dump)], baseline, detail, layers, keep_text)})

    return make


def test_finish_makes_what_the_counting_child_would_have_made(unfinished):
    profile = parse_text(DUMP)
    for detail, layers in (("symbols", None), ("full", None), ("symbols", ""), ("total", None)):
        result = finish(unfinished(detail, layers))
        assert result.ok and PENDING not in result.extra
        expected = count_details([profile], None, NUMBER, detail, layers)
        assert all(result.extra[k] == v for k, v in expected.items())
        assert result.samples == [profile.total / NUMBER]
        assert result.extra["totals"] == [profile.total] and result.extra["baseline"] is None
    assert "symbols" in finish(unfinished("symbols")).extra
    assert "symbols" not in finish(unfinished("total")).extra
    assert "layers" in finish(unfinished("symbols", "")).extra
    full = finish(unfinished("full")).extra["callgrind"]
    assert full["stmt"][0]["out"] is None and full["stmt"][0]["exclusive"] == profile.exclusive
    kept = finish(unfinished("full", keep_text=True)).extra["callgrind"]
    assert kept["stmt"][0]["out"] == DUMP  # retain_out_file: the dump's text itself


def test_the_baseline_is_read_from_its_file_and_subtracted(unfinished, tmp_path: Path):
    profile = parse_text(DUMP)
    base = parse_text(DUMP)
    base.total -= 1000
    path = tmp_path / "zygote.1.baseline-x.json"
    path.write_text(json.dumps(profile_json(base)))
    from_file = finish(unfinished("symbols", baseline=str(path)))
    assert from_file.samples == [1000 / NUMBER] and from_file.extra["baseline"] == base.total / NUMBER
    assert path.exists()  # the zygote's baseline serves its later children too
    given = finish(unfinished("symbols", baseline=base))  # measured by the child itself
    assert given.samples == from_file.samples and given.extra == from_file.extra
    assert profile.total - base.total == 1000


def test_the_dumps_are_removed_whatever_becomes_of_the_result(unfinished, tmp_path: Path):
    finish(unfinished("symbols"))
    finish(unfinished("symbols", text="this is not callgrind output\n"))
    finish(unfinished("symbols", layers=str(tmp_path / "no-such-rules.toml")))
    assert not list(tmp_path.glob("callgrind.out.*"))


def test_a_dump_that_is_gone_fails_the_result_with_the_reason(unfinished):
    result = unfinished("symbols")
    Path(result.extra[PENDING]["dumps"][0]).unlink()
    failed = finish(result)
    assert not failed.ok and "could not be read" in (failed.error or "") and failed.extra == {"elapsed_s": 1.5}


def test_a_result_without_pending_details_is_left_alone(unfinished):
    result = unfinished("symbols")
    del result.extra[PENDING]
    before = copy.deepcopy(result)
    assert finish(result) == before


def test_a_dump_that_does_not_parse_fails_the_result_with_the_reason(unfinished):
    result = finish(unfinished("symbols", text="this is not callgrind output\n"))
    assert not result.ok and not result.samples
    assert "callgrind" in (result.error or "") and "events" in (result.error or "")
    assert result.extra == {"elapsed_s": 1.5}


def test_a_layers_file_with_a_mistake_fails_the_result_naming_it(unfinished, tmp_path: Path):
    rules = tmp_path / "layers.toml"
    rules.write_text("this is = = not toml\n")
    result = finish(unfinished("symbols", layers=str(rules)))
    assert not result.ok and str(rules) in (result.error or "")


def test_a_malformed_answer_fails_the_result(unfinished):
    result = unfinished("symbols")
    del result.extra[PENDING]["detail"]
    failed = finish(result)
    assert not failed.ok and PENDING in (failed.error or "")
