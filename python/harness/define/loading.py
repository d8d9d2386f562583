"""Loading Python code by reference: suite files by path, and objects another process must find again.

A *reference* names an object so that a worker process can import it:
``"module:qualname"``, or ``{"module", "qualname", "file"}`` where ``file``
is set when the module is not importable by name (a suite file loaded from
its path, a test module, ``__main__``). Kinds registered by a suite and
compile-time cases travel to workers this way.
"""

from __future__ import annotations

import importlib
import importlib.util
import inspect
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

from harness.errors import UsageError


def load_module_file(module_name: str, path: Path, what: str) -> ModuleType:
    """Import the file ``path`` as ``module_name``, with its folder on sys.path while it runs
    (so it can import helpers that sit beside it). ``what`` names it in the error when it
    cannot be loaded; exceptions raised by its code propagate."""
    spec = importlib.util.spec_from_file_location(module_name, path)
    if spec is None or spec.loader is None:
        raise UsageError(f"cannot import {what} from {path}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[module_name] = module
    sys.path.insert(0, str(path.parent))
    try:
        spec.loader.exec_module(module)
    finally:
        sys.path.remove(str(path.parent))
    return module


def reference_of(obj: Any) -> dict[str, str]:
    """Where another process finds ``obj`` (a class or function): its module, and its file
    unless the module is an installed one importable by name."""
    module = obj.__module__
    out = {"module": module, "qualname": obj.__qualname__}
    loaded = sys.modules.get(module)
    spec = getattr(loaded, "__spec__", None)
    file = getattr(loaded, "__file__", None)
    # Suite files are loaded from paths under made-up module names, and test
    # modules from folders that are not on a worker's path: a worker can only
    # find those again by file.
    if spec is None or module == "__main__" or module.startswith("harness_suite_") or not _importable(module, file):
        out["file"] = str(Path(inspect.getfile(obj)).resolve())
    return out


def _importable(module: str, file: str | None) -> bool:
    """Whether a fresh process would import ``module`` from the same file (an installed or harness module)."""
    if module.split(".")[0] == "harness":
        return True
    if file is None:
        return False
    return any(Path(file).resolve().is_relative_to(Path(p).resolve()) for p in _site_dirs())


def _site_dirs() -> list[str]:
    import site
    import sysconfig

    dirs = [sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]]
    dirs += site.getsitepackages() if hasattr(site, "getsitepackages") else []
    return [d for d in dirs if d]


def resolve_reference(ref: str | dict[str, str], what: str) -> Any:
    """The object a reference names; UsageError naming ``what`` when it cannot be found."""
    if isinstance(ref, str):
        module_name, sep, qualname = ref.partition(":")
        if not sep or not module_name or not qualname:
            raise UsageError(f"{what}: a reference must be 'module:name', got {ref!r}")
        source: dict[str, str] = {"module": module_name, "qualname": qualname}
    else:
        source = ref
    module_name = source["module"]
    file = source.get("file")
    try:
        module = sys.modules.get(module_name)
        if module is None or (file and getattr(module, "__file__", None) != file):
            if file:
                module = load_module_file(module_name, Path(file), what)
            else:
                module = importlib.import_module(module_name)
        obj: Any = module
        for part in source["qualname"].split("."):
            obj = getattr(obj, part)
    except (ImportError, AttributeError) as exc:
        raise UsageError(f"cannot load {what} ({module_name}:{source['qualname']}): {exc}") from None
    return obj
