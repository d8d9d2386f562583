"""Bracket balance of a C++ statement's sections, checked before anything is compiled.

Why: all statements asked for together are compiled in one module, each
section pasted into generated code. A section with an unclosed ``{`` (or an
extra ``)``, an unterminated raw string, a ``#if`` without ``#endif``) changes
how the compiler parses everything after it, so its errors land in the code of
*other*, correct statements of the batch, which would then be recorded as
failed. Every section must balance on its own (each is pasted into its own
block), so a statement that does not is rejected here, in microseconds, with a
message that names the section, line and column.

This is a lexer, not a parser: it knows string, character and raw string
literals, comments, digit separators (``1'000``), digraphs (``<%`` is ``{``),
backslash-newline splices, and preprocessor directives (whose brackets belong
to a macro and are not counted; conditionals are checked for ``#endif`` and
each branch of a ``#if`` is counted from the same starting point).
"""

from __future__ import annotations

import dataclasses
import re

from harness.measure.cpp.statement import SECTIONS

_OPEN = {"{": "}", "(": ")", "[": "]"}
_CLOSE = {v: k for k, v in _OPEN.items()}
_RAW_PREFIXES = {"R", "u8R", "uR", "UR", "LR"}
_RAW_DELIM = re.compile(r'[^\s()\\"]{0,16}\(')
_DIRECTIVE = re.compile(r"#\s*([A-Za-z_]\w*)?")


@dataclasses.dataclass(frozen=True)
class Imbalance:
    """Where a section stops balancing: 1-based line and column, and what is wrong."""

    section: str
    line: int
    column: int
    problem: str
    hint: str

    def describe(self, code: str) -> str:
        """One message: what and where, the line quoted with a caret, how to fix."""
        lines = code.splitlines()
        text = lines[self.line - 1] if 1 <= self.line <= len(lines) else ""
        return (
            f"{self.section} line {self.line}, column {self.column}: {self.problem}\n"
            f"  {self.line:>4} | {text}\n"
            f"       | {' ' * (self.column - 1)}^\n"
            f"{self.hint}"
        )


