"""Grouped definitions: one op in Python and C++, eager and TorchScript, forward and backward.

``GroupedStmts``, ``GroupedModules`` and ``GroupedVariants`` expand into Tasks
of kind ``grouped``, one per

    {Python eager, TorchScript from Python, C++ eager, TorchScript from C++}
    x {forward, forward + backward} x num_threads

that the definition asks for (TorchScript needs ``torchscript=True`` and a
signature, backward needs ``autograd=True`` and a signature with an output).
Task names are ``<name>[<language>-<runtime>,<pass>,t<threads>]``, e.g.
``mul[py-eager,fwd,t1]``, ``mul[cpp-ts,bwd,t2]``: language ``py``/``cpp``,
runtime ``eager``/``ts``, pass ``fwd`` (forward) or ``bwd`` (forward +
backward). So ``-k cpp-eager``, ``-k ,bwd,`` or ``-k 'mul and py-'`` select
slices. The params keep ``group``, ``language``, ``runtime``, ``autograd``,
``signature`` for reports.

Every task carries its final stmt/setup code, so a run compiles every C++
statement it selected in one build before timing (``run.prepare``), and a
worker process finds them in the cache; ``run.grouped_task`` runs them.
"""

from __future__ import annotations

import dataclasses
import json
import re
import textwrap
from collections.abc import Sequence
from typing import Any

from harness.define.torchscript import TORCHSCRIPT_DIR, Signature, function_source, model_source, saved_path
from harness.errors import UsageError
from harness.model.task import Task
from harness.options import CACHE_DIR_ENV

LANGUAGE_NAMES = {"py": "python", "cpp": "cpp"}
RUNTIME_NAMES = {"eager": "eager", "ts": "torchscript"}
AUTOGRAD_NAMES = {"fwd": "forward", "bwd": "forward+backward"}
COLUMN_TITLES = {
    ("py", "eager"): "Python eager",
    ("py", "ts"): "TorchScript (Python)",
    ("cpp", "eager"): "C++ eager",
    ("cpp", "ts"): "TorchScript (C++)",
}
WARMUP_CALLS = 3  # TorchScript's profiling executor optimises after a couple of calls


def dedent(code: str | None) -> str:
    return textwrap.dedent(code or "").strip("\n")


def thread_counts(num_threads: int | Sequence[int]) -> tuple[int, ...]:
    values = (num_threads,) if isinstance(num_threads, int) else tuple(num_threads)
    if not values or any(not isinstance(n, int) or isinstance(n, bool) or n < 1 for n in values):
        raise UsageError(f"num_threads must be a positive int or a tuple of them, got {num_threads!r}")
    return values


@dataclasses.dataclass(frozen=True)
class GroupedSetup:
    """Setup for both languages: ``py_setup``, ``cpp_setup`` and C++ file-scope ``global_setup``."""

    py_setup: str = ""
    cpp_setup: str = ""
    global_setup: str = ""

    def __post_init__(self) -> None:
        for f in dataclasses.fields(self):
            object.__setattr__(self, f.name, dedent(getattr(self, f.name)))


@dataclasses.dataclass(frozen=True)
class Variant:
    """One concrete benchmark of a group (before num_threads)."""

    language: str  # "py" | "cpp"
    runtime: str  # "eager" | "ts"
    autograd: str  # "fwd" | "bwd"
    stmt: str
    setup: str
    global_setup: str = ""
    torchscript: dict[str, str] | None = None  # {"source", "kind", "file"}


