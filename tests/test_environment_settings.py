"""Each environment variable in each setting docs/environment.md documents, in real processes.

The doc's effect column lists a variable's settings as ``setting: effect``
clauses; ``SETTINGS`` names the tests of each, and
``test_every_documented_setting_has_a_test`` fails for a setting (or a new
variable) without one. Where another file already tests a setting thoroughly
(and expensively: a C++ compile, a valgrind'ed worker kept between runs, a
gpt_fast experiment), that test is named and this file adds a cheap check of
the same setting at most.

Cost on the shared 2-core VM: one `bench --mode instructions` under
callgrind (~16 s, the most of it) and a few dozen short processes, most of
which import torch (~2 s each, several side by side): 30-40 s in all at a
load of 3-4.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import stat
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from conftest import suite_root
from harness.options import ENVIRONMENT

ROOT = Path(__file__).resolve().parents[1]
DOC = ROOT / "docs" / "environment.md"
PCH_OFF = "tests/measure/cpp/test_cpp_pch_off.py::test_pch_off_builds_runs_and_means_the_same"
KEPT = "tests/workers/test_kept_worker.py::test_next_run_reuses_the_kept_worker_and_a_busy_one_is_not_shared"
TINY_RUN = "tests/suites/gpt_fast/test_gpt_fast_suite.py::test_cli_only_with_csv_output_appends"
HISTORY_ENV_TEST = "tests/history/test_location.py::test_harness_history"
XDG_DATA_TEST = "tests/history/test_location.py::test_xdg_data_home"
KILL_STEPS = "tests/files/test_kill_steps.py::test_sigkill_at_each_step_keeps_the_earlier_content"
TMPDIR_TEST = "tests/workers/test_kept_lifecycle.py::test_tmpdir_places_the_workers_directory"

# variable -> setting (as the doc labels it, backticks dropped) -> the tests of it.
SETTINGS: dict[str, dict[str, tuple[str, ...]]] = {
    "HARNESS_CACHE_DIR": {
        "DIR": ("test_cache_root",),
        "unset or empty": ("test_cache_root",),
        "a DIR that cannot be created": ("test_cache_root",),
    },
    "XDG_CACHE_HOME": {
        "DIR": ("test_cache_root",),
        "unset or empty": ("test_cache_root",),
    },
    "HARNESS_CPP_PCH": {
        "1, unset or empty": (PCH_OFF, "test_cpp_pch"),
        "0": (PCH_OFF, "test_cpp_pch"),
        "anything else": ("test_cpp_pch",),
    },
    "CXX": {
        "COMPILER": ("test_cxx_compiles_the_statements",),
        "unset": ("test_cxx_unset_empty_or_broken",),
        "empty, or one that does not run": ("test_cxx_unset_empty_or_broken",),
    },
    "MAX_JOBS": {
        "N": ("tests/measure/cpp/test_cpp_recipe.py::test_max_jobs",),
        "unset, empty or not a number": ("tests/measure/cpp/test_cpp_recipe.py::test_max_jobs",),
    },
    "HARNESS_KEEP_WORKER": {
        "SECONDS": (KEPT, "test_keep_worker"),
        "unset or empty": ("test_keep_worker",),
        "0": ("test_callgrind_worker_environment", "test_keep_worker"),
        "anything else": ("test_keep_worker",),
    },
    "CI": {"true, 1 or yes (any case)": ("test_keep_worker",), "anything else, unset or empty": ("test_keep_worker",)},
    "HARNESS_GPT_FAST_SIZE": {
        "auto, unset or empty": ("test_gpt_fast_size",),
        "tiny": (TINY_RUN, "test_gpt_fast_size"),
        "cpu": ("test_gpt_fast_size",),
        "gpu": ("test_gpt_fast_size",),
        "anything else": ("test_gpt_fast_size",),
    },
    "HARNESS_COUNTER": {"in an instruction-counting worker": ("test_callgrind_worker_environment",)},
    "HARNESS_CALLGRIND_DIR": {"in a callgrind worker": ("test_callgrind_worker_environment",)},
    "HARNESS_CACHE_SIM": {"in a callgrind worker": (
        "tests/measure/callgrind/test_cache_sim.py::test_a_cache_sim_worker_gets_the_geometry_and_HARNESS_CACHE_SIM",)},
    "GITHUB_STEP_SUMMARY": {
        "FILE": ("tests/present/test_markdown.py::"
                 "test_compare_markdown_is_a_table_of_what_changed_appended_to_the_step_summary",),
        "unset or empty": (
            "tests/present/test_markdown.py::"
            "test_without_the_variable_nothing_is_written_and_a_summary_that_cannot_be_written_is_one_clear_error",
        ),
    },
    "HARNESS_PCH_LOG": {"in the background PCH builder": ("test_pch_builder_log",)},
    "HARNESS_TEST_KILL_AT": {
        "temporary": (KILL_STEPS, "test_kill_at"),
        "fsync": (KILL_STEPS, "test_kill_at"),
        "rename": (KILL_STEPS, "test_kill_at"),
        "unset or empty": ("test_kill_at",),
        "anything else": ("test_kill_at",),
    },
    "PYTHON": {"INTERPRETER": ("test_setup_python",), "unset or empty": ("test_setup_python",)},
    "HARNESS_HISTORY": {"PATH or URL": (HISTORY_ENV_TEST,), "unset or empty": (HISTORY_ENV_TEST,)},
    "XDG_DATA_HOME": {"DIR": (XDG_DATA_TEST,), "unset or empty": (XDG_DATA_TEST,)},
    "TMPDIR": {"DIR": (TMPDIR_TEST,), "unset or empty": (TMPDIR_TEST,)},
}


def _documented() -> dict[str, set[str]]:
    """Variable -> the settings its effect column labels (``label: effect; label: effect``)."""
    found: dict[str, set[str]] = {}
    for line in DOC.read_text().splitlines():
        m = re.match(r"\|\s*`([A-Z_]+)`\s*\|.*?\|\s*(.*?)\s*\|$", line)
        if m:
            clauses = m.group(2).split("; ")
            assert all(": " in c for c in clauses), f"{m.group(1)}: a clause without 'setting: effect': {clauses}"
            found[m.group(1)] = {c.split(": ", 1)[0].replace("`", "") for c in clauses}
    return found


def test_every_documented_setting_has_a_test():
    documented = _documented()
    assert set(documented) == set(ENVIRONMENT) | {"PYTHON"}  # the table is complete (test_environment_doc.py)
    assert {name: set(settings) for name, settings in SETTINGS.items()} == documented
    for tests in (t for settings in SETTINGS.values() for t in settings.values()):
        for test in tests:
            path, _, name = test.rpartition("::")
            source = (ROOT / path).read_text() if path else Path(__file__).read_text()
            assert f"\ndef {name}(" in source, f"{test} does not exist"


# -- helpers ------------------------------------------------------------------------
def _env(**changes: str | None) -> dict[str, str]:
    """This environment with ``changes`` (None: unset)."""
    env = dict(os.environ)
    for name, value in changes.items():
        if value is None:
            env.pop(name, None)
        else:
            env[name] = value
    return env


def _start(code: str, env: dict[str, str], *args: str) -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, "-c", textwrap.dedent(code), *args], cwd=ROOT, env=env, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)


def _json(proc: subprocess.Popen[str]) -> object:
    out, err = proc.communicate(timeout=300)
    assert proc.returncode == 0, err
    return json.loads(out.strip().splitlines()[-1])


def _cli(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "harness", *args], cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=300)


def _refused(r: subprocess.CompletedProcess[str], message: str) -> None:
    """The command stopped before doing anything, with one line naming the variable and value."""
    assert r.returncode == 2, r.stdout + r.stderr
    assert r.stderr.strip() == f"harness: error: {message}"


# -- the cache root -----------------------------------------------------------------------
def test_cache_root(tmp_path: Path):
    home = tmp_path / "home"
    home.mkdir()

    def root(cache: str | None, xdg: str | None) -> Path:
        r = _cli("cache", "info", env=_env(HARNESS_CACHE_DIR=cache, XDG_CACHE_HOME=xdg, HOME=str(home)))
        assert r.returncode == 0, r.stderr
        (line,) = [x for x in r.stdout.splitlines() if x.startswith("cache root: ")]
        path = Path(line.removeprefix("cache root: "))
        assert stat.S_IMODE(path.stat().st_mode) == 0o700  # compiled code is loaded from it: the owner's alone
        return path

    assert root(str(tmp_path / "mine"), str(tmp_path / "xdg")) == tmp_path / "mine"
    assert not (tmp_path / "xdg").exists()  # HARNESS_CACHE_DIR wins
    assert root(None, str(tmp_path / "xdg")) == tmp_path / "xdg" / "harness"
    assert root("", str(tmp_path / "xdg2")) == tmp_path / "xdg2" / "harness"
    assert root(None, None) == home / ".cache" / "harness"
    assert root("", "") == home / ".cache" / "harness"

    a_file = tmp_path / "a_file"
    a_file.write_text("")
    _refused(
        _cli("cache", "info", env=_env(HARNESS_CACHE_DIR=str(a_file))),
        f"{a_file}: cannot use it as the harness cache: {a_file} is a file, not a directory; "
        f"set HARNESS_CACHE_DIR to a directory of yours that you can write (now: HARNESS_CACHE_DIR={str(a_file)!r})",
    )
    _refused(_cli("cache", "info", env=_env(HARNESS_CACHE_DIR=None, XDG_CACHE_HOME=str(a_file))),
             f"{a_file / 'harness'}: cannot use it as the harness cache: {a_file} is a file, not a directory; "
             f"set HARNESS_CACHE_DIR to a directory of yours that you can write (now: XDG_CACHE_HOME={str(a_file)!r})")


# -- C++ statements ---------------------------------------------------------------------------
PCH_ENABLED = """
    import json
    from harness.measure.cpp.pch import pch_enabled
    from harness.measure.cpp.toolchain import toolchain
    print(json.dumps([pch_enabled(), toolchain().gcc_major is not None]))
