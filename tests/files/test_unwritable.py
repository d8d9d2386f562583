"""Read-only, full, another user's and broken locations: one clear message each, exit 2, no traceback.

Real file systems: a tmpfs mounted read-only, a tmpfs of a few pages filled
to the last byte, a directory chowned to another uid (written by a process
without CAP_DAC_OVERRIDE, since the tests run as root, who may write
anywhere otherwise), a dangling symbolic link. Where mounting or dropping
the capability is not allowed (an unprivileged container), those tests skip
and say why.

Each message names the path, what is wrong in words and the variable or
option that moves it (``files/oserrors.py``); earlier content stays as it was.

Cost: a handful of short processes, one importing torch (the C++ cache of
issue 36's case 3): ~10 s on the shared 2-core VM.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from conftest import suite_root
from harness.errors import UsageError
from harness.files.csv_file import append_csv
from harness.files.jsonl_file import append_jsonl
from harness.model.record import RunRecord
from harness.model.result import TaskResult
from harness.model.task import Task
from harness.present.check import update_file
from harness.present.html_report import write_report
from harness.records.store import check_writable, save

REPO = Path(__file__).resolve().parents[2]
OTHER_UID = 4321
CACHE_FIX = "set HARNESS_CACHE_DIR to a directory of yours that you can write"
OUTPUT_FIX = "give --output a path in a directory you can write"
READ_ONLY = "the file system is read-only"
FULL = "the file system is full (no space left on the device)"


def _run() -> RunRecord:
    return RunRecord({"run_id": "r1"}, [TaskResult(Task("s", "b", "timer", {}), "ok", samples=[1.0, 2.0])])


def _mount(where: Path, options: str) -> None:
    where.mkdir(exist_ok=True)
    r = subprocess.run(["mount", "-t", "tmpfs", "-o", options, "tmpfs", str(where)], capture_output=True, text=True)
    if r.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here ({r.stderr.strip() or r.returncode}): needs root in a mount namespace")


def _unmount(where: Path) -> None:
    subprocess.run(["umount", "-l", str(where)], check=False)


@pytest.fixture
def read_only(tmp_path: Path) -> Iterator[Path]:
    """A read-only tmpfs holding earlier files (mode 0700, as harness makes its cache): runs.jsonl,
    expected.csv, out.csv, out.jsonl, cache/."""
    where = tmp_path / "ro"
    _mount(where, "size=1m,mode=0700")
    try:
        save(_run(), where / "runs.jsonl")
        (where / "expected.csv").write_text("name,metric,expected,noise_margin\na,m,1,0.01\n")
        append_csv(where / "out.csv", ["name", "value"], [["a", 1]])
        append_jsonl(where / "out.jsonl", [{"a": 1}])
        (where / "cache").mkdir(mode=0o700)
        subprocess.run(["mount", "-o", "remount,ro", str(where)], check=True)
        yield where
    finally:
        _unmount(where)


@pytest.fixture
def full(tmp_path: Path) -> Iterator[Path]:
    """A 256 KiB tmpfs with earlier files, then filled to the last block."""
    where = tmp_path / "full"
    _mount(where, "size=256k,mode=0700")
    try:
        save(_run(), where / "runs.jsonl")
        (where / "expected.csv").write_text("name,metric,expected,noise_margin\na,m,1,0.01\n")
        append_csv(where / "out.csv", ["name", "value"], [["a", 1]])
        (where / "cache").mkdir(mode=0o700)
        with open(where / "filler", "wb", buffering=0) as f, pytest.raises(OSError):
            while True:
                f.write(b"\0" * 4096)
        yield where
    finally:
        _unmount(where)


def _give_away(path: Path) -> None:
    """``path`` chowned to another uid, or the test skipped where this process may not (not root)."""
    try:
        os.chown(path, OTHER_UID, OTHER_UID)
    except PermissionError as exc:
        pytest.skip(f"cannot chown {path} to uid {OTHER_UID} ({exc.strerror}): needs root")


def _contents(where: Path) -> dict[str, bytes]:
    # A writers' lock (.NAME.lock, empty) may be new: made before the write that failed, and kept by design.
    return {p.name: p.read_bytes() for p in where.iterdir()
            if p.is_file() and p.name != "filler" and not p.name.endswith(".lock")}


def _message(exc: pytest.ExceptionInfo[UsageError]) -> str:
    return " ".join(str(exc.value).split())


def _each_writer(where: Path) -> list[tuple[str, str]]:
    """Every writer of an output in ``where`` meeting the problem: (message, the path it must name)."""
    found = []
    big = RunRecord({"run_id": "r2"}, [TaskResult(Task("s", "b", "timer", {}), "ok", samples=[0.5] * 20000)])
    attempts = [
        ("runs.jsonl", lambda: save(big, where / "runs.jsonl")),
        (
            "expected.csv",
            lambda: update_file(where / "expected.csv", {(f"c{i}", "m"): 1.0 for i in range(5000)}, ["m"]),
        ),
        ("out.csv", lambda: append_csv(where / "out.csv", ["name", "value"], [["b", "x" * 300_000]])),
        ("report.html", lambda: write_report([where / "runs.jsonl"], where / "report.html")),
    ]
    for name, attempt in attempts:
        with pytest.raises(UsageError) as exc:
            attempt()
        found.append((_message(exc), str(where / name)))
    return found


def test_read_only_outputs_say_so_and_keep_their_content(read_only: Path):
    before = _contents(read_only)
    for message, path in _each_writer(read_only):
        assert message.startswith(f"{path}: cannot ") and READ_ONLY in message, message
    with pytest.raises(UsageError) as exc:
        check_writable(read_only / "new.json")  # before a run: fails before measuring anything
    assert _message(exc) == f"{read_only / 'new.json'}: cannot write it: {READ_ONLY}; {OUTPUT_FIX}"
    assert _contents(read_only) == before
    assert not [p for p in read_only.iterdir() if p.name.endswith(".tmp")]


def test_full_outputs_say_so_and_keep_their_content(full: Path):
    before = _contents(full)
    for message, path in _each_writer(full):
        assert message.startswith(f"{path}: cannot ") and FULL in message, message
    assert _contents(full) == before
    assert not [p for p in full.iterdir() if p.name.endswith(".tmp")]


def _cli(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "harness", *args], cwd=REPO, capture_output=True, text=True,
                          timeout=300, env={**os.environ, **(env or {})})


def _one_message(r: subprocess.CompletedProcess[str]) -> str:
    assert r.returncode == 2, r.stdout + r.stderr
    assert "Traceback" not in r.stderr
    (line,) = [x for x in r.stderr.splitlines() if x.startswith("harness: error: ")]
    return line.removeprefix("harness: error: ")


def test_read_only_cache_of_mode_0700_is_one_message(read_only: Path, tmp_path: Path):
    """Issue 36 case 3: a C++ statement with HARNESS_CACHE_DIR on a read-only file system, the directory
    mode 0700 (harness's own): was `OSError: [Errno 30] Read-only file system: '.../cpp'` and a traceback."""
    root = suite_root(tmp_path, "cpp", "import harness\nsuite = harness.Suite()\n"
                      "suite.timer('one', 'auto y = 1 + 1;', language='cpp')\n")
    cache = read_only / "cache"
    r = _cli("bench", "--path", str(root), "--in-process", "--min-run-time", "0.01",
             env={"HARNESS_CACHE_DIR": str(cache)})
    # The C++ task fails (exit 1, as with a CXX that does not run), saying why in one message.
    assert r.returncode == 1 and "Traceback" not in r.stderr, r.stderr
    assert (f"[1/1] cpp/one: failed: {cache / 'cpp'}: cannot use it as a private harness directory: {READ_ONLY}; "
            f"{CACHE_FIX} (now: HARNESS_CACHE_DIR={str(cache)!r})") in r.stderr


def test_full_cache_is_one_message(full: Path):
    cache = full / "cache"
    code = ("import json, sys\nfrom harness.files.cache import cache_dir, writing_cache\n"
            "from harness.files.atomic import atomic_write_text\n"
            "with writing_cache('write the C++ statement cache'):\n"
            "    atomic_write_text(cache_dir('cpp') / 'index.json', json.dumps(list(range(100000))))\n")
    r = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=120,
                       env={**os.environ, "HARNESS_CACHE_DIR": str(cache)})
    assert r.returncode == 1 and "PathError" in r.stderr
    # The write of an open file names no path: the cache is named.
    assert f"PathError: {cache}: cannot write the C++ statement cache: {FULL}; {CACHE_FIX}" in r.stderr
    assert not list((cache / "cpp").iterdir())


