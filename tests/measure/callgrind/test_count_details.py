"""A count's per-function details are made where its result is received, from a real callgrind dump.

A counting child leaves its dumps' text under ``PENDING``; ``finish`` (the
worker pool's, ``collect_callgrind``'s) makes the symbols, layers and whole
profiles the child would have made. These run on the dump in
tests/data (no valgrind needed); test_callgrind_runs.py checks a real worker's
answer is left this way and finished by the pool.
"""

from __future__ import annotations

import copy
from pathlib import Path

from harness.measure.callgrind.details import PENDING, count_details, finish, pending
from harness.measure.callgrind.profile import parse_text
from harness.model.result import TaskResult
from harness.model.task import Task

DUMP = (Path(__file__).resolve().parents[2] / "data" / "callgrind.out.fixture").read_text()
NUMBER = 10


def _unfinished(detail: str, layers: str | None = None, keep_text: bool = False, text: str = DUMP) -> TaskResult:
    task = Task(suite="s", name="n", kind="timer", params={"stmt": "pass"}, mode="instructions")
    total = parse_text(DUMP).total
    return TaskResult(task=task, status="ok", unit="instructions", samples=[total / NUMBER], number_per_run=NUMBER,
                      extra={"counter": "callgrind", "totals": [total], "baseline": None, "elapsed_s": 1.5,
                             PENDING: pending([text], None, detail, layers, keep_text)})


def test_finish_makes_what_the_counting_child_would_have_made():
    profile = parse_text(DUMP)
    for detail, layers in (("symbols", None), ("full", None), ("symbols", "")):
        result = finish(_unfinished(detail, layers))
        assert result.ok and PENDING not in result.extra
        expected = count_details([profile], None, NUMBER, detail, layers)
        assert expected and all(result.extra[k] == v for k, v in expected.items())
        assert result.samples == [profile.total / NUMBER]  # the child's totals stay as they were
    assert "symbols" in finish(_unfinished("symbols")).extra
    assert "layers" in finish(_unfinished("symbols", "")).extra
    full = finish(_unfinished("full")).extra["callgrind"]
    assert full["stmt"][0]["out"] is None and full["stmt"][0]["exclusive"] == profile.exclusive
    kept = finish(_unfinished("full", keep_text=True)).extra["callgrind"]
    assert kept["stmt"][0]["out"] == DUMP  # retain_out_file: the dump's text itself


def test_a_result_without_pending_details_is_left_alone():
    result = _unfinished("symbols")
    del result.extra[PENDING]
    before = copy.deepcopy(result)
    assert finish(result) == before


def test_a_dump_that_does_not_parse_fails_the_result_with_the_reason():
    result = finish(_unfinished("symbols", text="this is not callgrind output\n"))
    assert not result.ok and not result.samples
    assert "callgrind" in (result.error or "") and "events" in (result.error or "")
    assert result.extra == {"elapsed_s": 1.5}


def test_a_layers_file_with_a_mistake_fails_the_result_naming_it(tmp_path: Path):
    rules = tmp_path / "layers.toml"
    rules.write_text("this is = = not toml\n")
    result = finish(_unfinished("symbols", layers=str(rules)))
    assert not result.ok and str(rules) in (result.error or "")


def test_a_malformed_answer_fails_the_result():
    result = _unfinished("symbols")
    del result.extra[PENDING]["stmt"]
    failed = finish(result)
    assert not failed.ok and PENDING in (failed.error or "")
