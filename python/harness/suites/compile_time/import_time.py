"""PyTorch's import_time cases: how long importing one module takes in a fresh interpreter.

PyTorch's ``import_time.py`` runs ``python -X importtime -c "import M"`` five
times and reports the smallest cumulative time CPython prints for M, in
microseconds (``import_time_us``). The cumulative time is M's own import
and everything it imports that was not loaded yet; for ``torch._dynamo`` the
parent package ``torch`` is imported first, on a line of its own, so it is
not part of the figure.

Here each iteration is one such child, the first one the cold iteration
(reported apart, as for every case), the value the minimum of the others.
Where PyTorch's version records 0 µs when the import fails or CPython
prints no line for the module (a missing ``triton`` measures as the fastest
import of all), this raises with the child's message; a top-level package
that is not installed makes the case expand to nothing, with the reason.
"""

from __future__ import annotations

import dataclasses
import importlib.util
import subprocess
import sys

from harness.errors import HarnessError
from harness.suites.compile_time.benchmark import CompileTimeBenchmark

# A child that has not finished importing in this long is stuck, not slow.
IMPORT_TIMEOUT_S = 600.0


def importtime_command(module: str) -> list[str]:
    """PyTorch's command: this interpreter, ``-X importtime``, one import statement."""
    return [sys.executable, "-X", "importtime", "-c", f"import {module}"]


def cumulative_us(stderr: str, module: str) -> int | None:
    """The cumulative microseconds of ``module``'s line in ``-X importtime`` output (None: no line).

    Lines read ``import time: SELF | CUMULATIVE | NAME``, NAME indented by
    nesting depth; the header line's fields are not numbers.
    """
    for line in stderr.splitlines():
        if not line.startswith("import time:"):
            continue
        fields = line[len("import time:"):].split("|")
        if len(fields) == 3 and fields[2].strip() == module and fields[1].strip().isdigit():
            return int(fields[1].strip())
    return None


@dataclasses.dataclass(kw_only=True)
class ImportTime(CompileTimeBenchmark):
    """Time to import one module in a fresh interpreter (python -X importtime)."""

    category: str = "import_time"
    module: str = "torch._dynamo"
    region: str = "import"
    # PyTorch's number of children per case.
    iterations: int = 5

    def name(self) -> str:
        """PyTorch's: ``import_time_`` and the module with dots as underscores (``import_time_torch__dynamo``)."""
        return f"import_time_{self.module.replace('.', '_')}"

    def description(self) -> str:
        return f"Import time for {self.module}"

    def available(self) -> tuple[bool, str]:
        # find_spec of the top-level name imports nothing, so listing the suite stays cheap.
        top = self.module.split(".")[0]
        if importlib.util.find_spec(top) is None:
            return False, f"{top} is not installed"
        return super().available()

    def prepare(self) -> None:
        """Nothing to forget: every iteration is a new interpreter."""

    def work(self) -> float:
        """One child; returns the seconds CPython reports for importing the module."""
        try:
            child = subprocess.run(importtime_command(self.module), capture_output=True, text=True,
                                   timeout=IMPORT_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            raise HarnessError(f"{self.name()}: importing {self.module} took over {IMPORT_TIMEOUT_S:.0f} s") from None
        if child.returncode != 0:
            tail = [line for line in child.stderr.splitlines() if not line.startswith("import time:")][-5:]
            raise HarnessError(f"{self.name()}: `import {self.module}` failed (exit status {child.returncode}):\n"
                               + "\n".join(tail))
        us = cumulative_us(child.stderr, self.module)
        if us is None:
            raise HarnessError(f"{self.name()}: python -X importtime printed no line for {self.module} "
                               "(was it already imported by the interpreter's start-up, e.g. a sitecustomize?)")
        return us / 1e6


def import_time_cases() -> list[CompileTimeBenchmark]:
    """PyTorch's three modules; triton expands to nothing where it is not installed."""
    return [ImportTime(module=m) for m in ("torch._dynamo", "torch._inductor", "triton")]
