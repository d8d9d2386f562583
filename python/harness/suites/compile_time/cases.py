"""The standard compile-time cases; each exercises a different part of torch.compile.

torch is imported inside the hooks, so importing this module (suite
discovery, ``harness list``) stays cheap.
"""

from __future__ import annotations

import contextlib
import dataclasses
from collections.abc import Iterator
from typing import Any

from harness.suites.compile_time.benchmark import CompileTimeBenchmark


def fresh_inductor_cache() -> contextlib.AbstractContextManager[Any]:
    """A temporary, empty inductor (and FX graph) cache, so every iteration compiles from scratch."""
    from torch._inductor import utils

    # Renamed from fresh_inductor_cache to fresh_cache in torch 2.7.
    factory = getattr(utils, "fresh_cache", None) or utils.fresh_inductor_cache
    return factory()


def _synchronize(device: str) -> None:
    if device == "cuda":
        import torch

        torch.cuda.synchronize()


@dataclasses.dataclass(kw_only=True)
class AotDispatcher(CompileTimeBenchmark):
    """100 inputs of 100 elements, each added to itself, compiled whole (fullgraph) through AOT autograd."""

    category: str = "aotdispatcher"
    backend: str = "aot_eager_decomp_partition"
    subclass: bool = False

    def name(self) -> str:
        return f"{self.category}_{self.mode}_{'subclass' if self.subclass else 'nosubclass'}_{self.device}"

    def prepare_once(self) -> None:
        import torch

        training = self.mode == "training"
        args = [torch.ones(100, requires_grad=training, device=self.device) for _ in range(100)]
        if self.subclass:
            from harness.suites.compile_time.modules import two_tensor_class

            pair = two_tensor_class()
            args = [pair(x, x.clone().detach().requires_grad_(training)) for x in args]
        self._args = args

    def work(self) -> None:
        import torch

        @torch.compile(backend=self.backend, fullgraph=True)
        def f(*args: Any) -> list[Any]:
            return [torch.add(x, x) for x in args]

        f(*self._args)
        _synchronize(self.device)


@dataclasses.dataclass(kw_only=True)
class InlineModule(CompileTimeBenchmark):
    """A chain of 10 nested calls applied ``repeats`` times in forward: dynamo's inliner, fresh caches."""

    category: str = "basic"
    repeats: int = 1000

    def name(self) -> str:
        variant = "InlineMod" if self.repeats == 1000 else f"InlineMod{self.repeats}"
        suffix = "_dynamic" if self.dynamic else ""
        device = "" if self.device == "cpu" else f"_{self.device}"
        return f"{self.category}_{variant}_{self.backend}{suffix}{device}"

    def prepare_once(self) -> None:
        import torch

        from harness.suites.compile_time.modules import InlineMod

        self._module = InlineMod(self.repeats).to(self.device)
        self._input = torch.ones(10, device=self.device)

    def work(self) -> None:
        import torch

        with fresh_inductor_cache():
            compiled = torch.compile(self._module, backend=self.backend, dynamic=self.dynamic)
            compiled(self._input)
        _synchronize(self.device)


