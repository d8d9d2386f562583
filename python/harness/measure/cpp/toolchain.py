"""The C++ toolchain statements are built with: compiler, flags, torch, and the key that names them.

Everything a compiled statement depends on besides its own code (the torch
version and headers, the compiler and its version, the flags, harness's
statement runtime headers) goes into ``Toolchain.key``; each toolchain gets
its own directory of the cache, so a change of any of them never loads a
stale module.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import hashlib
import importlib.util
import json
import re
import subprocess
import sysconfig
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from harness.errors import BuildError
from harness.files.cache import cache_dir, ensure_private_dir
from harness.options import CXX_ENV, env

OPT_FLAGS = ("-O2", "-DNDEBUG")  # what torch's C++ Timer uses, minus -g
# The coroutine frame of a statement holds its lambdas, whose types have no
# linkage; g++ warns about that for every statement.
WARNING_FLAGS = ("-Wno-subobject-linkage",)

PACKAGE_DIR = Path(__file__).resolve().parents[2]
_REPO_CSRC = PACKAGE_DIR.parents[1] / "csrc"


def include_dirs() -> list[Path]:
    """The core's headers and the statement runtime: from the source tree, else installed beside the package."""
    for include, runtime in (
        (_REPO_CSRC / "include", _REPO_CSRC / "stmt"),
        (PACKAGE_DIR / "include", PACKAGE_DIR / "include"),
    ):
        if (include / "harness" / "runner.h").is_file() and (runtime / "harness" / "stmt.h").is_file():
            return [include, runtime] if include != runtime else [include]
    raise BuildError(
        "the harness C++ headers (harness/runner.h, harness/stmt.h) are missing; "
        "reinstall harness with `pip install --no-build-isolation .`"
    )


def _output(cmd: Sequence[str], timeout: float) -> tuple[int, str]:
    """``cmd``'s exit status and standard output, read from a file once it has exited.

    Not through a pipe: a pipe's reader gets the output in as many pieces as
    it happened to arrive in, and a callgrind worker asks these questions
    before it forks the zygote every count starts from (``run.worker``), so
    the pieces would become a heap that differs from worker to worker.
    """
    with tempfile.TemporaryFile() as out:
        proc = subprocess.run(list(cmd), stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.DEVNULL,
                              timeout=timeout)
        out.seek(0)
        return proc.returncode, out.read().decode("utf-8", "replace")


def _run(cmd: Sequence[str]) -> str:
    try:
        code, out = _output(cmd, 60)
    except (OSError, subprocess.SubprocessError) as exc:
        raise BuildError(f"cannot run {' '.join(cmd)}: {exc}") from None
    if code != 0:
        raise BuildError(f"cannot run {' '.join(cmd)}: it exited with status {code}")
    return out


@dataclasses.dataclass(frozen=True)
class Toolchain:
    cxx: str
    version: str  # first line of --version
    gcc_major: int | None  # None when not GCC
    torch_version: str
    torch_include: str
    ext_suffix: str
    extra_cflags: tuple[str, ...]
    extra_ldflags: tuple[str, ...]
    header_digest: str

    @functools.cached_property
    def key(self) -> str:
        # Not CODEGEN_VERSION: it is in every statement's key, and a new
        # codegen must not cost a new 750 MB PCH.
        data = json.dumps(dataclasses.asdict(self), sort_keys=True)
        return hashlib.sha256(data.encode()).hexdigest()[:16]

    @property
    def root(self) -> Path:
        return ensure_private_dir(cache_dir("cpp") / self.key)


def _fast_linker(cxx: str) -> list[str]:
    """gold links a statement module against libtorch in about half the time of ld.bfd, when present."""
    try:
        code, out = _output([cxx, "-fuse-ld=gold", "-Wl,--version"], 30)
    except (OSError, subprocess.SubprocessError):
        return []
    return ["-fuse-ld=gold"] if code == 0 and "gold" in out.lower() else []


_VERSION_LINE = re.compile(r"""^__version__\s*=\s*['"]([^'"]+)['"]\s*$""", re.MULTILINE)


