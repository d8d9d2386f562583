"""Which headers a C++ statement is compiled with: the lean, frontend or full set, and why.

Each set costs every statement TU its templates and inline code, PCH or not
(g++ 12 -O2, an empty TU with each set's PCH: lean 1.9 s, frontend 4.7 s,
full 5.5 s; a statement holding a ``torch::nn::Linear`` 8.9 s with the
frontend set, 9.9 s with the full one, back to back; docs/cpp-statements.md),
so a statement gets the smallest set
that declares what it uses:

- lean (``harness/stmt.h``: ATen, the torch tensor types): the default;
- frontend (``harness/stmt_frontend.h``: ``torch/torch.h``, the C++ frontend):
  code that names ``torch::nn``, ``torch::optim``, ``torch::data``,
  ``torch::serialize``, ``torch::fft``, ...;
- full (``harness/stmt_full.h``: the frontend and ``torch/script.h``,
  TorchScript's loader, custom operators and classes): code that names
  ``torch::jit`` or ``script::``, or has ``#include`` lines of its own (they
  may need anything).

That much is decided from the text before any compile. A statement that
fails to compile with the lean or frontend set because a name of torch's is
not declared (``missing_declaration``) is retried with the full set.

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
FRONTEND = "frontend"
FULL = "full"
INCLUDE_SETS = (LEAN, FRONTEND, FULL)  # smallest first
HEADERS = {LEAN: "harness/stmt.h", FRONTEND: "harness/stmt_frontend.h", FULL: "harness/stmt_full.h"}

# Parts of the torch C++ API a set does not declare and the next one does. A
# namespace after `torch::` or on its own (after `using namespace torch;`).
_NEEDS = (
    (FULL, re.compile(r"\b(?:torch::)?(?:jit|script)::|\btorch::(?:class_|CustomClassHolder)\b")),
    (FRONTEND, re.compile(
        r"\b(?:torch::)?(?:nn|optim|data|serialize|autograd::Function|fft|linalg|special|nested|sparse)::"
        r"|\btorch::(?:save|load|NoGradGuard|AutoGradMode|manual_seed|Module)\b")),
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
    """(include set, reason) from the statement's text alone: the smallest set that declares what it names."""
    sections = [(name, statement.section(name)) for name in SECTIONS]
    for name, code in sections:
        if _INCLUDE.search(code):
            return FULL, f"{name} has #include lines"
    for include_set, pattern in _NEEDS:
        for name, code in sections:
            m = pattern.search(code)
            if m:
                return include_set, f"{name} uses {m.group(0).rstrip(':')}"
    return LEAN, "tensor code only"


# The undeclared name is torch's: a name of the user's own that is undeclared
# is a genuine mistake, and retrying it with the full set would only pay a
# second failed compile.
_TORCH_NAME = re.compile(r"['\u2018](?:::)?(?:torch|at|c10)(?:::|['\u2019])")


def missing_declaration(message: str) -> bool:
    """True when a compile error says a name of torch's is undeclared: a larger set may declare it."""
    return any(_MISSING.search(line) and _TORCH_NAME.search(line) for line in message.splitlines())


def _choice_path(key: str) -> Path:
    return ensure_private_dir(toolchain().root / "include_sets") / f"{key}.json"


def choose(statement: CppStatement) -> tuple[str, str]:
    """(include set, reason): a cached choice (a smaller set's build that failed) first, else the text's."""
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