"""


def test_cpp_pch(tmp_path: Path):
    """What each setting selects; that a statement builds and means the same either way is PCH_OFF's."""
    cache = str(tmp_path / "cache")
    procs = {value: _start(PCH_ENABLED, _env(HARNESS_CPP_PCH=value, HARNESS_CACHE_DIR=cache))
             for value in (None, "", "1", "0")}
    seen = {value: _json(p) for value, p in procs.items()}
    gcc = seen[None][1]  # the PCH is g++'s: with another compiler, never
    assert {value: enabled for value, (enabled, _) in seen.items()} == {None: gcc, "": gcc, "1": gcc, "0": False}
    # A typo is not the default: bench refuses it before running anything.
    _refused(_cli("bench", "--path", str(tmp_path / "none"), env=_env(HARNESS_CPP_PCH="off", HARNESS_CACHE_DIR=cache)),
             "HARNESS_CPP_PCH='off': use one of 1, 0 (unset: 1)")


def _compiler_wrapper(tmp_path: Path) -> tuple[Path, Path]:
    """A compiler that logs every call and runs g++, except for compiles, which it refuses (one line)."""
    calls = tmp_path / "calls.log"
    wrapper = tmp_path / "test-cxx"
    wrapper.write_text(textwrap.dedent(f"""\
        #!/bin/sh
        echo "$*" >> {calls}
        case " $* " in *" -c "*) echo "test-cxx: not compiling" >&2; exit 1;; esac
        exec g++ "$@"
    """))
    wrapper.chmod(0o755)
    return wrapper, calls


