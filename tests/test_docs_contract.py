"""The README and docs/ as a contract: short front page, every example runnable, skips few and explained.

The examples themselves run as tests of their own (conftest.py collects README.md
and docs/*.md through tests/doc_examples.py); these tests check the rules around them.
"""

from __future__ import annotations

import re

import pytest

from doc_examples import ROOT, console_steps, fenced_blocks, sybil

PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
RUN = {"python", "bash", "console"}
SHELL_LIKE = {"sh", "shell", "zsh", "shell-session", "py", "python3", "pycon"}
SKIP = re.compile(r'<!-- skip: next (?:"[^"]{10,}"|if\(\w+, reason="[^"]{10,}"\)) -->')


def test_the_front_page_is_short():
    assert len((ROOT / "README.md").read_text().splitlines()) <= 250


def test_the_readme_links_every_docs_page():
    readme = (ROOT / "README.md").read_text()
    missing = [p.name for p in PAGES[1:] if f"(docs/{p.name})" not in readme]
    assert not missing, f"README.md does not link {missing}"


def test_every_page_opens_with_what_it_is_for():
    for page in PAGES[1:]:
        lines = page.read_text().splitlines()
        assert lines[0].startswith("# "), f"{page.name}: first line is not a title"
        first = next(line for line in lines[1:] if line.strip())
        assert not first.startswith(("#", "```", "|")), f"{page.name}: no sentence under the title"


def test_no_example_hides_in_a_language_that_is_not_run():
    for page in PAGES:
        for line, lang in fenced_blocks(page.read_text()):
            assert lang not in SHELL_LIKE, f"{page.name}:{line}: ```{lang} is not run; use bash, console or python"


def test_at_most_a_third_of_the_examples_are_skipped_and_each_says_why():
    run = skipped = 0
    for page in PAGES:
        text = page.read_text()
        run += sum(lang in RUN for _, lang in fenced_blocks(text))
        markers = re.findall(r"<!-- skip:.*?-->", text)
        bad = [m for m in markers if not SKIP.fullmatch(m)]
        assert not bad, f"{page.name}: a skip marker without its reason: {bad}"
        skipped += len(markers)
    assert run >= 30, run
    assert skipped * 3 <= run, f"{skipped} of {run} examples skipped"


def test_sybil_collects_every_runnable_block():
    s = sybil()
    for page in PAGES:
        wanted = sum(lang in RUN for _, lang in fenced_blocks(page.read_text()))
        doc = s.parse(page)
        # A doctest block is one example per '>>>'; a block is collected when any of its lines is.
        got = {ex.line for ex in doc.examples() if ex.region.evaluator.__class__.__name__ != "Skipper"}
        assert len(got) >= wanted, f"{page.name}: {wanted} blocks, {len(got)} collected"


def test_console_steps_split_commands_and_output():
    steps = console_steps("$ echo a \\\n  b\na b\n$ true\n")
    assert steps == [("echo a \\\n  b", "a b\n"), ("true", "\n")]
    with pytest.raises(ValueError, match="not a '\\$ ' command"):
        console_steps("output before any command\n")


def test_a_wrong_output_or_a_failing_command_fails_its_example(tmp_path):
    page = tmp_path / "page.md"
    page.write_text(
        "```console\n$ echo hello\ngoodbye\n```\n\n"
        "```bash\nfalse\n```\n\n"
        "```console\n$ echo 'one two'\none ... \n```\n\n"
        "```python\n>>> 1 + 1\n3\n\n```\n"
    )
    doc = sybil().parse(page)
    outcomes = []
    for example in doc.examples():
        try:
            example.evaluate()
            outcomes.append("passed")
        except Exception as exc:  # SybilFailure or the evaluator's own error
            outcomes.append(type(exc).__name__)
    assert outcomes[0] != "passed" and outcomes[1] != "passed"
    assert outcomes[2] == "passed"  # '...' matches the rest of a line
    assert outcomes[3] != "passed"


def test_numbers_the_docs_state_are_the_ones_a_script_counts():
    """Counts the prose states that a script can take: the dispatch suite's definitions and benchmarks."""
    from harness.define.discovery import load_suite

    suite = load_suite("dispatch", ROOT / "benchmarks" / "dispatch" / "suite.py")
    names = [task.name for task in suite.tasks()]
    definitions = len({name.split("[")[0] for name in names})
    readme, dispatch = (ROOT / "README.md").read_text(), (ROOT / "docs" / "dispatch.md").read_text()
    assert f"times {definitions} definitions of small ops" in readme
    assert f"\n{definitions} definitions of small ops" in dispatch
    assert f"The whole suite ({len(names)} benchmarks" in dispatch
    assert f"dispatch suite, {len(names)}\ninstruction-count tasks" in readme


def test_the_build_sentence_says_one_build_per_include_set():
    """bench compiles a run's C++ statements in one build per include set, not one build in all."""
    for page in ("cpp-statements.md", "python-api.md", "suites.md"):
        text = " ".join((ROOT / "docs" / page).read_text().split())
        assert "per include set" in text, page
        for wrong in ("selected tasks in one build", "statement(s) in one build", "C++ statements in one build first"):
            assert wrong not in text, (page, wrong)
