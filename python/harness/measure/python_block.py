"""The timed Python block: a generated function that runs a statement N times.

Why a generated loop rather than a C++ loop calling a code object: the loop
`for _ in repeat(None, n): <stmt>` costs ~5 ns per iteration, a C++ loop
calling a function ~17 ns and one evaluating a code object ~38 ns
(benchmarks/overhead.py measures all three). The clock reads are the C++
core's, taken inside the block around the loop.

Setup runs once; the names the statement uses that setup (or ``globals``)
bound are passed as default arguments, so inside the loop they are fast locals
exactly as in ``timeit``, without re-running setup for every block.

``scope="module"`` builds the block the way torch's ``collect_callgrind``
does instead: the statement unrolled in blocks of 100 at module scope (every
name a dictionary lookup, bytecode run once per site, so barely specialised),
after a warm-up loop in the same code object. It is slower and counts more
instructions than the function block; it exists so counts can be compared
with torch's one for one.
"""

from __future__ import annotations

import ast
import builtins
import itertools
import textwrap
import traceback
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from harness.errors import StatementError, UsageError

BLOCK_FILENAME = "<harness block>"
_SOURCES = ("global_setup", "setup", "batch_setup", "stmt")
SCOPES = ("function", "module")
UNROLL = 100  # torch's block size: the unrolled block repeats this many copies of the statement


def check_scope(scope: str, python: bool, batch_setup: str | None) -> None:
    """UsageError unless ``scope`` can build a block for this statement."""
    if scope not in SCOPES:
        raise UsageError(f"scope must be one of {', '.join(SCOPES)}, got {scope!r}")
    if scope != "function" and not python:
        raise UsageError(f"scope={scope!r} applies to Python statements only (a C++ statement runs in a C++ loop)")
    if scope == "module" and batch_setup:
        raise UsageError("batch_setup needs scope='function': the module-scope block unrolls the statement")


def normalize(code: str) -> str:
    """Dedent and drop leading/trailing blank lines, so line 1 is the first code line."""
    return textwrap.dedent(code).strip("\n")


def _syntax_check(where: str, code: str) -> ast.Module:
    try:
        return ast.parse(code, filename=f"<{where}>", mode="exec")
    except SyntaxError as exc:
        line = (exc.text or "").strip()
        raise StatementError.like(
            exc, f"{where} line {exc.lineno}: {exc.msg}: {line!r}\n  in {where}:\n{textwrap.indent(code, '    ')}"
        ) from exc


def _names_loaded(tree: ast.Module) -> set[str]:
    return {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)}


def _assigns(tree: ast.Module, name: str) -> bool:
    return any(isinstance(n, ast.Name) and n.id == name and isinstance(n.ctx, ast.Store) for n in ast.walk(tree))


