"""Which headers a C++ statement is compiled with: the lean, frontend, script or full set (plus C++ API headers),
and why.

Each set costs every statement TU its templates and inline code, PCH or not
(g++ 12 -O2, an empty TU with each set's PCH: lean 1.9 s, frontend 4.7 s,
full 5.5 s; a statement holding a ``torch::nn::Linear`` 8.9 s with the
frontend set, 9.9 s with the full one, back to back; a ``torch::jit::load``
statement 6.6-7.2 s with the script set, 11.5-13.5 s with the full one;
docs/cpp-statements.md), so a statement gets the smallest set that declares
what it uses:

- lean (``harness/stmt.h``: ATen, the torch tensor types): the default;
- lean+api, script+api: the lean or script set, and in the TU the headers of
  torch's C++ API that define the names the code uses
  (``measure.cpp.api_headers``: ``torch::nn::Linear`` gets
  ``torch/nn/modules/linear.h``, ``torch::optim::SGD``
  ``torch/optim/sgd.h``), parsed on top of that set's PCH: most of
  ``torch/torch.h``'s cost is in headers such a statement does not use;
- frontend (``harness/stmt_frontend.h``: ``torch/torch.h``, the C++ frontend):
  code that uses a name of the API the text cannot map to a header (a
  namespace named alone, as in ``using namespace torch::nn;``),
  ``torch::autograd::Function``, or includes ``torch/torch.h``; a namespace
  alias (``namespace F = torch::nn::functional;``) is read through, so
  ``F::relu`` is lean+api;
- script (``harness/stmt_script.h``: ``torch/script.h``, TorchScript's loader,
  custom operators and classes, without the frontend): code that names
  ``torch::jit`` or ``script::``;
- full (``harness/stmt_full.h``: both): code that needs the frontend set and
  the script set, or includes a header none of the others holds (it may need
  anything).

An ``#include`` of a header a set holds asks for that set: the standard
library's and ATen's headers for lean, ``torch/torch.h`` and the frontend's
``torch/*.h`` for frontend, ``torch/script.h`` for script; any other (the
user's own, ``torch/extension.h``) for full. That much is decided from the
text before any compile. A statement that fails to compile with a smaller set
because a name of torch's is not declared (``missing_declaration``) is retried
with the full set.

The choice is cached per statement (by its content key) under the toolchain's
directory, so a statement pays a failed smaller compile at most once.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from harness.files.atomic import atomic_write_text
from harness.files.cache import ensure_private_dir
from harness.measure.cpp.api_headers import headers_for, unaliased, uses_api
from harness.measure.cpp.statement import SECTIONS, CppStatement
from harness.measure.cpp.toolchain import toolchain

LEAN = "lean"
FRONTEND = "frontend"
SCRIPT = "script"
FULL = "full"
PCH_SETS = (LEAN, FRONTEND, SCRIPT, FULL)  # each precompiled; full holds every other
API = "+api"  # the suffix of a set whose TUs also include the C++ API headers that define the names their code uses
INCLUDE_SETS = (LEAN, LEAN + API, SCRIPT, SCRIPT + API, FRONTEND, FULL)
HEADERS = {
    LEAN: "harness/stmt.h", FRONTEND: "harness/stmt_frontend.h", SCRIPT: "harness/stmt_script.h",
    FULL: "harness/stmt_full.h",
}

# Parts of the torch C++ API the lean set does not declare, and the set that does. A
# namespace after `torch::` or on its own (after `using namespace torch;`).
_NEEDS = (
    (SCRIPT, re.compile(r"\b(?:torch::)?(?:jit|script)::|\btorch::(?:class_|CustomClassHolder)\b")),
    # Declared outside the API's own headers (torch/csrc/autograd), which only torch/torch.h brings.
    (FRONTEND, re.compile(r"\b(?:torch::)?autograd::Function\b")),
)
_INCLUDE = re.compile(r"^\s*#\s*include\b(.*)$", re.MULTILINE)
_HEADER = re.compile(r"\s*<([^>]+)>")
# Headers a set holds, by the set (the first that matches). An angle-bracketed
# name without a slash is the standard library's; torch/X.h other than those
# named is the C++ frontend's (torch/csrc/api/include/torch).
_HELD = (
    (LEAN, re.compile(r"[^/]+|(?:ATen|c10)/.+|torch/(?:types|cuda)\.h")),
    (SCRIPT, re.compile(r"torch/(?:script|custom_class)\.h|torch/csrc/jit/.+")),
    (FRONTEND, re.compile(r"torch/(?!extension\.h|python\.h|csrc/)[\w/]+\.h")),
)

# g++ and clang messages that mean "a name is not declared", as opposed to a
# genuine mistake in the user's code (a type mismatch, a syntax error).
_MISSING = re.compile(
    r"was not declared in this scope|has not been declared|is not a member of|does not name a type"
    r"|is not a namespace-name|incomplete type|no member named|undeclared identifier|unknown type name"
    r"|no type named|is not a class, namespace, or enumeration|is not a template"
)


def _include_set_of(line: str) -> str:
    """The smallest set that holds what an ``#include`` line names; full for a header of the user's
    own ("..."), a macro or one no smaller set holds."""
    if m := _HEADER.match(line):
        for include_set, pattern in _HELD:
            if pattern.fullmatch(m.group(1).strip()):
                return include_set
    return FULL


def precompiled(include_set: str) -> str:
    """The set whose PCH (and header) ``include_set`` is built with: lean+api is lean's."""
    return include_set.removesuffix(API)


def _sections(statement: CppStatement) -> dict[str, str]:
    """The statement's sections as the choice reads them: namespace aliases of torch's written out."""
    return dict(zip(SECTIONS, unaliased([statement.section(name) for name in SECTIONS]), strict=True))


def api_includes(statement: CppStatement) -> list[str]:
    """The C++ API headers a +api set's TU includes for ``statement`` (none when it uses no name of the API)."""
    code = "\n".join(_sections(statement).values())
    return headers_for(code, toolchain().torch_include).headers if uses_api(code) else []


def static_choice(statement: CppStatement) -> tuple[str, str]:
    """(include set, reason) from the statement's text alone: the smallest set that declares what it names."""
    found: dict[str, str] = {}  # set -> the first reason for it
    api: list[str] = []  # where each section uses a name of the C++ API, with the headers that define it
    for name, code in _sections(statement).items():
        for m in _INCLUDE.finditer(code):
            include_set = _include_set_of(m.group(1))
            if include_set != LEAN:
                found.setdefault(include_set, f"{name} includes {m.group(1).strip()}")
        for include_set, pattern in _NEEDS:
            if m := pattern.search(code):
                found.setdefault(include_set, f"{name} uses {m.group(0).rstrip(':')}")
        if uses_api(code):
            resolved = headers_for(code, toolchain().torch_include)
            if resolved.unresolved:
                found.setdefault(
                    FRONTEND, f"{name} uses {resolved.unresolved}, which no one header of torch's API defines"
                )
            else:
                api.append(f"{name} uses {', '.join(resolved.names)} ({', '.join(resolved.headers)})")
    if FULL in found:
        return FULL, found[FULL]
    if FRONTEND in found and SCRIPT in found:
        return FULL, f"{found[FRONTEND]} and {found[SCRIPT]}"
    if FRONTEND in found:
        return FRONTEND, found[FRONTEND]
    base, reason = (SCRIPT, found[SCRIPT]) if SCRIPT in found else (LEAN, "tensor code only")
    if api:
        return base + API, "; ".join(api) if base == LEAN else f"{reason}; {'; '.join(api)}"
    return base, reason


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
