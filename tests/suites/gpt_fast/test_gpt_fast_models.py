"""The decoder models: byte counts by hand, KV-cache decoding equals a full forward, MoE and int8 maths."""

from __future__ import annotations

import dataclasses

import pytest
import torch

from harness.suites.gpt_fast.decode import CONFIGS, memory_needed
from harness.suites.gpt_fast.models import (
    ConditionalFeedForward,
    ModelConfig,
    build_model,
    decode_one_token,
    kv_cache_bytes_read_per_token,
    meta_model,
    parameter_bytes,
    parameter_bytes_read_per_token,
    quantize_per_channel,
)

TINY = CONFIGS[("llama", "tiny")]  # dim 64, 1 layer, 4 heads, 2 kv heads, hidden 128, vocab 256
TINY_MOE = CONFIGS[("mixtral_moe", "tiny")]  # same, hidden 64, 4 experts, 2 per token


def test_tiny_llama_bytes_per_token_by_hand():
    d, h, v, kv = 64, 128, 256, 2 * 16  # kv: 2 kv heads x head_dim 16
    bf16 = (
        d * 2  # one embedding row
        + d * 2 + (d + 2 * kv) * d * 2 + d * d * 2  # attention norm, wqkv, wo
        + d * 2 + 3 * h * d * 2  # ffn norm, w1 w3 w2
        + d * 2 + v * d * 2  # final norm, output
    )
    assert bf16 == 107_008
    assert parameter_bytes_read_per_token(build_model(TINY, "cpu")) == bf16
    # int8: one byte per weight plus a bf16 scale per output channel; norms and embedding stay bf16.
    int8 = (
        d * 2
        + d * 2 + ((d + 2 * kv) * d + (d + 2 * kv) * 2) + (d * d + d * 2)
        + d * 2 + 2 * (h * d + h * 2) + (d * h + d * 2)
        + d * 2 + (v * d + v * 2)
    )
    assert parameter_bytes_read_per_token(build_model(TINY, "cpu", int8=True)) == int8
    # The whole table is held, one row read.
    assert parameter_bytes(build_model(TINY, "cpu")) == bf16 - d * 2 + v * d * 2


def test_moe_reads_k_of_e_experts():
    d, h, e, k = 64, 64, 4, 2
    model = build_model(TINY_MOE, "cpu")
    experts = 3 * e * h * d * 2
    dense = parameter_bytes_read_per_token(model) - experts * k // e
    assert parameter_bytes(model) - v_table_minus_row(TINY_MOE) - dense == experts
    assert dense == d * 2 + d * 2 + (d + 64) * d * 2 + d * d * 2 + d * 2 + e * d * 2 + d * 2 + 256 * d * 2


def v_table_minus_row(cfg: ModelConfig) -> int:
    return (cfg.vocab - 1) * cfg.dim * 2


def test_llama_7b_shapes_by_hand():
    """The GPU config is Llama-2-7B's: 6,738,415,616 parameters."""
    cfg = CONFIGS[("llama", "gpu")]
    meta = meta_model(cfg)
    assert parameter_bytes(meta) == 6_738_415_616 * 2
    per_token = parameter_bytes_read_per_token(meta)
    assert per_token == 6_738_415_616 * 2 - 32000 * 4096 * 2 + 4096 * 2
    # The reference's 1253 GB/s at its 94 tokens/s is this many bytes per token, within 1%.
    assert 1253e9 / 94 == pytest.approx(per_token, rel=0.01)
    assert memory_needed(cfg, int8=False) > parameter_bytes(meta)
    assert memory_needed(cfg, int8=True) < memory_needed(cfg, int8=False)


def test_mixtral_shapes_fit_an_80gb_gpu_only_in_int8_on_40gb():
    cfg = CONFIGS[("mixtral_moe", "gpu")]
    assert 40e9 < memory_needed(cfg, int8=False) < 75e9
    assert memory_needed(cfg, int8=True) < 36e9


def test_quantize_per_channel_error_bound():
    w = torch.randn(32, 64)
    q, scale = quantize_per_channel(w)
    assert q.dtype == torch.int8 and scale.shape == (32,)
    err = (q.float() * scale[:, None] - w).abs()
    assert (err <= scale[:, None] / 2 + 1e-6).all()


@torch.no_grad()
def test_kv_cache_decoding_matches_a_full_forward():
    cfg = dataclasses.replace(TINY, n_layers=2)
    model = build_model(cfg, "cpu", torch.float32)
    tokens = torch.randint(0, cfg.vocab, (1, 10), generator=torch.Generator().manual_seed(0))
    full = model(tokens, torch.arange(10))
    fresh = build_model(cfg, "cpu", torch.float32)  # same seed, empty cache
    steps = [fresh(tokens[:, i : i + 1], torch.tensor([i])) for i in range(10)]
    torch.testing.assert_close(torch.cat(steps, dim=1), full, rtol=1e-4, atol=1e-4)
    assert kv_cache_bytes_read_per_token(model) == 2 * 2 * 2 * cfg.max_seq * 16 * 4  # K,V x layers x kv heads


@torch.no_grad()
def test_conditional_feed_forward_matches_a_loop_over_experts():
    model = build_model(TINY_MOE, "cpu", torch.float32)
    ffn = next(m for m in model.modules() if isinstance(m, ConditionalFeedForward))
    x = torch.randn(3, 64)
    idx = torch.tensor([[0, 2], [1, 3], [3, 0]])
    out = ffn(x, idx)
    for t in range(3):
        for j in range(2):
            e = idx[t, j]
            h = torch.nn.functional.silu(ffn.w1[e] @ x[t]) * (ffn.w3[e] @ x[t])
            torch.testing.assert_close(out[t, j], ffn.w2[e] @ h, rtol=1e-4, atol=1e-5)


@torch.no_grad()
def test_int8_model_decodes_close_to_bf16():
    cfg = TINY_MOE
    ref = build_model(cfg, "cpu", torch.float32)
    q = build_model(cfg, "cpu", torch.float32, int8=True)
    tokens = torch.randint(0, cfg.vocab, (1, 4), generator=torch.Generator().manual_seed(1))
    a, b = ref(tokens, torch.arange(4)), q(tokens, torch.arange(4))
    assert (a - b).abs().max() < 0.05 * a.abs().max()
    nxt = decode_one_token(q, tokens[:, -1:], torch.tensor([4]))
    assert nxt.shape == (1, 1) and 0 <= int(nxt) < cfg.vocab
