"""Finds suite modules under a benchmarks/ directory, the way pytest finds tests.

Suite names come from paths, so listing and selecting suites never imports
one that was not asked for (gpt_fast or compile_time imports are heavy).
"""

from __future__ import annotations

import traceback
from pathlib import Path

from harness.define.loading import load_module_file
from harness.define.suite import Suite
from harness.errors import UsageError


def suite_files(root: Path) -> dict[str, Path]:
    """name -> file, for ``<root>/<name>/suite.py`` and ``<root>/**/bench_<name>.py``."""
    found: dict[str, Path] = {}
    if not root.is_dir():
        return found
    for path in sorted(root.glob("*/suite.py")):
        found[path.parent.name] = path
    for path in sorted(root.rglob("bench_*.py")):
        name = path.stem[len("bench_") :]
        if name in found and found[name] != path:
            raise UsageError(f"two suites are named {name!r}: {found[name]} and {path}; rename one")
        found[name] = path
    return found


def default_root(path: str | None = None) -> Path:
    return Path(path) if path else Path.cwd() / "benchmarks"


def load_suite(name: str, path: Path) -> Suite:
    try:
        module = load_module_file(f"harness_suite_{name}", path, f"suite {name!r}")
    except UsageError:
        raise
    except Exception as exc:
        frames = [f for f in traceback.extract_tb(exc.__traceback__) if f.filename == str(path)]
        where = f"{path}:{frames[-1].lineno}" if frames else str(path)
        raise UsageError(f"suite {name!r} failed to import at {where}: {type(exc).__name__}: {exc}") from exc
    suites = [v for v in vars(module).values() if isinstance(v, Suite)]
    if len(suites) != 1:
        raise UsageError(f"{path} must define exactly one harness.Suite at module level (found {len(suites)})")
    suite = suites[0]
    if suite.name is None:
        suite.name = name
    elif suite.name != name:
        raise UsageError(f"{path} defines Suite({suite.name!r}) but its file names it {name!r}; make them agree")
    return suite


def select_suites(root: Path, names: list[str]) -> list[Suite]:
    files = suite_files(root)
    if not files:
        raise UsageError(
            f"no suites found under {root} (looked for */suite.py and bench_*.py); "
            "run from a directory with a benchmarks/ folder or pass --path DIR"
        )
    unknown = [n for n in names if n not in files]
    if unknown:
        raise UsageError(f"unknown suite {', '.join(map(repr, unknown))}; available: {', '.join(sorted(files))}")
    if names:
        return [load_suite(n, files[n]) for n in names]
    return [s for s in (load_suite(n, files[n]) for n in sorted(files)) if s.default]
