"""Which database the history commands use: --history, $HARNESS_HISTORY (a path or a URL), $XDG_DATA_HOME."""

from __future__ import annotations

from pathlib import Path

from history_runs import run

from harness.records import save


def _missing(r, path: Path) -> bool:
    """`history show` names the database it looked for, and refuses to read one that is not there."""
    return r.returncode == 2 and f"{path}: no history database there yet" in r.stderr and "Traceback" not in r.stderr


def test_harness_history(tmp_path: Path, cli):
    save(run(0), tmp_path / "r.json")
    by_path = tmp_path / "env.sqlite"
    r = cli("history", "import", str(tmp_path / "r.json"), env={"HARNESS_HISTORY": str(by_path)})
    assert r.returncode == 0 and by_path.exists() and f"history: {by_path}" in r.stdout, r.stderr
    by_url = tmp_path / "url.sqlite"
    assert _missing(cli("history", "show", env={"HARNESS_HISTORY": f"sqlite:///{by_url}"}), by_url)
    # --history wins over the variable
    r = cli("history", "show", "--history", str(by_path), env={"HARNESS_HISTORY": str(by_url)})
    assert "1 runs in" in r.stdout and str(by_path) in r.stdout.replace("\n", ""), r.stderr
    # unset or empty: the default under $XDG_DATA_HOME
    for value in ("", None):
        data = tmp_path / f"data{value is None}"
        env = {"XDG_DATA_HOME": str(data)} | ({"HARNESS_HISTORY": value} if value is not None else {})
        r = cli("history", "show", env=env, unset=("HARNESS_HISTORY",) if value is None else ())
        assert _missing(r, data / "harness" / "history.sqlite"), r.stderr


def test_xdg_data_home(tmp_path: Path, cli):
    save(run(0), tmp_path / "r.json")
    r = cli("history", "import", str(tmp_path / "r.json"), env={"XDG_DATA_HOME": str(tmp_path / "data")},
            unset=("HARNESS_HISTORY",))
    assert r.returncode == 0 and (tmp_path / "data" / "harness" / "history.sqlite").exists(), r.stderr
    for value in ("", None):
        home = tmp_path / f"home{value is None}"
        env = {"HOME": str(home)} | ({"XDG_DATA_HOME": value} if value is not None else {})
        r = cli("history", "show", env=env, unset=("HARNESS_HISTORY",) + (("XDG_DATA_HOME",) if value is None else ()))
        assert _missing(r, home / ".local" / "share" / "harness" / "history.sqlite"), r.stderr
    blocker = tmp_path / "file"
    blocker.write_text("")
    r = cli("history", "import", str(tmp_path / "r.json"), env={"XDG_DATA_HOME": str(blocker)},
            unset=("HARNESS_HISTORY",))
    assert r.returncode == 2 and str(blocker) in r.stderr and "Traceback" not in r.stderr, r.stderr
