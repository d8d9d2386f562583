"""The timed Python block: a generated function that runs a statement N times.

Why a generated loop rather than a C++ loop calling a code object: the loop
`for _ in repeat(None, n): <stmt>` costs ~5 ns per iteration, a C++ loop
calling a function ~17 ns and one evaluating a code object ~38 ns
(benchmarks/overhead.py measures all three). The clock reads are the C++
core's, taken inside the block around the loop.

Setup runs once; the names the statement uses that setup (or ``globals``)
bound are passed as default arguments, so inside the loop they are fast locals
exactly as in ``timeit``, without re-running setup for every block.
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

from .errors import StatementError

BLOCK_FILENAME = "<harness block>"
_SOURCES = ("global_setup", "setup", "batch_setup", "stmt")


def normalize(code: str) -> str:
    """Dedent and drop leading/trailing blank lines, so line 1 is the first code line."""
    return textwrap.dedent(code).strip("\n")


def _syntax_check(where: str, code: str) -> ast.Module:
    try:
        return ast.parse(code, filename=f"<{where}>", mode="exec")
    except SyntaxError as exc:
        line = (exc.text or "").strip()
        raise StatementError(
            f"{where} line {exc.lineno}: {exc.msg}: {line!r}\n  in {where}:\n{textwrap.indent(code, '    ')}"
        ) from None


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
    ) -> None:
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

        if self._timer is not None:
            clock, elapsed = self._timer, (lambda dt: int(dt * 1e9))
        else:
            clock, elapsed = self._clock_ns, int
        ns.update(
            __harness_clock=clock,
            __harness_elapsed=elapsed,
            __harness_repeat=itertools.repeat,
            __harness_check_batch=_check_batch,
        )
        exec(compile(source, BLOCK_FILENAME, "exec"), ns)
        return ns["__harness_block"]

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
            raise StatementError(
                f"{section} line {line} ({text!r}) raised {type(exc).__name__}: {exc}"
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