TIME_A_STATEMENT = """
    import json
    import harness
    from harness.errors import StatementError
    from harness.measure.cpp.toolchain import toolchain
    from harness.errors import BuildError
    try:
        harness.Timer("auto y = x + 1;", setup="auto x = torch::ones({2});", language="cpp").timeit(10)
        error = None
    except StatementError as exc:
        error = str(exc)
    try:
        cxx = toolchain().cxx
    except BuildError:
        cxx = None
    print(json.dumps({"error": error, "cxx": cxx}))
"""


@pytest.mark.skipif(shutil.which("g++") is None, reason="the test compiler wraps g++")
def test_cxx_compiles_the_statements(tmp_path: Path):
    """A statement's translation unit goes to $CXX (refused there, so nothing is compiled for real)."""
    wrapper, calls = _compiler_wrapper(tmp_path)
    cache = tmp_path / "cache"
    result = _json(_start(TIME_A_STATEMENT, _env(CXX=str(wrapper), HARNESS_CACHE_DIR=str(cache))))
    assert "test-cxx: not compiling" in result["error"]
    assert result["cxx"] == str(wrapper)
    lines = calls.read_text().splitlines()
    assert "--version" in lines  # the toolchain's identity is the wrapper's
    (tu,) = [x for x in lines if " -c " in f" {x} " and x.split(" -c ", 1)[1].startswith(str(cache / "cpp"))
             and "/modules/" in x]
    assert re.search(r"/modules/\w+/tu0\.cpp -o tu0\.o$", tu)


