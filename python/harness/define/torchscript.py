"""TorchScript variants: signatures, scripting a Python stmt or nn.Module, saving it in the cache.

A statement with the signature ``f(x, w) -> y`` becomes

    def f(x, w):
        <stmt>
        return y

which is scripted and saved (``torch.jit.save``) under the cache, keyed by its
source and the torch version; Python timings load it with ``torch.jit.load``
and C++ timings with ``torch::jit::load``. TorchScript needs real source
files, so the function or model is written to a file beside the saved model
and imported from there.

TorchScript is deprecated upstream and says so on every call; those
particular warnings are silenced around harness's own scripting and loading,
nothing else.
"""

from __future__ import annotations

import contextlib
import dataclasses
import fcntl
import hashlib
import importlib.metadata
import importlib.util
import os
import re
import sys
import textwrap
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from harness.errors import StatementError, UsageError
from harness.files.atomic import atomic_open, atomic_write_text
from harness.files.cache import cache_dir, writing_cache

_SIGNATURE = re.compile(r"^\s*f\s*\((?P<args>[^()]*)\)\s*->\s*(?P<output>[^,()]+?)\s*$")
_IDENT = re.compile(r"^[A-Za-z_]\w*$")


@dataclasses.dataclass(frozen=True)
class Signature:
    """``f(a, b) -> c``: the inputs setup defines and the output stmt assigns (``-> None``: no output)."""

    args: tuple[str, ...]
    output: str | None

    @classmethod
    def parse(cls, text: str) -> Signature:
        m = _SIGNATURE.match(text or "")
        if m is None:
            raise UsageError(
                f"invalid signature {text!r}: write it as 'f(x, w) -> y' (inputs defined by setup, "
                "the one output the statement assigns, or '-> None')"
            )
        args = tuple(a.strip() for a in m.group("args").split(",") if a.strip())
        output = m.group("output").strip()
        for name in (*args, output):
            if not _IDENT.match(name):
                raise UsageError(f"invalid signature {text!r}: {name!r} is not a variable name")
        return cls(args, None if output == "None" else output)

    def __str__(self) -> str:
        return f"f({', '.join(self.args)}) -> {self.output or 'None'}"


@contextlib.contextmanager
def quiet_deprecation() -> Iterator[None]:
    """Hide TorchScript's own "`torch.jit.X` is deprecated" warnings, and only those."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=r"`torch\.jit\.[\w.]+` is deprecated", category=DeprecationWarning)
        yield


def function_source(py_stmt: str, signature: Signature) -> str:
    body = textwrap.indent(textwrap.dedent(py_stmt).strip("\n"), "    ")
    ret = f"    return {signature.output}\n" if signature.output else "    return None\n"
    return f"import torch\n\n\ndef f({', '.join(signature.args)}):\n{body}\n{ret}"


def model_source(py_model_setup: str) -> str:
    return "import torch\nfrom torch import nn\n\n" + textwrap.dedent(py_model_setup).strip("\n") + "\n"


TORCHSCRIPT_DIR = "torchscript"  # the cache's folder of scripted models


def _torch_version() -> str:
    torch = sys.modules.get("torch")
    if getattr(torch, "__file__", None):
        # Torch's own site directory only: a search of all of sys.path lists the working directory
        # (sys.path[0]), and in a counting worker what that listing allocates moved a TorchScript
        # statement's count from run to run as files appeared there.
        site = str(Path(torch.__file__).parent.parent)  # type: ignore[union-attr]
        for dist in importlib.metadata.distributions(name="torch", path=[site]):
            return dist.version
    try:
        return importlib.metadata.version("torch")
    except importlib.metadata.PackageNotFoundError:  # pragma: no cover - torch is a dependency
        import torch

        return torch.__version__


def saved_path(source: str, kind: str) -> Path:
    """Where the scripted form of ``source`` is saved (computable without importing torch)."""
    digest = hashlib.sha256(f"{kind}\n{_torch_version()}\n{source}".encode()).hexdigest()[:20]
    return cache_dir(TORCHSCRIPT_DIR) / f"{kind}_{digest}.pt"


def ensure_scripted(source: str, kind: str) -> Path:
    """Script and save ``source`` once (``kind`` "function": its ``f``; "model": its ``model``)."""
    if kind not in ("function", "model"):
        raise UsageError(f"unknown TorchScript kind {kind!r}")
    with writing_cache("write the TorchScript cache"):
        return _ensure_scripted(source, kind)


def _ensure_scripted(source: str, kind: str) -> Path:
    path = saved_path(source, kind)
    if path.exists():
        return path
    with open(path.with_suffix(".lock"), "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if path.exists():
            return path
        module_path = path.with_suffix(".py")
        atomic_write_text(module_path, source)
        name = f"harness_torchscript_{path.stem}"
        spec = importlib.util.spec_from_file_location(name, module_path)
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module  # TorchScript resolves names through the defining module
        try:
            import torch

            spec.loader.exec_module(module)
            obj = getattr(module, "f" if kind == "function" else "model", None)
            if obj is None:
                raise StatementError(
                    "the model setup must define `model` (e.g. `model = torch.nn.Linear(4, 2)`)"
                    if kind == "model"
                    else "internal error: generated TorchScript source lacks f"
                )
            with quiet_deprecation():
                scripted = torch.jit.script(obj)
        except StatementError:
            raise
        except Exception as exc:  # TorchScript's frontend errors, errors in the model setup
            raise StatementError(f"could not script the {kind} for TorchScript:\n{exc}") from exc
        finally:
            sys.modules.pop(name, None)
        # Atomic, as every file of the cache: a reader never loads a half-written model.
        with quiet_deprecation(), atomic_open(path, "wb") as f:
            torch.jit.save(scripted, f)
    return path


def load(path: str | os.PathLike[str]) -> Any:
    """``torch.jit.load`` without the deprecation warning. A bare file name (a TorchScript task's
    setup gives one) is that file of this process's cache: a counting worker reaches the cache by a
    path of one length, and the length of the path loaded moves the statement's count (by 12
    instructions a run for 40 more characters), so no setup names the cache's own path."""
    import torch

    if os.sep not in str(path):
        path = cache_dir(TORCHSCRIPT_DIR) / path
    with quiet_deprecation():
        return torch.jit.load(str(path))
