"""Builds C++ statements into native modules: codegen, content-addressed cache, PCH, batches.

Why it is shaped like this: compiling one translation unit that includes
``<torch/torch.h>`` costs 20-35 s of CPU, and torch's own C++ Timer pays it for
every statement. Here

- every statement is cached by content (stmt, setup, global_setup,
  batch_setup, probe names) under a *toolchain key* (torch version and
  headers, compiler and its version, flags, this runtime's headers), so a
  statement compiled once is reused by every later process;
- all statements asked for together (a suite, a GroupedStmts expansion) go
  into one module with one function per statement: one compile, one link;
- the torch headers are precompiled once (a g++ ``.gch``) with exactly the
  flags that ``torch.utils.cpp_extension`` passes, read from the
  ``build.ninja`` it writes. The first build does not wait for it: the PCH is
  compiled in a background process while the first module compiles without
  it. ``wait_for_pch()`` lets a caller that is about to measure wait for it.

Each module records whether its translation units really used the PCH
(``module.pch_used``): the ``.gch`` is built from a header that defines
``HARNESS_STMT_PCH 1`` while the header the compiler falls back to defines
``0``, so a PCH that g++ rejects (flags differ) is detected, logged, and
rebuilt with the right flags.

Compile errors are reported against the user's code: ``#line`` directives name
each section (``stmt~3``, ``setup~3``, ...), so g++ reports ``stmt~3:2:7``;
the owner (statement 3) is taken from the file name and the message rewritten
to ``stmt:2:7`` with the offending line quoted. A statement whose brackets
do not balance is rejected before it reaches a batch (``cpp_balance``): its
errors can land in the code of the statements after it. When a batch fails,
the statements named in errors are recorded as failed (in the cache too, keyed
by their content, for an hour) unless another statement's code may have caused
their errors (see ``trusted_failures``); those are rebuilt with the rest, and
failures that name no statement are isolated by bisection.

Counters: ``STATS`` (this process) and ``build.log`` beside the cache (JSON
lines, every process) record hits, misses, builds and PCH use.
"""

from __future__ import annotations

import contextlib
import dataclasses
import fcntl
import functools
import hashlib
import importlib.machinery
import importlib.util
import json
import os
import re
import shlex
import subprocess
import sys
import sysconfig
import textwrap
import threading
import time
from collections import Counter
from collections.abc import Iterator, Sequence
from pathlib import Path
from types import ModuleType
from typing import Any

from . import cpp_balance
from .atomic import atomic_write_text
from .cache import cache_dir, ensure_private_dir
from .errors import BuildError, StatementError

# Bump when the generated code or the runtime's contract changes.
CODEGEN_VERSION = "2"
OPT_FLAGS = ("-O2", "-DNDEBUG")  # what torch's C++ Timer uses, minus -g
# The coroutine frame of a statement holds its lambdas, whose types have no
# linkage; g++ warns about that for every statement.
WARNING_FLAGS = ("-Wno-subobject-linkage",)
PCH_HEADER = "harness_stmt_pch.h"
MAX_ERROR_CHARS = 6000
FAILURE_TTL_S = 3600.0  # how long a statement's compile error is trusted without recompiling

STATS: Counter[str] = Counter()  # hits, misses, builds, failed_builds, pch_builds_started, pch_used_builds
_LOADED: dict[str, ModuleType] = {}
_LOCK = threading.RLock()

_PACKAGE_DIR = Path(__file__).resolve().parent
_REPO_CSRC = _PACKAGE_DIR.parents[1] / "csrc"


# --------------------------------------------------------------------------- statements


def normalize_cpp(code: str | None) -> str:
    """Dedent and strip; ``pass`` (Timer's default) means no code in C++."""
    text = textwrap.dedent(code or "").strip("\n")
    return "" if text.strip() == "pass" else text


@dataclasses.dataclass(frozen=True)
class CppStatement:
    """One C++ statement: what is compiled, and what a probe reports.

    ``output`` names the variable the probe returns (a signature's output);
    ``inputs`` name the variables whose ``.grad()`` the probe returns.
    """

    stmt: str
    setup: str = ""
    global_setup: str = ""
    batch_setup: str = ""
    output: str | None = None
    inputs: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        for name in ("stmt", "setup", "global_setup", "batch_setup"):
            object.__setattr__(self, name, normalize_cpp(getattr(self, name)))
        object.__setattr__(self, "inputs", tuple(self.inputs))

    @functools.cached_property
    def key(self) -> str:
        data = json.dumps(dataclasses.asdict(self), sort_keys=True)
        return hashlib.sha256(f"{CODEGEN_VERSION}\n{data}".encode()).hexdigest()[:24]

    @property
    def loops_over_batch(self) -> bool:
        return bool(re.search(r"\bbatch\b", self.batch_setup))

    def section(self, name: str) -> str:
        return getattr(self, name)


