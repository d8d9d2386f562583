"""The baseline a zygote's children share: the worker asks for it under the key the runner saves it by.

A real zygote (a forked process); the runner's side is ``_baseline_key`` with the
counter's name, the worker's side is ``baseline_first``. If the two ever built
their keys apart, the worker would measure a baseline the runner never reads
(or skip one it needs), in every task.
"""

from __future__ import annotations

import json

import pytest

from harness.measure.callgrind.counter import CallgrindCounter
from harness.model.task import Task
from harness.run.instructions import (
    BASELINE_ONLY,
    DEFAULT_NUMBER,
    _baseline_key,
    _baseline_path,
    baseline_first,
)
from harness.workers.zygote import Zygote


@pytest.fixture
def zygote(tmp_path):
    z = Zygote(tmp_path, lambda line: None)
    yield z
    z.close()


def _task(**params) -> Task:
    return Task(suite="s", name="n", kind="timer", params={"stmt": "y = x * w", **params}, mode="instructions")


def test_a_missing_baseline_is_asked_for_with_the_statement_parameters(zygote):
    first = baseline_first(_task(number=50, num_threads=2, scope="module", detail="total"), zygote)
    assert first is not None and first.suite == "" and first.name == ""
    assert first.params == {"stmt": "pass", "number": 50, "num_threads": 2, "detail": "total", "scope": "module",
                            BASELINE_ONLY: True}


def test_a_saved_baseline_is_found_under_the_runners_key(zygote):
    # What the runner saves for a task that leaves every parameter out ...
    path = _baseline_path(zygote, _baseline_key(CallgrindCounter.name, {}))
    path.write_text(json.dumps({"total": 1, "exclusive": {}, "inclusive": {}}))
    # ... is the baseline of the same task with the defaults written out, and of no other.
    assert baseline_first(_task(), zygote) is None
    assert (
        baseline_first(_task(number=DEFAULT_NUMBER, detail="symbols", scope="function", num_threads=1), zygote) is None
    )
    assert baseline_first(_task(number=DEFAULT_NUMBER + 1), zygote) is not None
    assert baseline_first(_task(detail="total"), zygote) is not None


def test_no_baseline_for_cpp_none_asked_or_a_bad_parameter(zygote):
    assert baseline_first(_task(language="c++"), zygote) is None
    assert baseline_first(_task(baseline=False), zygote) is None
    # The statement's own child refuses the parameter with its message; the worker asks nothing.
    assert baseline_first(_task(detail="everything"), zygote) is None