def test_cxx_unset_empty_or_broken(tmp_path: Path):
    cache = str(tmp_path / "cache")
    procs = {value: _start(TIME_A_STATEMENT, _env(CXX=value, HARNESS_CACHE_DIR=cache))
             for value in ("", str(tmp_path / "no-such-compiler"))}
    default = _start("import json; from harness.measure.cpp.toolchain import toolchain; "
                     "print(json.dumps([toolchain().cxx, toolchain().version]))", _env(CXX=None))
    version = subprocess.run(["c++", "--version"], capture_output=True, text=True, check=True).stdout.splitlines()[0]
    version = version.strip()
    assert _json(default) == ["c++", version]
    assert _json(procs[""])["error"] == (
        "CXX is set but empty: name a C++ compiler (g++ >= 10 or clang++), or unset it for c++")
    missing = _json(procs[str(tmp_path / "no-such-compiler")])["error"]
    assert missing.startswith(f"CXX={str(tmp_path / 'no-such-compiler')!r}: cannot run it as the C++ compiler")
    assert missing.endswith("set CXX to g++ >= 10 or clang++") and "Traceback" not in missing


# In place of the PCH compiler: writes to the builder's stdout (reached through the builder's
# fd 1, as this process's own output is captured), reports its environment, and fails.
FAKE_PCH_COMPILER = """
import os, sys
with open(f"/proc/{os.getppid()}/fd/1", "a") as builder_out:
    print("on the builder's stdout", file=builder_out)
print("HARNESS_PCH_LOG=" + os.environ.get("HARNESS_PCH_LOG", "unset"), file=sys.stderr)
sys.exit(1)
"""


def test_pch_builder_log(tmp_path: Path):
    """The detached PCH builder runs with HARNESS_PCH_LOG set, and its own output goes to that file."""
    code = """
        import json, sys
        from harness.measure.cpp.pch import pch_dir, start_pch_build, wait_for_pch
        start_pch_build([sys.executable, "-c", sys.argv[1]], "lean")
        wait_for_pch(120)  # the build lock is held from the start until the builder is done
        print(json.dumps(str(pch_dir("lean"))))
    """
    d = Path(_json(_start(code, _env(HARNESS_CACHE_DIR=str(tmp_path / "cache"), HARNESS_PCH_LOG=None),
                          FAKE_PCH_COMPILER)))
    log = d / "pch_build.out"
    assert log.read_text() == "on the builder's stdout\n"
    failed = json.loads((d / "failed.json").read_text())
    assert failed["output"] == f"HARNESS_PCH_LOG={log}\n"  # the compiler's messages: failed.json
    assert not list(d.glob("*.gch"))


# -- workers ----------------------------------------------------------------------------------
RECORD_ENV = """
import harness
suite = harness.Suite()
suite.timer("env", "pass", setup='''
import json, os
seen = {k: os.environ.get(k) for k in ("HARNESS_COUNTER", "HARNESS_CALLGRIND_DIR")}
seen["files"] = sorted(os.listdir(seen["HARNESS_CALLGRIND_DIR"] or "."))
seen["pid"] = os.getpid()
with open(os.environ["RECORD_TO"], "w") as f:
    json.dump(seen, f)
''')
"""


