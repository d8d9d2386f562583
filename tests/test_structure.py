"""The shape of the package: layers without cycles, small modules, every module documented, ruff clean."""

from __future__ import annotations

import ast
import importlib
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
PACKAGE = REPO / "python" / "harness"
MAX_TOP_LEVEL = 15
MAX_LINES = 600

# harness.__all__ before the restructure: every name must still import from `harness`.
PUBLIC_API = (
    "BuildError CallgrindStats Compare FunctionCount FunctionCounts GroupedModules GroupedSetup GroupedStmts "
    "GroupedVariants HarnessError Language Measurement StatementError Suite Task TaskSpec Timer TimerDefinition "
    "UsageError parse_stmts select_unit timeit"
).split()


def modules() -> dict[str, Path]:
    out = {}
    for path in PACKAGE.rglob("*.py"):
        parts = path.relative_to(PACKAGE).with_suffix("").parts
        name = ".".join(("harness", *parts))
        out[name.removesuffix(".__init__")] = path
    return out


def _type_checking_block(node: ast.AST) -> bool:
    test = getattr(node, "test", None) if isinstance(node, ast.If) else None
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def imports_of(name: str, path: Path, known: dict[str, Path]) -> set[str]:
    """Modules of harness that ``name`` imports anywhere (inside functions too), but for
    ``if TYPE_CHECKING:`` blocks and its own parent packages."""
    package = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
    found: set[str] = set()
    stack = list(ast.parse(path.read_text()).body)
    while stack:
        node = stack.pop()
        targets: list[str] = []
        if isinstance(node, ast.Import):
            targets = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")
                base = ".".join(parts[: len(parts) - node.level + 1] + ([base] if base else []))
            targets = [base] + [f"{base}.{a.name}" for a in node.names]
        elif not _type_checking_block(node):
            stack.extend(ast.iter_child_nodes(node))
        for target in targets:
            if target in known and target != name and not name.startswith(target + "."):
                found.add(target)
    return found


def cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in edges[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    sys.setrecursionlimit(max(sys.getrecursionlimit(), 10_000))
    for v in edges:
        if v not in index:
            visit(v)
    return found


def test_at_most_15_modules_directly_in_the_package():
    top = sorted(p.name for p in PACKAGE.glob("*.py") if p.name not in ("__init__.py", "__main__.py"))
    assert len(top) <= MAX_TOP_LEVEL, top


def test_no_module_over_600_lines():
    sizes = {name: len(path.read_text().splitlines()) for name, path in modules().items()}
    too_big = {name: n for name, n in sizes.items() if n > MAX_LINES}
    assert not too_big


def test_no_import_cycle_counting_lazy_imports():
    known = modules()
    edges = {name: imports_of(name, path, known) for name, path in known.items()}
    assert cycles(edges) == []


def test_the_cycle_check_finds_a_lazy_cycle(tmp_path):
    """The checker itself: an import inside a function that closes a circle is found."""
    (tmp_path / "a.py").write_text("import harness.b\n")
    (tmp_path / "b.py").write_text("def f():\n    from harness import a\n")
    known = {"harness.a": tmp_path / "a.py", "harness.b": tmp_path / "b.py"}
    edges = {name: imports_of(name, path, known) for name, path in known.items()}
    assert cycles(edges) == [["harness.a", "harness.b"]]


LAYERS = [
    {"harness.errors", "harness.options", "harness.core", "harness._version", "harness.files"},
    {"harness.model"},
    {"harness.workers"},
    {"harness.measure"},
    {"harness.define"},
    {"harness.kinds"},
    {"harness.records"},
    {"harness.history"},
    {"harness.cluster"},
    {"harness.run"},
    {"harness.bench"},
    {"harness.present", "harness.cli", "harness.pytest_plugin"},
    {"harness.suites"},
]


def layer_of(name: str) -> int:
    for i, layer in enumerate(LAYERS):
        if any(name == top or name.startswith(top + ".") for top in layer):
            return i
    raise AssertionError(f"{name} belongs to no layer of docs/architecture.md")


def test_imports_run_down_the_layers():
    """Each module imports only from its own layer or the layers below (docs/architecture.md)."""
    known = modules()
    upward = []
    for name, path in known.items():
        if name in ("harness", "harness.__main__"):
            continue  # the public API and `python -m harness` sit above everything
        for target in imports_of(name, path, known):
            if target != "harness" and layer_of(target) > layer_of(name):
                upward.append(f"{name} -> {target}")
    assert not upward


def test_architecture_names_every_module():
    text = (REPO / "docs" / "architecture.md").read_text()
    missing = [
        str(path.relative_to(PACKAGE)) for path in sorted(PACKAGE.rglob("*.py"))
        if path.name != "__init__.py" or path.parent == PACKAGE
        if f"`{path.relative_to(PACKAGE)}`" not in text
    ]
    assert not missing, f"docs/architecture.md does not name: {missing}"


def test_every_subpackage_says_what_it_may_import():
    for init in sorted(PACKAGE.rglob("__init__.py")):
        if init.parent == PACKAGE:
            continue
        doc = ast.get_docstring(ast.parse(init.read_text())) or ""
        assert re.search(r"\bMay import\b", doc) and re.search(r"\bImported by\b", doc), init


def test_public_api_still_imports_from_harness():
    harness = importlib.import_module("harness")
    assert set(PUBLIC_API) <= set(harness.__all__)
    for name in [*PUBLIC_API, *harness.__all__]:
        assert getattr(harness, name) is not None


def test_import_harness_stays_cheap():
    """`import harness` (and so the pytest plugin in every pytest run) loads neither torch nor the run machinery."""
    code = "import sys, harness; print(sorted(m for m in ('torch', 'harness.bench', 'rich') if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


@pytest.mark.skipif(shutil.which("ruff") is None and not (Path(sys.executable).parent / "ruff").exists(),
                    reason="ruff is not installed (pip install -e .[test] installs it)")
def test_ruff_clean():
    ruff = str(Path(sys.executable).parent / "ruff") if (Path(sys.executable).parent / "ruff").exists() else "ruff"
    r = subprocess.run([ruff, "check", "python", "tests", "benchmarks", "examples"], cwd=REPO,
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr
