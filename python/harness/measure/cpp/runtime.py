"""The statement runtime: one Python extension per toolchain that loads statement modules.

Statement modules are plain shared libraries without Python's headers (see
``harness/stmt.h``); ``harness/stmt_runtime.cpp`` is the code that gives
Python their keys, setup, samplers and probes. It is compiled once per
toolchain (its source is part of the toolchain key) into
``<toolchain>/runtime/``, by the first build that needs it or by set-up
(``python -m harness.measure.cpp.pch --prepare``), and rebuilt when the file
there does not load (a damaged or half-written cache).
"""

from __future__ import annotations

import fcntl
import importlib.machinery
import importlib.util
import os
import shutil
import sys
import threading
import time
from pathlib import Path
from types import ModuleType
from typing import Any

from harness.errors import BuildError
from harness.files.cache import ensure_private_dir, truncated_library
from harness.measure.cpp.log import log_event
from harness.measure.cpp.toolchain import include_dirs, load_extension, toolchain

RUNTIME_SOURCE = "stmt_runtime.cpp"

_RUNTIME: ModuleType | None = None
_LOCK = threading.Lock()


def runtime_source() -> Path:
    for d in include_dirs():
        path = d / "harness" / RUNTIME_SOURCE
        if path.is_file():
            return path
    raise BuildError(f"the harness statement runtime (harness/{RUNTIME_SOURCE}) is missing; reinstall harness")


def runtime_dir() -> Path:
    return ensure_private_dir(toolchain().root / "runtime")


def _name() -> str:
    return f"hstmt_runtime_{toolchain().key}"


# Libraries are loaded through /proc/self/fd/NNN, an fd of at least this number held open.
_FIRST_HELD_FD = 100
_HELD_FDS: list[int] = []


def fixed_length_path(path: Path) -> str:
    """A name for the library at ``path`` whose length does not depend on ``path``: ``/proc/self/fd/NNN``.

    The dynamic loader copies the name it is given into memory it allocates
    (the library's link map), in the thread that loads it; a counting child
    loads a statement on the thread that runs it, so the length of the cache
    directory's path moved the heap under the count: the same C++ statement
    counted 553,473 against 557,309 instructions with ``HARNESS_CACHE_DIR``
    of another length. The fd stays open (the loader keeps the name, and a
    second library must get a name of its own); where no three-digit fd is
    free, the path itself.
    """
    fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    try:
        held = fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, _FIRST_HELD_FD)
    finally:
        os.close(fd)
    if held > 999:
        os.close(held)
        return str(path)
    _HELD_FDS.append(held)
    return f"/proc/self/fd/{held}"


def _import(name: str, so: Path) -> ModuleType:
    loader = importlib.machinery.ExtensionFileLoader(name, fixed_length_path(so))
    spec = importlib.util.spec_from_file_location(name, loader.path, loader=loader)
    assert spec is not None
    module = importlib.util.module_from_spec(spec)
    loader.exec_module(module)
    return module


def _compile(name: str, build_dir: Path) -> ModuleType:
    t0 = time.monotonic()
    try:
        module = load_extension(name, [str(runtime_source())], build_dir, toolchain().extra_cflags, python_module=True)
    except Exception as exc:  # cpp_extension raises RuntimeError carrying ninja's output
        raise BuildError(f"the harness C++ statement runtime does not build:\n{str(exc)[-4000:]}") from None
    sys.modules.pop(name, None)
    log_event("runtime_built", seconds=round(time.monotonic() - t0, 2))
    return module


def runtime_built() -> bool:
    """Whether this toolchain's runtime is built (it may be loaded later, without building)."""
    so = runtime_dir() / f"{_name()}.so"
    return _RUNTIME is not None or (so.exists() and truncated_library(so) is None)


def runtime() -> ModuleType:
    """The loaded runtime, built first if this toolchain has none (or a damaged one)."""
    global _RUNTIME
    with _LOCK:
        if _RUNTIME is not None:
            return _RUNTIME
        # The runtime links torch's libraries, which only torch's import puts where the loader finds
        # them; without it a good runtime would not load and be taken for a damaged one.
        import torch  # noqa: F401
        name = _name()
        build_dir = runtime_dir()
        so = build_dir / f"{name}.so"  # cpp_extension names it so, whatever the Python
        with open(build_dir.parent / "runtime.lock", "a") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            try:
                if so.exists():
                    # Checked before loading: a library cut short further on dies of SIGBUS, not ImportError.
                    why = truncated_library(so)
                    if why is None:
                        try:
                            _RUNTIME = _import(name, so)
                            return _RUNTIME
                        except ImportError as exc:
                            why = f"it does not load: {exc}"
                    print(f"harness: the cached C++ statement runtime {so} is damaged ({why}); rebuilding it",
                          file=sys.stderr)
                    log_event("runtime_damaged", error=why[:500])
                    shutil.rmtree(build_dir, ignore_errors=True)
                    build_dir = runtime_dir()
                _RUNTIME = _compile(name, build_dir)
                return _RUNTIME
            finally:
                fcntl.flock(lock, fcntl.LOCK_UN)


class StatementModule:
    """A loaded module of compiled statements, addressed by index."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.name = path.stem
        self._rt = runtime()
        name = fixed_length_path(path)
        try:
            self._handle = self._rt.open(name)
        except ImportError as exc:
            raise BuildError(str(exc).replace(name, str(path))) from None
        keys, pch_used, include_set = self._rt.describe(self._handle)
        self.keys: tuple[str, ...] = keys
        self.pch_used: bool = pch_used
        self.include_set: str = include_set

    def prepare(self, index: int) -> None:
        self._rt.prepare(self._handle, index)

    def reset(self, index: int) -> None:
        self._rt.reset(self._handle, index)

    def ready(self, index: int) -> bool:
        return bool(self._rt.ready(self._handle, index))

    def sampler(self, index: int) -> Any:
        return self._rt.sampler(self._handle, index)

    def probe(self, index: int) -> list[Any]:
        return list(self._rt.probe(self._handle, index))