@dataclasses.dataclass(kw_only=True)
class AddLoop(CompileTimeBenchmark):
    """A loop of ``length`` pointwise ops on two vectors (add, scaled add, sin), compiled whole."""

    category: str = "add_loop"
    length: int = 300

    def prepare_once(self) -> None:
        import torch

        self._a = torch.randn(1000, device=self.device)
        self._b = torch.randn(1000, device=self.device)

    def work(self) -> None:
        import torch

        length = self.length

        @torch.compile(backend=self.backend, fullgraph=True, dynamic=self.dynamic)
        def f(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
            out = a.clone()
            for i in range(length):
                if i % 3 == 0:
                    out = out + b
                elif i % 3 == 1:
                    out = out + 8 * b
                else:
                    out = out.sin()
            return out

        with fresh_inductor_cache():
            f(self._a, self._b)
        _synchronize(self.device)


@dataclasses.dataclass(kw_only=True)
class MatmulLoop(CompileTimeBenchmark):
    """``length`` chained matmuls of 32x32 matrices: many extern-kernel nodes, no fusion."""

    category: str = "mm_loop"
    backend: str = "inductor"
    length: int = 100

    def prepare_once(self) -> None:
        import torch

        self._a = torch.randn(32, 32, device=self.device)
        self._b = torch.randn(32, 32, device=self.device) / 32

    def work(self) -> None:
        import torch

        length = self.length

        @torch.compile(backend=self.backend, fullgraph=True, dynamic=self.dynamic)
        def f(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
            z = torch.mm(a, b)
            for _ in range(length):
                z = torch.mm(z, b)
            return z

        with fresh_inductor_cache():
            f(self._a, self._b)
        _synchronize(self.device)


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
        _synchronize(self.device)

    def name(self) -> str:
        parts = [self.category, self.variant, self.mode, self.backend]
        parts += ["dynamic"] if self.dynamic else []
        parts += [] if self.device == "cpu" else [self.device]
        return "_".join(parts)


@dataclasses.dataclass(kw_only=True)
class FloatArgs(CompileTimeBenchmark):
    """A function of a tensor and ``count`` Python floats, called with three sets of floats: float handling, guards, recompiles."""

    category: str = "float_args"
    count: int = 20

    def prepare_once(self) -> None:
        import torch

        self._x = torch.randn(16)
        self._floats = [[0.5 + 0.01 * i + 0.1 * r for i in range(self.count)] for r in range(3)]

    def work(self) -> None:
        import torch

        @torch.compile(backend=self.backend, dynamic=self.dynamic)
        def f(x: torch.Tensor, *scales: float) -> torch.Tensor:
            for s in scales:
                x = x * s + s
            return x

        for floats in self._floats:
            f(self._x, *floats)


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
        _synchronize(self.device)


@dataclasses.dataclass(kw_only=True)
class RuntimeOverhead(CompileTimeBenchmark):
    """Calling an already compiled small function: guard evaluation and dispatch, per call."""

    category: str = "runtime_overhead"
    backend: str = "inductor"
    calls: int = 1000

    def name(self) -> str:
        device = "" if self.device == "cpu" else f"_{self.device}"
        return f"{self.category}_{self.mode}_{self.backend}{device}"

    def prepare_once(self) -> None:
        import torch

        torch._dynamo.reset()
        training = self.mode == "training"
        self._a = torch.randn(8, device=self.device, requires_grad=training)
        self._b = torch.randn(8, device=self.device)

        @torch.compile(backend=self.backend, fullgraph=True)
        def f(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
            return (a * b + 1).relu()

        self._f = f
        with self._grad_mode():
            f(self._a, self._b)

    def _grad_mode(self) -> contextlib.AbstractContextManager[Any]:
        import torch

        return torch.enable_grad() if self.mode == "training" else torch.no_grad()

    def prepare(self) -> None:
        # Keep the compiled function: this case measures calling it, not compiling it.
        pass

    def work(self) -> None:
        f, a, b = self._f, self._a, self._b
        with self._grad_mode():
            for _ in range(self.calls):
                f(a, b)
        _synchronize(self.device)


def _cases(device: str) -> Iterator[CompileTimeBenchmark]:
    for mode in ("inference", "training"):
        for subclass in (False, True):
            yield AotDispatcher(mode=mode, subclass=subclass, device=device)
    yield InlineModule(device=device)
    if device == "cpu":
        yield AddLoop(backend="eager")
    yield AddLoop(backend="inductor", length=100, device=device)
    yield MatmulLoop(device=device)
    yield ModuleStackCase(device=device)
    if device == "cpu":
        yield FloatArgs()
    yield SymbolicSum(device=device)
    yield RuntimeOverhead(device=device)


def standard_cases() -> list[CompileTimeBenchmark]:
    """Every standard case on CPU, then the CUDA variants (which expand to nothing without a GPU)."""
    return [*_cases("cpu"), *_cases("cuda")]
