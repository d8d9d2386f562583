"""PyTorch's pr_time_benchmarks cases that count everything work() does (``instruction_count``): runtime overheads.

Guard evaluation, autograd.Function.apply, calling a compiled function,
torch._dynamo.disable: PyTorch counts one call each, after warm-up in
prepare_once. Same name, same work, as in ``pytorch_cases``.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Iterator

from harness.suites.compile_time.benchmark import CompileTimeBenchmark, synchronize


@dataclasses.dataclass(kw_only=True)
class NnModuleGuardEval(CompileTimeBenchmark):
    """nn_module_guard_eval.py: one guard check of a compiled stack of 20 layers (hidden 64) on a view input."""

    category: str = "nn_module_guard_eval"
    region: str = "work"

    def name(self) -> str:
        return f"{self.category}{'_dynamic' if self.dynamic else ''}"

    def prepare_once(self) -> None:
        import torch
        from torch._dynamo.eval_frame import _debug_get_cache_entry_list

        from harness.suites.compile_time.pytorch_modules import RepeatedModules

        torch._dynamo.reset()
        self._model = RepeatedModules(20, 64)
        with torch._dynamo.config.patch(enable_cpp_symbolic_shape_guards=False):
            compiled = torch.compile(self._model, fullgraph=True, backend=self.backend, dynamic=self.dynamic)
            self._x = torch.randn(2 * 64, 64)[:64]  # a view: relational shape guards on its base
            compiled(self._x)
        self._guards = _debug_get_cache_entry_list(type(self._model).forward.__code__)[0].guard_manager
        self._locals = {"self": self._model, "x": self._x}
        if not self._guards.check(self._locals):
            raise RuntimeError("guard check failed; cannot measure guard evaluation")

    def prepare(self) -> None:
        pass  # the compiled guards are what is measured

    def work(self) -> None:
        self._guards.check(self._locals)


@dataclasses.dataclass(kw_only=True)
class AutogradFunctionApply(CompileTimeBenchmark):
    """autograd_function.py: NoSave.apply with 13 empty inputs (requires_grad), 2 outputs, nothing saved."""

    category: str = "autograd_function_apply"
    region: str = "work"
    device: str = "cuda"

    def name(self) -> str:
        # PyTorch's case runs on CUDA; the CPU one is ours and says so.
        return f"{self.category}_13_in_2_out_no_save{'_cpu' if self.device == 'cpu' else ''}"

    def prepare_once(self) -> None:
        import torch

        from harness.suites.compile_time.pytorch_modules import NoSave, set_no_save_outputs

        set_no_save_outputs((torch.empty((0,), device=self.device), torch.empty((0,), device=self.device)))
        self._args = tuple(torch.empty((0,), device=self.device, requires_grad=True) for _ in range(13))
        self._apply = NoSave.apply
        for _ in range(10000):
            self._apply(*self._args)
        synchronize(self.device)

    def prepare(self) -> None:
        pass

    def work(self) -> None:
        self._apply(*self._args)


@dataclasses.dataclass(kw_only=True)
class RuntimeOverhead(CompileTimeBenchmark):
    """runtime_overhead.py: one call of a compiled ``a + 1`` on ones(2), inductor, after 10 warm-up calls."""

    category: str = "runtime_overhead"
    backend: str = "inductor"
    region: str = "work"
    device: str = "cuda"
    requires_grad: bool = False
    inference_mode: bool = False
    backward: bool = False

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.inference_mode and self.backward:
            raise ValueError("RuntimeOverhead: inference_mode and backward cannot both be set")

    def name(self) -> str:
        flags = [f for f in ("requires_grad", "inference_mode", "backward") if getattr(self, f)]
        parts = [self.category, self.backend, *flags, *(["dynamic"] if self.dynamic else [])]
        # PyTorch's case runs on CUDA; the CPU one is ours and says so.
        return "_".join(parts) + ("_cpu" if self.device == "cpu" else "")

    def prepare_once(self) -> None:
        import torch

        torch._dynamo.reset()
        self._a = torch.ones(2, device=self.device, requires_grad=self.requires_grad)

        @torch.compile(backend=self.backend, fullgraph=True, dynamic=self.dynamic)
        def add1(a: torch.Tensor) -> torch.Tensor:
            return a + 1

        self._add1 = add1
        for _ in range(10):
            if self.backward:
                self._add1(self._a).sum().backward()
            else:
                self.work()

    def prepare(self) -> None:
        if self.backward:
            self._forward = self._add1(self._a).sum()

    def work(self) -> None:
        import torch

        if self.inference_mode:
            with torch.inference_mode():
                self._add1(self._a)
        elif self.backward:
            self._forward.backward()
        else:
            self._add1(self._a)


@dataclasses.dataclass(kw_only=True)
class DisableOverhead(CompileTimeBenchmark):
    """disable_overhead.py: one call of torch._dynamo.disable around a trivial function of ones(1)."""

    category: str = "disable_overhead"
    region: str = "work"

    def name(self) -> str:
        return self.category

    def prepare_once(self) -> None:
        import torch

        from harness.suites.compile_time.pytorch_modules import trivial

        torch._dynamo.reset()
        self._fn = torch._dynamo.disable(trivial)
        self._a = torch.ones(1)
        for _ in range(10):
            self.work()

    def prepare(self) -> None:
        pass

    def work(self) -> None:
        self._fn(self._a)


DTENSOR_OPERATORS = (
    "detach", "to_from_local", "collectives", "add_backward", "inplace", "view", "random", "custom_handler",
)
DTENSOR_WORLD_SIZE = 256  # PyTorch's: a fake process group, no other process


@dataclasses.dataclass(kw_only=True)
class DTensorDispatch(CompileTimeBenchmark):
    """dtensor.py: one DTensor operation on a 256-rank fake process group (10x10 ones, replicated)."""

    category: str = "dtensor_dispatch"
    region: str = "work"
    device: str = "cuda"
    operator: str = "detach"

    def __post_init__(self) -> None:
        super().__post_init__()
        self.require_choice("operator", DTENSOR_OPERATORS)

    def name(self) -> str:
        # PyTorch's case runs on CUDA; the CPU one is ours and says so.
        return f"{self.category}_{self.operator}{'_cpu' if self.device == 'cpu' else ''}"

    def prepare_once(self) -> None:
        import torch
        import torch.distributed as dist
        from torch.distributed.tensor import DTensor, Partial, Replicate, Shard
        from torch.testing._internal.distributed.fake_pg import FakeStore

        if not dist.is_initialized():
            dist.init_process_group("fake", store=FakeStore(), rank=0, world_size=DTENSOR_WORLD_SIZE)
        self._mesh = dist.device_mesh.init_device_mesh(self.device, (DTENSOR_WORLD_SIZE,), mesh_dim_names=("dp",))
        ones = functools.partial(torch.ones, device=self.device)
        self._a = DTensor.from_local(ones(10, 10), self._mesh, [Replicate()])
        self._b = DTensor.from_local(ones(10, 10), self._mesh, [Replicate()])
        if self.operator == "collectives":
            self._c = DTensor.from_local(ones(10, 10), self._mesh, [Partial()])
        if self.operator == "add_backward":
            self._a = DTensor.from_local(ones(2, 512, requires_grad=True), self._mesh, [Shard(0)])
            self._b = DTensor.from_local(ones(512, 2, requires_grad=True), self._mesh, [Shard(1)])

    def prepare(self) -> None:
        pass

    def work(self) -> None:
        import torch
        from torch.distributed.tensor import DTensor, Replicate, Shard

        a, b, op = self._a, self._b, self.operator
        if op == "detach":
            a.detach()
        elif op == "to_from_local":
            DTensor.from_local(a.to_local(), self._mesh, [Replicate()])
        elif op == "collectives":
            # shard, all-to-all, all-gather; then all-reduce and reduce-scatter of a partial
            a = a.redistribute(placements=[Shard(0)]).redistribute(placements=[Shard(1)])
            a.redistribute(placements=[Replicate()])
            self._c.redistribute(placements=[Replicate()])
            self._c.redistribute(placements=[Shard(0)])
        elif op == "add_backward":
            (a + b).sum().backward()
        elif op == "inplace":
            a.add_(b)
        elif op == "view":
            a.view(100)
        elif op == "random":
            a.uniform_()
        else:
            torch.ops.aten.is_same_size(a, b)


def dtensor_cases(device: str) -> Iterator[CompileTimeBenchmark]:
    for operator in DTENSOR_OPERATORS:
        yield DTensorDispatch(device=device, operator=operator)


def runtime_overheads(device: str) -> Iterator[CompileTimeBenchmark]:
    for dynamic in (False, True):
        for requires_grad, inference_mode, backward in (
            (False, False, False), (False, True, False), (True, False, False), (True, False, True),
        ):
            yield RuntimeOverhead(
                device=device, dynamic=dynamic, requires_grad=requires_grad, inference_mode=inference_mode,
                backward=backward,
            )


