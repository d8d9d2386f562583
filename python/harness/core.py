"""Loads the C++ core ``harness._C``: the installed build, else a cached JIT build.

A source checkout on PYTHONPATH has no compiled ``_C``; then the same sources
the CMake build uses are compiled once with ``torch.utils.cpp_extension``
into the per-user cache (keyed by the sources' content and the toolchain), and
later imports load that build without invoking the compiler.
"""

from __future__ import annotations

import hashlib
import importlib.machinery
import importlib.util
import shutil
import sys
import sysconfig
from pathlib import Path
from types import ModuleType

from harness.errors import BuildError
from harness.files.cache import cache_dir, truncated_library
from harness.options import CXX_ENV, env

_REPO_ROOT = Path(__file__).resolve().parents[2]
CSRC = _REPO_ROOT / "csrc"
CORE_SOURCES = ("core/clock.cpp", "core/stats.cpp", "core/runner.cpp", "core/callgrind.cpp", "core/perf_counter.cpp")
BINDING_SOURCES = ("python/bindings.cpp",)


def _source_key() -> str:
    h = hashlib.sha256()
    for rel in (*CORE_SOURCES, *BINDING_SOURCES):
        h.update(rel.encode())
        h.update((CSRC / rel).read_bytes())
    for header in sorted((CSRC / "include").rglob("*.h")):
        h.update(header.read_bytes())
    import torch

    h.update(torch.__version__.encode())
    h.update(sys.version.encode())
    h.update(sysconfig.get_config_var("EXT_SUFFIX").encode())
    h.update((env(CXX_ENV) or "c++").encode())
    return h.hexdigest()[:16]


def _import_from(path: Path) -> ModuleType:
    loader = importlib.machinery.ExtensionFileLoader("harness._C", str(path))
    spec = importlib.util.spec_from_file_location("harness._C", path, loader=loader)
    assert spec is not None
    module = importlib.util.module_from_spec(spec)
    loader.exec_module(module)
    sys.modules["harness._C"] = module
    return module


def jit_build() -> ModuleType:
    """Build (or reuse) the core from ``csrc/`` in the cache and import it."""
    if not (CSRC / BINDING_SOURCES[0]).exists():
        raise BuildError(
            "harness._C is not installed and the C++ sources are not beside the package; "
            "reinstall with `pip install --no-build-isolation .`"
        )
    build_dir = cache_dir("core") / _source_key()
    build_dir.mkdir(exist_ok=True, mode=0o700)
    built = sorted(build_dir.glob("_C*.so"))
    if built:
        why = truncated_library(built[0])
        if why is None:
            try:
                return _import_from(built[0])
            except ImportError as exc:
                why = str(exc)
        # Cut short by a full disk or a killed build: build it again.
        print(f"harness: the cached C++ core {built[0]} is damaged ({why}); rebuilding it", file=sys.stderr)
        shutil.rmtree(build_dir, ignore_errors=True)
        build_dir.mkdir(mode=0o700)
    print(f"harness: building the C++ core into {build_dir} (once; later runs reuse it)", file=sys.stderr)
    from torch.utils import cpp_extension

    try:
        module = cpp_extension.load(
            name="_C",
            sources=[str(CSRC / s) for s in (*CORE_SOURCES, *BINDING_SOURCES)],
            extra_include_paths=[str(CSRC / "include"), str(CSRC / "third_party")],
            extra_cflags=["-O2", "-std=c++17"],
            build_directory=str(build_dir),
            verbose=False,
        )
    except Exception as exc:  # the compiler's output is in exc; keep it
        raise BuildError(f"building the harness C++ core failed:\n{exc}") from exc
    # cpp_extension imported it as top-level `_C`; a second import of the same
    # pybind11 module would register its types twice, so alias this one.
    sys.modules.pop("_C", None)
    sys.modules["harness._C"] = module
    return module


def load() -> ModuleType:
    try:
        # By its full name: `from harness import _C` would import the package face, the top floor.
        return importlib.import_module("harness._C")
    except ImportError:
        return jit_build()


_native: ModuleType | None = None


def native() -> ModuleType:
    """The loaded core (loaded on first use, so `import harness` stays cheap)."""
    global _native
    if _native is None:
        _native = load()
    return _native