class _Scanner:
    def __init__(self, code: str, section: str, brackets: bool = True) -> None:
        self.code = code
        self.section = section
        self.brackets = brackets
        # A #define whose body does not balance (``#define BEGIN {``): the code using it balances
        # only once expanded, which this lexer does not do.
        self.unbalanced_macro = False
        # Bracket stack: (bracket as written, its canonical form, offset).
        self.stack: list[tuple[str, str, int]] = []
        # Open conditionals: (offset of the #if, stack at the #if, stack at the end of the first branch).
        self.conditionals: list[tuple[int, list[tuple[str, str, int]], list[tuple[str, str, int]] | None]] = []

    def where(self, offset: int) -> tuple[int, int]:
        line = self.code.count("\n", 0, offset) + 1
        column = offset - (self.code.rfind("\n", 0, offset) + 1) + 1
        return line, column

    def fail(self, offset: int, problem: str, hint: str) -> Imbalance:
        line, column = self.where(offset)
        return Imbalance(self.section, line, column, problem, hint)

    def at_line_start(self, offset: int) -> bool:
        """Only whitespace (or spliced lines) between the previous newline and offset."""
        start = self.code.rfind("\n", 0, offset) + 1
        before = self.code[start:offset]
        return before.strip() == ""

    # ---------------------------------------------------------------- literals and comments

    def skip_line_comment(self, i: int) -> int:
        """From ``//`` to the end of the line; a trailing backslash continues the comment."""
        n = len(self.code)
        while i < n:
            nl = self.code.find("\n", i)
            if nl < 0:
                return n
            if self.code[i:nl].rstrip("\r").endswith("\\"):
                i = nl + 1
                continue
            return nl
        return n

    def skip_quoted(self, i: int, quote: str) -> int | Imbalance:
        """From the opening quote at i to just past the closing one, on the same logical line."""
        n = len(self.code)
        j = i + 1
        while j < n:
            c = self.code[j]
            if c == "\\":
                j += 2  # an escape, or a backslash-newline splice
                continue
            if c == quote:
                return j + 1
            if c == "\n":
                break
            j += 1
        kind = "string" if quote == '"' else "character"
        return self.fail(
            i,
            f"{kind} literal opened here is never closed",
            f"Close it with {quote} on the same line (a {kind} literal cannot span lines; "
            f"write \\n for a newline, or use a raw string R\"(...)\").",
        )

    def skip_raw(self, i: int, quote: int) -> int | Imbalance | None:
        """A raw string whose prefix starts at i and whose opening quote is at ``quote``; None if not raw."""
        m = _RAW_DELIM.match(self.code, quote + 1)
        if m is None:
            return None
        delim = m.group()[:-1]
        end = self.code.find(f'){delim}"', m.end())
        if end < 0:
            return self.fail(
                i,
                f'raw string literal R"{delim}( opened here is never closed',
                f'Close it with ){delim}" (the same delimiter as the opening).',
            )
        return end + len(delim) + 2

    # ---------------------------------------------------------------- brackets

    def open(self, written: str, canonical: str, offset: int) -> None:
        if self.brackets:
            self.stack.append((written, canonical, offset))

    def close(self, written: str, canonical: str, offset: int) -> Imbalance | None:
        if not self.brackets:
            return None
        if not self.stack:
            return self.fail(
                offset,
                f"'{written}' has no matching '{_CLOSE[canonical]}' before it",
                f"Remove the extra '{written}', or add the '{_CLOSE[canonical]}' it closes in this section "
                "(each section is compiled as its own block, so its brackets must balance within it).",
            )
        opened, opened_canonical, at = self.stack[-1]
        if _OPEN[opened_canonical] != canonical:
            line, column = self.where(at)
            return self.fail(
                offset,
                f"'{written}' does not match the '{opened}' opened at line {line}, column {column}",
                f"Close the '{opened}' with '{_OPEN[opened_canonical]}' first, or remove the extra '{written}'.",
            )
        self.stack.pop()
        return None

    # ---------------------------------------------------------------- preprocessor

    def directive(self, i: int) -> int | Imbalance:
        """A directive line from its ``#``: track conditionals, skip the rest (a macro's brackets need not balance)."""
        m = _DIRECTIVE.match(self.code, i)
        name = (m.group(1) if m else None) or ""
        if name in ("if", "ifdef", "ifndef"):
            self.conditionals.append((i, list(self.stack), None))
        elif name in ("elif", "else", "elifdef", "elifndef", "endif"):
            if not self.conditionals:
                return self.fail(
                    i,
                    f"'#{name}' has no matching '#if' before it",
                    f"Remove the '#{name}', or add the '#if', '#ifdef' or '#ifndef' it belongs to in this section.",
                )
            at, start, first_end = self.conditionals.pop()
            if first_end is None:
                first_end = list(self.stack)
            if name == "endif":
                # Branches of one conditional are alternatives: go on from where the first one ended.
                self.stack = first_end
            else:
                self.conditionals.append((at, start, first_end))
                self.stack = list(start)
        # Skip to the end of the logical line, minding comments and literals on it.
        n = len(self.code)
        j = (m.end() if m else i + 1)
        depth = 0
        while j < n:
            c = self.code[j]
            if name == "define" and c in "{}()[]":
                depth += 1 if c in _OPEN else -1
                self.unbalanced_macro |= depth < 0
            if c == "\n":
                self.unbalanced_macro |= depth != 0
                return j
            if c == "\\" and self.code.startswith("\n", j + 1):
                j += 2
                continue
            if self.code.startswith("//", j):
                self.unbalanced_macro |= depth != 0
                return self.skip_line_comment(j)
            if self.code.startswith("/*", j):
                end = self.code.find("*/", j + 2)
                if end < 0:
                    return self.unclosed_comment(j)
                j = end + 2
                continue
            if c in "\"'" and name != "error" and name != "warning":
                skipped = self.skip_quoted(j, c)
                if isinstance(skipped, Imbalance):
                    if c == "'":  # an apostrophe in a macro body or #pragma message text; not worth failing
                        j += 1
                        continue
                    return skipped
                j = skipped
                continue
            j += 1
        self.unbalanced_macro |= depth != 0
        return n

    def unclosed_comment(self, i: int) -> Imbalance:
        return self.fail(i, "comment '/*' opened here is never closed", "Close it with '*/'.")

    # ---------------------------------------------------------------- the scan

    def scan(self) -> Imbalance | None:
        code = self.code
        n = len(code)
        i = 0
        while i < n:
            c = code[i]
            if c.isspace():
                i += 1
                continue
            if c == "#" and self.at_line_start(i):
                result = self.directive(i)
                if isinstance(result, Imbalance):
                    return result
                i = result
                continue
            if code.startswith("//", i):
                i = self.skip_line_comment(i)
                continue
            if code.startswith("/*", i):
                end = code.find("*/", i + 2)
                if end < 0:
                    return self.unclosed_comment(i)
                i = end + 2
                continue
            if c.isalpha() or c == "_":
                j = i
                while j < n and (code[j].isalnum() or code[j] == "_"):
                    j += 1
                if j < n and code[j] == '"' and code[i:j] in _RAW_PREFIXES:
                    raw = self.skip_raw(i, j)
                    if isinstance(raw, Imbalance):
                        return raw
                    if raw is not None:
                        i = raw
                        continue
                i = j  # an identifier (or a literal's prefix: the quote is handled next)
                continue
            if c.isdigit() or (c == "." and i + 1 < n and code[i + 1].isdigit()):
                # A pp-number: digit separators (1'000) and exponents (1e+5) are part of it.
                j = i + 1
                while j < n:
                    d = code[j]
                    if d in "+-" and code[j - 1] in "eEpP":
                        j += 1
                    elif d == "'" and j + 1 < n and (code[j + 1].isalnum() or code[j + 1] == "_"):
                        j += 1
                    elif d.isalnum() or d in "._":
                        j += 1
                    else:
                        break
                i = j
                continue
            if c in "\"'":
                skipped = self.skip_quoted(i, c)
                if isinstance(skipped, Imbalance):
                    return skipped
                i = skipped
                continue
            two = code[i : i + 2]
            if two == "<%":
                self.open("<%", "{", i)
                i += 2
                continue
            if two == "<:" and not (code.startswith("<::", i) and code[i + 3 : i + 4] not in (":", ">")):
                self.open("<:", "[", i)
                i += 2
                continue
            if two in ("%>", ":>"):
                problem = self.close(two, "}" if two == "%>" else "]", i)
                if problem is not None:
                    return problem
                i += 2
                continue
            if c in _OPEN:
                self.open(c, c, i)
            elif c in _CLOSE:
                problem = self.close(c, c, i)
                if problem is not None:
                    return problem
            i += 1
        if self.conditionals:
            at, _, _ = self.conditionals[0]
            m = _DIRECTIVE.match(code, at)
            name = m.group(1) if m and m.group(1) else "if"
            return self.fail(at, f"'#{name}' opened here has no '#endif'", "Add '#endif' at the end of the block.")
        if self.stack:
            written, canonical, at = self.stack[0]
            closer = _OPEN[canonical]
            return self.fail(
                at,
                f"'{written}' opened here is never closed",
                f"Add the matching '{closer}' in this section (each section is compiled as its own block, "
                "so its brackets must balance within it).",
            )
        return None


def check_section(code: str, section: str = "stmt", brackets: bool = True) -> Imbalance | None:
    """The first imbalance in one section's code, or None if it balances.

    With ``brackets=False`` only literals, comments and conditionals are checked.
    """
    return _Scanner(code, section, brackets).scan()


def unbalanced(sections: dict[str, str]) -> str | None:
    """A message for the first section (in compile order) that does not balance, or None.

    If any section defines a macro whose body does not balance, brackets are
    not counted (the macro may open what the code closes, in any section after
    it); literals, comments and conditionals still are. Better to let the
    compiler judge such a statement than to reject valid code.
    """
    codes = [(section, sections.get(section) or "") for section in SECTIONS]
    scanners = [_Scanner(code, section) for section, code in codes]
    problems = [scanner.scan() for scanner in scanners]
    if any(scanner.unbalanced_macro for scanner in scanners):
        problems = [check_section(code, section, brackets=False) for section, code in codes]
    for (_, code), problem in zip(codes, problems, strict=True):
        if problem is not None:
            return problem.describe(code)
    return None
