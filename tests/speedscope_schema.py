"""speedscope's own file-format schema (tests/data/speedscope/, vendored from its npm package), and a check
that a document harness exports meets it: what speedscope's importer expects of a file it opens."""

from __future__ import annotations

import functools
import json
from pathlib import Path
from typing import Any

import pytest

SCHEMA = Path(__file__).resolve().parent / "data" / "speedscope" / "file-format-schema.json"


@functools.cache
def validator() -> Any:
    jsonschema = pytest.importorskip("jsonschema", reason="jsonschema is in the test extra: pip install -e '.[test]'")
    schema = json.loads(SCHEMA.read_text())
    cls = jsonschema.validators.validator_for(schema)  # draft-07, as the schema's $schema says
    cls.check_schema(schema)
    return cls(schema)


def schema_errors(doc: Any) -> list[str]:
    """Every way ``doc`` breaks speedscope's schema, each with the path to the part at fault; [] when it meets it."""
    found = [leaf for e in validator().iter_errors(doc) for leaf in _closest(e)]
    return [f"{'/'.join(map(str, e.absolute_path)) or '(root)'}: {e.message[:300]}" for e in found]


def _closest(error: Any) -> list[Any]:
    """For a profile that meets neither of the schema's profile types (an anyOf), what is wrong with it as the
    type it comes closest to (the branch with the fewest errors), instead of the whole profile repeated."""
    if not error.context:
        return [error]
    branches: dict[Any, list[Any]] = {}
    for sub in error.context:
        branches.setdefault(sub.relative_schema_path[0], []).append(sub)
    return [leaf for sub in min(branches.values(), key=len) for leaf in _closest(sub)]
