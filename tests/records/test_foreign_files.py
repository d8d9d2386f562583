"""Foreign files and files of a newer schema version: every command refuses them, none changes them."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conftest import TINY_SUITE, suite_root
from harness.records import save
from synthetic_runs import full_run


def _newer(path: Path) -> None:
    """A harness record of schema version 999, as a later harness might write it."""
    if path.suffix == ".json":
        data = full_run().to_json()
        data["version"] = 999
        path.write_text(json.dumps(data, indent=1))
        return
    save(full_run(), path)
    lines = path.read_text().splitlines()
    if path.suffix == ".jsonl":
        lines[0] = lines[0].replace('"version": 1', '"version": 999')
    else:
        lines[1:] = ["999" + line[1:] for line in lines[1:]]  # the version column leads each row
    path.write_text("\n".join(lines) + "\n")


FOREIGN = {".json": "hello, world\n", ".jsonl": '{"event": "login", "user": "x"}\n', ".csv": "a,b\n1,2\n"}


@pytest.fixture
def quick_suite(tmp_path: Path) -> Path:
    return suite_root(tmp_path, "quick", TINY_SUITE)


@pytest.mark.parametrize("suffix", [".json", ".jsonl", ".csv"])
@pytest.mark.parametrize("what", ["newer", "foreign"])
def test_every_command_refuses_and_leaves_the_file(cli, tmp_path: Path, quick_suite: Path, suffix: str, what: str):
    path = tmp_path / f"{what}{suffix}"
    if what == "newer":
        _newer(path)
    else:
        path.write_text(FOREIGN[suffix])
    before = path.read_bytes()
    good = tmp_path / "good.json"
    save(full_run(), good)
    expected = tmp_path / "expected.csv"
    expected.write_text("name,metric,expected,noise_margin\n")
    commands = {
        "bench": ["bench", "--in-process", "--path", str(quick_suite), "--output", str(path), "--min-run-time", "0.01"],
        "compare": ["compare", str(good), str(path)],
        "report": ["report", str(path), "-o", str(tmp_path / "r.html")],
        "check": ["check", str(path), "--expected", str(expected), "--metric", "m"],
    }
    for command, args in commands.items():
        r = cli(*args)
        assert r.returncode == 2, (command, r.stdout, r.stderr)
        message = " ".join(r.stderr.split())
        assert str(path) in message and "Traceback" not in message, (command, message)
        if what == "newer":
            assert "schema version 999, newer than version 1" in message, (command, message)
        elif command == "check" and suffix == ".csv":
            # check reads metric CSVs too: the file is named for what it lacks and what its line 1 is.
            assert "line 1 is: a,b" in message, message
        else:
            assert "line 1 is not a harness record: " in message, (command, message)
            assert FOREIGN[suffix].splitlines()[0][:20] in message.replace("\\", ""), (command, message)
        if command == "bench":
            assert "not append to" in message or "not replace" in message
            assert "noop" not in r.stdout  # refused before measuring
        assert path.read_bytes() == before, command
    assert not (tmp_path / "r.html").exists()


def test_a_run_with_no_results_is_not_compared_or_checked(cli, tmp_path: Path):
    """What harness before this change appended when interrupted early: a run header and no results."""
    good = tmp_path / "good.jsonl"
    save(full_run(run_id="complete"), good)
    empty = tmp_path / "empty.jsonl"
    save(full_run(run_id="complete"), empty)
    with empty.open("a") as f:
        f.write(json.dumps({"schema": "harness.run", "version": 1, "environment": {"run_id": "empty"}}) + "\n")
    expected = tmp_path / "expected.csv"
    expected.write_text("name,metric,expected,noise_margin\n")
    for args in (["compare", str(good), str(empty)], ["compare", str(empty), str(good)],
                 ["check", str(empty), "--expected", str(expected), "--metric", "m"]):
        r = cli(*args)
        message = " ".join(r.stderr.split())
        assert r.returncode == 2 and f"{empty}: its" in message and "has no results" in message, (args, message)
        assert "removed" not in r.stdout
