"""The timed C++ block: a compiled statement whose native sampler the core times.

``Timer(..., language="cpp")`` builds one of these. ``global_setup`` is file
scope (includes, helpers), ``setup`` runs once, ``batch_setup`` runs before
each block with ``number`` (the block's run count) in scope and, if it
mentions ``batch``, binds one item per run that ``stmt`` sees as ``item``;
``stmt`` is the timed body. The sampler is a ``harness.sampler`` capsule: the
core calls straight into the compiled loop, so no Python runs while timing.

Setup semantics: setup runs once per Timer. Its locals live in the compiled
routine, which one process keeps per distinct statement; if another Timer with
the identical statement ran in between, the next timing call of this Timer
runs setup again, so a Timer always times state that its own setup made.
"""

from __future__ import annotations

import re
import weakref
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from harness.core import native
from harness.errors import BuildError, StatementError
from harness.measure.cpp.build import CompiledStatement, load
from harness.measure.cpp.pch import wait_for_pch
from harness.measure.cpp.statement import CppStatement


class CppBlock:
    def __init__(
        self,
        stmt: str,
        setup: str = "",
        global_setup: str = "",
        batch_setup: str | None = None,
        output: str | None = None,
        inputs: tuple[str, ...] = (),
    ) -> None:
        self.statement = CppStatement(
            stmt=stmt, setup=setup, global_setup=global_setup, batch_setup=batch_setup or "",
            output=output, inputs=tuple(inputs),
        )
        self._compiled: CompiledStatement | None = None

    @property
    def compiled(self) -> CompiledStatement:
        if self._compiled is None:
            with self.translate_errors():
                self._compiled = load(self.statement)
        return self._compiled

    def sampler(self) -> Any:
        """Set up (once per Timer, see the module doc) and return the native sampler capsule."""
        compiled = self.compiled
        # A background PCH compile would compete with a timed measurement for cores. Under
        # valgrind nothing is timed, and a wait (polling a lock) would leave the heap the
        # count starts from different when a build happened to run: the first count of a
        # C++ statement after it was built differed from the next by 180 instructions.
        if not native().callgrind.running_on_valgrind():
            wait_for_pch()
        owner = _OWNERS.get(compiled.key)
        if owner is not self or not compiled.ready:
            compiled.reset()
            _OWNERS[compiled.key] = self
            compiled.prepare()
        return compiled.sampler()

    def probe(self) -> list[Any]:
        """Run setup afresh and stmt once; [output, grads of inputs] as tensors (None where undefined)."""
        compiled = self.compiled
        with self.translate_errors():
            compiled.reset()
            _OWNERS[compiled.key] = self
            compiled.prepare()
            return compiled.probe()

    @contextmanager
    def translate_errors(self) -> Iterator[None]:
        """Compile failures and C++ exceptions become StatementError with the C++ message."""
        try:
            yield
        except StatementError:
            raise
        except BuildError as exc:
            raise StatementError(str(exc)) from exc
        except RuntimeError as exc:
            message = str(exc)
            # "stmt raised c10::Error: ..." from the runtime; anything else is still the statement's doing.
            if not re.match(r"^(setup|stmt|batch_setup) raised ", message):
                message = f"statement failed: {message}"
            raise StatementError(f"C++ {message}") from exc


# compiled statement key -> the CppBlock whose setup its routine currently holds.
_OWNERS: weakref.WeakValueDictionary[str, CppBlock] = weakref.WeakValueDictionary()
