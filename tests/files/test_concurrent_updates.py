"""Every read-modify-written file kind of docs/files.md, N real processes updating one file at once: every update kept.

Run records have theirs in tests/records/test_concurrent_writers.py and the
history database in tests/history; here the expected-results file
(``check --update``, issue 36 case 1: one job's rows were lost about one run
in five), the CSV outputs of a kind's own layout (``append_csv``) and
JSON-lines outputs (``append_jsonl``). Each process makes many updates in a
loop, so their read-modify-replace cycles overlap on every run.

Cost: 12 short processes importing harness (no torch), ~5 s on the shared 2-core VM.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

from harness.files.csv_file import read_csv
from harness.files.jsonl_file import read_jsonl
from harness.present.check import read_expected

REPO = Path(__file__).resolve().parents[2]
PROCESSES = 4
UPDATES = 15

UPDATERS = {
    # Each update adds a row of its own (name who-i) through the command line's own entry point.
    "expected": """
        from harness.cli import main
        for i in range(n):
            results = directory / f"results-{who}-{i}.csv"
            results.write_text(f"name,metric,value\\n{who}-{i},m,{1000 + i}\\n")
            assert main(["check", str(results), "--expected", str(path), "--metric", "m", "--update"]) in (0, 1)
    """,
    "csv": """
        from harness.files.csv_file import append_csv
        for i in range(n):
            append_csv(path, ["who", "i"], [[who, i]])
    """,
    "jsonl": """
        from harness.files.jsonl_file import append_jsonl
        for i in range(n):
            append_jsonl(path, [{"who": who, "i": i}])
    """,
}


def _run_all(kind: str, path: Path) -> None:
    code = ("import sys, pathlib\npath = pathlib.Path(sys.argv[1]); directory = path.parent / 'in'\n"
            "directory.mkdir(exist_ok=True); who, n = sys.argv[2], int(sys.argv[3])\n"
            + textwrap.dedent(UPDATERS[kind]))
    procs = [subprocess.Popen([sys.executable, "-c", code, str(path), f"p{k}", str(UPDATES)], cwd=REPO,
                              stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
             for k in range(PROCESSES)]
    for proc in procs:
        _, err = proc.communicate(timeout=300)
        assert proc.returncode == 0, err


def _every_update() -> list[tuple[str, int]]:
    return sorted((f"p{k}", i) for k in range(PROCESSES) for i in range(UPDATES))


def test_concurrent_check_updates_keep_every_row(tmp_path: Path):
    path = tmp_path / "expected.csv"
    _run_all("expected", path)
    rows = read_expected(path).rows
    assert sorted((name.rsplit("-", 1)[0], int(name.rsplit("-", 1)[1])) for name, _ in rows) == _every_update()
    # The lines of each writer in the order it added them.
    for k in range(PROCESSES):
        mine = [int(name.rsplit("-", 1)[1]) for name, _ in rows if name.startswith(f"p{k}-")]
        assert mine == list(range(UPDATES))


def test_concurrent_csv_appends_keep_every_row(tmp_path: Path):
    path = tmp_path / "out.csv"
    _run_all("csv", path)
    header, rows = read_csv(path)
    assert header == ["who", "i"]
    assert sorted((row["who"], int(row["i"])) for _, row in rows) == _every_update()


def test_concurrent_jsonl_appends_keep_every_line(tmp_path: Path):
    path = tmp_path / "out.jsonl"
    _run_all("jsonl", path)
    assert sorted((value["who"], value["i"]) for _, value in read_jsonl(path)) == _every_update()
