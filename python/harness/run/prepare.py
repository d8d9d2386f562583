"""Before a run: script every TorchScript model and compile every C++ statement, one build per include set.

The preparer of the ``timer`` and ``grouped`` kinds (``harness.kinds``):
``bench`` calls it once, in the parent process, with all tasks of the run, so
the workers only load statements from the cache.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

from harness.define.torchscript import ensure_scripted
from harness.errors import HarnessError
from harness.measure.cpp import pch
from harness.measure.cpp.block import CppBlock
from harness.measure.cpp.build import build
from harness.measure.cpp.statement import CppStatement
from harness.model.task import Task


def cpp_statement(task: Task) -> CppStatement | None:
    """The CppStatement a C++ task compiles (kinds ``grouped`` and ``timer``), else None."""
    p = task.params
    if task.kind not in ("grouped", "timer") or str(p.get("language", "")).lower() not in ("cpp", "c++"):
        return None
    if task.kind == "timer":
        return CppStatement(
            stmt=p.get("stmt", ""), setup=p.get("setup", ""), global_setup=p.get("global_setup", ""),
            batch_setup=p.get("batch_setup") or "",
        )
    return CppStatement(
        stmt=p["stmt"], setup=p.get("setup", ""), global_setup=p.get("global_setup", ""),
        output=p.get("output"), inputs=tuple(p.get("inputs") or ()),
    )


def cpp_block(task: Task) -> CppBlock:
    """The block a C++ task runs: the statement this preparer compiled, from the one place that says
    what it is. Any other (a grouped task's without its output and inputs, say) would be compiled by
    the worker itself, and in a counting child the compiler's work would become the heap its count
    starts from."""
    return CppBlock(**dataclasses.asdict(cpp_statement(task)))


def prepare_tasks(tasks: Sequence[Task], status: Any = None) -> None:
    """Before a run: script every TorchScript model and compile every C++ statement, one build per include set.

    Failures are left for the tasks to report (cached, so workers do not
    retry them); a PCH compile started by the build is waited for, so it does
    not compete with the measurements.
    """
    statements = [s for s in (cpp_statement(t) for t in tasks) if s is not None]
    scripts = {(t.params["torchscript"]["source"], t.params["torchscript"]["kind"]) for t in tasks
               if t.kind == "grouped" and t.params.get("torchscript")}
    if not statements and not scripts:
        return
    if scripts and status is not None:
        status(f"scripting {len(scripts)} TorchScript model(s) (cached ones are reused)")
    for source, kind in sorted(scripts):
        try:
            ensure_scripted(source, kind)
        except HarnessError:
            pass  # the task reports it
    if statements:
        if status is not None:
            status(f"compiling {len({s.key for s in statements})} C++ statement(s), one build per include set "
                   "(cached ones are reused)")
        try:
            build(statements)
        except HarnessError:
            return  # each C++ task fails with the reason when it runs
        if status is not None and pch.pch_enabled() and pch.pch_building():
            status("waiting for the C++ headers being precompiled in the background (once per toolchain and torch)")
        pch.wait_for_pch()
