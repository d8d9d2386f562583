"""Collects the fenced examples of README.md and docs/*.md as tests (tests/doc_examples.py says how they run)."""

from doc_examples import sybil

pytest_collect_file = sybil().pytest()
