"""Statement modules built by ninja from the rules torch.utils.cpp_extension wrote, without importing torch.

``cpp_extension.load`` decides a module's compiler, flags and link line for
the torch and Python at hand (include paths, ABI defines, libraries); it
needs ``import torch`` (1-1.6 s a process), which a script counting a new
C++ statement with a warm worker would pay on top of the compiler for
nothing: the worker loads the module, not the script. So the first statement
module of a toolchain is built by ``cpp_extension.load`` and its
``build.ninja`` (variables and rules, everything above the first ``build``
line) is kept as the toolchain's recipe (``<toolchain>/recipe.json``); later
modules write the same header with their own name and sources, and run ninja
as ``cpp_extension`` does (``ninja -v``, ``-j $MAX_JOBS`` when set). The
flags are the recorded ones, byte for byte, so a module compiled either way
is the same module, and one torch or compiler change makes a new toolchain
(``measure.cpp.toolchain``) with no recipe yet. The rules also name paths the
toolchain key does not (harness's header directories, Python's): a recipe is
used only where they are this process's, else replaced by the next module
cpp_extension builds.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sysconfig
from collections.abc import Sequence
from pathlib import Path

from harness.files.atomic import atomic_write_text
from harness.measure.cpp.toolchain import include_dirs, toolchain
from harness.options import MAX_JOBS_ENV, env

RECIPE = "recipe.json"
_NAME_DEFINE = "-DTORCH_EXTENSION_NAME="


class NinjaFailed(Exception):
    """The build failed; ``output`` is ninja's (the compiler's messages among it)."""

    def __init__(self, output: str) -> None:
        super().__init__(output)
        self.output = output


def _recipe_path() -> Path:
    return toolchain().root / RECIPE


def _context() -> str:
    """What the rules name that the toolchain key does not: the directories of harness's headers (a
    checkout's, or an install's) and of Python's. A recipe written from another checkout or another
    Python would compile against its files, or against files that have gone since."""
    return json.dumps({"include_dirs": [str(d) for d in include_dirs()],
                       "python_include": sysconfig.get_paths().get("include", "")}, sort_keys=True)


def record_recipe(build_dir: Path, name: str, header: str) -> None:
    """Keep the variables and rules of the ``build.ninja`` cpp_extension wrote for module ``name``,
    whose TUs were given ``-include header`` (each module names its include set's)."""
    if recipe() is not None:
        return
    try:
        text = (build_dir / "build.ninja").read_text(encoding="utf-8")
    except OSError:
        return
    rules, sep, _ = text.partition("\nbuild ")
    # Only a plain C++ module's rules are replayed: one that names CUDA or
    # SYCL rules (another cpp_extension, another machine) is not a recipe.
    if (not sep or rules.count(f"{_NAME_DEFINE}{name} ") != 1 or rules.count(f"-include {header} ") != 1
            or re.search(r"^rule (?!compile$|link$)", rules, re.M)):
        return
    atomic_write_text(_recipe_path(), json.dumps({"name": name, "include": header, "rules": rules + "\n",
                                                  "context": _context()}))


def recipe() -> dict[str, str] | None:
    """The toolchain's recipe, if there is one for this checkout and Python (else the next module is
    built by cpp_extension and its rules replace it)."""
    try:
        recipe = json.loads(_recipe_path().read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(recipe, dict) or not all(
            isinstance(recipe.get(k), str) for k in ("name", "include", "rules", "context")):
        return None
    return recipe if recipe["context"] == _context() else None


def _escape(path: str) -> str:
    return re.sub(r"([ :$])", r"$\1", path)  # ninja's escapes for a path in a build line


def build_module(rules_of: dict[str, str], name: str, sources: Sequence[str], build_dir: Path, header: str) -> str:
    """Compile ``sources``, each given ``-include header``, into ``build_dir/<name>.so`` with the rules of
    the recipe ``rules_of`` (``recipe()``); ninja's output.

    NinjaFailed, with the output, when a compile or the link fails.
    """
    rules = (rules_of["rules"].replace(f"{_NAME_DEFINE}{rules_of['name']} ", f"{_NAME_DEFINE}{name} ")
             .replace(f"-include {rules_of['include']} ", f"-include {header} "))
    objects = [f"{Path(s).stem}.o" for s in sources]
    lines = [rules]
    lines += [f"build {o}: compile {_escape(s)}" for o, s in zip(objects, sources, strict=True)]
    lines += [f"build {name}.so: link {' '.join(objects)}", f"default {name}.so", ""]
    atomic_write_text(build_dir / "build.ninja", "\n".join(lines))  # replaces a killed build's whole
    command = [shutil.which("ninja") or "ninja", "-v"]
    jobs = env(MAX_JOBS_ENV)
    if jobs is not None and jobs.isdigit():
        command += ["-j", jobs]
    try:
        proc = subprocess.run(command, cwd=build_dir, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, check=False)
    except OSError as exc:
        raise NinjaFailed(f"cannot run {command[0]}: {exc} (pip install ninja)") from None
    output = proc.stdout.decode("utf-8", "replace")
    if proc.returncode != 0:
        raise NinjaFailed(f"Error building extension '{name}': {output}")
    return output


def pch_rejected(output: str) -> bool:
    """Whether the compiler said that it found a precompiled header and did not use it.

    Every reason g++ gives (a macro defined otherwise, another compiler, other
    flags) is one warning of ``-Winvalid-pch``, which statement builds turn on.
    """
    return "[-Winvalid-pch]" in output
