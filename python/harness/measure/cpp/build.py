"""Building C++ statements into native modules: the content-addressed cache and batched builds.

Why it is shaped like this: compiling one translation unit that includes
``<torch/torch.h>`` costs 20-35 s of CPU, and torch's own C++ Timer pays it for
every statement. Here

- every statement is cached by content (``CppStatement.key``) under a
  *toolchain key* (``measure.cpp.toolchain``), so a statement compiled once
  is reused by every later process;
- all statements asked for together (a suite, a GroupedStmts expansion) go
  into one module with one function per statement: one compile, one link;
- a statement TU includes only the lean header set unless it needs more
  (``measure.cpp.include_set``); each set is precompiled once
  (``measure.cpp.pch``), and the code that talks to Python is compiled once
  per toolchain (``measure.cpp.runtime``). Statements of a batch are built
  in one module per include set; a statement that fails with a smaller set
  for a missing declaration is rebuilt with the full set, and that choice is
  cached.

A statement whose brackets do not balance is rejected before it reaches a
batch (``measure.cpp.balance``): its errors can land in the code of the
statements after it. When a batch fails, the statements named in errors are
recorded as failed (in the cache too, keyed by their content, for an hour)
unless another statement's code may have caused their errors (see
``diagnostics.trusted_failures``); those are rebuilt with the rest, and
failures that name no statement are isolated by bisection.
"""

from __future__ import annotations

import contextlib
import dataclasses
import fcntl
import functools
import hashlib
import json
import shutil
import sys
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

from harness.errors import BuildError, StatementError
from harness.files.atomic import atomic_write_text
from harness.files.cache import ensure_private_dir, truncated_library, writing_cache
from harness.measure.cpp import balance
from harness.measure.cpp.codegen import generate_sources
from harness.measure.cpp.diagnostics import (
    attribute_errors,
    leaks,
    output_tail,
    table_only_blame,
    trusted_failures,
)
from harness.measure.cpp.include_set import (
    API,
    FULL,
    INCLUDE_SETS,
    LEAN,
    api_includes,
    choose,
    missing_declaration,
    precompiled,
    remember,
)
from harness.measure.cpp.log import STATS, log_event
from harness.measure.cpp.ninja_build import (
    NinjaFailed,
    build_module,
    pch_rejected,
    recipe,
    record_recipe,
)
from harness.measure.cpp.pch import (
    PchStarter,
    pch_command,
    pch_enabled,
    pch_file,
    pch_header,
    pch_intact,
    plain_header,
    read_ninja,
    start_pch_build,
)
from harness.measure.cpp.runtime import StatementModule, runtime, runtime_built
from harness.measure.cpp.statement import SECTIONS, CppStatement
from harness.measure.cpp.toolchain import load_extension, toolchain

FAILURE_TTL_S = 3600.0  # how long a statement's compile error is trusted without recompiling

_LOADED: dict[str, StatementModule] = {}
_LOCK = threading.RLock()


# --------------------------------------------------------------------------- modules and the index


@dataclasses.dataclass
class CompiledStatement:
    """A statement inside a built module: setup, sampler capsule, probe.

    The module is loaded on first use, not when it is built or found: a
    script that only builds a statement for a worker to count (``Timer.collect_callgrind``)
    then never loads torch's libraries (``import torch``, 1-1.6 s).
    """

    statement: CppStatement
    so: Path
    index: int
    pch_used: bool
    include_set: str

    @property
    def key(self) -> str:
        return self.statement.key

    @functools.cached_property
    def module(self) -> StatementModule:
        return _import_module(self.so.stem, self.so)

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


def _import_module(name: str, path: Path) -> StatementModule:
    with _LOCK:
        if name not in _LOADED:
            _LOADED[name] = StatementModule(path)
        return _LOADED[name]


COMPLETE = "complete.json"  # written last into a module's directory: the .so's size and hash
# Modules this process found intact, with what their marker says of them (None: an older marker).
_INTACT: dict[Path, _Built | None] = {}


