"""Modules and tensor subclasses the compile-time cases compile (imports torch, so loaded lazily)."""

from __future__ import annotations

from typing import Any

import torch
from torch import nn
from torch.utils._pytree import tree_map


# A chain of ten nested calls: dynamo inlines every level on every use.
def fn0(x: torch.Tensor) -> torch.Tensor:
    return x + 1


def fn1(x: torch.Tensor) -> torch.Tensor:
    return fn0(x)


def fn2(x: torch.Tensor) -> torch.Tensor:
    return fn1(x)


def fn3(x: torch.Tensor) -> torch.Tensor:
    return fn2(x)


def fn4(x: torch.Tensor) -> torch.Tensor:
    return fn3(x)


def fn5(x: torch.Tensor) -> torch.Tensor:
    return fn4(x)


def fn6(x: torch.Tensor) -> torch.Tensor:
    return fn5(x)


def fn7(x: torch.Tensor) -> torch.Tensor:
    return fn6(x)


def fn8(x: torch.Tensor) -> torch.Tensor:
    return fn7(x)


def fn9(x: torch.Tensor) -> torch.Tensor:
    return fn8(x)


class InlineMod(nn.Module):
    def __init__(self, repeats: int) -> None:
        super().__init__()
        self.repeats = repeats

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for _ in range(self.repeats):
            x = fn9(x)
        return x


class ModuleStack(nn.Module):
    """Conv, then blocks of Linear, ReLU and LayerNorm."""

    def __init__(self, channels: int = 4, width: int = 64, blocks: int = 8, image: int = 8) -> None:
        super().__init__()
        self.conv = nn.Conv2d(channels, channels, kernel_size=3, padding=1)
        self.flatten = nn.Flatten()
        self.proj = nn.Linear(channels * image * image, width)
        self.blocks = nn.Sequential(
            *[nn.Sequential(nn.Linear(width, width), nn.ReLU(), nn.LayerNorm(width)) for _ in range(blocks)]
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.blocks(self.proj(self.flatten(torch.relu(self.conv(x)))))


class PairTensor(torch.Tensor):
    """A minimal two-tensor wrapper subclass (every op applies to both halves), used
    when ``torch.testing._internal.two_tensor`` is not shipped with torch."""

    a: torch.Tensor
    b: torch.Tensor

    @staticmethod
    def __new__(cls, a: torch.Tensor, b: torch.Tensor) -> PairTensor:
        if a.shape != b.shape or a.dtype != b.dtype or a.device != b.device:
            raise ValueError("both halves need the same shape, dtype and device")
        return torch.Tensor._make_wrapper_subclass(
            cls, a.shape, strides=a.stride(), storage_offset=a.storage_offset(), dtype=a.dtype,
            device=a.device, layout=a.layout, requires_grad=a.requires_grad,
        )

    def __init__(self, a: torch.Tensor, b: torch.Tensor) -> None:
        self.a = a
        self.b = b

    def __repr__(self) -> str:
        return f"PairTensor({self.a!r}, {self.b!r})"

    def __tensor_flatten__(self) -> tuple[list[str], None]:
        return ["a", "b"], None

    @staticmethod
    def __tensor_unflatten__(
        inner: dict[str, torch.Tensor], meta: None, outer_size: Any, outer_stride: Any
    ) -> PairTensor:
        return PairTensor(inner["a"], inner["b"])

    @classmethod
    def __torch_dispatch__(cls, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
        kwargs = kwargs or {}

        def half(i: int) -> Any:
            return lambda x: (x.a if i == 0 else x.b) if isinstance(x, PairTensor) else x

        out_a = func(*tree_map(half(0), args), **tree_map(half(0), kwargs))
        out_b = func(*tree_map(half(1), args), **tree_map(half(1), kwargs))
        if isinstance(out_a, torch.Tensor):
            return PairTensor(out_a, out_b) if out_a.shape == out_b.shape else out_a
        if isinstance(out_a, (list, tuple)):
            return type(out_a)(
                PairTensor(x, y) if isinstance(x, torch.Tensor) else x for x, y in zip(out_a, out_b, strict=True)
            )
        return out_a


def two_tensor_class() -> type[torch.Tensor]:
    """torch's own TwoTensor where torch ships it, else PairTensor."""
    try:
        from torch.testing._internal.two_tensor import TwoTensor
    except ImportError:
        return PairTensor
    return TwoTensor
