"""The standard compile-time cases: PyTorch's (``pytorch_cases``) and harness's own.

harness's own cases cover what PyTorch's do not (nn.Module stacks through
AOT autograd in training, symbolic floordiv with dynamic shapes) and the
reduced variants that keep the default run inside its budget; their names
differ from every PyTorch name.

torch is imported inside the hooks, so importing this module (suite
discovery, ``harness list``) stays cheap.
"""

from __future__ import annotations

import dataclasses

from harness.suites.compile_time.benchmark import CompileTimeBenchmark, fresh_inductor_cache, synchronize
from harness.suites.compile_time.pytorch_cases import (
    AddLoop,
    AotDispatcher,
    InlineModule,
    UnbindSplitFlipCat,
    pytorch_cases,
)

__all__ = ["AddLoop", "AotDispatcher", "InlineModule", "ModuleStackCase", "SymbolicSum", "fresh_inductor_cache",
           "standard_cases"]


@dataclasses.dataclass(kw_only=True)
class ModuleStackCase(CompileTimeBenchmark):
    """A Conv2d then blocks of Linear, ReLU and LayerNorm: nn.Module tracing, parameters, AOT autograd."""

    category: str = "basic_modules"
    variant: str = "ModuleStack"
    backend: str = "aot_eager"
    mode: str = "training"

    def prepare_once(self) -> None:
        import torch

        from harness.suites.compile_time.modules import ModuleStack

        self._module = ModuleStack().to(self.device)
        self._input = torch.randn(2, 4, 8, 8, device=self.device)

    def work(self) -> None:
        import torch

        grad = torch.enable_grad() if self.mode == "training" else torch.no_grad()
        with grad, fresh_inductor_cache():
            compiled = torch.compile(self._module, backend=self.backend, dynamic=self.dynamic)
            compiled(self._input)
        synchronize(self.device)

    def name(self) -> str:
        parts = [self.category, self.variant, self.mode, self.backend]
        parts += ["dynamic"] if self.dynamic else []
        parts += [] if self.device == "cpu" else [self.device]
        return "_".join(parts)


@dataclasses.dataclass(kw_only=True)
class SymbolicSum(CompileTimeBenchmark):
    """Sums of ``x[: n // i]`` for i in 1..``length`` with dynamic shapes: symbolic floordiv and guards."""

    category: str = "symbolic_sum"
    variant: str = "floordiv"
    dynamic: bool = True
    length: int = 50

    def prepare_once(self) -> None:
        import torch

        self._x = torch.randn(1000, device=self.device)

    def work(self) -> None:
        import torch

        length = self.length

        @torch.compile(backend=self.backend, fullgraph=True, dynamic=self.dynamic)
        def f(x: torch.Tensor) -> torch.Tensor:
            total = x.new_zeros(())
            for i in range(1, length + 1):
                total = total + x[: x.shape[0] // i].sum()
            return total

        f(self._x)
        synchronize(self.device)


def standard_cases() -> list[CompileTimeBenchmark]:
    """PyTorch's cases (CUDA ones expand to nothing without a GPU), then harness's own."""
    return [
        *pytorch_cases(),
        # add_loop_inductor (1000 ops) is extended; this reduced one keeps inductor's codegen in the gate.
        AddLoop(backend="inductor", length=100),
        UnbindSplitFlipCat(loop_iterations=4, batch=16),
        ModuleStackCase(),
        SymbolicSum(),
    ]
