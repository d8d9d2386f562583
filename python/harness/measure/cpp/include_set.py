"""Which headers a C++ statement is compiled with: the lean set, or the full one, and why.

The lean set (``harness/stmt.h``: ATen, the torch tensor types) compiles a
statement TU in a fraction of the full set's time (``harness/stmt_full.h``:
``torch/torch.h`` and ``torch/script.h``), so it is the default. A statement
gets the full set when

- its code names a part of torch the lean set leaves out (``torch::nn``,
  ``torch::jit``, ``torch::optim``, ``torch::data``, ...) or has ``#include``
  lines of its own (they may need anything), decided from the text before
  any compile; or
- it failed to compile with the lean set because a name of torch's is not
  declared (``missing_declaration``): the build retries it with the full set.

The choice is cached per statement (by its content key) under the toolchain's
directory, so a statement pays a failed lean compile at most once.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from harness.files.atomic import atomic_write_text
from harness.files.cache import ensure_private_dir
from harness.measure.cpp.statement import SECTIONS, CppStatement
from harness.measure.cpp.toolchain import toolchain

LEAN = "lean"
FULL = "full"
INCLUDE_SETS = (LEAN, FULL)
HEADERS = {LEAN: "harness/stmt.h", FULL: "harness/stmt_full.h"}

# Parts of the torch C++ API the lean set does not declare. A namespace after
# `torch::` or on its own (after `using namespace torch;`).
_FULL_API = re.compile(
    r"\b(?:torch::)?(?:nn|jit|optim|data|serialize|autograd::Function|script|fft|linalg|special|nested|sparse)::"
    r"|\btorch::(?:save|load|NoGradGuard|AutoGradMode|manual_seed|Module)\b"
)
_INCLUDE = re.compile(r"^\s*#\s*include\b", re.MULTILINE)

# g++ and clang messages that mean "a name is not declared", as opposed to a
# genuine mistake in the user's code (a type mismatch, a syntax error).
_MISSING = re.compile(
    r"was not declared in this scope|has not been declared|is not a member of|does not name a type"
    r"|is not a namespace-name|incomplete type|no member named|undeclared identifier|unknown type name"
    r"|no type named|is not a class, namespace, or enumeration|is not a template"
)


def static_choice(statement: CppStatement) -> tuple[str, str]:
    """(include set, reason) from the statement's text alone."""
    for name in SECTIONS:
        code = statement.section(name)
        if _INCLUDE.search(code):
            return FULL, f"{name} has #include lines"
        m = _FULL_API.search(code)
        if m:
            return FULL, f"{name} uses {m.group(0).rstrip(':')}"
    return LEAN, "tensor code only"


# The undeclared name is torch's: a name of the user's own that is undeclared
# is a genuine mistake, and retrying it with the full set would only pay a
# second failed compile.
_TORCH_NAME = re.compile(r"['\u2018](?:::)?(?:torch|at|c10)(?:::|['\u2019])")


def missing_declaration(message: str) -> bool:
    """True when a compile error says a name of torch's is undeclared: the full set may declare it."""
    return any(_MISSING.search(line) and _TORCH_NAME.search(line) for line in message.splitlines())


def _choice_path(key: str) -> Path:
    return ensure_private_dir(toolchain().root / "include_sets") / f"{key}.json"


def choose(statement: CppStatement) -> tuple[str, str]:
    """(include set, reason): a cached choice (a lean build that failed) first, else the text's."""
    try:
        cached = json.loads(_choice_path(statement.key).read_text())
    except (FileNotFoundError, ValueError):
        cached = None
    if isinstance(cached, dict) and cached.get("set") in INCLUDE_SETS:
        return str(cached["set"]), f"cached: {cached.get('reason', '')}"
    return static_choice(statement)


def remember(statement: CppStatement, include_set: str, reason: str) -> None:
    """Cache the choice for this statement, so later builds go straight to it."""
    atomic_write_text(_choice_path(statement.key), json.dumps({"set": include_set, "reason": reason}))
