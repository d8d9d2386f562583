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


def _deepest_known(name: str, known: dict[str, Path]) -> str | None:
    parts = name.split(".")
    for n in range(len(parts), 0, -1):
        if ".".join(parts[:n]) in known:
            return ".".join(parts[:n])
    return None


def imports_of(name: str, path: Path, known: dict[str, Path]) -> set[str]:
    """Modules of harness that ``name`` imports anywhere (inside functions too), but for
    ``if TYPE_CHECKING:`` blocks.

    ``from P import m`` imports the module ``P.m`` where there is one; a name that is
    not a module comes from ``P``'s ``__init__``, so ``from harness import __version__``
    imports the package face ``harness`` (the top floor), while ``from harness import
    _version`` imports ``harness._version``.
    """
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
            targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in known else base for a in node.names]
        elif not _type_checking_block(node):
            stack.extend(ast.iter_child_nodes(node))
        for target in targets:
            module = _deepest_known(target, known)
            if module is not None and module != name:
                found.add(module)
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


ARCHITECTURE = REPO / "docs" / "architecture.md"


def _table_after(heading: str, text: str) -> list[list[str]]:
    """The rows (cells) of the first table after the markdown heading that starts with ``heading``."""
    lines = text.splitlines()
    at = next(
        i for i, line in enumerate(lines) if line.startswith("#") and line.lstrip("#").strip().startswith(heading)
    )
    rows: list[list[str]] = []
    for line in lines[at + 1 :]:
        if line.startswith("#"):
            break
        if line.startswith("|"):
            rows.append([cell.strip() for cell in line.strip().strip("|").split("|")])
        elif rows:
            break
    return rows[2:]  # less the header and its |---| line


def _names(cell: str, package: str) -> set[str]:
    """The modules and packages a cell names in backticks (``files/``, ``kinds``, ``__init__``), as dotted
    names under ``package``: ``cli`` is the module ``cli.py`` or the package ``cli/`` alike."""
    out = set()
    for name in re.findall(r"`([^`]+)`", cell):
        name = name.removesuffix("/").removesuffix(".py").replace("/", ".")
        out.add(package if name == "__init__" else f"{package}.{name}")
    return out


def floors(text: str | None = None) -> dict[str, list[set[str]]]:
    """The floors of docs/architecture.md, lowest first: the package's (its "Layers" table, whose first
    column names each floor's modules and folders) and those declared inside a folder (its "Floors inside a
    folder" table: a folder, then its floors lowest first, separated by ``<-``)."""
    text = ARCHITECTURE.read_text() if text is None else text
    out = {"harness": [_names(row[0], "harness") for row in _table_after("Layers", text)]}
    for row in _table_after("Floors inside a folder", text):
        (folder,) = _names(row[0], "harness")
        out[folder] = [_names(cell, folder) for cell in row[1].split("<-")]
    return out


def _within(name: str, top: str) -> bool:
    return name == top or name.startswith(top + ".")


def floor_of(name: str, scope: str, levels: list[set[str]]) -> int | None:
    """Which of ``scope``'s floors ``name`` is on; None for a module the scope's floors do not name. The
    scope itself (``__init__``) holds only its own ``__init__``, not every module under it."""
    for i, level in enumerate(levels):
        if any(name == top if top == scope else _within(name, top) for top in level):
            return i
    return None


def _label(level: set[str], scope: str) -> str:
    return ", ".join(sorted("__init__" if n == scope else n.removeprefix(scope + ".") for n in level))


def against_the_floors(edges: dict[str, set[str]], declared: dict[str, list[set[str]]]) -> list[str]:
    """Every import (an edge ``module -> imported``) from a lower floor to a higher one, in the package's
    floors or in those of a folder holding both modules; and every module on no floor of the package."""
    found = []
    for name, targets in sorted(edges.items()):
        for scope, levels in declared.items():
            if not _within(name, scope):
                continue
            here = floor_of(name, scope, levels)
            if here is None and scope == "harness":
                found.append(f"{name} is on no floor of docs/architecture.md's Layers table")
            for target in sorted(targets):
                there = floor_of(target, scope, levels) if _within(target, scope) else None
                if here is not None and there is not None and there > here:
                    found.append(f"{name} (floor {here + 1} of {scope}: {_label(levels[here], scope)}) imports "
                                 f"{target} (floor {there + 1}: {_label(levels[there], scope)})")
    return found


