"""Which headers of torch's C++ API (``torch/nn/...``, ``torch/optim/...``) define the names a C++ statement uses.

Why: ``torch/torch.h`` costs every TU that includes it ~3 s of template
instantiation at -O2, PCH or not (g++ leaves a header's pending
instantiations to every TU that uses its PCH), and a statement holding one
``torch::nn::Linear`` needs ``torch/nn/modules/linear.h`` only. Measured with
g++ 12 -O2 on the 2-core VM (docs/cpp-statements.md), the same object code
either way: that statement's TU took 9.3-10.8 s with the frontend set's PCH
and 5.4-6.0 s with the lean PCH and that header; an ``opt.step()`` of a
``torch::optim::SGD``, 13.9 s against 6.1-6.9 s with ``torch/optim/sgd.h``.

The index is read from the torch in use (its ``torch/csrc/api/include``), once
per process and scope. A name qualified by one of ``SCOPES``
(``torch::nn::functional::relu``, ``optim::SGD``) is looked up in that
namespace's headers (``torch/nn.h`` and ``torch/nn/**``); one of
``TOP_NAMES`` (``torch::NoGradGuard``) in the headers directly under
``torch/``. A name maps to every header that defines it, in the forms torch
declares them: ``TORCH_MODULE(Name)`` (``Name`` and ``NameImpl``), class and
struct definitions, ``using Name = ...`` aliases and ``using ns::name;``
declarations, ``inline``, ``TORCH_API`` and template functions. A namespace
alias of torch's (``namespace F = torch::nn::functional;``, as torch's own C++
docs write) is read through: ``F::relu`` is looked up as
``torch::nn::functional::relu`` (``unaliased``). A statement is targeted only
when every such name resolves; anything else (a namespace named alone, as in
``using namespace torch::nn;`` or an alias the code never uses) leaves the
choice to the frontend set, and a missing declaration after all is retried with
the full set (``measure.cpp.include_set``).
"""

from __future__ import annotations

import functools
import re
from pathlib import Path
from typing import NamedTuple

# Where torch's C++ API headers live, under its include directory.
API_INCLUDE = Path("torch/csrc/api/include")
# Namespaces of torch's C++ API whose names are looked up in their own headers.
SCOPES = ("nn", "optim", "data", "serialize", "fft", "linalg", "special", "nested", "sparse")
# Names directly in torch:: that the lean set lacks (torch/utils.h, torch/serialize.h).
TOP_NAMES = ("save", "load", "NoGradGuard", "AutoGradMode", "manual_seed", "Module")

_MODULE = re.compile(r"^\s*TORCH_MODULE\((\w+)\)", re.MULTILINE)
# A definition (a base list, a body or `final` follows), not a forward declaration.
_CLASS = re.compile(r"^\s*(?:template\s*<[^>]*>\s*)?(?:class|struct)\s+(?:TORCH_API\s+)?(\w+)\s*(?:final\b|[:{])",
                    re.MULTILINE)
_ALIAS = re.compile(r"^\s*using\s+(\w+)\s*=", re.MULTILINE)
# `using at::manual_seed;`: a namespace's name brought in; not `using Base::Base;` in a class.
_USING = re.compile(r"^\s*using\s+(?:at|c10|torch|std)::(?:\w+::)*(\w+)\s*;", re.MULTILINE)
_INLINE_FUNCTION = re.compile(r"^\s*(?:template\s*<[^>]*>\s*)?inline\s+[^;(){}=]*?\b(\w+)\s*\(", re.MULTILINE)
_API_FUNCTION = re.compile(r"^\s*TORCH_API\s+[\w:<>]+\s+(\w+)\s*\(", re.MULTILINE)
# `template <typename Value, typename... SaveToArgs>\nvoid save(...)`: a function template (torch::save).
_FUNCTION_TEMPLATE = re.compile(r"^\s*template\s*<[^;{}()]*>\s*(?:inline\s+)?[\w:<>,&*\s]*?\b(\w+)\s*\(", re.MULTILINE)
_FORMS = (_CLASS, _ALIAS, _USING, _INLINE_FUNCTION, _API_FUNCTION, _FUNCTION_TEMPLATE)
# One use of a name of the API: `torch::nn::Linear`, `nn::functional::relu`,
# `optim::SGD`, `torch::NoGradGuard`; or a namespace alone (`torch::optim;`,
# `torch::nn::functional;`: the name is empty or a namespace's, and does not resolve).
_USE = re.compile(r"\b(?:torch::)?(" + "|".join(SCOPES) + r")::(?:\w+::)*(\w*)"
                  r"|\btorch::(" + "|".join(TOP_NAMES) + r")\b"
                  r"|\btorch::(?:" + "|".join(SCOPES) + r")\b(?!::)")  # `namespace O = torch::optim;`: unresolved


