"""Model experiments: decode a fixed number of tokens with a compiled step; tokens/s, GB/s, compile time.

Differences from the reference generate.py, and why:
- Tokens/s times the decode loop only. The reference divides the generated
  tokens by a time that includes the prefill, which mixes a compute-bound
  phase into a bandwidth figure.
- GB/s is the weight bytes a decode step reads (models.parameter_bytes_read_per_token)
  x tokens/s, not model size x tokens/s (see efficiency.py).
- compilation_time(s) is the first compiled step's wall time minus a steady
  step's: the compile alone. The reference times a whole first generate()
  (compile of prefill and decode, plus 200 tokens).
- Decoding is greedy (argmax): sampling adds a few small kernels and no
  weight traffic, and greedy output is reproducible.
"""

from __future__ import annotations

import statistics
from typing import Any

import torch

from harness.core import native
from harness.suites.gpt_fast import efficiency, targets
from harness.suites.gpt_fast.context import RunContext
from harness.suites.gpt_fast.experiment import Row, Skipped, mean_row, register_experiment
from harness.suites.gpt_fast.models import (
    ModelConfig,
    build_model,
    config_summary,
    decode_one_token,
    kv_cache_bytes_read_per_token,
    meta_model,
    parameter_bytes,
    parameter_bytes_read_per_token,
)

# Llama-2-7B's shapes on GPU (the reference's model; MHA, as Llama-2-7B has
# no GQA); GQA in the CPU and tiny configs. Mixtral-8x7B's shapes with 16 of
# its 32 layers on GPU, as the reference cut it to fit CI machines.
CONFIGS: dict[tuple[str, str], ModelConfig] = {
    ("llama", "tiny"): ModelConfig("llama-tiny", 64, 1, 4, 2, 128, 256, 16),
    ("llama", "cpu"): ModelConfig("llama-1024d-2l", 1024, 2, 16, 4, 2816, 8192, 48),
    ("llama", "gpu"): ModelConfig("llama-2-7b-shapes", 4096, 32, 32, 32, 11008, 32000, 208),
    ("mixtral_moe", "tiny"): ModelConfig("mixtral-tiny", 64, 1, 4, 2, 64, 256, 16, num_experts=4),
    ("mixtral_moe", "cpu"): ModelConfig("mixtral-1024d-2l-8e", 1024, 2, 16, 4, 1792, 8192, 48, num_experts=8),
    ("mixtral_moe", "gpu"): ModelConfig(
        "mixtral-8x7b-shapes-16l", 4096, 16, 32, 8, 14336, 32000, 208, num_experts=8, rope_base=1e6
    ),
}
PROMPT_TOKENS = {"tiny": 4, "cpu": 6, "gpu": 6}
NEW_TOKENS = {"tiny": 8, "cpu": 32, "gpu": 200}
REPEATS = {"tiny": 2, "cpu": 3, "gpu": 5}
MODES = ("bfloat16", "int8")
METRICS = (targets.TOKENS, targets.BANDWIDTH, targets.COMPILE)
# Room for activations, the allocator and the CUDA graph pool beyond the weights.
GPU_HEADROOM_BYTES = 4 * 2**30


def _sync(ctx: RunContext) -> None:
    if ctx.is_cuda:
        torch.cuda.synchronize()


def _fx_cache_counts() -> dict[str, int]:
    from torch._dynamo.utils import counters

    return {k: int(counters["inductor"][f"fxgraph_cache_{k}"]) for k in ("hit", "miss")}


def memory_needed(cfg: ModelConfig, int8: bool) -> int:
    """Device bytes to build and run the model: weights, KV cache, and one bf16 tensor being quantised."""
    meta = meta_model(cfg, torch.bfloat16, int8)
    kv = 2 * cfg.n_layers * cfg.n_kv_heads * cfg.max_seq * cfg.head_dim * 2
    largest = max(p.numel() for p in meta_model(cfg, torch.bfloat16).parameters()) * 2 if int8 else 0
    return parameter_bytes(meta) + kv + largest


def _skip_reason(ctx: RunContext, cfg: ModelConfig, int8: bool) -> str | None:
    if not ctx.is_cuda:
        return None
    need = memory_needed(cfg, int8) + GPU_HEADROOM_BYTES
    free, _ = torch.cuda.mem_get_info(torch.device(ctx.device))
    if need > free:
        return f"{cfg.name} needs ~{need / 1e9:.0f} GB of device memory; {free / 1e9:.0f} GB free"
    return None