def import_edges() -> dict[str, set[str]]:
    known = modules()
    return {name: imports_of(name, path, known) for name, path in known.items()}


def test_imports_run_down_the_floors():
    """Each module imports only from its own floor or the floors below (docs/architecture.md), lazy
    imports and imports of the package face ``harness`` included."""
    upward = against_the_floors(import_edges(), floors())
    assert not upward, "imports against the floors of docs/architecture.md:\n" + "\n".join(upward)


def test_the_floor_check_finds_an_upward_import(tmp_path):
    """The checker itself: a lazy import of the package face from the bottom floor is found, as is one
    from the lower floor of a folder to its higher one."""
    text = """## Layers\n\n| floor | what |\n|---|---|\n| `errors` | |\n| `measure/` | |\n| `__init__` | |\n
### Floors inside a folder\n\n| folder | floors |\n|---|---|\n| `measure/` | `counters/` <- `callgrind/` |\n"""
    files = {
        "harness": "from harness.errors import E\n",
        "harness.errors": "def f():\n    from harness import __version__\n",
        "harness.measure": "",
        "harness.measure.counters": "",
        "harness.measure.counters.base": "from harness.measure.callgrind import counter\n",
        "harness.measure.callgrind": "",
        "harness.measure.callgrind.counter": "from harness.measure.counters.base import B\n",
        "harness.stray": "",
    }
    known = {}
    for name, source in files.items():
        path = tmp_path / f"{name}.py"
        path.write_text(source)
        known[name] = path
    edges = {name: imports_of(name, path, known) for name, path in known.items()}
    assert against_the_floors(edges, floors(text)) == [
        "harness.errors (floor 1 of harness: errors) imports harness (floor 3: __init__)",
        "harness.measure.counters.base (floor 1 of harness.measure: counters) imports "
        "harness.measure.callgrind.counter (floor 2: callgrind)",
        "harness.stray is on no floor of docs/architecture.md's Layers table",
    ]


def test_architecture_names_every_module():
    text = (REPO / "docs" / "architecture.md").read_text()
    missing = [
        str(path.relative_to(PACKAGE)) for path in sorted(PACKAGE.rglob("*.py"))
        if path.name != "__init__.py" or path.parent == PACKAGE
        if f"`{path.relative_to(PACKAGE)}`" not in text
    ]
    assert not missing, f"docs/architecture.md does not name: {missing}"


HEADINGS = ("Lives here:", "May import:", "Imported by:")


def _section(doc: str, heading: str) -> str:
    """The text of a docstring's ``heading`` up to the next of HEADINGS (or the end)."""
    at = doc.index(heading) + len(heading)
    ends = [doc.index(h, at) for h in HEADINGS if h in doc[at:]]
    return doc[at : min(ends, default=len(doc))]


def _backticked(text: str) -> set[str]:
    return {name.removesuffix("/").removesuffix(".py") for name in re.findall(r"`+([^`]+)`+", text)}


def _unit(target: str, package: str) -> str:
    """``target`` cut one level below what it shares with ``package``: the sibling folder or module a
    package's docstring names (``harness.measure.cpp`` for ``harness.measure.cpp.build`` seen from
    ``harness.measure.callgrind``, ``harness.files`` for ``harness.files.atomic``)."""
    t, p = target.split("."), package.split(".")
    shared = next((i for i, (a, b) in enumerate(zip(t, p, strict=False)) if a != b), min(len(t), len(p)))
    return ".".join(t[: shared + 1])