# --------------------------------------------------------------------------- toolchain


def include_dirs() -> list[Path]:
    """The core's headers and the statement runtime: from the source tree, else installed beside the package."""
    for include, runtime in (
        (_REPO_CSRC / "include", _REPO_CSRC / "stmt"),
        (_PACKAGE_DIR / "include", _PACKAGE_DIR / "include"),
    ):
        if (include / "harness" / "runner.h").is_file() and (runtime / "harness" / "stmt_runtime.h").is_file():
            return [include, runtime] if include != runtime else [include]
    raise BuildError(
        "the harness C++ headers (harness/runner.h, harness/stmt_runtime.h) are missing; "
        "reinstall harness with `pip install --no-build-isolation .`"
    )


def _run(cmd: Sequence[str]) -> str:
    try:
        return subprocess.run(list(cmd), capture_output=True, text=True, check=True, timeout=60).stdout
    except (OSError, subprocess.SubprocessError) as exc:
        raise BuildError(f"cannot run {' '.join(cmd)}: {exc}") from None


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
        out = subprocess.run([cxx, "-fuse-ld=gold", "-Wl,--version"], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.SubprocessError):
        return []
    return ["-fuse-ld=gold"] if out.returncode == 0 and "gold" in out.stdout.lower() else []


@functools.cache
def toolchain() -> Toolchain:
    import torch
    from torch.utils import cpp_extension

    cxx = cpp_extension.get_cxx_compiler()
    version = _run([cxx, "--version"]).splitlines()[0].strip()
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
        for header in sorted(d.rglob("*.h")):
            digest.update(header.name.encode())
            digest.update(header.read_bytes())
    return Toolchain(
        cxx=cxx,
        version=version,
        gcc_major=gcc_major,
        torch_version=torch.__version__,
        torch_include=cpp_extension.include_paths()[0],
        ext_suffix=sysconfig.get_config_var("EXT_SUFFIX") or ".so",
        extra_cflags=tuple(extra),
        extra_ldflags=tuple(_fast_linker(cxx)),
        header_digest=digest.hexdigest()[:16],
    )


# --------------------------------------------------------------------------- log


def log_path() -> Path:
    return toolchain().root / "build.log"


def _log(event: str, **fields: Any) -> None:
    STATS[event] += 1
    line = json.dumps({"time": round(time.time(), 3), "pid": os.getpid(), "event": event, **fields}) + "\n"
    # One write() of a short line with O_APPEND: lines from concurrent
    # processes never interleave.
    fd = os.open(log_path(), os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
    try:
        os.write(fd, line.encode())
    finally:
        os.close(fd)


def read_log() -> list[dict[str, Any]]:
    try:
        text = log_path().read_text()
    except FileNotFoundError:
        return []
    return [json.loads(line) for line in text.splitlines() if line.strip()]


# --------------------------------------------------------------------------- precompiled header


def pch_enabled() -> bool:
    return os.environ.get("HARNESS_CPP_PCH", "1") != "0" and toolchain().gcc_major is not None


def pch_dir() -> Path:
    return ensure_private_dir(toolchain().root / "pch")


def pch_header() -> Path:
    """The header every statement TU includes first; its ``.gch`` sits beside it."""
    d = pch_dir()
    header = d / PCH_HEADER
    if not header.exists():
        # What g++ reads when there is no usable .gch (HARNESS_STMT_PCH 0),
        # and what the .gch is built from (1).
        for name, used in ((PCH_HEADER, 0), ("pch_source.h", 1)):
            atomic_write_text(
                d / name,
                "// Generated by harness.cpp_build.\n"
                "#pragma once\n"
                f"#define HARNESS_STMT_PCH {used}\n"
                "// cpp_extension defines this; it would pull in pybind11 and torch/python.h,\n"
                "// which statements do not need (and which double the per-TU cost).\n"
                "#undef TORCH_API_INCLUDE_EXTENSION_H\n"
                '#include "harness/stmt_runtime.h"\n',
            )
    return header


def pch_file() -> Path:
    return pch_dir() / (PCH_HEADER + ".gch")


def _pch_lock_path() -> Path:
    return pch_dir() / "build.lock"


def pch_building() -> bool:
    """True while some process holds the PCH build lock."""
    with open(_pch_lock_path(), "a") as f:
        try:
            fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return True
        fcntl.flock(f, fcntl.LOCK_UN)
    return False


def wait_for_pch(timeout: float = 600.0) -> bool:
    """Block while a PCH build is running (so measurements do not compete with it); True if the PCH exists."""
    if not pch_enabled():
        return False
    deadline = time.monotonic() + timeout
    with open(_pch_lock_path(), "a") as f:
        while True:
            try:
                fcntl.flock(f, fcntl.LOCK_SH | fcntl.LOCK_NB)
                fcntl.flock(f, fcntl.LOCK_UN)
                break
            except BlockingIOError:
                if time.monotonic() > deadline:
                    break
                time.sleep(0.2)
    return pch_file().exists()


def _pch_command(cxx: str, cflags: list[str]) -> list[str]:
    """The module compile's flags, minus the per-module name and the -include of the PCH itself."""
    flags: list[str] = []
    skip = False
    for flag in cflags:
        if skip:
            skip = False
            continue
        if flag == "-include":
            skip = True
            continue
        if flag.startswith("-DTORCH_EXTENSION_NAME="):
            continue
        flags.append(flag)
    return [cxx, *flags, "-x", "c++-header", str(pch_dir() / "pch_source.h")]


def _start_pch_build(command: list[str]) -> None:
    """Build the PCH in a detached, lowest-priority process that outlives this one if need be."""
    d = pch_dir()
    if pch_file().exists():
        return
    failed = d / "failed.json"
    if failed.exists():
        with contextlib.suppress(ValueError, OSError):
            if json.loads(failed.read_text()).get("command") == command:
                return  # this exact command already failed; do not retry on every build
    # Take the build lock here and hand it to the builder (an flock belongs to
    # the open file, which the builder inherits): from this moment on
    # wait_for_pch() sees a build in progress, with no window before the
    # builder has started.
    fd = os.open(_pch_lock_path(), os.O_RDWR | os.O_CREAT, 0o600)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return  # another process is building it
        atomic_write_text(d / "command.json", json.dumps({"command": command}))
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(_PACKAGE_DIR.parent), env.get("PYTHONPATH")]))
        env["HARNESS_PCH_LOG"] = str(d / "pch_build.out")
        # `sh -c '... &'` exits at once and leaves the builder to init: it is
        # never our child, so it outlives us, leaves no zombie, and its CPU
        # time is not counted as ours.
        subprocess.run(
            ["sh", "-c", 'exec "$@" </dev/null >>"$HARNESS_PCH_LOG" 2>&1 &', "sh",
             sys.executable, "-m", "harness.cpp_build", "--build-pch", str(d), str(fd)],
            env=env,
            pass_fds=(fd,),
            start_new_session=True,
            check=True,
        )
    finally:
        os.close(fd)
    _log("pch_build_started")


def _build_pch_main(directory: str, lock_fd: int | None = None) -> int:
    """The background PCH builder (``python -m harness.cpp_build --build-pch DIR [LOCK_FD]``)."""
    d = Path(directory)
    if lock_fd is None:
        lock_fd = os.open(d / "build.lock", os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(lock_fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return 0
    try:
        gch = d / (PCH_HEADER + ".gch")
        if gch.exists():
            return 0
        command = json.loads((d / "command.json").read_text())["command"]
        # Lowest priority: the build that started it (and anything else) comes first.
        os.nice(19)
        tmp = d / f".{PCH_HEADER}.gch.{os.getpid()}.tmp"
        t0 = time.monotonic()
        proc = subprocess.run([*command, "-o", str(tmp)], capture_output=True, text=True)
        seconds = round(time.monotonic() - t0, 2)
        event: dict[str, Any] = {"time": round(time.time(), 3), "pid": os.getpid(), "seconds": seconds}
        if proc.returncode == 0 and tmp.exists():
            os.replace(tmp, gch)
            event["event"] = "pch_built"
            event["bytes"] = gch.stat().st_size
        else:
            with contextlib.suppress(FileNotFoundError):
                tmp.unlink()
            atomic_write_text(d / "failed.json", json.dumps({"command": command, "output": proc.stderr[-MAX_ERROR_CHARS:]}))
            event["event"] = "pch_failed"
        fd = os.open(d.parent / "build.log", os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        try:
            os.write(fd, (json.dumps(event) + "\n").encode())
        finally:
            os.close(fd)
        return 0 if event["event"] == "pch_built" else 1
    finally:
        os.close(lock_fd)


def _read_ninja(build_dir: Path) -> tuple[str, list[str]] | None:
    """(cxx, cflags + post_cflags) from the build.ninja cpp_extension wrote, once it is complete."""
    try:
        text = (build_dir / "build.ninja").read_text()
    except FileNotFoundError:
        return None
    if "\ndefault " not in text:
        return None
    values = {}
    for line in text.splitlines():
        m = re.match(r"^(cxx|cflags|post_cflags) = (.*)$", line)
        if m:
            values[m.group(1)] = m.group(2)
    if "cxx" not in values or "cflags" not in values:
        return None
    return values["cxx"], shlex.split(values["cflags"]) + shlex.split(values.get("post_cflags", ""))


class _PchStarter(threading.Thread):
    """Starts the PCH build as soon as cpp_extension has written the first build.ninja (exact flags)."""

    def __init__(self, build_dir: Path) -> None:
        super().__init__(daemon=True)
        self.build_dir = build_dir
        self.done = threading.Event()

    def run(self) -> None:
        try:
            while not self.done.is_set():
                found = _read_ninja(self.build_dir)
                if found is not None:
                    _start_pch_build(_pch_command(*found))
                    return
                self.done.wait(0.05)
        except Exception:  # noqa: BLE001 - a PCH is an optimisation; the build goes on without it
            return


# --------------------------------------------------------------------------- codegen

_SECTION_FILE = {"global_setup": "global_setup", "setup": "setup", "batch_setup": "batch_setup", "stmt": "stmt"}


class _Source:
    """Lines of one translation unit, with #line bookkeeping."""

    def __init__(self) -> None:
        self.lines: list[str] = []

    def gen(self, owner: str, *lines: str) -> None:
        self.lines.append(f'#line {len(self.lines) + 2} "generated~{owner}"')
        self.lines.extend(lines)

    def user(self, section: str, owner: str, code: str) -> None:
        # Not re-indented: columns in messages stay the user's, and raw strings keep their text.
        self.lines.append(f'#line 1 "{section}~{owner}"')
        self.lines.extend(code.splitlines())

    def text(self) -> str:
        return "\n".join(self.lines) + "\n"


def _emit_statement(src: _Source, i: int, s: CppStatement) -> None:
    o = str(i)
    src.gen(
        o,
        f"namespace harness_s{i} {{",
        "harness::stmt::Routine harness_routine();",
        "harness::stmt::Slot harness_slot{&harness_routine};",
        "harness::stmt::Routine harness_routine() {",
    )
    src.user("setup", o, s.setup)
    src.gen(
        o,
        "  const bool harness_sync = harness::stmt::cuda_in_use();",
        "  int64_t number = co_yield int64_t{0};",
        "  for (;;) {",
    )
    if s.batch_setup:
        src.gen(o, "    if (number == harness::stmt::kProbe) number = 1;", "    int64_t harness_elapsed = 0;", "    {",
                '      harness_slot.set_phase("batch_setup");')
        src.user("batch_setup", o, s.batch_setup)
        src.gen(o, '      harness_slot.set_phase("stmt");')
        if s.loops_over_batch:
            src.gen(
                o,
                "      harness::stmt::check_batch(batch, number);",
                "      auto harness_next = std::begin(batch);",
                "      harness_elapsed = harness::stmt::timed_block(number, harness_sync, [&] {",
                "        auto&& item = *harness_next;",
                "        ++harness_next;",
            )
        else:
            src.gen(o, "      harness_elapsed = harness::stmt::timed_block(number, harness_sync, [&] {")
        src.user("stmt", o, s.stmt)
        src.gen(o, "      });", "    }", "    number = co_yield harness_elapsed;", "  }", "}")
    else:
        keep = []
        if s.output:
            keep.append(f"harness_slot.keep({s.output});")
        keep.extend(f"harness_slot.keep_grad({name});" for name in s.inputs)
        src.gen(o, "    auto harness_body = [&](bool harness_keep) {")
        src.user("stmt", o, s.stmt)
        src.gen(
            o,
            f"      if (harness_keep) {{ {' '.join(keep)} }}",
            "    };",
            '    harness_slot.set_phase("stmt");',
            "    if (number == harness::stmt::kProbe) {",
            *(f"      harness_slot.clear_grad({name});" for name in s.inputs),
            "      harness_body(true);",
            "      number = co_yield int64_t{0};",
            "      continue;",
            "    }",
            "    number = co_yield harness::stmt::timed_block(number, harness_sync, [&] { harness_body(false); });",
            "  }",
            "}",
        )
    src.gen(
        o,
        "int64_t harness_sample(int64_t number) { return harness_slot.sample(number); }",
        f"}}  // namespace harness_s{i}",
    )


def generate_sources(name: str, statements: Sequence[CppStatement]) -> list[str]:
    """One TU per distinct global_setup (file-scope code of different statements may clash); TU 0 holds the module table."""
    groups: dict[str, list[int]] = {}
    for i, s in enumerate(statements):
        groups.setdefault(s.global_setup, []).append(i)
    units: list[str] = []
    tu_of: dict[int, int] = {}
    for t, (global_setup, members) in enumerate(groups.items()):
        src = _Source()
        src.lines.append(f"// Generated by harness.cpp_build for module {name}: do not edit.")
        src.user("global_setup", f"t{t}", global_setup)
        src.gen(f"t{t}", f"namespace harness_tu{t} {{ extern const bool pch_used = HARNESS_STMT_PCH; }}")
        for i in members:
            _emit_statement(src, i, statements[i])
            tu_of[i] = t
        units.append(src.text())
    # The module table goes at the end of TU 0.
    tail = _Source()
    decls = [
        f"namespace harness_s{i} {{ extern harness::stmt::Slot harness_slot; int64_t harness_sample(int64_t); }}"
        for i in range(len(statements))
        if tu_of[i] != 0
    ]
    decls += [f"namespace harness_tu{t} {{ extern const bool pch_used; }}" for t in range(1, len(units))]
    entries = ",\n".join(
        f'    {{"{s.key}", &harness_s{i}::harness_slot, &harness_s{i}::harness_sample}}' for i, s in enumerate(statements)
    )
    pch_used = " && ".join(f"harness_tu{t}::pch_used" for t in range(len(units)))
    tail.gen(
        "module",
        *decls,
        "static const harness::stmt::Entry harness_entries[] = {",
        entries,
        "};",
        f"static harness::stmt::Module harness_module{{harness_entries, {len(statements)}, false}};",
        "static PyMethodDef harness_methods[] = {HARNESS_STMT_METHODS};",
        "static PyModuleDef harness_def = {",
        f'    PyModuleDef_HEAD_INIT, "{name}", "C++ statements built by harness", sizeof(void*), harness_methods}};',
        f"PyMODINIT_FUNC PyInit_{name}(void) {{",
        f"  harness_module.pch_used = {pch_used};",
        "  return harness::stmt::create_module(&harness_def, &harness_module);",
        "}",
    )
    # Renumber the tail's #line directives to TU 0's real line numbers.
    offset = len(units[0].splitlines())
    tail_lines = [
        re.sub(r"^#line (\d+) ", lambda m: f"#line {int(m.group(1)) + offset} ", line) for line in tail.lines
    ]
    units[0] += "\n".join(tail_lines) + "\n"
    return units


# --------------------------------------------------------------------------- compile errors

_LOCATION = re.compile(r"\b(stmt|setup|batch_setup|global_setup|generated)~(t?\d+|module)(?::(\d+))?(?::(\d+))?")
_OWNER_NS = re.compile(r"\bharness_s(\d+)::")
_ERROR = re.compile(r"(?:^|: )(?:fatal )?error:|undefined reference to|collect2: error")
_NOTE = re.compile(r": note:|^\s")


def _owners(line: str, tu_members: dict[str, list[int]]) -> set[int]:
    found: set[int] = set()
    for m in _LOCATION.finditer(line):
        owner = m.group(2)
        if owner.startswith("t"):
            found.update(tu_members.get(owner, []))
        elif owner != "module":
            found.add(int(owner))
    found.update(int(m.group(1)) for m in _OWNER_NS.finditer(line))
    return found


# Lines of a g++/ld diagnostic (not ninja's progress or the command lines it echoes).
_DIAGNOSTIC = re.compile(r"^(In file included from |\s+from |\S+: (In |At |note:|error:|warning:|undefined reference|multiple definition)|\S+:\d+(:\d+)?: |/usr/bin/ld: |collect2: |\s+\d* \| )")


def _diagnostic_blocks(output: str) -> list[list[str]]:
    """Group compiler output into diagnostics: context lines, the error, its notes."""
    blocks: list[list[str]] = []
    context: list[str] = []
    current: list[str] | None = None
    for line in output.splitlines():
        if not _DIAGNOSTIC.match(line):
            continue
        if _ERROR.search(line):
            current = [*context, line]
            blocks.append(current)
            context = []
        elif current is not None and _NOTE.search(line):
            current.append(line)
        else:
            current = None
            context.append(line)
            context = context[-40:]
    return blocks


def _rewrite(line: str, statement: CppStatement | None) -> list[str]:
    """`stmt~3:2:7: error: ...` -> `stmt:2:7: error: ...`, with the user's line quoted after it."""
    quote: list[str] = []

    def repl(m: re.Match[str]) -> str:
        section, _, lineno, col = m.groups()
        if section == "generated":
            return f"<generated>{':' + lineno if lineno else ''}"
        if statement is not None and lineno and not quote and section in _SECTION_FILE:
            code = statement.section(section).splitlines()
            n = int(lineno)
            if 1 <= n <= len(code):
                quote.append(f"  {n:>4} | {code[n - 1]}")
        return section + "".join(f":{x}" for x in (lineno, col) if x)

    text = _OWNER_NS.sub("", _LOCATION.sub(repl, line))
    text = text.replace("harness::stmt::", "")
    return [text, *quote] if _ERROR.search(line) or ": note:" in line else [text]


def attribute_errors(
    output: str, statements: Sequence[CppStatement], tu_members: dict[str, list[int]]
) -> dict[int, str]:
    """Statement index -> its errors (rewritten to the user's sections and lines)."""
    per: dict[int, list[str]] = {}
    for block in _diagnostic_blocks(output):
        owners: set[int] = set()
        for line in block:
            owners |= _owners(line, tu_members)
        for i in owners:
            lines = per.setdefault(i, [])
            for line in block:
                lines.extend(_rewrite(line, statements[i]))
    out = {}
    for i, lines in per.items():
        deduped = list(dict.fromkeys(lines))
        text = "\n".join(deduped)
        out[i] = text if len(text) <= MAX_ERROR_CHARS else text[:MAX_ERROR_CHARS] + "\n... (truncated)"
    return out


def table_only_blame(output: str, tu_members: dict[str, list[int]]) -> set[int]:
    """Statements named only by errors in the module table (the end of TU 0).

    The table names the slots of statements of every TU, but its errors come
    from TU 0's code (a macro, say), not from the statements it names.
    """
    elsewhere: set[int] = set()
    table: set[int] = set()
    for block in _diagnostic_blocks(output):
        owners: set[int] = set()
        for line in block:
            owners |= _owners(line, tu_members)
        error_line = next((line for line in block if _ERROR.search(line)), "")
        (table if "generated~module" in error_line else elsewhere).update(owners)
    return table - elsewhere


_DIRECTIVE_LINE = re.compile(r"^[ \t]*(?:#|%:)", re.MULTILINE)


def leaks(statement: CppStatement) -> bool:
    """Whether the statement's body code can change how the code after it parses: a
    preprocessor directive (#define, #undef, #line, #pragma, an #include in a function).
    Brackets cannot: cpp_balance rejected every statement whose sections do not balance."""
    return any(_DIRECTIVE_LINE.search(statement.section(n)) for n in ("setup", "batch_setup", "stmt"))


def trusted_failures(
    named: set[int], statements: Sequence[CppStatement], tu_members: dict[str, list[int]]
) -> set[int]:
    """Which of the statements named by a failed build's errors fail on their own.

    Within a TU, statements are emitted in index order, each inside its own
    namespace and function, and every section balances (cpp_balance), so g++
    recovers by the end of a statement: an error in one does not reach the
    code of the next (tried: a missing ';' after a class or lambda, a stray
    template '<', local templates, namespaces and extern "C" blocks, misplaced
    case/return). What does reach it is the preprocessor. So a named statement
    is trusted unless a statement before it in its TU has a directive in its
    body; such a statement may only be a victim of that directive, whether the
    directive's statement failed first or compiled fine.
    """
    tu_of = {i: t for t, members in tu_members.items() for i in members}
    trusted = set()
    for i in named:
        t = tu_of.get(i)
        if t is not None and not any(leaks(statements[j]) for j in tu_members[t] if j < i):
            trusted.add(i)
    return trusted


# --------------------------------------------------------------------------- modules and the index


@dataclasses.dataclass
class CompiledStatement:
    """A statement inside a loaded module: setup, sampler capsule, probe."""

    statement: CppStatement
    module: ModuleType
    index: int

    @property
    def key(self) -> str:
        return self.statement.key

    @property
    def pch_used(self) -> bool:
        return bool(self.module.pch_used)

    def prepare(self) -> None:
        self.module.prepare(self.index)

    def reset(self) -> None:
        self.module.reset(self.index)

    @property
    def ready(self) -> bool:
        return bool(self.module.ready(self.index))

    def sampler(self) -> Any:
        """The ``harness.sampler`` capsule the core times (after ``prepare()``)."""
        return self.module.sampler(self.index)

    def probe(self) -> list[Any]:
        """Run stmt once; [output, grad of each input], as tensors (None where undefined)."""
        import torch

        return [None if c is None else torch.from_dlpack(c) for c in self.module.probe(self.index)]


@dataclasses.dataclass
class BuildReport:
    compiled: dict[str, CompiledStatement] = dataclasses.field(default_factory=dict)
    failed: dict[str, str] = dataclasses.field(default_factory=dict)  # key -> compiler message
    built: int = 0  # statements compiled by this call
    modules: list[str] = dataclasses.field(default_factory=list)  # modules this call built
    seconds: float = 0.0


def _index_path(key: str) -> Path:
    return ensure_private_dir(toolchain().root / "index") / f"{key}.json"


def _module_dir(module_key: str) -> Path:
    return ensure_private_dir(toolchain().root / "modules") / module_key


def _import_module(name: str, path: Path) -> ModuleType:
    with _LOCK:
        if name in _LOADED:
            return _LOADED[name]
        loader = importlib.machinery.ExtensionFileLoader(name, str(path))
        spec = importlib.util.spec_from_file_location(name, path, loader=loader)
        assert spec is not None
        module = importlib.util.module_from_spec(spec)
        loader.exec_module(module)
        _LOADED[name] = module
        return module


def _lookup(statement: CppStatement) -> CompiledStatement | str | None:
    """A cached compile of this statement, its cached compile error, or None."""
    try:
        entry = json.loads(_index_path(statement.key).read_text())
    except (FileNotFoundError, ValueError):
        return None
    if "error" in entry:
        # A compile error is cached so the workers of a run do not retry what
        # the run's prebuild found, but not for ever: the same code may compile
        # once a header it includes is installed.
        if time.time() - float(entry.get("time", 0)) < FAILURE_TTL_S:
            return str(entry["error"])
        return None
    name, index = entry.get("module"), entry.get("index")
    if not isinstance(name, str) or not isinstance(index, int):
        return None
    so = _module_dir(name.removeprefix("hstmt_")) / f"{name}.so"
    if not so.exists():
        return None
    module = _import_module(name, so)
    if index >= len(module.keys) or module.keys[index] != statement.key:
        return None
    return CompiledStatement(statement, module, index)


@contextlib.contextmanager
def _file_lock(path: Path) -> Iterator[None]:
    with open(path, "a") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


class _CompileFailed(Exception):
    def __init__(self, output: str) -> None:
        super().__init__(output)
        self.output = output


def _compile(statements: list[CppStatement]) -> tuple[ModuleType, str, float]:
    """Compile and import one module holding ``statements``; raises _CompileFailed with the compiler's output."""
    from torch.utils import cpp_extension

    tc = toolchain()
    module_key = hashlib.sha256("\n".join([tc.key, *[s.key for s in statements]]).encode()).hexdigest()[:16]
    name = f"hstmt_{module_key}"
    build_dir = _module_dir(module_key)
    with _file_lock(build_dir.parent / f"{module_key}.lock"):
        so = build_dir / f"{name}.so"
        if so.exists():
            return _import_module(name, so), name, 0.0
        build_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
        # We hold the lock, so a baton left by a killed build is stale (cpp_extension would wait on it forever).
        for stale in ("lock", "build.ninja"):
            with contextlib.suppress(FileNotFoundError):
                (build_dir / stale).unlink()
        sources = []
        for t, text in enumerate(generate_sources(name, statements)):
            path = build_dir / f"tu{t}.cpp"
            atomic_write_text(path, text)
            sources.append(str(path))
        cflags = [*tc.extra_cflags, "-Winvalid-pch"]
        use_pch = pch_enabled()
        if use_pch:
            cflags[0:0] = ["-include", str(pch_header())]
        had_pch = use_pch and pch_file().exists()
        starter = _PchStarter(build_dir) if use_pch and not had_pch else None
        if starter is not None:
            starter.start()
        t0 = time.monotonic()
        try:
            module = cpp_extension.load(
                name=name,
                sources=sources,
                extra_cflags=cflags,
                extra_ldflags=list(tc.extra_ldflags),
                extra_include_paths=[str(p) for p in include_dirs()],
                build_directory=str(build_dir),
                verbose=False,
                is_python_module=True,
            )
        except Exception as exc:  # cpp_extension raises RuntimeError carrying ninja's output
            raise _CompileFailed(str(exc)) from None
        finally:
            if starter is not None:
                starter.done.set()
        seconds = time.monotonic() - t0
        sys.modules.pop(name, None)
        _LOADED[name] = module
        if use_pch and had_pch and not module.pch_used:
            # g++ rejected the .gch (flags differ): rebuild it with this build's flags.
            _log("pch_rejected", module=name)
            with contextlib.suppress(FileNotFoundError):
                pch_file().unlink()
        if use_pch and not pch_file().exists():
            found = _read_ninja(build_dir)
            if found is not None:
                _start_pch_build(_pch_command(*found))
        return module, name, seconds


def _record(statements: list[CppStatement], name: str) -> None:
    for i, s in enumerate(statements):
        atomic_write_text(_index_path(s.key), json.dumps({"module": name, "index": i}))


def _build_batch(statements: list[CppStatement], report: BuildReport, persist_failures: bool = True) -> None:
    remaining = list(statements)
    while remaining:
        try:
            module, name, seconds = _compile(remaining)
        except _CompileFailed as failure:
            groups: dict[str, list[int]] = {}
            for i, s in enumerate(remaining):
                groups.setdefault(s.global_setup, []).append(i)
            tu_members = {f"t{t}": members for t, members in enumerate(groups.values())}
            errors = attribute_errors(failure.output, remaining, tu_members)
            # A statement named by errors is recorded as failed (and cached)
            # only when its own code is to blame (trusted_failures). The
            # others named are rebuilt with the statements nobody named: that
            # build is needed anyway, so one bad statement whose errors spill
            # into others costs no more than one bad statement. Several
            # independent bad statements are all trusted at once: one rebuild.
            trusted = trusted_failures(set(errors) - table_only_blame(failure.output, tu_members),
                                       remaining, tu_members)
            _log("failed_builds", statements=len(remaining), named=len(errors), trusted=len(trusted))
            for i in trusted:
                key = remaining[i].key
                report.failed[key] = errors[i]
                atomic_write_text(_index_path(key), json.dumps({"error": errors[i], "time": time.time()}))
            if trusted:
                remaining = [s for i, s in enumerate(remaining) if i not in trusted]
                continue
            if len(remaining) == 1:
                # Not attributable to user code (toolchain trouble, out of memory): do not cache.
                report.failed[remaining[0].key] = errors.get(0) or _tail(failure.output)
                return
            leaky = [s for s in remaining if leaks(s)]
            if errors and 0 < len(leaky) < len(remaining):
                # Every statement named may be a victim of a directive in another:
                # build the statements without directives apart, where every
                # error is trusted, and the few with directives apart.
                _build_batch([s for s in remaining if not leaks(s)], report)
                _build_batch(leaky, report)
                return
            half = len(remaining) // 2
            _build_batch(remaining[:half], report)
            _build_batch(remaining[half:], report)
            return
        _record(remaining, name)
        _log("builds", module=name, statements=len(remaining), seconds=round(seconds, 2), pch_used=bool(module.pch_used))
        if module.pch_used:
            STATS["pch_used_builds"] += 1
        report.built += len(remaining)
        report.modules.append(name)
        for i, s in enumerate(remaining):
            report.compiled[s.key] = CompiledStatement(s, module, i)
        return


def _tail(output: str) -> str:
    text = output.strip()
    return text if len(text) <= MAX_ERROR_CHARS else "... " + text[-MAX_ERROR_CHARS:]


def build(statements: Sequence[CppStatement]) -> BuildReport:
    """Compile every statement not yet in the cache, all in one module; report compiled and failed ones."""
    t0 = time.monotonic()
    report = BuildReport()
    unique = list({s.key: s for s in statements}.values())
    missing: list[CppStatement] = []
    with _LOCK:
        for s in unique:
            # Before the cache and before any batch: an unbalanced statement
            # would break the statements compiled after it. Not cached: the
            # check takes microseconds and gives the same answer every time.
            unbalanced = cpp_balance.unbalanced({n: s.section(n) for n in cpp_balance.SECTIONS})
            if unbalanced is not None:
                report.failed[s.key] = unbalanced
                STATS["unbalanced"] += 1
                continue
            found = _lookup(s)
            if isinstance(found, CompiledStatement):
                report.compiled[s.key] = found
                STATS["hits"] += 1
            elif isinstance(found, str):
                report.failed[s.key] = found
                STATS["hits"] += 1
            else:
                missing.append(s)
        if missing:
            STATS["misses"] += len(missing)
            _build_batch(missing, report)
    report.seconds = time.monotonic() - t0
    return report


def load(statement: CppStatement) -> CompiledStatement:
    """The compiled statement (building it if needed); StatementError with the compiler's message if it does not compile."""
    report = build([statement])
    if statement.key in report.failed:
        raise StatementError(f"C++ statement does not compile:\n{report.failed[statement.key]}")
    return report.compiled[statement.key]


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if len(args) in (2, 3) and args[0] == "--build-pch":
        return _build_pch_main(args[1], int(args[2]) if len(args) == 3 else None)
    print("usage: python -m harness.cpp_build --build-pch DIR [LOCK_FD]", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main())