def _alias_pattern() -> re.Pattern[str]:
    # `namespace F = torch::nn::functional;` (or `= ::torch::optim;`): an alias of a namespace of torch's.
    # Compiled on first use, not at import: every worker imports this module.
    return re.compile(r"\bnamespace\s+(\w+)\s*=\s*(?:::\s*)?(torch(?:\s*::\s*\w+)+)\s*;")


def unaliased(codes: list[str]) -> list[str]:
    """The sections of one statement (``codes``) with each use of a namespace alias of torch's written out.

    ``F::relu`` becomes ``torch::nn::functional::relu`` wherever the alias is
    declared (global_setup, setup or stmt); the declaration of an alias the
    code uses is dropped, since the headers that define the names it is used
    for declare its namespace. An alias the code never uses is left as
    written: only torch/torch.h declares every namespace.
    """
    if not any("namespace" in code for code in codes):
        return codes
    pattern = _alias_pattern()
    aliases = {
        m.group(1): (m.group(0), re.sub(r"\s+", "", m.group(2))) for code in codes for m in pattern.finditer(code)
    }
    for alias, (declaration, namespace) in aliases.items():
        use = re.compile(rf"(?<![\w:]){alias}\s*::")
        if not any(use.search(code.replace(declaration, "")) for code in codes):
            continue
        codes = [use.sub(namespace + "::", code.replace(declaration, "")) for code in codes]
    return codes


def _headers(root: Path, scope: str) -> list[Path]:
    """The headers of one scope: ``torch/SCOPE.h`` and ``torch/SCOPE/**``; for "" those directly under torch/."""
    torch_dir = root / "torch"
    if not scope:
        return sorted(torch_dir.glob("*.h"))
    return sorted([*torch_dir.glob(f"{scope}.h"), *(torch_dir / scope).rglob("*.h")])


@functools.cache
def index(torch_include: str, scope: str) -> dict[str, tuple[str, ...]]:
    """{name: headers that define it (as ``torch/...``)} in one scope of the API of the torch given by its
    include dir."""
    root = Path(torch_include) / API_INCLUDE
    found: dict[str, set[str]] = {}
    for path in _headers(root, scope):
        text = path.read_text(errors="replace")
        header = path.relative_to(root).as_posix()
        names = set()
        for m in _MODULE.finditer(text):
            names.update((m.group(1), m.group(1) + "Impl"))
        for pattern in _FORMS:
            names.update(m.group(1) for m in pattern.finditer(text))
        for name in names:
            found.setdefault(name, set()).add(header)
    return {name: tuple(sorted(headers)) for name, headers in found.items()}


class Found(NamedTuple):
    headers: list[str]  # to include, in the order first needed
    names: list[str]  # the API's names the code uses, as written
    unresolved: str | None  # the first use no header defines (then the frontend set is needed)


def uses_api(code: str) -> bool:
    """True when ``code`` names one of the API's scopes or ``TOP_NAMES``."""
    return _USE.search(code) is not None


def headers_for(code: str, torch_include: str) -> Found:
    """The headers that define every name of the API ``code`` uses (none when it uses none)."""
    headers: dict[str, None] = {}
    names: dict[str, None] = {}
    for m in _USE.finditer(code):
        scope, name = (m.group(1), m.group(2)) if m.group(1) else ("", m.group(3) or "")
        found = index(torch_include, scope).get(name) if name else None
        if found is None:
            return Found([], [], m.group(0).rstrip(":"))
        names[m.group(0)] = None
        headers.update(dict.fromkeys(found))
    return Found(list(headers), list(names), None)