def contract_mismatches(edges: dict[str, set[str]], declared: dict[str, list[set[str]]], root: Path = PACKAGE
                        ) -> list[str]:
    """Where a package's ``__init__`` docstring and its code disagree: a module or folder of the package
    its "Lives here:" does not name; a package of harness its modules import (lazily too) that its "May
    import:" does not name; a name under "May import:" that is no part of harness or is on a higher floor."""
    found = []
    for init in sorted(root.rglob("__init__.py")):
        if init.parent == root:
            continue  # the package face: its docstring is the public API's
        package = ".".join(("harness", *init.parent.relative_to(root).parts))
        where = init.relative_to(root.parent)
        doc = ast.get_docstring(ast.parse(init.read_text())) or ""
        missing = [h for h in HEADINGS if h not in doc]
        found += [f"{where}: no {h!r} line" for h in missing]
        if missing:
            continue
        lives = _backticked(_section(doc, "Lives here:"))
        children = sorted({p.stem for p in init.parent.glob("*.py") if p.name != "__init__.py"}
                          | {p.parent.name for p in init.parent.glob("*/__init__.py")})
        found += [f"{where}: 'Lives here:' does not name {child}" for child in children if child not in lives]
        may = {name for name in _backticked(_section(doc, "May import:")) if name.startswith("harness")}
        unnamed: dict[str, set[str]] = {}  # the package's import not named -> its modules that import it
        for name, targets in edges.items():
            for target in targets:
                if _within(name, package) and not _within(target, package) and not any(_within(target, n) for n in may):
                    unnamed.setdefault(_unit(target, package), set()).add(name.removeprefix(package + "."))
        found += [f"{where}: 'May import:' does not name {unit} (imported by {', '.join(sorted(importers))})"
                  for unit, importers in sorted(unnamed.items())]
        for named in sorted(may):
            if named not in edges:
                found.append(f"{where}: 'May import:' names {named}, no module or package of harness")
                continue
            for scope, levels in declared.items():
                here, there = floor_of(package, scope, levels), floor_of(named, scope, levels)
                if _within(named, scope) and here is not None and there is not None and there > here:
                    found.append(f"{where}: 'May import:' names {named}, on a higher floor of {scope}")
    return found


def test_every_package_says_what_lives_there_and_what_it_may_import():
    """Each package's ``__init__`` docstring names its modules ("Lives here:") and every package of harness
    they import ("May import:", none of them above it), and says what imports it ("Imported by:")."""
    mismatches = contract_mismatches(import_edges(), floors())
    assert not mismatches, "package docstrings that disagree with the code:\n" + "\n".join(mismatches)


def test_the_contract_check_finds_each_kind_of_mismatch(tmp_path):
    """The checker itself: a module "Lives here:" leaves out, an import "May import:" leaves out (a lazy
    one), a name on a higher floor, a missing line."""
    root = tmp_path / "harness"
    (root / "model").mkdir(parents=True)
    (root / "errors.py").write_text("")
    (root / "bench.py").write_text("")
    (root / "model" / "__init__.py").write_text(
        '"""Lives here: ``task``.\nMay import: ``harness.bench``.\nImported by: everything."""\n')
    (root / "model" / "task.py").write_text("")
    (root / "model" / "result.py").write_text("def f():\n    from harness.errors import E\n")
    (root / "records").mkdir()
    (root / "records" / "__init__.py").write_text('"""Lives here: nothing.\nMay import: ``harness.model``."""\n')
    known = {".".join(("harness", *p.relative_to(root).with_suffix("").parts)).removesuffix(".__init__"): p
             for p in root.rglob("*.py")}
    edges = {name: imports_of(name, path, known) for name, path in known.items()}
    declared = {"harness": [{"harness.errors"}, {"harness.model"}, {"harness.records"}, {"harness.bench"}]}
    assert contract_mismatches(edges, declared, root) == [
        "harness/model/__init__.py: 'Lives here:' does not name result",
        "harness/model/__init__.py: 'May import:' does not name harness.errors (imported by result)",
        "harness/model/__init__.py: 'May import:' names harness.bench, on a higher floor of harness",
        "harness/records/__init__.py: no 'Imported by:' line",
    ]


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
