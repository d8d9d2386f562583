"""The bracket-balance pre-check of C++ statements (pure Python, no compiler: milliseconds)."""

from __future__ import annotations

import pytest

from harness.measure.cpp.balance import check_section, unbalanced

BALANCED = [
    "if (x) { y += 1; }",
    'auto s = "{ ( [";',
    'auto s = "a \\" { \\\\";',  # escaped quote, then an escaped backslash before the closing quote
    "char c = '{'; char d = '\\''; char e = '\\\\'; char f = '\"';",
    "auto w = L'{'; auto u = u8\"}\";",
    'auto r = R"(})" ;',
    'auto r = R"x( )" } still inside )x";',
    'auto r = u8R"--(\n{ [ (\n)--";',  # a raw string spanning lines
    "// { ( [\nint a = 0;",
    "/* { */ int b = 0; /* ) ] */",
    "/*\n {\n*/ int c = 0;",
    "int n = 1'000'000; auto h = 0xFF'FF; auto f = 1e+5;",
    "auto v = std::vector<::std::string>{};",  # `<::` is not the digraph `<:`
    "int a<:2:> = <%1, 2%>;",  # digraphs for [] and {}
    "#if defined(A)\n{\n#else\n{\n#endif\n}",  # each branch of a conditional counted from the same start
    "#ifdef A\n#ifndef B\nint x;\n#endif\n#elif C\n#endif",
    "#define CALL(x) f(x\n#define PAIR {1, 2}\nint a[] = PAIR;",  # a macro's brackets are the macro's
    "#define LONG(x) \\\n  { (x\nint y;",  # a continued directive line
    "// a comment \\\n continued { onto the next line\nint z;",
    "std::vector<std::vector<int>> v{{1, 2}, {3}};",
    "auto l = [&](int i) -> int { return v[i]; };",
    "",
    "pass_through_identifier_R; auto R2 = R\"(x)\";",
    "auto q = operator\"\"_x; auto s = \"a\"_sv;",
]


@pytest.mark.parametrize("code", BALANCED)
def test_balanced_code_passes(code):
    assert check_section(code) is None


UNBALANCED = [
    # code, (line, column), problem
    ("if (x) { y += 1;", (1, 8), "'{' opened here is never closed"),
    ("y += 1; }", (1, 9), "'}' has no matching '{' before it"),
    ("auto a = f(x;", (1, 11), "'(' opened here is never closed"),
    ("v[0]];", (1, 5), "']' has no matching '[' before it"),
    ("f(a[1)];", (1, 6), "')' does not match the '[' opened at line 1, column 4"),
    ("for (;;) {\n  if (a) {\n  }\n", (1, 10), "'{' opened here is never closed"),
    ('auto s = "{";\n{', (2, 1), "'{' opened here is never closed"),  # the string's brace is not counted
    ("char c = '}'; }", (1, 15), "'}' has no matching '{'"),
    ('auto s = "abc;\nint x;', (1, 10), "string literal opened here is never closed"),
    ("char c = 'a;", (1, 10), "character literal opened here is never closed"),
    ('auto r = R"x(abc)";', (1, 10), 'raw string literal R"x( opened here is never closed'),
    ("int a; /* {", (1, 8), "comment '/*' opened here is never closed"),
    ("#ifdef A\nint a;", (1, 1), "'#ifdef' opened here has no '#endif'"),
    ("#endif", (1, 1), "'#endif' has no matching '#if'"),
    ("  #else\n", (1, 3), "'#else' has no matching '#if'"),
    ("int a<:2) = {};", (1, 9), "')' does not match the '<:' opened"),
    ("<% int a;", (1, 1), "'<%' opened here is never closed"),
]


@pytest.mark.parametrize(("code", "where", "problem"), UNBALANCED)
def test_unbalanced_code_is_located(code, where, problem):
    found = check_section(code, "setup")
    assert found is not None
    assert (found.line, found.column) == where
    assert problem in found.problem
    assert found.section == "setup"


def test_message_names_section_line_column_quotes_and_says_how_to_fix():
    message = unbalanced({"setup": "auto x = torch::ones({2});", "stmt": "auto y = x;\nif (x) { y += 1;"})
    assert message is not None
    lines = message.splitlines()
    assert lines[0] == "stmt line 2, column 8: '{' opened here is never closed"
    assert lines[1] == "     2 | if (x) { y += 1;"
    # The caret sits under the brace.
    assert lines[2].index("^") == lines[1].index("{")
    assert "Add the matching '}'" in message


def test_a_macro_that_opens_a_bracket_turns_off_bracket_counting():
    # Balanced only once BEGIN is expanded: the compiler judges it, not the pre-check.
    assert unbalanced({"global_setup": "#define BEGIN {", "stmt": "BEGIN int a = 0; }"}) is None
    assert unbalanced({"stmt": "#define LOOP(n) for (int i = 0; i < n; ++i) {\nLOOP(3) x += i; }"}) is None
    # Literals and comments are still checked.
    message = unbalanced({"global_setup": "#define BEGIN {", "stmt": 'BEGIN auto s = "a; }'})
    assert message is not None and "string literal opened here is never closed" in message
    # A balanced macro body keeps brackets counted.
    message = unbalanced({"global_setup": "#define PAIR {1, 2}", "stmt": "if (x) {"})
    assert message is not None and "'{' opened here is never closed" in message


def test_sections_are_checked_separately_in_compile_order():
    # Balanced overall, but each section is pasted into its own block: both are wrong.
    message = unbalanced({"setup": "{", "stmt": "}", "global_setup": "struct A {};"})
    assert message is not None and message.startswith("setup line 1, column 1: '{' opened here is never closed")
    message = unbalanced({"global_setup": "namespace a {", "stmt": "}"})
    assert message is not None and message.startswith("global_setup line 1, column 13:")
    assert unbalanced({"global_setup": "struct A { int x; };", "setup": "A a{1};", "stmt": "a.x += 1;"}) is None