@pytest.mark.skipif(shutil.which("valgrind") is None, reason="valgrind is not installed")
def test_callgrind_worker_environment(tmp_path: Path):
    """A callgrind worker gets HARNESS_COUNTER and HARNESS_CALLGRIND_DIR; with HARNESS_KEEP_WORKER=0 it goes
    with its run (kept workers, HARNESS_KEEP_WORKER=SECONDS: tests/workers/test_kept_worker.py)."""
    root = suite_root(tmp_path, "envsuite", RECORD_ENV)
    record = tmp_path / "seen.json"
    env = _env(TMPDIR=str(tmp_path), RECORD_TO=str(record), HARNESS_KEEP_WORKER="0", HARNESS_COUNTER=None,
               HARNESS_CALLGRIND_DIR=None)
    r = _cli("bench", "--path", str(root), "envsuite", "--mode", "instructions", "--counter", "callgrind", env=env)
    assert r.returncode == 0, r.stderr
    seen = json.loads(record.read_text())
    assert seen["HARNESS_COUNTER"] == "callgrind"
    directory = Path(seen["HARNESS_CALLGRIND_DIR"])
    # A directory of the run's own, among the workers' private ones (workers.private_dir).
    assert directory.parent.name == "workers" and directory.name.startswith("f")
    # valgrind writes there: this very process's log, and the profiles of the run.
    assert f"valgrind.{seen['pid']}.log" in seen["files"]
    assert any(name.startswith("callgrind.out.") for name in seen["files"])
    # Not kept: the worker and its directory went with the run.
    assert not directory.exists()
    listening = subprocess.run(["pgrep", "-f", "--", str(directory)], capture_output=True, text=True)
    assert listening.stdout.split() == []


# -- the atomic writes' test hook --------------------------------------------------------------
def test_kill_at(tmp_path: Path):
    """Each step SIGKILLs the writer (what each leaves: KILL_STEPS); unset or empty writes; a typo is refused."""
    target = tmp_path / "t.txt"
    code = f"from harness.files.atomic import atomic_write_text; atomic_write_text({str(target)!r}, 'new')"
    for step in ("temporary", "fsync", "rename"):
        proc = _start(code, _env(HARNESS_TEST_KILL_AT=step))
        proc.communicate(timeout=60)
        assert proc.returncode == -9 and not target.exists()
    for value in (None, ""):
        target.unlink(missing_ok=True)
        proc = _start(code, _env(HARNESS_TEST_KILL_AT=value))
        assert proc.communicate(timeout=60)[1] == "" and proc.returncode == 0 and target.read_text() == "new"
    expected = tmp_path / "expected.csv"
    results = tmp_path / "results.csv"
    results.write_text("name,metric,value\na,m,1\n")
    _refused(_cli("check", str(results), "--expected", str(expected), "--metric", "m", "--update",
                  env=_env(HARNESS_TEST_KILL_AT="soon")),
             "HARNESS_TEST_KILL_AT='soon': use one of temporary, fsync, rename (unset: unset)")
    assert not expected.exists()


def test_keep_worker(tmp_path: Path):
    """What each setting makes of a run's options; a kept worker itself is KEPT's."""
    cases = [  # (CI, HARNESS_KEEP_WORKER, the run's idle timeout); None: unset
        (None, None, 900.0), (None, "", 900.0), (None, "0", None), (None, "600", 600.0), (None, "86400", 86400.0),
        ("", None, 900.0), ("false", None, 900.0), ("TRUE", None, None), ("1", "", None), ("yes", None, None),
        ("true", "600", 600.0), ("true", "0", None),
    ]
    # One process reads each setting in turn (the options read the environment at each call).
    code = """
        import json, os, sys
        from harness.options import RunOptions
        seen = []
        for ci, keep, _ in json.loads(sys.argv[1]):
            for name, value in (("CI", ci), ("HARNESS_KEEP_WORKER", keep)):
                os.environ.pop(name, None) if value is None else os.environ.__setitem__(name, value)
            seen.append(RunOptions().keep_seconds)
        print(json.dumps(seen))
    """
    assert _json(_start(code, _env(), json.dumps(cases))) == [seconds for _, _, seconds in cases]
    none = str(tmp_path / "none")
    _refused(_cli("bench", "--path", none, env=_env(HARNESS_KEEP_WORKER="soon")),
             "HARNESS_KEEP_WORKER='soon': give the idle timeout in seconds, e.g. HARNESS_KEEP_WORKER=600")
    for value in ("-5", "86401", "nan"):
        _refused(_cli("bench", "--path", none, env=_env(HARNESS_KEEP_WORKER=value)),
                 f"HARNESS_KEEP_WORKER={value!r}: the kept-worker idle timeout must be between 0 and 86400 seconds "
                 "(0: not kept)")