def _torch_install() -> tuple[str, str]:
    """torch's version and its C++ include directory, read from its files: what ``torch.__version__`` and
    ``torch.__file__`` say, without ``import torch`` (1-1.6 s a process, most of what a client that counts
    a new C++ statement with a warm worker would otherwise spend besides the compiler).

    torch's own ``torch/version.py`` is the file ``torch.__version__`` comes from; where it cannot be read
    (a source checkout, an unusual install), torch is imported.
    """
    spec = importlib.util.find_spec("torch")
    if spec is not None and spec.origin:
        root = Path(spec.origin).resolve().parent
        with contextlib.suppress(OSError):
            if m := _VERSION_LINE.search((root / "version.py").read_text(encoding="utf-8")):
                return m.group(1), str(root / "include")
    import torch

    return str(torch.__version__), str(Path(torch.__file__).resolve().parent / "include")


@functools.cache
def toolchain() -> Toolchain:
    # cpp_extension's own rules (get_cxx_compiler, include_paths()[0]), without
    # importing it: it imports setuptools, most of a cached statement's cost.
    chosen = env(CXX_ENV)
    if chosen == "":
        # cpp_extension would run "" as the compiler, while "or" here would say c++.
        raise BuildError(f"{CXX_ENV} is set but empty: name a C++ compiler (g++ >= 10 or clang++), "
                         "or unset it for c++")
    cxx = chosen or "c++"
    torch_version, torch_include = _torch_install()
    try:
        version = (_run([cxx, "--version"]).splitlines() or [""])[0].strip()
    except BuildError as exc:
        source = f"{CXX_ENV}={cxx!r}" if chosen else f"{CXX_ENV} unset, so {cxx!r}"
        raise BuildError(f"{source}: cannot run it as the C++ compiler of statements ({exc}); "
                         f"set {CXX_ENV} to g++ >= 10 or clang++") from exc
    gcc_major: int | None = None
    if "clang" not in version.lower():
        with contextlib.suppress(ValueError):
            gcc_major = int(_run([cxx, "-dumpversion"]).strip().split(".")[0])
    if gcc_major is not None and gcc_major < 10:
        raise BuildError(f"C++ statements need g++ >= 10 (C++20 coroutines); {cxx} is {version}")
    extra = [*OPT_FLAGS, "-std=c++20", *WARNING_FLAGS]
    if gcc_major == 10:
        extra.append("-fcoroutines")
    digest = hashlib.sha256()
    for d in include_dirs():
        # The headers and the runtime's source (measure.cpp.runtime) alike.
        for header in sorted([*d.rglob("*.h"), *d.rglob("*.cpp")]):
            digest.update(header.name.encode())
            digest.update(header.read_bytes())
    return Toolchain(
        cxx=cxx,
        version=version,
        gcc_major=gcc_major,
        torch_version=torch_version,
        torch_include=torch_include,
        ext_suffix=sysconfig.get_config_var("EXT_SUFFIX") or ".so",
        extra_cflags=tuple(extra),
        extra_ldflags=tuple(_fast_linker(cxx)),
        header_digest=digest.hexdigest()[:16],
    )


def load_extension(name: str, sources: Sequence[str], build_dir: Path, cflags: Sequence[str],
                   python_module: bool) -> Any:
    """Compile ``sources`` with torch.utils.cpp_extension into ``build_dir`` and load the result.

    The caller holds ``build_dir``'s lock, so a baton or half-written
    build.ninja left there by a killed build is stale (cpp_extension would
    wait on it for ever) and is removed first.
    """
    from torch.utils import cpp_extension

    for stale in ("lock", "build.ninja"):
        with contextlib.suppress(FileNotFoundError):
            (build_dir / stale).unlink()
    tc = toolchain()
    return cpp_extension.load(
        name=name,
        sources=list(sources),
        extra_cflags=list(cflags),
        extra_ldflags=list(tc.extra_ldflags),
        extra_include_paths=[str(p) for p in include_dirs()],
        build_directory=str(build_dir),
        verbose=False,
        is_python_module=python_module,
    )
