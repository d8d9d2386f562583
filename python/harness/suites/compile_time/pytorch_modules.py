"""The modules PyTorch's pr_time_benchmarks compile, with their sizes (imports torch, so loaded lazily).

Each is written here from the description of PyTorch's case file named in
its docstring; sizes and structure must match it (the fingerprint tests in
tests/suites/compile_time/test_pytorch_work.py check the traced graphs).
"""

from __future__ import annotations

from typing import Any

import torch
from torch import nn


class ListOfLinears(nn.Module):
    """basic_modules_benchmarks.py: 20 Linear(10, 10); step i adds linears[i // 2](x) and linears[i](x)."""

    def __init__(self) -> None:
        super().__init__()
        self.linears = nn.ModuleList([nn.Linear(10, 10) for _ in range(20)])

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for i, layer in enumerate(self.linears):
            x = self.linears[i // 2](x) + layer(x)
        return x


class NestedModule(nn.Module):
    """nested_module.py: a tree of depth 3 and width 4, each node two ReLUs around its children."""

    def __init__(self, depth: int = 3, width: int = 4) -> None:
        super().__init__()
        self.depth, self.width = depth, width
        self.relu_a = nn.ReLU()
        self.relu_b = nn.ReLU()
        children: list[nn.Module] = (
            [NestedModule(depth - 1, width) for _ in range(width)] if depth > 0 else [nn.ReLU() for _ in range(width)]
        )
        self.sub_mods = nn.Sequential(*children)
        self.a = 2

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.relu_a(x)
        x = x + self.sub_mods(x)
        return x + self.relu_b(x) + self.a


class DeepNestedModule(nn.Module):
    """deep_nested_module.py: a chain of 40 modules, each a Linear(10, 10) after its child's."""

    def __init__(self, depth: int = 40) -> None:
        super().__init__()
        self.depth = depth
        if depth > 0:
            self.child = DeepNestedModule(depth - 1)
        self.linear = nn.Linear(10, 10)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if self.depth > 0:
            x = self.child(x)
        return self.linear(x)


class Shared:
    """nn_module_guard_eval.py: one object every layer reads, so dynamo emits aliasing guards."""

    def __init__(self) -> None:
        self.flag = True


class GuardEvalLayer(nn.Module):
    def __init__(self, idx: int, hidden: int, shared: Shared) -> None:
        super().__init__()
        self.eps = 1e-6
        self.scale = 0.5 + idx * 1e-3
        self.register_buffer("bias", torch.randn(hidden))
        self.shared = shared

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        # Reading the shared flag is what creates the aliasing guards the case measures.
        if self.shared.flag:
            x = x + self.eps
        return x * self.scale + self.bias


class RepeatedModules(nn.Module):
    """nn_module_guard_eval.py: ``n_layers`` GuardEvalLayers sharing one object."""

    def __init__(self, n_layers: int, hidden: int) -> None:
        super().__init__()
        shared = Shared()
        self.layers = nn.ModuleList([GuardEvalLayer(i, hidden, shared) for i in range(n_layers)])

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for layer in self.layers:
            x = layer(x)
        return x


class SumFloordiv(nn.Module):
    """sum_floordiv.py: the sum of ``.item()`` of each input, floor-divided by 2."""

    def forward(self, x: list[torch.Tensor]) -> Any:
        return sum(t.item() for t in x) // 2


class UnbindSplitFlipCat(nn.Module):
    """unbind_split_flip_cat.py: per iteration, sizes unbound to items, data split by them, each piece flipped, cat."""

    def __init__(self, num_iterations: int = 40, batch_size: int = 128) -> None:
        super().__init__()
        self.num_iterations, self.batch_size = num_iterations, batch_size

    def forward(self, sizes_tensors: list[torch.Tensor], data_tensors: list[torch.Tensor]) -> list[torch.Tensor]:
        results = []
        for i in range(self.num_iterations):
            unbound = torch.unbind(sizes_tensors[i].to(torch.int64))
            items = []
            for j in range(self.batch_size):
                item = unbound[j].item()
                torch._check(item >= 0)
                items.append(item)
            total = items[0]
            for j in range(1, self.batch_size):
                total = total + items[j]
            pieces = torch.split(data_tensors[i], items)
            results.append(torch.cat([torch.flip(pieces[j], [0]) for j in range(self.batch_size)]))
        return results


# autograd_function.py's NoSave returns these (set by the case's prepare_once).
NO_SAVE_OUTPUTS: tuple[torch.Tensor, ...] = ()


class NoSave(torch.autograd.Function):
    """autograd_function.py: 13 inputs, 2 outputs, nothing saved for backward."""

    @staticmethod
    def forward(ctx: Any, *inputs: torch.Tensor) -> tuple[torch.Tensor, ...]:  # type: ignore[override]
        return NO_SAVE_OUTPUTS

    @staticmethod
    def backward(ctx: Any, *grad_outputs: torch.Tensor) -> Any:  # type: ignore[override]
        raise RuntimeError("forward-only benchmark")


def set_no_save_outputs(outputs: tuple[torch.Tensor, ...]) -> None:
    global NO_SAVE_OUTPUTS
    NO_SAVE_OUTPUTS = outputs


def trivial(x: torch.Tensor) -> torch.Tensor:
    """disable_overhead.py's callee: the count is the wrapper's."""
    return x




# diffusion_dit.py: a synthetic diffusion transformer.
DIT_DIM = 64
DIT_HEADS = 4
DIT_MLP_RATIO = 4
DIT_BLOCKS = 4
DIT_IMAGE_TOKENS = 16
DIT_TEXT_TOKENS = 8
DIT_DYNAMIC_IMAGE_TOKENS = 24  # the second image size of the dynamic case


def _heads(x: torch.Tensor) -> torch.Tensor:
    return x.unflatten(-1, (DIT_HEADS, -1)).transpose(1, 2)


def _merge_heads(x: torch.Tensor) -> torch.Tensor:
    return x.transpose(1, 2).flatten(-2)


class DiTBlock(nn.Module):
    """Self-attention, cross-attention to text and an MLP, each modulated by the condition (adaLN)."""

    def __init__(self) -> None:
        super().__init__()
        dim = DIT_DIM
        self.qkv = nn.Linear(dim, 3 * dim)
        self.self_out = nn.Linear(dim, dim)
        self.cross_q = nn.Linear(dim, dim)
        self.cross_kv = nn.Linear(dim, 2 * dim)
        self.cross_out = nn.Linear(dim, dim)
        self.mlp = nn.Sequential(
            nn.Linear(dim, DIT_MLP_RATIO * dim), nn.GELU(approximate="tanh"), nn.Linear(DIT_MLP_RATIO * dim, dim)
        )
        self.adaLN_modulation = nn.Sequential(nn.SiLU(), nn.Linear(dim, 6 * dim))

    # Functional layer_norm with a literal eps, as PyTorch's: a module's eps would become a
    # symbolic float input under dynamic=True and defeat the nested-region reuse.
    def forward(self, image: torch.Tensor, text: torch.Tensor, condition: torch.Tensor) -> torch.Tensor:
        shift_attn, scale_attn, gate_attn, shift_mlp, scale_mlp, gate_mlp = (
            self.adaLN_modulation(condition).unsqueeze(1).chunk(6, dim=-1)
        )
        norm = torch.nn.functional.layer_norm
        attention = torch.nn.functional.scaled_dot_product_attention
        hidden = norm(image, (DIT_DIM,)) * (1 + scale_attn) + shift_attn
        query, key, value = self.qkv(hidden).chunk(3, dim=-1)
        attended = attention(_heads(query), _heads(key), _heads(value))
        image = image + gate_attn * self.self_out(_merge_heads(attended))
        query = self.cross_q(norm(image, (DIT_DIM,)))
        key, value = self.cross_kv(text).chunk(2, dim=-1)
        attended = attention(_heads(query), _heads(key), _heads(value))
        image = image + self.cross_out(_merge_heads(attended))
        hidden = norm(image, (DIT_DIM,)) * (1 + scale_mlp) + shift_mlp
        return image + gate_mlp * self.mlp(hidden)


class HierarchicalDiTBlock(DiTBlock):
    """One compile region shared by every block (torch.compiler.nested_compile_region)."""

    forward = torch.compiler.nested_compile_region(DiTBlock.forward)


class DiT(nn.Module):
    def __init__(self, block_class: type[DiTBlock], num_blocks: int) -> None:
        super().__init__()
        dim = DIT_DIM
        self.t_mlp = nn.Sequential(nn.Linear(dim, dim), nn.SiLU(), nn.Linear(dim, dim))
        self.blocks = nn.ModuleList(block_class() for _ in range(num_blocks))
        self.norm_out = nn.LayerNorm(dim)
        self.proj_out = nn.Linear(dim, dim)

    def forward_blocks(
        self, blocks: Any, image: torch.Tensor, text: torch.Tensor, timestep: torch.Tensor
    ) -> torch.Tensor:
        condition = self.t_mlp(timestep)
        for block in blocks:
            image = block(image, text, condition)
        return self.proj_out(self.norm_out(image))

    def forward(self, image: torch.Tensor, text: torch.Tensor, timestep: torch.Tensor) -> torch.Tensor:
        return self.forward_blocks(self.blocks, image, text, timestep)
