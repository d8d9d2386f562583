"""Runs the fenced examples of README.md and docs/*.md under pytest, through Sybil.

- ``python`` blocks run in this process, one namespace per page (a page's
  blocks build on each other); blocks written as ``>>>`` sessions have their
  output compared (doctest, with ``...`` and whitespace folded).
- ``bash`` blocks run with ``bash -euo pipefail``; ``console`` blocks hold
  ``$ command`` lines followed by the output they print, which is compared
  the same way. Both fail on a non-zero exit status (end a command with
  ``|| true`` to show a failing one).
- Each page runs in a temporary folder of its own (a page's files cannot
  meet another page's: two pages may both write ``expected.csv``), with one
  harness cache for the session (its C++ runtime is built once) and the small
  sizes the docs offer (``HARNESS_GPT_FAST_SIZE=tiny``): a page's examples
  cannot read or write the user's cache or files. The folder links the
  checkout's ``benchmarks/``, ``examples/`` and ``.venv/``, so commands read
  as they would from the project root, and ``python`` on the PATH is the
  interpreter running the tests.
- A block that cannot run here carries Sybil's visible marker with its reason,
  ``<!-- skip: next "why" -->``, on the line before it; one that needs an
  optional part says so with a condition,
  ``<!-- skip: next if(ray_missing, reason="...") -->``.
- A page's examples run in its order, in one process, however they are
  selected (one page, several, with or without tests/, any ``-n``): the root
  conftest.py puts them all in one xdist group (``GROUP``), so a skip marker
  and the state a block leaves reach the blocks after it.
- No example waits for ever: each has ``HARNESS_TEST_EXAMPLE_TIMEOUT`` seconds
  (default ``BLOCK_TIMEOUT_S``); past it, a bash or console block's whole
  process group is killed and a python block is interrupted (SIGALRM), and the
  test fails with "example at docs/PAGE.md:LINE ran past N s".
"""

from __future__ import annotations

import atexit
import doctest
import importlib.util
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from sybil import Example, Region, Sybil
from sybil.parsers.markdown import CodeBlockParser, PythonCodeBlockParser, SkipParser

ROOT = Path(__file__).resolve().parents[1]
PAGES = ("README.md", "docs/*.md")
LINKED = ("benchmarks", "examples", ".venv")
BLOCK_TIMEOUT_S = 900
TIMEOUT_ENV = "HARNESS_TEST_EXAMPLE_TIMEOUT"
GROUP = "docs"  # the xdist group of every page's examples (tests/parallel.py shares it)
FLAGS = doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE


class DocFolder:
    """The session's temporary folder and harness cache, made on first use, removed at exit; a folder per page in it."""

    def __init__(self) -> None:
        self.path = Path(tempfile.mkdtemp(prefix="harness-docs-"))
        self.cache = self.path / ".cache-harness"
        self.env = {
            "HARNESS_CACHE_DIR": str(self.cache),
            "HARNESS_GPT_FAST_SIZE": "tiny",
            # Tables fit a wide page, whatever terminal runs the tests.
            "COLUMNS": "120",
        }
        atexit.register(shutil.rmtree, self.path, True)

    def page(self, path: str | Path) -> Path:
        """The working folder of the page at ``path``, made (with the checkout's links) on first use."""
        page = Path(path).resolve()
        name = str(page.relative_to(ROOT) if page.is_relative_to(ROOT) else page.name).replace(os.sep, "__")
        where = self.path / name
        if not where.exists():
            where.mkdir()
            for linked in LINKED:
                if (ROOT / linked).exists():
                    (where / linked).symlink_to(ROOT / linked)
        return where

    def subprocess_env(self) -> dict[str, str]:
        env = {**os.environ, **self.env}
        env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
        env.pop("PYTEST_CURRENT_TEST", None)
        return env


_FOLDER: DocFolder | None = None


def folder() -> DocFolder:
    global _FOLDER
    if _FOLDER is None:
        _FOLDER = DocFolder()
    return _FOLDER


def _forget_cache_root() -> None:
    # The C++ toolchain remembers its cache directory for the process's life.
    from harness.measure.cpp.toolchain import toolchain

    toolchain.cache_clear()


def enter(namespace: dict[str, Any]) -> None:
    """Before a page's first example: its Python blocks run in the folder, with its environment."""
    f = folder()
    namespace["_saved"] = (os.getcwd(), {k: os.environ.get(k) for k in f.env})
    os.environ.update(f.env)
    _forget_cache_root()
    # For conditional markers: <!-- skip: next if(ray_missing, reason="...") -->
    namespace["ray_missing"] = importlib.util.find_spec("ray") is None


def leave(namespace: dict[str, Any]) -> None:
    cwd, saved = namespace.pop("_saved")
    os.chdir(cwd)
    for key, value in saved.items():
        if value is None:
            os.environ.pop(key, None)
        else:
            os.environ[key] = value
    _forget_cache_root()