def _file_digest(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


@dataclasses.dataclass(frozen=True)
class _Built:
    """What a module's completion marker says of it besides its bytes: its statements' keys in order,
    whether its TUs used the PCH, its include set (what the module itself answers once loaded)."""

    keys: tuple[str, ...]
    pch_used: bool
    include_set: str


def _mark_complete(so: Path, built: _Built) -> None:
    atomic_write_text(so.parent / COMPLETE, json.dumps({
        "file": so.name, "bytes": so.stat().st_size, "sha256": _file_digest(so),
        "keys": list(built.keys), "pch_used": built.pch_used, "include_set": built.include_set}))


def _described(mark: dict[str, Any]) -> _Built | None:
    """A marker's description of its module, or None (a marker from before markers described modules)."""
    keys, pch_used, include_set = mark.get("keys"), mark.get("pch_used"), mark.get("include_set")
    if (isinstance(keys, list) and all(isinstance(k, str) for k in keys) and isinstance(pch_used, bool)
            and isinstance(include_set, str)):
        return _Built(tuple(keys), pch_used, include_set)
    return None


def _describe(name: str, so: Path) -> _Built | None:
    """The module's keys, PCH use and include set: from its marker, or by loading it (None, after one line
    on stderr, when it is damaged)."""
    why = _damage(so)
    if why is None:
        described = _INTACT.get(so)
        if described is not None:
            return described
        try:
            module = _import_module(name, so)
            return _Built(tuple(module.keys), bool(module.pch_used), module.include_set)
        except BuildError as exc:  # e.g. "file too short": a module from before markers, truncated
            why = f"it does not load: {exc}"
    _report_damage(so, why)
    return None


def _damage(so: Path) -> str | None:
    """Why the cached module ``so`` cannot be trusted (a full disk, a killed copy), or None.

    Modules built before completion markers existed have none; they are
    checked for truncation (``files.cache.truncated_library``) and trusted
    unless importing them fails.
    """
    if so in _INTACT:
        return None
    try:
        mark = json.loads((so.parent / COMPLETE).read_text())
    except FileNotFoundError:
        return truncated_library(so)
    except (OSError, ValueError):
        return "its completion marker is unreadable"
    size = so.stat().st_size
    if size != mark.get("bytes"):
        return f"{size} bytes where {mark.get('bytes')} were written"
    if _file_digest(so) != mark.get("sha256"):
        return "its content differs from what was built"
    _INTACT[so] = _described(mark)
    return None


def _report_damage(so: Path, why: str) -> None:
    print(f"harness: cached C++ module {so} is damaged ({why}); rebuilding it", file=sys.stderr)
    log_event("damaged_module", module=so.stem, reason=why)


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
    built = _describe(name, so)  # a damaged module is rebuilt by the build that follows
    if built is None:
        return None
    if index >= len(built.keys) or built.keys[index] != statement.key:
        return None
    return CompiledStatement(statement, so, index, built.pch_used, built.include_set)


@contextlib.contextmanager
def _file_lock(path: Path) -> Iterator[None]:
    with open(path, "a") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


def _quietly(fn: Callable[[], object]) -> Callable[[], None]:
    """fn for a helper thread: an error is raised again where the result is used, so none is printed here."""

    def run() -> None:
        with contextlib.suppress(Exception):
            fn()

    return run


class _CompileFailed(Exception):
    def __init__(self, output: str) -> None:
        super().__init__(output)
        self.output = output


def _compile(statements: list[CppStatement], include_set: str) -> tuple[Path, _Built, float | None]:
    """Compile the module holding ``statements``; raises _CompileFailed with the compiler's output.

    The module's file, what it holds, and the seconds compiling (None when another process built it
    while we waited for its lock).
    """
    module_key, name = _module_name(statements, include_set)
    build_dir = _module_dir(module_key)
    with _file_lock(build_dir.parent / f"{module_key}.lock"):
        so = build_dir / f"{name}.so"
        built = _cached(name, so)
        if built is not None:
            return so, built, None
        build_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
        sources = _write_sources(name, statements, include_set, build_dir)
        header = _Header.of(include_set)
        built, seconds = _build_module(name, statements, include_set, sources, build_dir, header)
        _mark_complete(so, built)  # last: a module without it was never finished (or predates markers)
        _tend_pch(header, name, build_dir, built)
        return so, built, seconds


def _module_name(statements: list[CppStatement], include_set: str) -> tuple[str, str]:
    """The module's key (its directory and lock under the toolchain's modules) and its name."""
    module_key = hashlib.sha256(
        "\n".join([toolchain().key, include_set, *[s.key for s in statements]]).encode()).hexdigest()[:16]
    return module_key, f"hstmt_{module_key}"


def _cached(name: str, so: Path) -> _Built | None:
    """What the module already at ``so`` holds (an earlier build, or the one we waited for), or None.

    A damaged module is removed with its directory: nothing there is trusted (ninja would keep a
    truncated .so or .o that looks newer than its sources).
    """
    if not so.exists():
        return None
    built = _describe(name, so)
    if built is None:
        shutil.rmtree(so.parent, ignore_errors=True)
    return built


def _write_sources(name: str, statements: list[CppStatement], include_set: str, build_dir: Path) -> list[str]:
    """The module's translation units, written into ``build_dir``; their paths."""
    includes: dict[str, None] = {}
    if include_set.endswith(API):
        for s in statements:
            includes.update(dict.fromkeys(api_includes(s)))
    sources = []
    for t, text in enumerate(generate_sources(name, statements, include_set, list(includes))):
        path = build_dir / f"tu{t}.cpp"
        atomic_write_text(path, text)
        sources.append(str(path))
    return sources


@dataclasses.dataclass(frozen=True)
class _Header:
    """The header every TU of a module is compiled with (``-include``): the PCH's when PCH is on."""

    use_pch: bool
    pch_set: str  # the include set whose header (and PCH) it is
    path: str
    had_pch: bool  # the set's .gch was there, intact, before this build

    @classmethod
    def of(cls, include_set: str) -> _Header:
        use_pch = pch_enabled()
        pch_set = precompiled(include_set)
        path = str(pch_header(pch_set) if use_pch else plain_header(pch_set))
        return cls(use_pch, pch_set, path, use_pch and pch_intact(pch_set))


def _build_module(
    name: str, statements: list[CppStatement], include_set: str, sources: list[str], build_dir: Path,
    header: _Header,
) -> tuple[_Built, float]:
    """Compile and link the module from ``sources``; what it holds and the seconds it took."""
    # The first module of a toolchain is built by cpp_extension, which also builds the runtime (in a
    # thread, beside it) and leaves the recipe every later module is built with, without torch.
    rules = recipe() if runtime_built() else None
    with _helpers(build_dir, header, build_runtime=rules is None):
        t0 = time.monotonic()
        rejected = _run_compiler(rules, name, sources, build_dir, header)
    seconds = time.monotonic() - t0
    if rules is not None:
        return _Built(tuple(s.key for s in statements), header.had_pch and not rejected, include_set), seconds
    sys.modules.pop(name, None)
    module = _import_module(name, build_dir / f"{name}.so")
    built = _Built(tuple(module.keys), bool(module.pch_used), module.include_set)
    record_recipe(build_dir, name, header.path)
    return built, seconds


@contextlib.contextmanager
def _helpers(build_dir: Path, header: _Header, build_runtime: bool) -> Iterator[None]:
    """Beside a module's build: the PCH's build when its .gch is missing, and the runtime's (the first
    module of a toolchain); the block's end lets the PCH build go and waits for the runtime."""
    starter = PchStarter(build_dir, header.pch_set) if header.use_pch and not header.had_pch else None
    if starter is not None:
        starter.start()
    runtime_ready = None
    if build_runtime:
        # Imported here, before the thread: two threads importing torch at once fail
        # ("partially initialized module"), and cpp_extension imports torch.
        import torch.utils.cpp_extension  # noqa: F401

        runtime_ready = threading.Thread(target=_quietly(runtime), daemon=True)
        runtime_ready.start()
    try:
        yield
    finally:
        if starter is not None:
            starter.done.set()
        if runtime_ready is not None:
            runtime_ready.join()


def _run_compiler(
    rules: dict[str, str] | None, name: str, sources: list[str], build_dir: Path, header: _Header,
) -> bool:
    """Build the module with the recipe's ``rules`` (ninja) or, without them, cpp_extension; whether
    g++ rejected the PCH (ninja's build only). A failure is _CompileFailed with the compiler's output."""
    try:
        if rules is not None:
            return pch_rejected(build_module(rules, name, sources, build_dir, header.path))
        # A plain shared library: the runtime loads it (no Python headers in statement TUs).
        cflags = ["-include", header.path, *toolchain().extra_cflags, "-Winvalid-pch"]
        load_extension(name, sources, build_dir, cflags, python_module=False)
        return False
    except NinjaFailed as exc:
        raise _CompileFailed(exc.output) from None
    except Exception as exc:  # cpp_extension raises RuntimeError carrying ninja's output
        raise _CompileFailed(str(exc)) from None


def _tend_pch(header: _Header, name: str, build_dir: Path, built: _Built) -> None:
    """After a build: a .gch g++ rejected is removed, and a missing one is built with this build's command."""
    if header.use_pch and header.had_pch and not built.pch_used:
        # g++ rejected the .gch (stale: flags or headers differ): rebuild it with this build's flags.
        log_event("pch_rejected", module=name, include_set=header.pch_set)
        with contextlib.suppress(FileNotFoundError):
            pch_file(header.pch_set).unlink()
    if header.use_pch and not pch_file(header.pch_set).exists():
        found = read_ninja(build_dir)
        if found is not None:
            start_pch_build(pch_command(*found, header.pch_set), header.pch_set)


def _record(statements: list[CppStatement], name: str) -> None:
    for i, s in enumerate(statements):
        atomic_write_text(_index_path(s.key), json.dumps({"module": name, "index": i}))


def _build_batch(statements: list[CppStatement], report: BuildReport, include_set: str = LEAN) -> None:
    remaining = list(statements)
    retry_full: list[CppStatement] = []
    while remaining:
        try:
            so, built, seconds = _compile(remaining, include_set)
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
            log_event("failed_builds", statements=len(remaining), named=len(errors), trusted=len(trusted),
                      include_set=include_set)
            for i in trusted:
                key = remaining[i].key
                if include_set != FULL and missing_declaration(errors[i]):
                    # The full set may declare it: only its error, if any, is reported.
                    retry_full.append(remaining[i])
                    continue
                report.failed[key] = errors[i]
                atomic_write_text(_index_path(key), json.dumps({"error": errors[i], "time": time.time()}))
            if trusted:
                remaining = [s for i, s in enumerate(remaining) if i not in trusted]
                continue
            if len(remaining) == 1:
                message = errors.get(0) or output_tail(failure.output)
                if include_set != FULL and missing_declaration(message):
                    retry_full.append(remaining[0])
                    break
                # Not attributable to user code (toolchain trouble, out of memory): do not cache.
                report.failed[remaining[0].key] = message
                break
            leaky = [s for s in remaining if leaks(s)]
            if errors and 0 < len(leaky) < len(remaining):
                # Every statement named may be a victim of a directive in another:
                # build the statements without directives apart, where every
                # error is trusted, and the few with directives apart.
                _build_batch([s for s in remaining if not leaks(s)], report, include_set)
                _build_batch(leaky, report, include_set)
                break
            half = len(remaining) // 2
            _build_batch(remaining[:half], report, include_set)
            _build_batch(remaining[half:], report, include_set)
            break
        name = so.stem
        _record(remaining, name)
        for i, s in enumerate(remaining):
            report.compiled[s.key] = CompiledStatement(s, so, i, built.pch_used, built.include_set)
        if seconds is None:
            log_event("shared_builds", module=name, statements=len(remaining), include_set=include_set)
            break
        log_event("builds", module=name, statements=len(remaining), seconds=round(seconds, 2),
                  pch_used=built.pch_used, include_set=include_set)
        if built.pch_used:
            STATS["pch_used_builds"] += 1
        report.built += len(remaining)
        report.modules.append(name)
        break
    if retry_full:
        for s in retry_full:
            reason = f"the {include_set} set lacks a declaration it uses"
            remember(s, FULL, reason)
            log_event("include_set", key=s.key, include_set=FULL, reason=reason)
        _build_batch(retry_full, report, FULL)


def build(statements: Sequence[CppStatement]) -> BuildReport:
    """Compile every statement not yet in the cache, all in one module; report compiled and failed ones.

    A cache that cannot be written (read-only, full, another user's) is one
    PathError naming the path, what failed and ``HARNESS_CACHE_DIR``.
    """
    with writing_cache("write the C++ statement cache"):
        return _build(statements)


def _build(statements: Sequence[CppStatement]) -> BuildReport:
    t0 = time.monotonic()
    report = BuildReport()
    unique = list({s.key: s for s in statements}.values())
    missing: list[CppStatement] = []
    with _LOCK:
        for s in unique:
            # Before the cache and before any batch: an unbalanced statement
            # would break the statements compiled after it. Not cached: the
            # check takes microseconds and gives the same answer every time.
            unbalanced = balance.unbalanced({n: s.section(n) for n in SECTIONS})
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
            by_set: dict[str, list[CppStatement]] = {name: [] for name in INCLUDE_SETS}
            for s in missing:
                include_set, reason = choose(s)
                by_set[include_set].append(s)
                if include_set != LEAN:
                    log_event("include_set", key=s.key, include_set=include_set, reason=reason)
            for include_set, members in by_set.items():
                if members:
                    _build_batch(members, report, include_set)
    report.seconds = time.monotonic() - t0
    return report


def load(statement: CppStatement) -> CompiledStatement:
    """The compiled statement (building it if needed); StatementError with the compiler's message if it does not
    compile."""
    report = build([statement])
    if statement.key in report.failed:
        raise StatementError(f"C++ statement does not compile:\n{report.failed[statement.key]}")
    return report.compiled[statement.key]
