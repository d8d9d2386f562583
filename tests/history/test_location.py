"""Which database the history commands use: --history, $HARNESS_HISTORY (a path or a URL), $XDG_DATA_HOME.

One real `python -m harness` process per variable; the other settings call the command line's
``main`` in this process with the variable set (monkeypatch), which reads it the same way.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from history_runs import run

from harness.cli import main
from harness.records import save


def _missing(code: int, err: str, path: Path) -> bool:
    """`history show` names the database it looked for, and refuses to read one that is not there."""
    return code == 2 and f"{path}: no history database there yet" in err and "Traceback" not in err


def test_harness_history(tmp_path: Path, cli, monkeypatch: pytest.MonkeyPatch, capsys):
    save(run(0), tmp_path / "r.json")
    by_path = tmp_path / "env.sqlite"
    r = cli("history", "import", str(tmp_path / "r.json"), env={"HARNESS_HISTORY": str(by_path)})
    assert r.returncode == 0 and by_path.exists() and f"history: {by_path}" in r.stdout, r.stderr
    by_url = tmp_path / "url.sqlite"
    monkeypatch.setenv("HARNESS_HISTORY", f"sqlite:///{by_url}")
    assert _missing(main(["history", "show"]), capsys.readouterr().err, by_url)
    # --history wins over the variable
    assert main(["history", "show", "--history", str(by_path)]) == 0
    assert "1 runs in" in capsys.readouterr().out
    # unset or empty: the default under $XDG_DATA_HOME
    for value in ("", None):
        data = tmp_path / f"data{value is None}"
        monkeypatch.setenv("XDG_DATA_HOME", str(data))
        if value is None:
            monkeypatch.delenv("HARNESS_HISTORY")
        else:
            monkeypatch.setenv("HARNESS_HISTORY", value)
        assert _missing(main(["history", "show"]), capsys.readouterr().err, data / "harness" / "history.sqlite")


def test_xdg_data_home(tmp_path: Path, cli, monkeypatch: pytest.MonkeyPatch, capsys):
    save(run(0), tmp_path / "r.json")
    r = cli("history", "import", str(tmp_path / "r.json"), env={"XDG_DATA_HOME": str(tmp_path / "data")},
            unset=("HARNESS_HISTORY",))
    assert r.returncode == 0 and (tmp_path / "data" / "harness" / "history.sqlite").exists(), r.stderr
    monkeypatch.delenv("HARNESS_HISTORY", raising=False)
    for value in ("", None):
        home = tmp_path / f"home{value is None}"
        monkeypatch.setenv("HOME", str(home))
        if value is None:
            monkeypatch.delenv("XDG_DATA_HOME", raising=False)
        else:
            monkeypatch.setenv("XDG_DATA_HOME", value)
        expected = home / ".local" / "share" / "harness" / "history.sqlite"
        assert _missing(main(["history", "show"]), capsys.readouterr().err, expected)
    blocker = tmp_path / "file"
    blocker.write_text("")
    monkeypatch.setenv("XDG_DATA_HOME", str(blocker))
    assert main(["history", "import", str(tmp_path / "r.json")]) == 2
    err = capsys.readouterr().err
    assert str(blocker) in err and "Traceback" not in err, err