def time_limit() -> float:
    """Seconds an example may run: ``HARNESS_TEST_EXAMPLE_TIMEOUT``, else ``BLOCK_TIMEOUT_S``."""
    return float(os.environ.get(TIMEOUT_ENV) or BLOCK_TIMEOUT_S)


class ExampleTimeout(Exception):
    """An example ran past its time limit."""


def where(example: Example) -> str:
    path = Path(example.path)
    return f"{path.relative_to(ROOT) if path.is_relative_to(ROOT) else path}:{example.line}"


def past_limit(example: Example, limit: float) -> str:
    return f"example at {where(example)} ran past {limit:g} s"


def _run(command: str, cwd: Path, merged: bool = False) -> subprocess.CompletedProcess[str]:
    """``merged``: stderr into stdout, unbuffered, so the output reads in the order a terminal shows it.

    The command runs in a session of its own: past the time limit the whole session (a ``ray
    start`` the block started, say) is killed, and ``subprocess.TimeoutExpired`` raised."""
    f = folder()
    env = f.subprocess_env()
    if merged:
        env["PYTHONUNBUFFERED"] = "1"
    limit = time_limit()
    with subprocess.Popen(["bash", "-euo", "pipefail", "-c", command], cwd=cwd, env=env, text=True,
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT if merged else subprocess.PIPE,
                          start_new_session=True) as proc:
        try:
            out, err = proc.communicate(timeout=limit)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.communicate()
            raise
    return subprocess.CompletedProcess(proc.args, proc.returncode, out, err)


def _failure(command: str, r: subprocess.CompletedProcess[str]) -> str:
    return (f"exit status {r.returncode} from:\n{command}\n--- stdout (end) ---\n{r.stdout[-4000:]}"
            f"\n--- stderr (end) ---\n{(r.stderr or '')[-4000:]}")


def run_bash(example: Example) -> str | None:
    command = str(example.parsed)
    try:
        r = _run(command, folder().page(example.path))
    except subprocess.TimeoutExpired as e:
        return past_limit(example, float(e.timeout))
    return None if r.returncode == 0 else _failure(command, r)


def console_steps(text: str) -> list[tuple[str, str]]:
    """``$ command`` lines (continued with a trailing backslash) and the output under each."""
    steps: list[tuple[str, str]] = []
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        if not lines[i].startswith("$ "):
            raise ValueError(f"console block line {i + 1} is not a '$ ' command: {lines[i]!r}")
        command = [lines[i][2:]]
        while command[-1].endswith("\\") and i + 1 < len(lines):
            i += 1
            command.append(lines[i])
        i += 1
        start = i
        while i < len(lines) and not lines[i].startswith("$ "):
            i += 1
        steps.append(("\n".join(command), "\n".join(lines[start:i]) + "\n"))
    return steps


def run_console(example: Example) -> str | None:
    checker = doctest.OutputChecker()
    for command, expected in console_steps(str(example.parsed)):
        try:
            r = _run(command, folder().page(example.path), merged=True)
        except subprocess.TimeoutExpired as e:
            return f"{past_limit(example, float(e.timeout))} (at $ {command})"
        if r.returncode != 0:
            return _failure(command, r)
        got = r.stdout
        if not checker.check_output(expected, got, FLAGS):
            return f"$ {command}\n--- expected ---\n{expected}--- got ---\n{got}"
    return None


def within_limit(evaluator: Callable[[Example], str | None]) -> Callable[[Example], str | None]:
    """``evaluator`` in its page's folder, interrupted by SIGALRM past the time limit: for python blocks, which run
    in this process."""

    def evaluate(example: Example) -> str | None:
        os.chdir(folder().page(example.path))
        limit = time_limit()

        def expire(signum: int, frame: Any) -> None:
            raise ExampleTimeout(past_limit(example, limit))

        previous = signal.signal(signal.SIGALRM, expire)
        signal.setitimer(signal.ITIMER_REAL, limit)
        try:
            return evaluator(example)
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)
            signal.signal(signal.SIGALRM, previous)

    return evaluate


class LimitedPython(PythonCodeBlockParser):
    """Python blocks, each run within the time limit."""

    def __call__(self, document: Any) -> Iterator[Region]:
        for region in super().__call__(document):
            if region.evaluator is not None:
                region.evaluator = within_limit(region.evaluator)
            yield region


def sybil(path: Path = ROOT, patterns: tuple[str, ...] = PAGES) -> Sybil:
    """The examples of ``patterns`` under ``path`` (this checkout's pages; a test's own page)."""
    return Sybil(
        parsers=[
            LimitedPython(doctest_optionflags=FLAGS),
            CodeBlockParser("bash", run_bash),
            CodeBlockParser("console", run_console),
            SkipParser(),
        ],
        patterns=list(patterns),
        path=str(path),
        setup=enter,
        teardown=leave,
    )


def fenced_blocks(text: str) -> list[tuple[int, str]]:
    """(line, language) of every fenced block of a page, for the tests that count them."""
    return [(text[: m.start()].count("\n") + 1, m.group(1))
            for m in re.finditer(r"^[ \t]*```(\w*)[^\n]*\n", text, re.M)][::2]
