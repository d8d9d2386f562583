"""How the test suite shares this machine's cores between two pytest-xdist workers.

pyproject.toml runs the suite with ``-n 2 --dist loadgroup`` (``-n 0`` runs it in one
process, as before). Most of the suite's time is one-core work in other processes (a
valgrind'ed worker, a compile, a Ray node starting), so two workers nearly halve it. Three
rules keep that safe and short:

- **A file is one unit of work** (its xdist group), so a module's fixtures are built once.
  Files that share an expensive session fixture, or a service that two copies of would
  fight over (a local Ray), form one group; so do the pages whose examples run
  (README.md, docs/), which share one folder and harness cache per process
  (tests/doc_examples.py): in one worker the cache's C++ runtime and PCH are built once.
- **The slowest groups start first** (``SLOWEST``, longest first), so the run does not
  end with one long file alone on one core.
- **A test marked ``alone`` runs with nothing beside it**: every test holds a shared lock
  for its whole protocol (setup, call, teardown), a test marked ``alone`` holds it
  exclusively. Such a test times something, or damages a cache the other tests use.
  A turnstile lock in front keeps the exclusive one from starving while tests keep coming.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from doc_examples import GROUP as DOC_GROUP

# Files whose tests share an expensive session fixture, or a service: one group each.
SHARED_GROUPS = {
    "tests/present/test_layer_table.py": "layers_run",
    "tests/measure/callgrind/test_layers_torch.py": "layers_run",
    "tests/csrc/test_core_cpp.py": "core_build",
    "tests/csrc/test_cpp_embed.py": "core_build",
    "tests/cluster/test_ray_executor.py": "ray",
    "tests/cluster/test_ray_cluster.py": "ray",
    "tests/history/test_cache_figures.py": "cache_runs",
    "tests/present/test_cache_report.py": "cache_runs",
    "tests/present/test_markdown.py": "cache_runs",
}

# Groups longest first, from the files' own measured costs (their docstrings) on the 2-core VM;
# groups not named here follow in collection order. Rerun `pytest -n 0 --durations=0` to refresh.
SLOWEST = (
    "ray",
    "tests/measure/cpp/test_cpp_include_sets.py",
    "tests/measure/cpp/test_cpp_cache_damage.py",
    "tests/measure/callgrind/test_count_purity.py",
    "tests/measure/cpp/test_cpp_statements.py",
    "tests/test_ab_runs.py",
    "tests/workers/test_kept_worker.py",
    "core_build",
    "docs",
    "tests/measure/callgrind/test_callgrind_runs.py",
    "cache_runs",
    "tests/suites/compile_time/test_compile_time_callgrind.py",
    "layers_run",
    "tests/test_environment_settings.py",
    "tests/measure/test_torch_contract.py",
    "tests/measure/cpp/test_cpp_batch_isolation.py",
    "tests/measure/cpp/test_cpp_pch_off.py",
    "tests/records/test_interruption.py",
)


def group_of(item: pytest.Item, root: Path) -> str:
    """The xdist group of a test: its file's, or the shared group its file belongs to."""
    try:
        path = item.path.resolve().relative_to(root).as_posix()
    except ValueError:
        path = str(item.path)
    if path.endswith(".md"):
        return DOC_GROUP
    return SHARED_GROUPS.get(path, path)


def assign_groups(items: list[pytest.Item], root: Path) -> None:
    """Mark every test with its group and put the slowest groups first (stable otherwise)."""
    rank = {name: i for i, name in enumerate(SLOWEST)}
    for item in items:
        item.add_marker(pytest.mark.xdist_group(group_of(item, root)))
    items.sort(key=lambda item: rank.get(group_of(item, root), len(rank)))


@contextlib.contextmanager
def machine_share(directory: Path, alone: bool) -> Iterator[None]:
    """Hold the machine shared, or alone, for the length of the block."""
    turnstile = os.open(directory / "harness-tests.turnstile", os.O_RDWR | os.O_CREAT, 0o600)
    share = os.open(directory / "harness-tests.share", os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(turnstile, fcntl.LOCK_EX)
        try:
            fcntl.flock(share, fcntl.LOCK_EX if alone else fcntl.LOCK_SH)
        finally:
            fcntl.flock(turnstile, fcntl.LOCK_UN)
        yield
    finally:
        os.close(share)  # closing drops the lock
        os.close(turnstile)
