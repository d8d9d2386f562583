"""Timer globals for ``collect_callgrind``: copied to the measuring process by torch's rules.

Builtin values travel as they are (pickled); anything else must be wrapped
in ``torch.utils.benchmark.CopyIfCallgrind``, whose ``setup`` runs first in
the measuring process (so classes defined in the calling script can be
rebuilt there).
"""

from __future__ import annotations

import base64
import io
import pickle
import sys
from collections.abc import Mapping
from typing import Any

from harness.errors import UsageError

# Values copied to the measuring process as they are (pickled); anything else
# must be wrapped in torch.utils.benchmark.CopyIfCallgrind, as with torch.
PLAIN_TYPES = (str, bytes, bool, int, float, complex, type(None))


def dump_globals(globals: Mapping[str, Any] | None) -> str | None:
    """Serialise a Timer's globals for the measuring process (torch's rules)."""
    if not globals:
        return None
    import torch

    entries = []
    for name, value in globals.items():
        if name in ("torch", "__builtins__"):
            if name == "torch" and value is not torch:
                raise UsageError("collect_callgrind does not support replacing `torch` in globals")
            continue
        entries.append(_entry(name, value, torch))
    return base64.b64encode(pickle.dumps(entries)).decode("ascii") if entries else None


def _entry(name: str, value: Any, torch: Any) -> dict[str, Any]:
    from torch.utils.benchmark.utils.valgrind_wrapper.timer_interface import CopyIfCallgrind, Serialization

    if isinstance(value, PLAIN_TYPES):
        return {"name": name, "kind": "pickle", "data": pickle.dumps(value), "setup": None}
    if not isinstance(value, CopyIfCallgrind):
        raise UsageError(
            f"collect_callgrind measures in another process, so globals are copied there: {name!r} is a "
            f"{type(value).__name__}; build it in `setup`, or wrap it in "
            "torch.utils.benchmark.CopyIfCallgrind (builtins, nn.Module, TorchScript) to copy it explicitly"
        )
    buffer = io.BytesIO()
    if value.serialization == Serialization.PICKLE:
        kind, data = "pickle", pickle.dumps(value.value)
    elif value.serialization == Serialization.TORCH_JIT:
        torch.jit.save(value.value, buffer)
        kind, data = "jit", buffer.getvalue()
    else:
        torch.save(value.value, buffer)
        kind, data = "torch", buffer.getvalue()
    return {"name": name, "kind": kind, "data": data, "setup": value.setup}


def load_globals(blob: str | None) -> dict[str, Any]:
    if not blob:
        return {}
    import textwrap

    import torch

    # A wrapper's setup runs at the top level of this process's __main__, as in the
    # script torch generates: a class the calling script defined (pickled as
    # `__main__.Name`) is then found when its instance is unpickled here.
    namespace = vars(sys.modules["__main__"])
    namespace.setdefault("torch", torch)
    out: dict[str, Any] = {}
    for entry in pickle.loads(base64.b64decode(blob)):
        if entry["setup"]:
            exec(textwrap.dedent(entry["setup"]), namespace)
        try:
            out[entry["name"]] = _load(entry, torch)
        except Exception as exc:
            raise UsageError(
                f"global {entry['name']!r} could not be rebuilt in the measuring process: "
                f"{type(exc).__name__}: {exc}. A class defined in the calling script must be defined there "
                "too: wrap the value as CopyIfCallgrind(value, setup=<source of the class>)"
            ) from None
    return out


def _load(entry: dict[str, Any], torch: Any) -> Any:
    if entry["kind"] == "pickle":
        return pickle.loads(entry["data"])
    if entry["kind"] == "jit":
        return torch.jit.load(io.BytesIO(entry["data"]))
    return torch.load(io.BytesIO(entry["data"]), weights_only=False)
