"""The four gpt-fast micro-kernels, each compiled with ``torch.compile(dynamic=False)``.

Each experiment times one compiled kernel per shape (D) and dtype and
reports the mean over shapes; every shape's own value is kept in the row's
``shapes``. Kernels take their weights as arguments, not as module state, so
that on CPU the timed loop can cycle through copies of them (see
timing.rotation_count) without recompiling.

Differences from the reference benchmark.py, and why:
- mlp_layer_norm_gelu has the GELU its name promises (the reference's MLP
  has none), and is run both on one token (decode-like, shape (1, D)) and on
  a batch of tokens; the reference only runs the single vector.
- layer_norm's weight and bias are bf16 like its input; the reference's
  fp32 module made it a mixed-dtype kernel.
- int8 weights are drawn uniformly from the int8 range rather than cast from
  randn (which leaves almost all of them in -3..3); the bytes are the same.
- Dynamo's cache is reset before each compile: the reference compiles the
  same function for 8 shape/dtype pairs, which reaches dynamo's recompile
  limit, after which it would silently run eagerly.
"""

from __future__ import annotations

import contextlib
import itertools
from collections.abc import Callable, Iterator, Sequence
from typing import Any

from harness.suites.gpt_fast import efficiency, targets
from harness.suites.gpt_fast.context import RunContext
from harness.suites.gpt_fast.experiment import Row, Skipped, mean_row, register_experiment
from harness.suites.gpt_fast.timing import Timing, last_level_cache_bytes, rotation_count, time_callable

WARMUP_ITER = 5

# D per size: the reference's four on GPU; on CPU two, so the whole suite
# takes minutes on a 2-core machine (README "gpt-fast suite").
DIMS: dict[str, tuple[int, ...]] = {"gpu": (1024, 4096, 8192, 16384), "cpu": (1024, 4096), "tiny": (64,)}
MLP_HIDDEN = {"gpu": 14336, "cpu": 14336, "tiny": 128}
# Tokens in the batched MLP row: enough to make the GEMMs compute-bound.
MLP_TOKENS = {"gpu": 2048, "cpu": 128, "tiny": 4}
LAYER_NORM_ROWS = {"gpu": 4096, "cpu": 4096, "tiny": 16}
NUM_EXPERTS = 8
SELECTED_EXPERTS = (3, 5)


def _torch() -> Any:
    import torch

    return torch


def compile_fresh(fn: Callable[..., Any]) -> Callable[..., Any]:
    torch = _torch()
    torch._dynamo.reset()
    return torch.compile(fn, dynamic=False)


def _inductor_tuning(ctx: RunContext) -> contextlib.AbstractContextManager[Any]:
    """The reference tunes its gemv kernels' triton launch parameters; CPU kernels have none."""
    if not ctx.is_cuda:
        return contextlib.nullcontext()
    import torch._inductor.config as inductor_config

    return inductor_config.patch(coordinate_descent_tuning=True)


def _sync(ctx: RunContext) -> None:
    if ctx.is_cuda:
        _torch().cuda.synchronize()


def copies_for(ctx: RunContext, bytes_per_call: int) -> int:
    """Input copies to cycle through: 1 on GPU (the L2 flush evicts), enough to overflow the CPU's LLC."""
    return 1 if ctx.is_cuda else rotation_count(bytes_per_call, last_level_cache_bytes())


def _measure(
    ctx: RunContext, compiled: Callable[..., Any], arg_sets: Sequence[tuple[Any, ...]], cuda_graph: bool = False
) -> Timing:
    """Warm up ``compiled`` (compiling it), then time it cycling through ``arg_sets``."""
    for args in itertools.islice(itertools.cycle(arg_sets), WARMUP_ITER):
        compiled(*args)
    _sync(ctx)
    cycle: Iterator[tuple[Any, ...]] = itertools.cycle(arg_sets)

    def call() -> Any:
        return compiled(*next(cycle))

    return time_callable(call, device=ctx.device, min_run_time=ctx.min_run_time, cuda_graph=cuda_graph)


def _graph_rows(ctx: RunContext, name: str, metric: str, dtype: str) -> list[Skipped]:
    if ctx.cuda_graph and not ctx.is_cuda:
        return [
            Skipped(
                f"{name}[cuda_graph]",
                metric,
                dtype,
                ctx.device,
                f"CUDA graphs need a CUDA device; this run is on {ctx.device}",
            )
        ]
    return []


def _shape(timing: Timing, **fields: Any) -> dict[str, Any]:
    return {**fields, "seconds": timing.median_s, "samples": len(timing.samples_s), "timing": timing.method}


# -- mlp_layer_norm_gelu -------------------------------------------------------

