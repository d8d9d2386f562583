"""Collects the fenced examples of README.md and docs/*.md as tests (tests/doc_examples.py says how they run).

Here, not in tests/conftest.py, the examples are kept together: this file is read however they are
selected (``pytest docs/one-page.md`` collects no tests/), and each page's examples must run in one
process, in order, for a skip marker or a block's state to reach the blocks after it.
"""

import pytest

from doc_examples import GROUP, sybil

pytest_collect_file = sybil().pytest()


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Every page's examples in one xdist group (with ``--dist loadgroup``: one worker, page order)."""
    for item in items:
        if item.path.suffix == ".md":
            item.add_marker(pytest.mark.xdist_group(GROUP))
