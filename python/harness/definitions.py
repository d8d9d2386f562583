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
statement it selected in one build before timing (``prepare_tasks``), and a
worker process finds them in the cache.
"""

from __future__ import annotations

import dataclasses
import json
import re
import textwrap
from collections.abc import Sequence
from typing import Any

from .errors import UsageError
from .result import TaskResult
from .task import Task
from .torchscript import Signature, function_source, model_source, saved_path

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


def _dedent(code: str | None) -> str:
    return textwrap.dedent(code or "").strip("\n")


def _threads(num_threads: int | Sequence[int]) -> tuple[int, ...]:
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
            object.__setattr__(self, f.name, _dedent(getattr(self, f.name)))


@dataclasses.dataclass(frozen=True)
class Variant:
    """One concrete benchmark of a group (before num_threads)."""

    language: str  # "py" | "cpp"
    runtime: str  # "eager" | "ts"
    autograd: str  # "fwd" | "bwd"
    stmt: str
    setup: str
    global_setup: str = ""
    torchscript: dict[str, str] | None = None  # {"source", "kind", "path"}


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
        self.num_threads = _threads(num_threads)
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
            ts = {"source": source, "kind": kind, "path": str(saved_path(source, kind))}
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
                        setup = self._ts_setup(language, ts["path"], full)
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

    def _ts_setup(self, language: str, path: str, stmt: str) -> str:
        if language == "py":
            return "\n".join(
                [
                    self.setup.py_setup,
                    "from harness.torchscript import load as _harness_load_torchscript",
                    f"jit_model = _harness_load_torchscript({path!r})",
                    f"for _ in range({WARMUP_CALLS}):",
                    textwrap.indent(stmt, "    "),
                ]
            ).strip("\n")
        return "\n".join(
            [
                self.setup.cpp_setup,
                f"auto jit_model = torch::jit::load({json.dumps(path)});",
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
        self.py_stmt = _dedent(py_stmt) if py_stmt is not None and py_stmt.strip() else None
        self.cpp_stmt = _dedent(cpp_stmt) if cpp_stmt is not None and cpp_stmt.strip() else None
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
        self.py_model_setup = _dedent(py_model_setup) or None
        self.cpp_model_setup = _dedent(cpp_model_setup) or None
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


_LABEL = {"py": re.compile(r"^#\s*@(.+)$"), "cpp": re.compile(r"^//\s*@(.+)$")}


def _parse_block(block: str, language: str) -> tuple[dict[str, list[str]], str, str]:
    sections: dict[str, list[str]] = {}
    label: str | None = None
    comment = "#" if language == "py" else "//"
    for line in _dedent(block).splitlines():
        m = _LABEL[language].match(line.strip())
        if m:
            label = m.group(1).strip()
            sections.setdefault(label, [])
            continue
        if label is None:
            if line.strip():
                raise UsageError(
                    f"GroupedVariants: {line.strip()!r} comes before any '{comment} @label' line; "
                    f"start the block with '{comment} @setup' or a variant label"
                )
            continue
        sections[label].append(line)
    setup = "\n".join(sections.pop("setup", []))
    global_setup = "\n".join(sections.pop("global_setup", []))
    cases = {
        k: [line.strip() for line in v if line.strip() and not line.strip().startswith(comment)]
        for k, v in sections.items()
    }
    return cases, setup, global_setup


class GroupedVariants:
    """One benchmark per line: ``# @label`` sections of a Python block paired line by line with ``// @label`` C++ sections.

    ``@setup`` (both) and ``@global_setup`` (C++) sections are shared. A label
    with one line becomes ``<name>.<label>``, with several
    ``<name>.<label>.<i>`` (from 0). A label present in one block only is
    benchmarked in that language only; present in both, both must have the
    same number of lines.
    """

    def __init__(
        self,
        py_block: str = "",
        cpp_block: str = "",
        num_threads: int | Sequence[int] = (1,),
        *,
        name: str | None = None,
        min_run_time: float | None = None,
    ) -> None:
        py_cases, py_setup, py_global = _parse_block(py_block, "py")
        cpp_cases, cpp_setup, cpp_global = _parse_block(cpp_block, "cpp")
        if py_global:
            raise UsageError("GroupedVariants: '# @global_setup' is C++ only; put Python imports in '# @setup'")
        self.setup = GroupedSetup(py_setup, cpp_setup, cpp_global)
        self.num_threads = _threads(num_threads)
        self.name = name
        self.min_run_time = min_run_time
        self.cases: dict[str, list[tuple[str | None, str | None]]] = {}
        for label in dict.fromkeys([*py_cases, *cpp_cases]):
            py_lines, cpp_lines = py_cases.get(label), cpp_cases.get(label)
            if py_lines is not None and cpp_lines is not None and len(py_lines) != len(cpp_lines):
                raise UsageError(
                    f"GroupedVariants: @{label} has {len(py_lines)} Python line(s) but {len(cpp_lines)} C++ line(s); "
                    "lines are paired one to one"
                )
            n = len(py_lines if py_lines is not None else cpp_lines or [])
            self.cases[label] = [
                (py_lines[i] if py_lines is not None else None, cpp_lines[i] if cpp_lines is not None else None)
                for i in range(n)
            ]

    def named(self, name: str) -> GroupedVariants:
        clone = object.__new__(type(self))
        clone.__dict__.update(self.__dict__)
        clone.name = name
        return clone

    def definitions(self) -> list[GroupedStmts]:
        prefix = f"{self.name}." if self.name else ""
        out = []
        for label, lines in self.cases.items():
            for i, (py, cpp) in enumerate(lines):
                name = f"{prefix}{label}" + (f".{i}" if len(lines) > 1 else "")
                out.append(
                    GroupedStmts(
                        py, cpp, setup=self.setup, num_threads=self.num_threads, name=name,
                        min_run_time=self.min_run_time,
                    )
                )
        return out

    def expand(self, suite: str) -> list[Task]:
        return [t for d in self.definitions() for t in d.expand(suite)]


def parse_stmts(table: str) -> tuple[str, str]:
    """Split a two-column ``Python | C++`` table (header, ``---|---`` rule, rows) into (py_stmt, cpp_stmt)."""
    lines = _dedent(table).splitlines()
    rule = next((i for i, line in enumerate(lines) if re.match(r"^\s*-+\s*\|\s*-+\s*$", line)), None)
    if rule is None:
        raise UsageError("parse_stmts: expected a header, a '----- | -----' rule, then 'python | c++' rows")
    column = lines[rule].index("|")
    py, cpp = [], []
    for line in lines[rule + 1 :]:
        if line.strip() and (len(line) <= column or line[column] != "|"):
            raise UsageError(f"parse_stmts: {line!r} does not have '|' in column {column + 1}")
        py.append(line[:column].rstrip())
        cpp.append(line[column + 1 :].strip() if len(line) > column else "")
    return "\n".join(py).strip("\n"), "\n".join(cpp).strip("\n")


# --------------------------------------------------------------------------- running


def cpp_statement(task: Task) -> Any:
    """The CppStatement a C++ task compiles (kinds ``grouped`` and ``timer``), else None."""
    p = task.params
    if task.kind not in ("grouped", "timer") or str(p.get("language", "")).lower() not in ("cpp", "c++"):
        return None
    from .cpp_build import CppStatement

    if task.kind == "timer":
        return CppStatement(
            stmt=p.get("stmt", ""), setup=p.get("setup", ""), global_setup=p.get("global_setup", ""),
            batch_setup=p.get("batch_setup") or "",
        )
    return CppStatement(
        stmt=p["stmt"], setup=p.get("setup", ""), global_setup=p.get("global_setup", ""),
        output=p.get("output"), inputs=tuple(p.get("inputs") or ()),
    )


def grouped_timer(task: Task) -> Any:
    """The Timer for a grouped task (scripting its TorchScript model first if needed)."""
    from .cpp_stmt import CppBlock
    from .errors import StatementError
    from .timer import Timer
    from .torchscript import ensure_scripted

    p = task.params
    ts = p.get("torchscript")
    if ts:
        path = ensure_scripted(ts["source"], ts["kind"])
        if str(path) != ts["path"]:
            raise StatementError(
                f"the TorchScript file for this task moved ({ts['path']} -> {path}); "
                "the torch version changed since the suite was expanded: run again"
            )
    timer = Timer(
        stmt=p["stmt"], setup=p.get("setup") or "pass", global_setup=p.get("global_setup", ""),
        label=p.get("label"), sub_label=p.get("sub_label"), description=p.get("description"),
        num_threads=p.get("num_threads", 1), language=p["language"],
    )
    if p["language"] == "cpp":
        # Same statement as prepare_tasks compiled (with the probe of the signature's output).
        timer._block = CppBlock(
            p["stmt"], p.get("setup", ""), p.get("global_setup", ""), output=p.get("output"),
            inputs=tuple(p.get("inputs") or ()),
        )
    return timer


def run_grouped_task(task: Task, min_run_time: float) -> TaskResult:
    timer = grouped_timer(task)  # also makes sure its TorchScript model is scripted
    if task.mode == "instructions":
        # Grouped params carry stmt/setup/global_setup/language/num_threads
        # like Timer tasks, so the instruction runner counts them the same way.
        from .instructions import run_timer_instructions

        return run_timer_instructions(task, min_run_time)
    m = timer.blocked_autorange(min_run_time=task.params.get("min_run_time") or min_run_time)
    return TaskResult(task=task, status="ok", unit="s", samples=m.times, number_per_run=m.number_per_run)


def probe(task: Task) -> list[Any]:
    """Run a grouped task's setup and stmt once: [output, grad of each signature input] (None where undefined).

    Gradients are cleared before the run, so they are those of one backward.
    """
    p = task.params
    timer = grouped_timer(task)
    if p["language"] == "cpp":
        return timer._block.probe()
    import torch

    ns: dict[str, Any] = {"torch": torch}
    exec(compile(p.get("setup") or "pass", "<setup>", "exec"), ns)
    for name in p.get("inputs") or ():
        value = ns.get(name)
        if isinstance(value, torch.Tensor):
            value.grad = None
    exec(compile(p["stmt"], "<stmt>", "exec"), ns)
    output = ns.get(p["output"]) if p.get("output") else None
    grads = [getattr(ns.get(name), "grad", None) for name in p.get("inputs") or ()]
    return [output, *grads]


def prepare_tasks(tasks: Sequence[Task], status: Any = None) -> None:
    """Before a run: script every TorchScript model and compile every C++ statement, in one build.

    Failures are left for the tasks to report (cached, so workers do not
    retry them); a PCH compile started by the build is waited for, so it does
    not compete with the measurements.
    """
    statements = [s for s in (cpp_statement(t) for t in tasks) if s is not None]
    scripts = {(t.params["torchscript"]["source"], t.params["torchscript"]["kind"]) for t in tasks
               if t.kind == "grouped" and t.params.get("torchscript")}
    if not statements and not scripts:
        return
    from . import cpp_build
    from .errors import HarnessError
    from .torchscript import ensure_scripted

    for source, kind in sorted(scripts):
        try:
            ensure_scripted(source, kind)
        except HarnessError:
            pass  # the task reports it
    if statements:
        if status is not None:
            status(f"compiling {len({s.key for s in statements})} C++ statement(s) in one build (cached ones are reused)")
        try:
            cpp_build.build(statements)
        except HarnessError:
            return  # each C++ task fails with the reason when it runs
        cpp_build.wait_for_pch()
