"""The docs and the parser agree: docs/cli.md is the parser's own help, and every
flag a `python -m harness ...` command in the docs uses exists."""

from __future__ import annotations

import argparse
import difflib
import importlib.util
import re
import shlex
import sys
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parents[1]
PAGE = ROOT / "docs" / "cli.md"
# Every page a reader may copy a command from (README.md and docs/ are rewritten
# often, so they are found by pattern, not listed).
DOC_GLOBS = ("README.md", "docs/**/*.md", "benchmarks/**/*.md", "examples/**/*.md")
# Fenced blocks whose lines are commands or a command's output; code in other
# languages (python, cpp, cmake) is not run through a shell.
SHELL_FENCES = {"", "bash", "sh", "shell", "zsh", "console", "shell-session", "text"}
FENCE = re.compile(r"^\s*(`{3,}|~{3,})\s*([\w+-]*)")
# `-m harness` as a whole module name: `-m harness.run.worker` is another program.
INVOCATION = re.compile(r"(?:^|\s)-m\s+harness(?=$|[\s;&|)`'\"])")
FLAG = re.compile(r"(?<![\w-])--?[A-Za-z][\w-]*")


def _load_generator() -> ModuleType:
    spec = importlib.util.spec_from_file_location("cli_doc", ROOT / "scripts" / "cli_doc.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def gen() -> ModuleType:
    return _load_generator()


# -- finding `python -m harness` commands in Markdown ----------------------------


@dataclass(frozen=True)
class Invocation:
    where: str  # path:line of the command's first line
    line: str  # the whole command line, its whitespace collapsed
    words: tuple[str, ...]  # what follows `-m harness`, up to the end of that command


def _lines(text: str) -> list[tuple[int, str, bool]]:
    """(line number, logical line, in a shell-like block) of the Markdown's prose lines and
    the lines of its shell-like fenced blocks, those with backslash-continued lines joined,
    as the shell reads them; other fenced blocks are left out."""
    out: list[tuple[int, str, bool]] = []
    fence: str | None = None
    keep = False
    pending: tuple[int, str] | None = None
    for n, line in enumerate(text.splitlines(), 1):
        m = FENCE.match(line)
        if fence is None:
            if m:
                fence, keep = m.group(1), m.group(2).lower() in SHELL_FENCES
            else:
                out.append((n, line, False))
            continue
        if line.strip().startswith(fence[0] * len(fence)) and not line.strip().strip(fence[0]):
            fence = pending = None
            continue
        if not keep:
            continue
        start, sofar = pending or (n, "")
        if line.rstrip().endswith("\\"):
            pending = (start, sofar + line.rstrip()[:-1] + " ")
            continue
        pending = None
        out.append((start, sofar + line, True))
    return out


def _words(rest: str) -> tuple[str, ...]:
    """The arguments of one command: up to a comment, pipe, `;`, `&&`, redirection or `)`."""
    lexer = shlex.shlex(rest, posix=True, punctuation_chars=";&|()<>")
    lexer.whitespace_split = True
    words: list[str] = []
    try:
        for token in lexer:
            if token and set(token) <= set(";&|()<>"):
                break
            words.append(token)
    except ValueError:  # an unbalanced quote in a synopsis: plain words serve
        words = rest.split("#")[0].split()
    return tuple(words)


def invocations(path: Path, text: str, commands: set[str]) -> list[Invocation]:
    """The `-m harness` commands in ``text``: in shell-like fenced blocks, and in prose's inline
    code, where a subcommand followed by a flag (`bench --layers`) counts as one too."""
    found = []
    for n, line, shell in _lines(text):
        for command in [line] if shell else re.findall(r"`([^`]+)`", line):
            hits = [m.end() for m in INVOCATION.finditer(command)]
            if not shell and not hits and re.match(rf"(?:{'|'.join(map(re.escape, commands))}) -", command):
                hits = [0]
            found += [Invocation(f"{path}:{n}", " ".join(command.split()), _words(command[at:])) for at in hits]
    return found


def _flags(words: tuple[str, ...]) -> list[str]:
    flags = []
    for word in words:
        word = word.strip("[]")
        if word == "--":  # the rest are arguments, not options
            break
        if re.match(r"--?[A-Za-z]", word):
            # `--jobs=2` is --jobs; `-j2` is -j with its value attached.
            flags.append(word.split("=", 1)[0] if word.startswith("--") else word[:2])
    return flags


def problems(found: list[Invocation], parsers: dict[str, argparse.ArgumentParser]) -> list[str]:
    """What in these commands the parser does not have: an unknown subcommand or flag."""
    out = []
    for inv in found:
        command = inv.words[0] if inv.words and not inv.words[0].strip("[").startswith("-") else ""
        if command not in parsers:
            out.append(f"{inv.where}: `{inv.line}`: no subcommand {command!r} "
                       f"(there are {', '.join(_top_level(parsers))})")
            continue
        if " ".join(inv.words[:2]) in parsers:  # a subcommand's subcommand: `history show --plot X`
            command = " ".join(inv.words[:2])
        known = parsers[command]._option_string_actions
        for flag in _flags(inv.words[len(command.split()):]):
            if flag not in known:
                out.append(f"{inv.where}: `{inv.line}`: {flag} is not a flag of "
                           f"`python -m harness {command}`")
    return out


def _top_level(parsers: dict[str, argparse.ArgumentParser]) -> list[str]:
    return [name for name in parsers if name and " " not in name]


def _doc_files() -> list[Path]:
    return sorted({p for pattern in DOC_GLOBS for p in ROOT.glob(pattern)})


# -- docs/cli.md against the parser ------------------------------------------------


def _page_blocks(gen: ModuleType, page: str) -> dict[str, str]:
    """Each generated block's text, by the command whose help it is."""
    return {m["command"]: m["body"] for m in gen.BLOCK.finditer(page)}


def _listed_flags(help_body: str) -> set[str]:
    """The flags a help text's option lists name (lines `  -o FILE, --output FILE   ...`)."""
    flags = set()
    for line in help_body.splitlines():
        m = re.match(r"  (-\S.*?)(?:\s{2,}|$)", line)
        if m:
            flags.update(FLAG.findall(m.group(1)))
    return flags


def test_the_page_is_what_the_parser_prints(gen):
    if sys.version_info[:2] not in gen.HELP_LAYOUT_PYTHONS:
        pytest.skip(f"argparse's help layout on Python {sys.version_info[0]}.{sys.version_info[1]} differs from "
                    "the supported versions'; the flag test below still compares the page with the parser")
    page = PAGE.read_text()
    wanted = gen.render(page)
    if wanted != page:
        diff = "".join(list(difflib.unified_diff(page.splitlines(True), wanted.splitlines(True),
                                                 "docs/cli.md", "from the parser"))[:60])
        pytest.fail(f"docs/cli.md differs from the parser's help; regenerate it with\n  {gen.REGENERATE}\n\n{diff}")


def test_every_subcommand_and_flag_is_on_the_page_and_nothing_else(gen):
    parsers = gen.parsers()
    blocks = _page_blocks(gen, PAGE.read_text())
    commands = {gen.command_of(name): p for name, p in parsers.items()}
    assert set(blocks) == set(commands), (
        f"in the parser, not on docs/cli.md: {sorted(set(commands) - set(blocks))}; "
        f"on docs/cli.md, not in the parser: {sorted(set(blocks) - set(commands))}; run {gen.REGENERATE}")
    for command, parser in commands.items():
        have, shown = set(parser._option_string_actions), _listed_flags(blocks[command])
        assert have == shown, (
            f"`{command}`: flags not on docs/cli.md: {sorted(have - shown)}; on the page but not in the "
            f"parser: {sorted(shown - have)}; run {gen.REGENERATE}")
    for name in parsers:  # each command's help lists its own subcommands: the top level's, history's
        listed = set(re.findall(r"^    ([a-z][\w-]*)\s", blocks[gen.command_of(name)], re.M))
        children = {child.rsplit(" ", 1)[-1] for child in parsers
                    if child and (child.rsplit(" ", 1)[0] if " " in child else "") == name}
        assert listed == children, f"`{gen.command_of(name)} --help` on docs/cli.md lists other subcommands"


def test_every_argument_has_a_help_text(gen):
    missing = []
    for name, parser in gen.parsers().items():
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                missing += [f"{gen.PROG} {a.dest}" for a in action._choices_actions if not a.help]
            elif not action.help:
                missing.append(f"{gen.command_of(name)} {'/'.join(action.option_strings) or action.metavar}")
    assert not missing, f"arguments without help= in python/harness/cli/: {missing}"


def test_the_generator_keeps_the_prose_and_adds_what_is_missing(gen):
    page = ("# CLI\n\nWhy this page exists.\n\n## bench\n\nRuns things, *carefully*.\n\n"
            "<!-- BEGIN generated: python -m harness bench --help -->\nstale text\n<!-- END generated -->\n\n"
            "Closing words.\n")
    out = gen.render(page)
    assert out.startswith("# CLI\n\nWhy this page exists.\n\n## bench\n\nRuns things, *carefully*.\n\n")
    assert "stale text" not in out and "Closing words.\n" in out
    bench = _page_blocks(gen, out)["python -m harness bench"]
    assert bench.startswith("```text\nusage: python -m harness bench [-h]") and "--min-run-time SECONDS" in bench
    # Every other command gets a section of its own, its one-line help as the prose.
    assert "\n## cache\n\nInspect or clear the per-user cache.\n\n<!-- BEGIN generated: python -m harness cache" in out
    assert set(_page_blocks(gen, out)) == {gen.command_of(n) for n in gen.parsers()}
    # A subcommand's subcommands follow its block, a level deeper, in the parser's order.
    history = out.index("\n## history\n")
    assert history < out.index("\n### history import\n") < out.index("\n### history show\n") \
        < out.index("\n### history changes\n") < out.index("\n## cache\n")
    assert gen.render(out) == out
    with pytest.raises(SystemExit, match="python -m harness frobnicate"):
        gen.render(out + "<!-- BEGIN generated: python -m harness frobnicate --help -->\n<!-- END generated -->\n")


# -- flags in the docs' commands -----------------------------------------------------


def test_the_scan_finds_commands_as_a_shell_reads_them(gen):
    doc = "\n".join([
        "Run `python -m harness bench --in-process` or `bench --layerz` after `pip install -e .`; `list` lists.",
        "```bash",
        ".venv/bin/python -m harness bench dispatch -k 'mul and not t2' \\",
        "    --jobs=2 -j2 --no-such-flag  # --commented-out",
        "python -m harness.run.worker --not-ours",
        "HARNESS_CACHE_DIR=/tmp/c python -m harness cache info && python -m harness frobnicate",
        "```",
        "```console",
        "$ python -m harness compare a.json b.json --fail-on-regression 5 | grep --count x",
        "```",
        "```python",
        "subprocess.run('python -m harness bench --bogus', shell=True)",
        "```",
        "```",
        "python -m harness list [SUITE...] [-k PATTERN] [--pth DIR]",
        "python -m harness --version",
        "```",
    ])
    found = invocations(Path("x.md"), doc, {name for name in gen.parsers() if name})
    assert [(i.where, i.words[:1]) for i in found] == [
        ("x.md:1", ("bench",)), ("x.md:1", ("bench",)), ("x.md:3", ("bench",)), ("x.md:6", ("cache",)),
        ("x.md:6", ("frobnicate",)), ("x.md:9", ("compare",)), ("x.md:15", ("list",)), ("x.md:16", ("--version",)),
    ]
    assert found[2].words == ("bench", "dispatch", "-k", "mul and not t2", "--jobs=2", "-j2", "--no-such-flag")
    assert problems(found, gen.parsers()) == [
        "x.md:1: `bench --layerz`: --layerz is not a flag of `python -m harness bench`",
        "x.md:3: `.venv/bin/python -m harness bench dispatch -k 'mul and not t2' --jobs=2 -j2 --no-such-flag"
        " # --commented-out`: --no-such-flag is not a flag of `python -m harness bench`",
        "x.md:6: `HARNESS_CACHE_DIR=/tmp/c python -m harness cache info && python -m harness frobnicate`: "
        f"no subcommand 'frobnicate' (there are {', '.join(_top_level(gen.parsers()))})",
        "x.md:15: `python -m harness list [SUITE...] [-k PATTERN] [--pth DIR]`: --pth is not a flag of "
        "`python -m harness list`",
    ]


def test_every_flag_in_the_docs_commands_exists(gen):
    parsers = gen.parsers()
    commands = {name for name in parsers if name}
    found = [inv for path in _doc_files() for inv in invocations(path.relative_to(ROOT), path.read_text(), commands)]
    # The scan must see the docs' commands, or this test would pass on nothing.
    assert sum(1 for inv in found if inv.words[:1] == ("bench",)) >= 5, [inv.where for inv in found]
    bad = problems(found, parsers)
    assert not bad, "commands in the docs that the parser would reject:\n" + "\n".join(bad)