def test_another_users_cache_is_refused(tmp_path: Path):
    cache = tmp_path / "theirs"
    cache.mkdir(mode=0o700)
    _give_away(cache)
    r = _cli("cache", "info", env={"HARNESS_CACHE_DIR": str(cache)})
    assert _one_message(r) == (f"{cache}: will not use it as the harness cache: it belongs to another user, "
                               f"uid {OTHER_UID}, not to uid {os.geteuid()}; {CACHE_FIX} "
                               f"(now: HARNESS_CACHE_DIR={str(cache)!r})")


def test_another_users_output_directory_is_one_message(tmp_path: Path):
    """Written as a user who may not write there: root without CAP_DAC_OVERRIDE (setpriv)."""
    if shutil.which("setpriv") is None:
        pytest.skip("setpriv (util-linux) is not installed: cannot drop CAP_DAC_OVERRIDE to be refused")
    theirs = tmp_path / "theirs"
    theirs.mkdir()
    _give_away(theirs)
    results = tmp_path / "results.csv"
    results.write_text("name,metric,value\na,m,1\n")
    drop = ["setpriv", "--inh-caps=-dac_override,-dac_read_search", "--bounding-set=-dac_override,-dac_read_search"]
    probe = subprocess.run([*drop, "true"], capture_output=True, text=True)
    if probe.returncode != 0:
        pytest.skip(f"cannot drop CAP_DAC_OVERRIDE here: {probe.stderr.strip()}")
    r = subprocess.run([*drop, sys.executable, "-m", "harness", "check", str(results), "--expected",
                        str(theirs / "expected.csv"), "--metric", "m", "--update"],
                       cwd=REPO, capture_output=True, text=True, timeout=120)
    assert _one_message(r) == (f"{theirs / 'expected.csv'}: cannot update the expected-results file: permission "
                               f"denied: {theirs} belongs to another user, uid {OTHER_UID}; it is as it was before; "
                               "give --expected a file in a directory you can write")
    assert list(theirs.iterdir()) == []


def test_dangling_links_are_named(tmp_path: Path):
    link = tmp_path / "gone"
    link.symlink_to(tmp_path / "nowhere")
    r = _cli("cache", "info", env={"HARNESS_CACHE_DIR": str(link)})
    assert _one_message(r) == (f"{link}: cannot use it as the harness cache: {link} is a dangling symbolic link "
                               f"(to {tmp_path / 'nowhere'}, which does not exist); {CACHE_FIX} "
                               f"(now: HARNESS_CACHE_DIR={str(link)!r})")
    with pytest.raises(UsageError) as exc:
        check_writable(link / "runs.json")
    assert _message(exc) == (f"{link / 'runs.json'}: cannot write it: {link} is a dangling symbolic link "
                             f"(to {tmp_path / 'nowhere'}, which does not exist); {OUTPUT_FIX}")
