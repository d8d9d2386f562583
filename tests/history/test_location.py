"""Which database the history commands use: --history, $HARNESS_HISTORY (a path or a URL), $XDG_DATA_HOME."""

from __future__ import annotations

from pathlib import Path

from history_runs import run

from harness.records import save


def test_harness_history(tmp_path: Path, cli):
    save(run(0), tmp_path / "r.json")
    by_path = tmp_path / "env.sqlite"
    r = cli("history", "import", str(tmp_path / "r.json"), env={"HARNESS_HISTORY": str(by_path)})
    assert r.returncode == 0 and by_path.exists() and f"history: {by_path}" in r.stdout, r.stderr
    by_url = tmp_path / "url.sqlite"
    r = cli("history", "show", env={"HARNESS_HISTORY": f"sqlite:///{by_url}"})
    assert r.returncode == 0 and by_url.exists() and "no runs" in r.stdout, r.stderr
    # --history wins over the variable; unset or empty: the default under $XDG_DATA_HOME
    r = cli("history", "show", "--history", str(by_path), env={"HARNESS_HISTORY": str(by_url)})
    assert "1 runs in" in r.stdout and str(by_path) in r.stdout.replace("\n", "")
    for value in ("", None):
        env = {"XDG_DATA_HOME": str(tmp_path / f"data{value is None}")}
        if value is not None:
            env["HARNESS_HISTORY"] = value
        r = cli("history", "show", env=env, unset=("HARNESS_HISTORY",) if value is None else ())
        assert r.returncode == 0, r.stderr
        assert (tmp_path / f"data{value is None}" / "harness" / "history.sqlite").exists()


def test_xdg_data_home(tmp_path: Path, cli):
    r = cli("history", "show", env={"XDG_DATA_HOME": str(tmp_path / "data"), "HOME": str(tmp_path / "home")},
            unset=("HARNESS_HISTORY",))
    assert r.returncode == 0 and (tmp_path / "data" / "harness" / "history.sqlite").exists(), r.stderr
    for value in ("", None):
        env = {"HOME": str(tmp_path / f"home{value is None}")}
        if value is not None:
            env["XDG_DATA_HOME"] = value
        r = cli("history", "show", env=env, unset=("HARNESS_HISTORY",) + (("XDG_DATA_HOME",) if value is None else ()))
        assert r.returncode == 0, r.stderr
        assert (tmp_path / f"home{value is None}" / ".local" / "share" / "harness" / "history.sqlite").exists()
    bad = tmp_path / "file"
    bad.write_text("")
    r = cli("history", "show", env={"XDG_DATA_HOME": str(bad)}, unset=("HARNESS_HISTORY",))
    assert r.returncode == 2 and str(bad) in r.stderr and "Traceback" not in r.stderr, r.stderr