def mlp_layer_norm_gelu(x: Any, w1: Any, b1: Any, g1: Any, c1: Any, w2: Any, b2: Any, g2: Any, c2: Any) -> Any:
    """Linear(D->H) -> LayerNorm -> GELU -> Linear(H->D) -> LayerNorm."""
    import torch.nn.functional as F

    h = F.linear(x, w1, b1)
    h = F.layer_norm(h, (h.shape[-1],), g1, c1)
    h = F.gelu(h)
    y = F.linear(h, w2, b2)
    return F.layer_norm(y, (y.shape[-1],), g2, c2)


def mlp_weights(dim: int, hidden: int, device: str, dtype: Any, seed: int = 0) -> tuple[Any, ...]:
    torch = _torch()
    gen = torch.Generator(device=device).manual_seed(seed)

    def randn(*shape: int, scale: float = 1.0) -> Any:
        return (torch.randn(*shape, generator=gen, device=device, dtype=dtype) * scale)

    return (
        randn(hidden, dim, scale=dim**-0.5), randn(hidden), torch.ones(hidden, device=device, dtype=dtype),
        torch.zeros(hidden, device=device, dtype=dtype), randn(dim, hidden, scale=hidden**-0.5), randn(dim),
        torch.ones(dim, device=device, dtype=dtype), torch.zeros(dim, device=device, dtype=dtype),
    )


def count_flops(fn: Callable[..., Any], *args: Any) -> int:
    """FLOPs of one call, as torch.utils.flop_counter counts them (matmuls: 2*M*N*K; norms and GELU: 0)."""
    from torch.utils.flop_counter import FlopCounterMode

    with FlopCounterMode(display=False) as mode:
        fn(*args)
    return int(mode.get_total_flops())


def _tensor_bytes(tensors: Sequence[Any]) -> int:
    return sum(t.numel() * t.element_size() for t in tensors)


@register_experiment(name="mlp_layer_norm_gelu")
def run_mlp_layer_norm_gelu(ctx: RunContext) -> list[Row]:
    torch = _torch()
    dtype = torch.bfloat16
    hidden = MLP_HIDDEN[ctx.size]
    name = "mlp_layer_norm_gelu"
    metric = targets.FLOPS_UTILIZATION
    variants = ((name, 1), (f"{name}[tokens={MLP_TOKENS[ctx.size]}]", MLP_TOKENS[ctx.size]))
    shapes: dict[str, list[dict[str, Any]]] = {row: [] for row, _ in variants}
    graph_shapes: dict[str, list[dict[str, Any]]] = {row: [] for row, _ in variants}
    for dim in DIMS[ctx.size]:
        weights = mlp_weights(dim, hidden, ctx.device, dtype)
        for row, tokens in variants:
            x = torch.randn(tokens, dim, device=ctx.device, dtype=dtype)
            flops = count_flops(mlp_layer_norm_gelu, x, *weights)
            # The least traffic the kernel can have: every weight once, input and output once.
            min_bytes = _tensor_bytes(weights) + 2 * x.numel() * x.element_size()
            bound = efficiency.roofline_bound(flops, min_bytes, ctx.peaks.flops_per_s, ctx.peaks.bytes_per_s)
            target = targets.flops_utilization_target(name, "bfloat16", bound)
            n = copies_for(ctx, min_bytes)
            arg_sets = [(x, *weights)] + [(x, *(w.clone() for w in weights)) for _ in range(n - 1)]
            compiled = compile_fresh(mlp_layer_norm_gelu)
            for graph, store in ((False, shapes), (True, graph_shapes)):
                if graph and not (ctx.cuda_graph and ctx.is_cuda):
                    continue
                timing = _measure(ctx, compiled, arg_sets, cuda_graph=graph)
                util = efficiency.flops_utilization(flops, timing.median_s, ctx.peaks.flops_per_s)
                store[row].append(_shape(
                    timing, D=dim, hidden=hidden, tokens=tokens, flops=flops, min_bytes=min_bytes,
                    roofline_bound=bound, value=util, target=target, copies=n,
                ))
            del arg_sets, compiled
    rows: list[Row] = []
    for row, _ in variants:
        rows.append(mean_row(row, metric, "bfloat16", ctx, shapes[row]))
        if graph_shapes[row]:
            rows.append(mean_row(f"{row}[cuda_graph]", metric, "bfloat16", ctx, graph_shapes[row]))
        rows.extend(_graph_rows(ctx, row, metric, "bfloat16"))
    return rows


# -- memory-bound kernels ------------------------------------------------------

def layer_norm(x: Any, weight: Any, bias: Any) -> Any:
    import torch.nn.functional as F

    return F.layer_norm(x, (x.shape[-1],), weight, bias)


def gather_gemv(w: Any, score_idxs: Any, x: Any) -> Any:
    """The selected experts' weight matrices, dequantised to x's dtype, times x."""
    return w[score_idxs].to(x.dtype) @ x


