"""`history changes --markdown`: the steps of a synthetic history as a GitHub-flavoured markdown table, what
moved with each, appended to `$GITHUB_STEP_SUMMARY`, with the exit status of `history changes`."""

from __future__ import annotations

from history_runs import run as history_run
from markdown_it import MarkdownIt

from conftest import run_cli
from harness.records import save


def tables(text: str) -> list[list[list[str]]]:
    """Every table of ``text`` parsed as GitHub-flavoured markdown: rows of cell texts, header first."""
    tokens = MarkdownIt("commonmark").enable("table").parse(text)
    out: list[list[list[str]]] = []
    for i, t in enumerate(tokens):
        if t.type == "table_open":
            out.append([])
        elif t.type == "tr_open":
            out[-1].append([])
        elif t.type in ("th_open", "td_open"):
            out[-1][-1].append(tokens[i + 1].content)
    return out


def test_history_changes_markdown_names_the_step_and_what_moved(tmp_path):
    paths = []
    for i in range(45):
        save(history_run(i), tmp_path / f"r{i}.json")
        paths.append(f"r{i}.json")
    done = run_cli("history", "import", "--history", "H.sqlite", *paths, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    summary = tmp_path / "summary.md"
    md = run_cli("history", "changes", "--history", "H.sqlite", "--markdown", "--fail-on-regression", "1",
                 cwd=tmp_path, env={"GITHUB_STEP_SUMMARY": str(summary)})
    plain = run_cli("history", "changes", "--history", "H.sqlite", "--fail-on-regression", "1", cwd=tmp_path)
    assert md.returncode == plain.returncode == 1
    (header, *rows), *_ = tables(md.stdout)
    assert header[:2] == ["benchmark", "step"]
    assert any(r[0].startswith("ops/add") and r[1].endswith("+2.00%") for r in rows)
    assert "dispatcher" in md.stdout.lower() and "`at::add`" in md.stdout
    assert md.stdout.startswith(summary.read_text())