@torch.no_grad()
def decode_benchmark(ctx: RunContext, cfg: ModelConfig, int8: bool) -> dict[str, Any]:
    """Build, prefill, compile the decode step and time ``NEW_TOKENS`` tokens ``REPEATS`` times."""
    clock = native().now_ns
    model = build_model(cfg, ctx.device, torch.bfloat16, int8=int8)
    prompt_len, new_tokens = PROMPT_TOKENS[ctx.size], NEW_TOKENS[ctx.size]
    if prompt_len + new_tokens > cfg.max_seq:
        raise ValueError(f"{cfg.name}: max_seq {cfg.max_seq} < prompt {prompt_len} + new tokens {new_tokens}")
    gen = torch.Generator(device=ctx.device).manual_seed(1234)
    prompt = torch.randint(0, cfg.vocab, (1, prompt_len), generator=gen, device=ctx.device, dtype=torch.int32)
    # Prefill eagerly: it is not what this benchmark measures.
    first = decode_one_token(model, prompt, torch.arange(prompt_len, device=ctx.device))

    torch._dynamo.reset()
    step = torch.compile(
        decode_one_token, mode="reduce-overhead" if ctx.is_cuda else None, fullgraph=True, dynamic=False
    )
    input_pos = torch.tensor([prompt_len], device=ctx.device, dtype=torch.int64)

    def one(token: torch.Tensor) -> torch.Tensor:
        if ctx.is_cuda:
            # Each step's outputs are read by the next: tell cudagraph trees a new step begins.
            torch.compiler.cudagraph_mark_step_begin()
        return step(model, token, input_pos).clone()

    cache = _fx_cache_counts()
    _sync(ctx)
    t0 = clock()
    one(first)
    _sync(ctx)
    first_call_s = (clock() - t0) / 1e9
    cache = {k: v - cache[k] for k, v in _fx_cache_counts().items()}
    for _ in range(2):  # cudagraph trees record on the second/third call
        one(first)
    _sync(ctx)

    tokens_per_s: list[float] = []
    generated: list[int] = []
    for _ in range(REPEATS[ctx.size]):
        input_pos.fill_(prompt_len)
        token, out = first, []
        _sync(ctx)
        t0 = clock()
        for _ in range(new_tokens):
            token = one(token)
            out.append(token)
            input_pos += 1
        _sync(ctx)
        tokens_per_s.append(efficiency.tokens_per_second(new_tokens, (clock() - t0) / 1e9))
        generated = [int(t) for t in torch.cat(out).flatten().tolist()]
    tps = statistics.median(tokens_per_s)
    return {
        "config": config_summary(cfg),
        "prompt_tokens": prompt_len,
        "new_tokens": new_tokens,
        "tokens_per_s_repeats": tokens_per_s,
        "tokens_per_s": tps,
        "first_call_s": first_call_s,
        "compile_s": max(first_call_s - 1.0 / tps, 0.0),
        # A hit in inductor's on-disk graph cache makes a rerun's compile much cheaper.
        "fx_graph_cache": cache,
        "parameter_bytes": parameter_bytes(model),
        "bytes_per_token": parameter_bytes_read_per_token(model),
        "kv_cache_bytes_per_token": kv_cache_bytes_read_per_token(model),
        "generated": generated,
    }


def run_decode(ctx: RunContext, family: str) -> list[Row]:
    cfg = CONFIGS[(family, ctx.size)]
    rows: list[Row] = []
    for mode in MODES:
        int8 = mode == "int8"
        reason = _skip_reason(ctx, cfg, int8)
        if reason is not None:
            rows.extend(Skipped(family, m, mode, ctx.device, reason) for m in METRICS)
            continue
        r = decode_benchmark(ctx, cfg, int8)
        info = {
            k: r[k] for k in ("config", "prompt_tokens", "new_tokens", "bytes_per_token", "kv_cache_bytes_per_token")
        }
        gbps = efficiency.decode_bandwidth_gb_per_s(r["bytes_per_token"], r["tokens_per_s"])
        values = {
            targets.TOKENS: (r["tokens_per_s"], targets.tokens_target(family, mode, ctx.peaks, r["bytes_per_token"])),
            targets.BANDWIDTH: (gbps, targets.bandwidth_target(family, mode, ctx.peaks)),
            targets.COMPILE: (r["compile_s"], targets.compile_time_target(family, mode, ctx.device)),
        }
        for metric, (value, target) in values.items():
            shape = {**info, "value": value, "target": target}
            if metric == targets.TOKENS:
                shape["repeats"] = r["tokens_per_s_repeats"]
            if metric == targets.COMPILE:
                shape["first_call_s"] = r["first_call_s"]
                shape["fx_graph_cache"] = r["fx_graph_cache"]
            rows.append(mean_row(family, metric, mode, ctx, [shape], is_model=True))
    return rows


@register_experiment(name="llama")
def run_llama(ctx: RunContext) -> list[Row]:
    return run_decode(ctx, "llama")


@register_experiment(name="mixtral_moe")
def run_mixtral_moe(ctx: RunContext) -> list[Row]:
    return run_decode(ctx, "mixtral_moe")