class _Grouped:
    """Shared expansion of GroupedStmts and GroupedModules."""

    kind = "grouped"

    def __init__(
        self,
        setup: GroupedSetup | None,
        signature: str | None,
        torchscript: bool,
        autograd: bool,
        num_threads: int | Sequence[int],
        name: str | None,
        description: str | None,
        min_run_time: float | None,
    ) -> None:
        self.setup = setup or GroupedSetup()
        if not isinstance(self.setup, GroupedSetup):
            raise UsageError(f"setup must be a harness.GroupedSetup, got {type(self.setup).__name__}")
        self.signature = Signature.parse(signature) if signature is not None else None
        self.torchscript = bool(torchscript)
        self.autograd = bool(autograd)
        self.num_threads = thread_counts(num_threads)
        self.name = name
        self.description = description
        self.min_run_time = min_run_time
        what = f"{type(self).__name__}{f' {name!r}' if name else ''}"
        if self.torchscript and self.signature is None:
            raise UsageError(f"{what}: torchscript=True needs a signature such as 'f(x, w) -> y'")
        if self.autograd and (self.signature is None or self.signature.output is None):
            raise UsageError(f"{what}: autograd=True needs a signature with an output, e.g. 'f(x, w) -> y'")

    def named(self, name: str) -> _Grouped:
        clone = object.__new__(type(self))
        clone.__dict__.update(self.__dict__)
        clone.name = name
        return clone

    # Subclasses: the eager stmts (None: language absent) and extra eager setup.
    def _eager(self, language: str) -> tuple[str | None, str]:
        raise NotImplementedError

    def _torchscript_source(self) -> tuple[str, str] | None:
        raise NotImplementedError

    def variants(self) -> list[Variant]:
        sig = self.signature
        out: list[Variant] = []
        ts = None
        if self.torchscript:
            source, kind = self._torchscript_source()  # type: ignore[misc]
            # The file's name, not its path: a task's params reach the counting child, and a path
            # there moves the count with the cache's path (define.torchscript.load).
            ts = {"source": source, "kind": kind, "file": saved_path(source, kind).name}
        for language in ("py", "cpp"):
            eager_stmt, eager_setup = self._eager(language)
            runtimes: list[tuple[str, str | None, str]] = []
            if eager_stmt is not None:
                runtimes.append(("eager", eager_stmt, eager_setup))
            if ts is not None and (language == "cpp" or eager_stmt is not None):
                assert sig is not None
                runtimes.append(("ts", self._ts_call(language, sig), ""))
            for runtime, stmt, extra_setup in runtimes:
                assert stmt is not None
                for autograd in ("fwd", "bwd") if self.autograd else ("fwd",):
                    full = stmt + ("\n" + self._backward(language, runtime) if autograd == "bwd" else "")
                    if runtime == "ts":
                        assert ts is not None
                        setup = self._ts_setup(language, ts["file"], full)
                    else:
                        setup = extra_setup
                    out.append(
                        Variant(
                            language=language,
                            runtime=runtime,
                            autograd=autograd,
                            stmt=full,
                            setup=setup,
                            global_setup=self.setup.global_setup if language == "cpp" else "",
                            torchscript=ts if runtime == "ts" else None,
                        )
                    )
        return out

    def _ts_call(self, language: str, sig: Signature) -> str:
        args = ", ".join(sig.args)
        if language == "py":
            return f"{sig.output} = jit_model({args})" if sig.output else f"jit_model({args})"
        call = f"jit_model.forward({{{args}}});"
        return f"auto {sig.output} = {call}" if sig.output else call

    def _backward(self, language: str, runtime: str) -> str:
        assert self.signature is not None and self.signature.output is not None
        y = self.signature.output
        if language == "py":
            return f"{y}.backward()"
        return f"{y}.toTensor().backward();" if runtime == "ts" else f"{y}.backward();"

    def _ts_setup(self, language: str, name: str, stmt: str) -> str:
        # The file by its name in the cache of the process that runs it, never by the cache's path,
        # whose length would move the count (define.torchscript.load). C++ reads the cache from
        # HARNESS_CACHE_DIR, which every process that runs such a setup has (run.grouped_task).
        if language == "py":
            return "\n".join(
                [
                    self.setup.py_setup,
                    "from harness.define.torchscript import load as _harness_load_torchscript",
                    f"jit_model = _harness_load_torchscript({name!r})",
                    f"for _ in range({WARMUP_CALLS}):",
                    textwrap.indent(stmt, "    "),
                ]
            ).strip("\n")
        return "\n".join(
            [
                self.setup.cpp_setup,
                f"auto jit_model = torch::jit::load(std::string(std::getenv({json.dumps(CACHE_DIR_ENV)})) + "
                f"{json.dumps(f'/{TORCHSCRIPT_DIR}/{name}')});",
                f"for (int harness_warmup = 0; harness_warmup < {WARMUP_CALLS}; ++harness_warmup) {{",
                stmt,
                "}",
            ]
        ).strip("\n")

    def expand(self, suite: str) -> list[Task]:
        if not self.name:
            raise UsageError(
                f"suite {suite!r}: a {type(self).__name__} needs a name: pass name='...' "
                "(it becomes the task names' prefix)"
            )
        if not re.match(r"^[\w.\-+/ ()]+$", self.name) or "[" in self.name:
            raise UsageError(f"suite {suite!r}: name {self.name!r} may use letters, digits and _ . - + / ( ) only")
        tasks = []
        sig = self.signature
        for v in self.variants():
            for threads in self.num_threads:
                variant = f"{v.language}-{v.runtime}"
                params: dict[str, Any] = {
                    "group": self.name,
                    "definition": type(self).__name__,
                    "variant": variant,
                    "language": LANGUAGE_NAMES[v.language],
                    "runtime": RUNTIME_NAMES[v.runtime],
                    "autograd": AUTOGRAD_NAMES[v.autograd],
                    "signature": str(sig) if sig else None,
                    "output": sig.output if sig else None,
                    "inputs": list(sig.args) if sig else [],
                    "stmt": v.stmt,
                    "setup": v.setup,
                    "global_setup": v.global_setup,
                    "torchscript": v.torchscript,
                    "num_threads": threads,
                    "label": suite,
                    "sub_label": self.name,
                    "description": self.description or COLUMN_TITLES[(v.language, v.runtime)],
                    "min_run_time": self.min_run_time,
                }
                name = f"{self.name}[{variant},{v.autograd},t{threads}]"
                tasks.append(Task(suite=suite, name=name, kind=self.kind, params=params))
        return tasks


