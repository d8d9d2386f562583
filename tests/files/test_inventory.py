"""docs/files.md names every module that writes a file: a write anywhere else fails here.

The source of ``python/harness`` and ``benchmarks/`` is scanned (``ast``) for every way this code
base creates, replaces, removes or binds a path: ``open`` in a writing mode,
``os.open`` with a creating or writing flag, renames, links, removals,
``mkdir``, temporary files and directories, ``write_text``/``write_bytes``,
``torch.save``, socket binds and database engines. A module doing any of
that must be named in the inventory's "written by" column (and every module
named there must exist), so a new file harness writes cannot appear without
its row: its reader, whether it is atomic or locked, what a kill and a full
disk leave, who else may read it. The other tests of tests/files test those
guarantees.
"""

from __future__ import annotations

import ast
import functools
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "python" / "harness"
DOC = ROOT / "docs" / "files.md"

WRITING_MODE = re.compile(r"[wax+]")
WRITING_FLAGS = {"O_CREAT", "O_WRONLY", "O_RDWR", "O_APPEND", "O_TMPFILE", "O_TRUNC"}
# module.function calls that create, replace or remove a path.
CALLS = {
    ("os", "replace"), ("os", "rename"), ("os", "link"), ("os", "symlink"), ("os", "unlink"), ("os", "remove"),
    ("os", "mkdir"), ("os", "makedirs"), ("os", "rmdir"), ("os", "mkfifo"), ("os", "truncate"),
    ("shutil", "rmtree"), ("shutil", "copy"), ("shutil", "copy2"), ("shutil", "copyfile"), ("shutil", "copytree"),
    ("shutil", "move"), ("tempfile", "mkdtemp"), ("tempfile", "mkstemp"), ("tempfile", "NamedTemporaryFile"),
    ("tempfile", "TemporaryDirectory"), ("torch", "save"), ("jit", "save"), ("sqlite3", "connect"),
}
# Path methods that write (any receiver: the scan errs towards finding too much).
METHODS = {"write_text", "write_bytes", "mkdir", "touch", "unlink", "rename", "symlink_to", "hardlink_to",
           "rmdir", "bind", "savefig", "imsave"}
FUNCTIONS = {"create_engine", "mkdtemp", "mkstemp",
             # files/'s and records/'s writers: the module calling them chooses the path.
             "atomic_open", "atomic_write_text", "write_csv", "append_csv", "append_jsonl", "write_record", "save",
             "write_metric_csv"}
# Calls found by the scan that write no file, and why.
NOT_FILES = {
    "measure/callgrind/globals.py": "torch.save / torch.jit.save into an in-memory buffer (globals sent to a worker)",
    "present/plots.py": "savefig into an in-memory buffer (SVG inlined in the report)",
}


def _name(node: ast.AST) -> str:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return node.attr
    return ""


def _mode(call: ast.Call, position: int) -> str | None:
    arg = call.args[position] if len(call.args) > position else next(
        (k.value for k in call.keywords if k.arg == "mode"), None)
    return arg.value if isinstance(arg, ast.Constant) and isinstance(arg.value, str) else None


def writes(source: str) -> list[tuple[int, str]]:
    """(line, what) for every writing call in ``source``."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if not isinstance(node, ast.Call):
            continue
        func = node.func
        what = ""
        if isinstance(func, ast.Name) and func.id == "open":
            mode = _mode(node, 1)
            if mode and WRITING_MODE.search(mode):
                what = f"open(..., {mode!r})"
        elif isinstance(func, ast.Name) and func.id in FUNCTIONS:
            what = func.id
        elif isinstance(func, ast.Attribute):
            owner = _name(func.value)
            if func.attr == "open" and owner == "os":
                flags = {n.attr if isinstance(n, ast.Attribute) else getattr(n, "id", "")
                         for arg in node.args[1:2] for n in ast.walk(arg)}
                if flags & WRITING_FLAGS:
                    what = "os.open(... " + "|".join(sorted(flags & WRITING_FLAGS)) + ")"
            elif func.attr == "open" and owner not in ("os", "tarfile", "zipfile"):
                mode = _mode(node, 0)
                if mode and WRITING_MODE.search(mode):
                    what = f".open({mode!r})"
            elif (owner, func.attr) in CALLS:
                what = f"{owner}.{func.attr}"
            elif func.attr in METHODS:
                what = f".{func.attr}()"
            elif func.attr in FUNCTIONS and owner in ("store", "records", "atomic", "csv_file", "jsonl_file"):
                what = f"{owner}.{func.attr}"
        if what:
            found.append((node.lineno, what))
    return found


@functools.cache
def _writers_in_source() -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for path in [*sorted(PACKAGE.rglob("*.py")), *sorted((ROOT / "benchmarks").rglob("*.py"))]:
        module = (path.relative_to(PACKAGE) if path.is_relative_to(PACKAGE) else path.relative_to(ROOT)).as_posix()
        found = writes(path.read_text())
        if found:
            out[module] = [f"{module}:{line}: {what}" for line, what in found]
    return out


def _inventory() -> dict[str, list[str]]:
    """Module -> the rows (first cell) of docs/files.md's inventory naming it as a writer."""
    rows: dict[str, list[str]] = {}
    in_table = False
    for line in DOC.read_text().splitlines():
        if line.startswith("| file |"):
            in_table = True
            continue
        if in_table and not line.startswith("|"):
            in_table = False
        if in_table and not line.startswith("|---"):
            cells = [c.strip() for c in line.strip("|").split("|")]
            for module in re.findall(r"`([\w/]+\.py)`", cells[1]):
                rows.setdefault(module, []).append(cells[0])
    return rows


def test_the_scan_finds_each_kind_of_write():
    found = {what for _, what in writes(
        "open(p, 'a')\nopen(p)\nos.open(p, os.O_RDWR | os.O_CREAT)\nos.open(p, os.O_RDONLY)\nos.replace(a, b)\n"
        "p.write_text('x')\np.mkdir()\nshutil.rmtree(p)\ntempfile.mkdtemp()\ntorch.jit.save(m, p)\n"
        "sock.bind(p)\ncreate_engine(u)\np.open('rb')\np.open('w')\n")}
    assert found == {"open(..., 'a')", "os.open(... O_CREAT|O_RDWR)", "os.replace", ".write_text()", ".mkdir()",
                     "shutil.rmtree", "tempfile.mkdtemp", "jit.save", ".bind()", "create_engine", ".open('w')"}


def test_every_module_that_writes_is_in_the_inventory():
    named = _inventory()
    assert named, f"{DOC}: no inventory table (a table whose header starts with '| file |')"
    unlisted = {module: calls for module, calls in _writers_in_source().items()
                if module not in named and module not in NOT_FILES}
    assert not unlisted, (
        "these modules write files that docs/files.md does not list; add a row (or the module to the row of "
        "the file it writes) with its reader and guarantees:\n" + "\n".join(c for v in unlisted.values() for c in v))


def test_every_writer_the_inventory_names_exists_and_writes():
    in_source = _writers_in_source()
    for module, rows in _inventory().items():
        where = ROOT / module if module.startswith("benchmarks/") else PACKAGE / module
        assert where.is_file(), f"docs/files.md ({rows[0]}) names {module}, which does not exist"
    for module, why in NOT_FILES.items():
        assert module in in_source, f"{module} no longer calls what NOT_FILES excuses ({why}): drop it there"
