"""docs/environment.md lists every environment variable harness reads, and only those."""

from __future__ import annotations

import ast
import re
from pathlib import Path

from harness.options import ENVIRONMENT

ROOT = Path(__file__).resolve().parents[1]
DOC = ROOT / "docs" / "environment.md"
SETUP_ONLY = {"PYTHON"}  # read by scripts/setup.sh, not by the package


def _table(column: int = 1) -> dict[str, str]:
    """Variable -> its default (column 1) or effect (column 2), without the backticks."""
    rows = {}
    for line in DOC.read_text().splitlines():
        m = re.match(r"\|\s*`([A-Z_]+)`\s*\|\s*(.*?)\s*\|\s*(.*?)\s*\|$", line)
        if m:
            rows[m.group(1)] = m.group(1 + column).replace("`", "")
    return rows


def _constants() -> dict[str, str]:
    """harness.options' ``NAME_ENV = "VALUE"`` constants."""
    tree = ast.parse((ROOT / "python/harness/options.py").read_text())
    return {node.targets[0].id: node.value.value for node in tree.body
            if isinstance(node, ast.Assign) and isinstance(node.targets[0], ast.Name)
            and node.targets[0].id.endswith("_ENV") and isinstance(node.value, ast.Constant)}


def _read_in_code() -> dict[str, str]:
    """Every variable the code reads (name -> first place), found by how it is read."""
    constants = _constants()
    literal = re.compile(r"""(?:environ\.get\(|environ\[|getenv\(|\$)["'{]?([A-Z][A-Z0-9_]{2,})""")
    through_env = re.compile(r"\benv(?:_choice)?\(([A-Z_]+_ENV)[,)]")
    found: dict[str, str] = {}
    files = [*ROOT.glob("python/harness/**/*.py"), *ROOT.glob("benchmarks/**/*.py"), *ROOT.glob("examples/**/*.py"),
             *ROOT.glob("csrc/**/*.cpp"), *ROOT.glob("csrc/**/*.h")]
    for path in files:
        for n, line in enumerate(path.read_text().splitlines(), 1):
            names = [constants.get(m.group(1), m.group(1)) for m in literal.finditer(line)
                     if "environ" in m.group(0) or "getenv" in m.group(0)]
            names += [constants[m.group(1)] for m in through_env.finditer(line) if m.group(1) in constants]
            for name in names:
                found.setdefault(name, f"{path.relative_to(ROOT)}:{n}")
    setup = (ROOT / "scripts/setup.sh").read_text()
    for m in re.finditer(r"\$\{([A-Z][A-Z0-9_]+):-", setup):
        found.setdefault(m.group(1), "scripts/setup.sh")
    return found


def test_the_doc_lists_exactly_the_registry():
    assert set(_table()) == set(ENVIRONMENT) | SETUP_ONLY


def test_the_doc_gives_the_registry_defaults():
    table = _table()
    for name, (default, _effect) in ENVIRONMENT.items():
        assert table[name] == default, f"docs/environment.md: {name} default {table[name]!r}, options says {default!r}"


def test_the_doc_gives_the_registry_effects():
    table = _table(column=2)
    for name, (_default, effect) in ENVIRONMENT.items():
        assert table[name] == effect, f"docs/environment.md: {name} effect differs from harness.options'"


def test_every_variable_the_code_reads_is_documented():
    found = _read_in_code()
    assert {"HARNESS_CACHE_DIR", "CXX", "HARNESS_GPT_FAST_SIZE", "PYTHON"} <= set(found)  # the scan sees reads
    missing = {name: where for name, where in found.items() if name not in _table() and name != "PATH"}
    assert not missing, f"read but not in docs/environment.md: {missing}"
