"""Compile errors, reported against the user's code and blamed on the right statement.

``#line`` directives name each section (``stmt~3``, ``setup~3``, ...), so g++
reports ``stmt~3:2:7``; the owner (statement 3) is taken from the file name
and the message rewritten to ``stmt:2:7`` with the offending line quoted.
When a batch fails, the statements named in errors are trusted to fail on
their own unless another statement's code may have caused their errors
(``trusted_failures``).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from harness.measure.cpp.statement import SECTIONS, CppStatement

MAX_ERROR_CHARS = 6000


_LOCATION = re.compile(r"\b(stmt|setup|batch_setup|global_setup|generated)~(t?\d+|module)(?::(\d+))?(?::(\d+))?")
_OWNER_NS = re.compile(r"\bharness_s(\d+)::")
_ERROR = re.compile(r"(?:^|: )(?:fatal )?error:|undefined reference to|collect2: error")
_NOTE = re.compile(r": note:|^\s")


def _owners(line: str, tu_members: dict[str, list[int]]) -> set[int]:
    found: set[int] = set()
    for m in _LOCATION.finditer(line):
        owner = m.group(2)
        if owner.startswith("t"):
            found.update(tu_members.get(owner, []))
        elif owner != "module":
            found.add(int(owner))
    found.update(int(m.group(1)) for m in _OWNER_NS.finditer(line))
    return found


# Lines of a g++/ld diagnostic (not ninja's progress or the command lines it echoes).
_DIAGNOSTIC = re.compile(
    r"^(In file included from |\s+from |\S+: (In |At |note:|error:|warning:|undefined reference|multiple definition)"
    r"|\S+:\d+(:\d+)?: |/usr/bin/ld: |collect2: |\s+\d* \| )"
)


def _diagnostic_blocks(output: str) -> list[list[str]]:
    """Group compiler output into diagnostics: context lines, the error, its notes."""
    blocks: list[list[str]] = []
    context: list[str] = []
    current: list[str] | None = None
    for line in output.splitlines():
        if not _DIAGNOSTIC.match(line):
            continue
        if _ERROR.search(line):
            current = [*context, line]
            blocks.append(current)
            context = []
        elif current is not None and _NOTE.search(line):
            current.append(line)
        else:
            current = None
            context.append(line)
            context = context[-40:]
    return blocks


def _rewrite(line: str, statement: CppStatement | None) -> list[str]:
    """`stmt~3:2:7: error: ...` -> `stmt:2:7: error: ...`, with the user's line quoted after it."""
    quote: list[str] = []

    def repl(m: re.Match[str]) -> str:
        section, _, lineno, col = m.groups()
        if section == "generated":
            return f"<generated>{':' + lineno if lineno else ''}"
        if statement is not None and lineno and not quote and section in SECTIONS:
            code = statement.section(section).splitlines()
            n = int(lineno)
            if 1 <= n <= len(code):
                quote.append(f"  {n:>4} | {code[n - 1]}")
        return section + "".join(f":{x}" for x in (lineno, col) if x)

    text = _OWNER_NS.sub("", _LOCATION.sub(repl, line))
    text = text.replace("harness::stmt::", "")
    return [text, *quote] if _ERROR.search(line) or ": note:" in line else [text]


def attribute_errors(
    output: str, statements: Sequence[CppStatement], tu_members: dict[str, list[int]]
) -> dict[int, str]:
    """Statement index -> its errors (rewritten to the user's sections and lines)."""
    per: dict[int, list[str]] = {}
    for block in _diagnostic_blocks(output):
        owners: set[int] = set()
        for line in block:
            owners |= _owners(line, tu_members)
        for i in owners:
            lines = per.setdefault(i, [])
            for line in block:
                lines.extend(_rewrite(line, statements[i]))
    out = {}
    for i, lines in per.items():
        deduped = list(dict.fromkeys(lines))
        text = "\n".join(deduped)
        out[i] = text if len(text) <= MAX_ERROR_CHARS else text[:MAX_ERROR_CHARS] + "\n... (truncated)"
    return out


def table_only_blame(output: str, tu_members: dict[str, list[int]]) -> set[int]:
    """Statements named only by errors in the module table (the end of TU 0).

    The table names the slots of statements of every TU, but its errors come
    from TU 0's code (a macro, say), not from the statements it names.
    """
    elsewhere: set[int] = set()
    table: set[int] = set()
    for block in _diagnostic_blocks(output):
        owners: set[int] = set()
        for line in block:
            owners |= _owners(line, tu_members)
        error_line = next((line for line in block if _ERROR.search(line)), "")
        (table if "generated~module" in error_line else elsewhere).update(owners)
    return table - elsewhere


_DIRECTIVE_LINE = re.compile(r"^[ \t]*(?:#|%:)", re.MULTILINE)


def leaks(statement: CppStatement) -> bool:
    """Whether the statement's body code can change how the code after it parses: a
    preprocessor directive (#define, #undef, #line, #pragma, an #include in a function).
    Brackets cannot: measure.cpp.balance rejected every statement whose sections do not balance."""
    return any(_DIRECTIVE_LINE.search(statement.section(n)) for n in ("setup", "batch_setup", "stmt"))


def trusted_failures(
    named: set[int], statements: Sequence[CppStatement], tu_members: dict[str, list[int]]
) -> set[int]:
    """Which of the statements named by a failed build's errors fail on their own.

    Within a TU, statements are emitted in index order, each inside its own
    namespace and function, and every section balances (measure.cpp.balance), so g++
    recovers by the end of a statement: an error in one does not reach the
    code of the next (tried: a missing ';' after a class or lambda, a stray
    template '<', local templates, namespaces and extern "C" blocks, misplaced
    case/return). What does reach it is the preprocessor. So a named statement
    is trusted unless a statement before it in its TU has a directive in its
    body; such a statement may only be a victim of that directive, whether the
    directive's statement failed first or compiled fine.
    """
    tu_of = {i: t for t, members in tu_members.items() for i in members}
    trusted = set()
    for i in named:
        t = tu_of.get(i)
        if t is not None and not any(leaks(statements[j]) for j in tu_members[t] if j < i):
            trusted.add(i)
    return trusted




def output_tail(output: str) -> str:
    text = output.strip()
    return text if len(text) <= MAX_ERROR_CHARS else "... " + text[-MAX_ERROR_CHARS:]