def gemv(w: Any, x: Any) -> Any:
    return w.to(x.dtype) @ x


def random_weights(shape: tuple[int, ...], dtype: Any, device: str, seed: int = 0) -> Any:
    torch = _torch()
    gen = torch.Generator(device=device).manual_seed(seed)
    if dtype == torch.int8:
        return torch.randint(-128, 128, shape, generator=gen, device=device, dtype=torch.int8)
    return torch.randn(shape, generator=gen, device=device, dtype=dtype)


def _bandwidth_rows(
    ctx: RunContext,
    name: str,
    dtypes: Sequence[Any],
    build: Callable[[int, Any], tuple[tuple[Any, ...], int, Callable[[tuple[Any, ...]], tuple[Any, ...]]]],
    fn: Callable[..., Any],
) -> list[Row]:
    """Shared loop: for each dtype and D, ``build`` gives (args, bytes moved per call, copy-args)."""
    metric = targets.BANDWIDTH
    rows: list[Row] = []
    for dtype in dtypes:
        dtype_name = str(dtype).removeprefix("torch.")
        target = targets.bandwidth_target(name, dtype_name, ctx.peaks)
        shapes: list[dict[str, Any]] = []
        graph_shapes: list[dict[str, Any]] = []
        for dim in DIMS[ctx.size]:
            args, nbytes, clone = build(dim, dtype)
            n = copies_for(ctx, nbytes)
            arg_sets = [args] + [clone(args) for _ in range(n - 1)]
            with _inductor_tuning(ctx):
                compiled = compile_fresh(fn)
                for graph, store in ((False, shapes), (True, graph_shapes)):
                    if graph and not (ctx.cuda_graph and ctx.is_cuda):
                        continue
                    timing = _measure(ctx, compiled, arg_sets, cuda_graph=graph)
                    gbps = efficiency.bandwidth_gb_per_s(nbytes, timing.median_s)
                    store.append(_shape(timing, D=dim, bytes=nbytes, value=gbps, target=target, copies=n))
            del arg_sets, args, compiled
        rows.append(mean_row(name, metric, dtype_name, ctx, shapes))
        if graph_shapes:
            rows.append(mean_row(f"{name}[cuda_graph]", metric, dtype_name, ctx, graph_shapes))
        rows.extend(_graph_rows(ctx, name, metric, dtype_name))
    return rows


@register_experiment(name="layer_norm")
def run_layer_norm(ctx: RunContext) -> list[Row]:
    torch = _torch()
    rows_n = LAYER_NORM_ROWS[ctx.size]

    def build(dim: int, dtype: Any) -> tuple[tuple[Any, ...], int, Callable[..., tuple[Any, ...]]]:
        x = random_weights((rows_n, dim), dtype, ctx.device)
        weight = torch.ones(dim, device=ctx.device, dtype=dtype)
        bias = torch.zeros(dim, device=ctx.device, dtype=dtype)
        nbytes = efficiency.layer_norm_bytes(rows_n, dim, x.element_size(), weight.element_size())
        return (x, weight, bias), nbytes, lambda a: (a[0].clone(), a[1], a[2])

    return _bandwidth_rows(ctx, "layer_norm", (torch.bfloat16,), build, layer_norm)


@register_experiment(name="gather_gemv")
def run_gather_gemv(ctx: RunContext) -> list[Row]:
    torch = _torch()

    def build(dim: int, dtype: Any) -> tuple[tuple[Any, ...], int, Callable[..., tuple[Any, ...]]]:
        w = random_weights((NUM_EXPERTS, dim, dim), dtype, ctx.device)
        idx = torch.tensor(SELECTED_EXPERTS, device=ctx.device)
        x = torch.randn(dim, device=ctx.device, dtype=torch.bfloat16)
        # Only the selected experts' matrices are read.
        nbytes = efficiency.weight_bytes(dim, dim, w.element_size(), matrices=len(SELECTED_EXPERTS))
        return (w, idx, x), nbytes, lambda a: (a[0].clone(), a[1], a[2])

    return _bandwidth_rows(ctx, "gather_gemv", (torch.int8, torch.bfloat16), build, gather_gemv)


@register_experiment(name="gemv")
def run_gemv(ctx: RunContext) -> list[Row]:
    torch = _torch()

    def build(dim: int, dtype: Any) -> tuple[tuple[Any, ...], int, Callable[..., tuple[Any, ...]]]:
        w = random_weights((dim, dim), dtype, ctx.device)
        x = torch.randn(dim, device=ctx.device, dtype=torch.bfloat16)
        return (w, x), efficiency.weight_bytes(dim, dim, w.element_size()), lambda a: (a[0].clone(), a[1])

    return _bandwidth_rows(ctx, "gemv", (torch.int8, torch.bfloat16), build, gemv)