class GroupedStmts(_Grouped):
    """A snippet in Python and/or C++ (the reference's ``GroupedStmts``)."""

    def __init__(
        self,
        py_stmt: str | None = None,
        cpp_stmt: str | None = None,
        setup: GroupedSetup | None = None,
        signature: str | None = None,
        torchscript: bool = False,
        autograd: bool = False,
        num_threads: int | Sequence[int] = (1,),
        *,
        name: str | None = None,
        description: str | None = None,
        min_run_time: float | None = None,
    ) -> None:
        self.py_stmt = dedent(py_stmt) if py_stmt is not None and py_stmt.strip() else None
        self.cpp_stmt = dedent(cpp_stmt) if cpp_stmt is not None and cpp_stmt.strip() else None
        super().__init__(setup, signature, torchscript, autograd, num_threads, name, description, min_run_time)
        if self.py_stmt is None and self.cpp_stmt is None:
            raise UsageError("GroupedStmts needs py_stmt, cpp_stmt or both")
        if self.torchscript and self.py_stmt is None:
            raise UsageError("GroupedStmts: torchscript=True scripts py_stmt, so py_stmt is required")

    def _eager(self, language: str) -> tuple[str | None, str]:
        if language == "py":
            return self.py_stmt, self.setup.py_setup
        return self.cpp_stmt, self.setup.cpp_setup

    def _torchscript_source(self) -> tuple[str, str]:
        assert self.py_stmt is not None and self.signature is not None
        return function_source(self.py_stmt, self.signature), "function"


class GroupedModules(_Grouped):
    """An ``nn.Module`` in Python (``py_model_setup`` defines ``model``) and its C++ equivalent.

    The statements are generated from the signature: ``y = model(x)`` and
    ``auto y = model->forward(x);``. ``py_model_setup`` runs after
    ``py_setup`` with ``nn`` imported; for TorchScript it is also run on its
    own (so it must not use setup's variables) and ``model`` is scripted.
    """

    def __init__(
        self,
        py_model_setup: str | None = None,
        cpp_model_setup: str | None = None,
        setup: GroupedSetup | None = None,
        signature: str | None = None,
        torchscript: bool = False,
        autograd: bool = False,
        num_threads: int | Sequence[int] = (1,),
        *,
        name: str | None = None,
        description: str | None = None,
        min_run_time: float | None = None,
    ) -> None:
        if signature is None:
            raise UsageError("GroupedModules needs a signature such as 'f(x) -> y' (the model's inputs and output)")
        self.py_model_setup = dedent(py_model_setup) or None
        self.cpp_model_setup = dedent(cpp_model_setup) or None
        super().__init__(setup, signature, torchscript, autograd, num_threads, name, description, min_run_time)
        for lang, code in (("py_model_setup", self.py_model_setup), ("cpp_model_setup", self.cpp_model_setup)):
            if code is not None and not re.search(r"\bmodel\b", code):
                raise UsageError(f"GroupedModules: {lang} must define `model`")
        if self.py_model_setup is None and self.cpp_model_setup is None:
            raise UsageError("GroupedModules needs py_model_setup, cpp_model_setup or both")
        if self.torchscript and self.py_model_setup is None:
            raise UsageError("GroupedModules: torchscript=True scripts the Python model, so py_model_setup is required")

    def _eager(self, language: str) -> tuple[str | None, str]:
        sig = self.signature
        assert sig is not None
        args = ", ".join(sig.args)
        if language == "py":
            if self.py_model_setup is None:
                return None, ""
            stmt = f"{sig.output} = model({args})" if sig.output else f"model({args})"
            return stmt, "\n".join([self.setup.py_setup, "from torch import nn", self.py_model_setup]).strip("\n")
        if self.cpp_model_setup is None:
            return None, ""
        call = f"model->forward({args});"
        stmt = f"auto {sig.output} = {call}" if sig.output else call
        return stmt, "\n".join([self.setup.cpp_setup, self.cpp_model_setup]).strip("\n")

    def _torchscript_source(self) -> tuple[str, str]:
        assert self.py_model_setup is not None
        return model_source(self.py_model_setup), "model"