class PythonBlock:
    """Compiles stmt/setup once; ``sample(number)`` returns the elapsed ns of number runs."""

    def __init__(
        self,
        stmt: str,
        setup: str = "pass",
        global_setup: str = "",
        batch_setup: str | None = None,
        globals: dict[str, Any] | None = None,
        timer: Callable[[], float] | None = None,
        clock_ns: Callable[[], int] | None = None,
        scope: str = "function",
    ) -> None:
        check_scope(scope, True, batch_setup)
        self.scope = scope
        self.code = {
            "global_setup": normalize(global_setup or ""),
            "setup": normalize(setup or "pass"),
            "batch_setup": normalize(batch_setup or ""),
            "stmt": normalize(stmt or "pass") or "pass",
        }
        self._trees = {k: _syntax_check(k, v) for k, v in self.code.items()}
        self._globals = dict(globals or {})
        self._timer = timer
        self._clock_ns = clock_ns
        self._block: Callable[[int], int] | None = None
        self._line_map: dict[int, tuple[str, int]] = {}

    # -- building -----------------------------------------------------------
    def _build(self) -> Callable[[int], int]:
        ns = self._setup_namespace()
        if self.scope == "module":
            return self._module_sampler(ns)
        return self._function_block(ns)

    def _setup_namespace(self) -> dict[str, Any]:
        ns = self._globals
        ns.setdefault("__builtins__", builtins)
        try:
            import torch

            ns.setdefault("torch", torch)
        except ImportError:  # pragma: no cover - torch is a dependency
            pass
        for where in ("global_setup", "setup"):
            with self.translate_errors():
                exec(compile(self.code[where], f"<{where}>", "exec"), ns)
        return ns

    def _clocks(self) -> tuple[Callable[[], Any], Callable[[Any], int]]:
        if self._timer is not None:
            return self._timer, (lambda dt: int(dt * 1e9))
        assert self._clock_ns is not None
        return self._clock_ns, int

    def _function_block(self, ns: dict[str, Any]) -> Callable[[int], int]:
        stmt_names = _names_loaded(self._trees["stmt"]) | _names_loaded(self._trees["batch_setup"])
        params = sorted(n for n in stmt_names if n in ns and not n.startswith("__harness"))
        has_batch_setup = bool(self.code["batch_setup"])
        loops_over_batch = has_batch_setup and _assigns(self._trees["batch_setup"], "batch")

        lines = [f"def __harness_block(__harness_number{''.join(f', {p}={p}' for p in params)}):"]
        if has_batch_setup:
            lines.append("    number = __harness_number")
            self._map_lines(lines, "batch_setup", 1)
            if loops_over_batch:
                lines.append("    __harness_check_batch(batch, number)")
                self._line_map[len(lines)] = ("batch_setup", len(self.code["batch_setup"].splitlines()))
        lines.append("    __harness_t0 = __harness_clock()")
        if loops_over_batch:
            lines.append("    for item in batch:")
        else:
            lines.append("    for __harness_i in __harness_repeat(None, __harness_number):")
        self._map_lines(lines, "stmt", 2)
        lines.append("    __harness_t1 = __harness_clock()")
        lines.append("    return __harness_elapsed(__harness_t1 - __harness_t0)")
        source = "\n".join(lines) + "\n"

        clock, elapsed = self._clocks()
        ns.update(
            __harness_clock=clock,
            __harness_elapsed=elapsed,
            __harness_repeat=itertools.repeat,
            __harness_check_batch=_check_batch,
        )
        exec(compile(source, BLOCK_FILENAME, "exec"), ns)
        return ns["__harness_block"]

    def _module_sampler(self, ns: dict[str, Any]) -> Callable[[int], int]:
        clock, elapsed = self._clocks()
        ns.update(__harness_clock=clock, __harness_range=range)
        codes: dict[int, tuple[Any, dict[int, tuple[str, int]]]] = {}

        def run(number: int) -> int:
            if number not in codes:
                source = self._module_source(number)
                codes[number] = (compile(source, BLOCK_FILENAME, "exec"), self._line_map)
            code, self._line_map = codes[number]
            exec(code, ns)
            return elapsed(ns["__harness_t1"] - ns["__harness_t0"])

        return run

    def _module_source(self, number: int) -> str:
        """Warm-up loop, then ``number`` copies of the statement between the clock reads.

        Sets ``_line_map`` for this source: each copy's lines map back to the statement.
        """
        self._line_map = {}
        lines = [f"for __harness_i in __harness_range({min(number, 10)}):"]
        self._map_lines(lines, "stmt", 1)
        lines.append("__harness_t0 = __harness_clock()")
        loops, remainder = divmod(number, UNROLL)
        if loops == 1:  # `for _ in range(1)` would only add instructions
            loops, remainder = 0, number
        if loops:
            lines.append(f"for __harness_i in __harness_range({loops}):")
            for _ in range(UNROLL):
                self._map_lines(lines, "stmt", 1)
        for _ in range(remainder):
            self._map_lines(lines, "stmt", 0)
        lines.append("__harness_t1 = __harness_clock()")
        return "\n".join(lines) + "\n"

    def _map_lines(self, lines: list[str], where: str, depth: int) -> None:
        for i, text in enumerate(self.code[where].splitlines() or ["pass"], start=1):
            lines.append("    " * depth + text)
            self._line_map[len(lines)] = (where, i)

    # -- running --------------------------------------------------------------
    def sampler(self) -> Callable[[int], int]:
        """The block itself: called with a run count, returns elapsed ns."""
        if self._block is None:
            self._block = self._build()
        return self._block

    def sample(self, number: int) -> int:
        with self.translate_errors():
            return self.sampler()(number)

    @contextmanager
    def translate_errors(self) -> Iterator[None]:
        """Turn an exception raised by user code into a StatementError naming the line."""
        try:
            yield
        except StatementError:
            raise
        except Exception as exc:
            where = self._locate(exc)
            if where is None:
                raise
            section, line = where
            text = self.code[section].splitlines()[line - 1].strip() if self.code[section] else ""
            raise StatementError.like(
                exc, f"{section} line {line} ({text!r}) raised {type(exc).__name__}: {exc}"
            ) from exc

    def _locate(self, exc: BaseException) -> tuple[str, int] | None:
        found = None
        for frame, lineno in traceback.walk_tb(exc.__traceback__):
            filename = frame.f_code.co_filename
            if filename == BLOCK_FILENAME and lineno in self._line_map:
                found = self._line_map[lineno]
            elif filename.startswith("<") and filename.strip("<>") in _SOURCES:
                found = (filename.strip("<>"), lineno)
        return found


def _check_batch(batch: Any, number: int) -> None:
    if len(batch) != number:
        raise ValueError(f"batch_setup must bind `batch` to exactly `number` ({number}) items, got {len(batch)}")
