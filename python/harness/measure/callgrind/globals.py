"""Timer globals for ``collect_callgrind``: copied to the measuring process by torch's rules.

Every value must be wrapped in ``torch.utils.benchmark.CopyIfCallgrind``
(``harness.CopyIfCallgrind`` is the same class), whose ``setup`` runs first in
the measuring process (so classes defined in the calling script can be rebuilt
there); anything else raises torch's ``ValueError``. With
``collect_callgrind(plain_globals=True)`` (harness only) builtin values
(``PLAIN_TYPES``) travel unwrapped, pickled as they are.
"""

from __future__ import annotations

import base64
import io
import pickle
import sys
from collections.abc import Mapping
from typing import Any

from harness.errors import UsageError

# Values that plain_globals=True copies to the measuring process as they are
# (they pickle losslessly); anything else must be wrapped in CopyIfCallgrind.
PLAIN_TYPES = (str, bytes, bool, int, float, complex, type(None))


def dump_globals(globals: Mapping[str, Any] | None, plain: bool = False) -> str | None:
    """Serialise a Timer's globals for the measuring process (torch's rules).

    ``plain``: builtin values need no ``CopyIfCallgrind`` wrapper.
    """
    if not globals:
        return None
    import torch

    entries = []
    for name, value in globals.items():
        if name in ("torch", "__builtins__"):
            if name == "torch" and value is not torch:
                # torch's ValueError and sentence, then what to do.
                raise UsageError(
                    "`collect_callgrind` does not support mocking out `torch`: the measuring process "
                    "imports the real one; remove `torch` from globals"
                )
            continue
        entries.append(_entry(name, value, torch, plain))
    return base64.b64encode(pickle.dumps(entries)).decode("ascii") if entries else None


def _entry(name: str, value: Any, torch: Any, plain: bool) -> dict[str, Any]:
    from torch.utils.benchmark.utils.valgrind_wrapper.timer_interface import CopyIfCallgrind, Serialization

    if plain and isinstance(value, PLAIN_TYPES):
        return {"name": name, "kind": "pickle", "data": pickle.dumps(value), "setup": None}
    if not isinstance(value, CopyIfCallgrind):
        hint = " or pass plain_globals=True (harness only)" if isinstance(value, PLAIN_TYPES) else ""
        # torch's sentence first (its tests match it), then what to do.
        raise UsageError(
            "`collect_callgrind` requires that globals be wrapped in `CopyIfCallgrind` so that serialization "
            f"is explicit. It measures in another process, so globals are copied there: {name!r} is a "
            f"{type(value).__name__}; build it in `setup`, or wrap it in CopyIfCallgrind (builtins, "
            f"nn.Module, TorchScript){hint}"
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
