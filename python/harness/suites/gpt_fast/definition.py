"""The suite definition: registered gpt-fast experiments expanded into Tasks of kind "gpt_fast"."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

from harness.errors import UsageError
from harness.model.task import Task
from harness.suites.gpt_fast.context import SIZES


@dataclasses.dataclass
class GptFastExperiments:
    """One Task per experiment (default: every registered one), named as the experiment is."""

    names: Sequence[str] | None = None
    size: str = "auto"  # "auto" (cpu or gpu by device), "tiny", "cpu" or "gpu"
    device: str | None = None  # None: cuda when available, else cpu
    cuda_graph: bool = True
    min_run_time: float | None = None  # seconds per shape; None: the CLI's --min-run-time

    def expand(self, suite: str) -> list[Task]:
        from harness.suites.gpt_fast.experiment import registered

        if self.size != "auto" and self.size not in SIZES:
            raise UsageError(f"suite {suite!r}: gpt-fast size {self.size!r} is not one of auto, {', '.join(SIZES)}")
        available = registered()
        names = list(self.names) if self.names else list(available)
        unknown = [n for n in names if n not in available]
        if unknown:
            raise UsageError(
                f"suite {suite!r}: unknown gpt-fast experiment {', '.join(map(repr, unknown))}; "
                f"available: {', '.join(available)}"
            )
        return [
            Task(
                suite=suite,
                name=name,
                kind="gpt_fast",
                params={
                    "experiment": name,
                    "size": self.size,
                    "device": self.device,
                    "cuda_graph": self.cuda_graph,
                    "min_run_time": self.min_run_time,
                },
            )
            for name in names
        ]
