"""`python -m harness history import|show|changes`: subcommands, each with its own options, in any order."""

from __future__ import annotations

from pathlib import Path

import pytest
from history_runs import run

from harness.cli import main
from harness.records import save


def test_options_before_the_records(tmp_path: Path, cli):
    """As a user types it, options first: this once failed with "unrecognized arguments: run.json"."""
    save(run(0), tmp_path / "run.json")
    save(run(1), tmp_path / "later.json")
    r = cli("history", "import", "--history", "H.sqlite", "--label", "first", "run.json", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert "run.json: 1 run(s) added" in r.stdout and f"history: {tmp_path / 'H.sqlite'}" in r.stdout
    # Records first, options after them, still works.
    r = cli("history", "import", "later.json", "--history", "H.sqlite", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert "later.json: 1 run(s) added" in r.stdout
    r = cli("history", "show", "--history", "H.sqlite", "--by", "label", cwd=tmp_path, env={"COLUMNS": "200"})
    assert r.returncode == 0, r.stderr
    assert "2 labels in" in r.stdout


@pytest.mark.parametrize(("args", "message"), [
    (["import", "--fail-on-regression", "5", "run.json"],
     "history import: --fail-on-regression belongs to `history changes`"),
    (["import", "run.json", "-k", "add"], "history import: -k belongs to `history show` and `history changes`"),
    (["import", "--plot=x.html", "run.json"], "history import: --plot belongs to `history show`"),
    (["show", "--label", "x"], "history show: --label belongs to `history import`"),
    (["show", "--fail-on-regression", "5"], "history show: --fail-on-regression belongs to `history changes`"),
    (["show", "run.json"], "history show: RECORD belongs to `history import`"),
    (["changes", "--plot", "x.html"], "history changes: --plot belongs to `history show`"),
    (["changes", "--label", "x"], "history changes: --label belongs to `history import`"),
])
def test_each_subcommand_refuses_the_others_options(tmp_path: Path, capsys, args: list[str], message: str):
    save(run(0), tmp_path / "run.json")
    db = tmp_path / "H.sqlite"
    assert main(["history", *args, "--history", str(db)]) == 2
    assert capsys.readouterr().err == f"harness: error: {message}\n"
    assert not db.exists()  # refused before the database was opened, let alone created


def test_the_help_of_each_subcommand_offers_only_its_options(capsys):
    offered = {}
    for action in ("import", "show", "changes"):
        with pytest.raises(SystemExit):
            main(["history", action, "--help"])
        offered[action] = {w for w in capsys.readouterr().out.split() if w.startswith("--")}
    assert offered["import"] == {"--help", "--history", "--label"}
    assert offered["show"] == {"--help", "--history", "--by", "--last", "--metric", "--plot"}
    assert offered["changes"] == {"--help", "--history", "--by", "--last", "--metric", "--fail-on-regression",
                                   "--markdown"}


def test_an_unknown_option_is_still_argparses_error(capsys):
    with pytest.raises(SystemExit) as exc:
        main(["history", "changes", "--no-such-flag"])
    assert exc.value.code == 2 and "unrecognized arguments: --no-such-flag" in capsys.readouterr().err