# -- suites -----------------------------------------------------------------------------------
GPT_FAST_SIZE = """
    import json
    from harness.define.discovery import default_root, select_suites
    from harness.suites.gpt_fast.context import default_device, resolve_size
    from harness.suites.gpt_fast.kernels import DIMS
    (suite,) = select_suites(default_root(None), ["gpt_fast"])
    (size,) = {t.params["size"] for t in suite.tasks()}
    resolved = resolve_size(size, default_device())
    print(json.dumps({"size": size, "resolved": resolved, "dims": DIMS[resolved], "device": default_device()}))
"""


def test_gpt_fast_size():
    """The size every gpt_fast task is given, and the shapes it means here; a tiny run end to end is TINY_RUN's."""
    procs = {value: _start(GPT_FAST_SIZE, _env(HARNESS_GPT_FAST_SIZE=value))
             for value in (None, "", "auto", "tiny", "cpu", "gpu")}
    seen = {value: _json(p) for value, p in procs.items()}
    device = seen[None]["device"]
    by_device = "gpu" if device.startswith("cuda") else "cpu"
    for value in (None, "", "auto"):
        assert seen[value] == {"size": "auto", "resolved": by_device, "dims": seen[by_device]["dims"],
                               "device": device}
    assert [seen[v]["resolved"] for v in ("tiny", "cpu", "gpu")] == ["tiny", "cpu", "gpu"]
    assert seen["tiny"]["dims"] == [64]
    assert seen["cpu"]["dims"] == [1024, 4096] and seen["gpu"]["dims"] == [1024, 4096, 8192, 16384]
    _refused(_cli("list", "gpt_fast", env=_env(HARNESS_GPT_FAST_SIZE="huge")),
             "HARNESS_GPT_FAST_SIZE='huge': use one of auto, tiny, cpu, gpu (unset: auto)")


# -- set-up -----------------------------------------------------------------------------------
def test_setup_python(tmp_path: Path):
    """scripts/setup.sh makes .venv with $PYTHON (else python3) when there is none: a copy of it, run against
    a stand-in interpreter that records its call and fails, so nothing is installed."""
    repo = tmp_path / "repo"
    (repo / "scripts").mkdir(parents=True)
    shutil.copy(ROOT / "scripts" / "setup.sh", repo / "scripts" / "setup.sh")
    calls = tmp_path / "calls.log"
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for name in ("my-python", "python3"):
        (bin_dir / name).write_text(f'#!/bin/sh\necho "{name} $* in $(pwd)" >> {calls}\nexit 7\n')
        (bin_dir / name).chmod(0o755)

    def setup(**changes: str | None) -> str:
        calls.unlink(missing_ok=True)
        env = _env(PATH=f"{bin_dir}{os.pathsep}{os.environ['PATH']}", **changes)
        r = subprocess.run(["bash", str(repo / "scripts" / "setup.sh")], env=env, capture_output=True, text=True,
                           timeout=60)
        assert r.returncode == 7, r.stdout + r.stderr  # set -e: the stand-in's failure ends it
        return calls.read_text()

    venv = f"-m venv --system-site-packages .venv in {repo}\n"
    assert setup(PYTHON=str(bin_dir / "my-python")) == "my-python " + venv
    assert setup(PYTHON=None) == "python3 " + venv
    assert setup(PYTHON="") == "python3 " + venv
    # With a .venv there already, $PYTHON is not run: the .venv's own interpreter is.
    (repo / ".venv" / "bin").mkdir(parents=True)
    shutil.copy(bin_dir / "my-python", repo / ".venv" / "bin" / "python")
    ran = setup(PYTHON=str(bin_dir / "python3")).splitlines()
    assert ran[0] == f"my-python -c import torch in {repo}" and all(x.startswith("my-python ") for x in ran)
