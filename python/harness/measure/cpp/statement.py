"""CppStatement: one C++ statement as harness compiles it, keyed by its content.

Sections: ``global_setup`` (file scope), ``setup`` (once), ``batch_setup``
(before each block, with ``number`` in scope) and ``stmt`` (the timed body);
``output`` and ``inputs`` name what a probe returns. The key is a hash of all
of them and of the code generation's version, so a statement compiled once is
found again by any process.
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import json
import re
import textwrap

# Bump when the generated code or the runtime's contract changes.
CODEGEN_VERSION = "2"
SECTIONS = ("global_setup", "setup", "batch_setup", "stmt")


def normalize_cpp(code: str | None) -> str:
    """Dedent and strip; ``pass`` (Timer's default) means no code in C++."""
    text = textwrap.dedent(code or "").strip("\n")
    return "" if text.strip() == "pass" else text


@dataclasses.dataclass(frozen=True)
class CppStatement:
    """One C++ statement: what is compiled, and what a probe reports.

    ``output`` names the variable the probe returns (a signature's output);
    ``inputs`` name the variables whose ``.grad()`` the probe returns.
    """

    stmt: str
    setup: str = ""
    global_setup: str = ""
    batch_setup: str = ""
    output: str | None = None
    inputs: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        for name in ("stmt", "setup", "global_setup", "batch_setup"):
            object.__setattr__(self, name, normalize_cpp(getattr(self, name)))
        object.__setattr__(self, "inputs", tuple(self.inputs))

    @functools.cached_property
    def key(self) -> str:
        data = json.dumps(dataclasses.asdict(self), sort_keys=True)
        return hashlib.sha256(f"{CODEGEN_VERSION}\n{data}".encode()).hexdigest()[:24]

    @property
    def loops_over_batch(self) -> bool:
        return bool(re.search(r"\bbatch\b", self.batch_setup))

    def section(self, name: str) -> str:
        return getattr(self, name)
