"""A small Llama-style decoder and a Mixtral-style mixture-of-experts variant, with random weights.

Llama-style: RMSNorm, rotary position embeddings, grouped-query attention
(n_kv_heads <= n_heads; MHA when equal), a SwiGLU MLP and a static KV cache
updated in place, so one compiled decode step serves every position.
Mixtral-style: the MLP is replaced by E SwiGLU experts of which a router
picks k per token; the chosen experts' weights are gathered by index (the
gather_gemv kernel), so a batch-1 decode step reads k/E of the expert bytes.

Weights are random (seeded), made on the target device: nothing is
downloaded. Int8 weight-only quantisation stores each linear weight as int8
with one bf16 scale per output channel and dequantises inside the matmul.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn


@dataclasses.dataclass(frozen=True)
class ModelConfig:
    name: str
    dim: int
    n_layers: int
    n_heads: int
    n_kv_heads: int
    intermediate: int
    vocab: int
    max_seq: int
    num_experts: int = 0  # 0: dense SwiGLU MLP
    experts_per_token: int = 2
    rope_base: float = 10000.0
    norm_eps: float = 1e-5

    @property
    def head_dim(self) -> int:
        return self.dim // self.n_heads

    def __post_init__(self) -> None:
        if self.dim % self.n_heads or self.n_heads % self.n_kv_heads:
            raise ValueError(f"{self.name}: dim must divide by n_heads and n_heads by n_kv_heads")
        if self.num_experts and not 0 < self.experts_per_token <= self.num_experts:
            raise ValueError(f"{self.name}: experts_per_token must be in 1..num_experts")


class RMSNorm(nn.Module):
    def __init__(self, dim: int, eps: float) -> None:
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        # Normalise in fp32: bf16's 8-bit mantissa loses the mean of squares.
        xf = x.float()
        return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + self.eps)).type_as(x) * self.weight


def rotary_table(max_seq: int, head_dim: int, base: float) -> torch.Tensor:
    """(max_seq, head_dim // 2, 2): cos and sin of each position's rotation angles."""
    freqs = 1.0 / (base ** (torch.arange(0, head_dim, 2).float() / head_dim))
    angles = torch.outer(torch.arange(max_seq).float(), freqs)
    return torch.stack([angles.cos(), angles.sin()], dim=-1)


def apply_rotary(x: torch.Tensor, table: torch.Tensor) -> torch.Tensor:
    """Rotate consecutive pairs of x (B, T, H, D) by the angles in table (T, D/2, 2)."""
    xs = x.float().reshape(*x.shape[:-1], -1, 2)
    t = table.view(1, xs.size(1), 1, xs.size(3), 2)
    out = torch.stack(
        [xs[..., 0] * t[..., 0] - xs[..., 1] * t[..., 1], xs[..., 1] * t[..., 0] + xs[..., 0] * t[..., 1]], dim=-1
    )
    return out.flatten(3).type_as(x)


class KVCache(nn.Module):
    def __init__(self, n_kv_heads: int, max_seq: int, head_dim: int, dtype: torch.dtype) -> None:
        super().__init__()
        shape = (1, n_kv_heads, max_seq, head_dim)
        self.register_buffer("k", torch.zeros(shape, dtype=dtype), persistent=False)
        self.register_buffer("v", torch.zeros(shape, dtype=dtype), persistent=False)

    def update(self, input_pos: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        self.k.index_copy_(2, input_pos, k)
        self.v.index_copy_(2, input_pos, v)
        return self.k, self.v


class Attention(nn.Module):
    def __init__(self, cfg: ModelConfig) -> None:
        super().__init__()
        self.cfg = cfg
        kv_dim = cfg.n_kv_heads * cfg.head_dim
        self.wqkv = nn.Linear(cfg.dim, cfg.dim + 2 * kv_dim, bias=False)
        self.wo = nn.Linear(cfg.dim, cfg.dim, bias=False)
        self.kv_cache: KVCache | None = None

    def forward(self, x: torch.Tensor, rope: torch.Tensor, mask: torch.Tensor, input_pos: torch.Tensor) -> torch.Tensor:
        cfg = self.cfg
        b, t, _ = x.shape
        kv_dim = cfg.n_kv_heads * cfg.head_dim
        q, k, v = self.wqkv(x).split([cfg.dim, kv_dim, kv_dim], dim=-1)
        q = apply_rotary(q.view(b, t, cfg.n_heads, cfg.head_dim), rope)
        k = apply_rotary(k.view(b, t, cfg.n_kv_heads, cfg.head_dim), rope)
        v = v.view(b, t, cfg.n_kv_heads, cfg.head_dim)
        q, k, v = (y.transpose(1, 2) for y in (q, k, v))
        assert self.kv_cache is not None, "call setup_caches() first"
        k, v = self.kv_cache.update(input_pos, k, v)
        # Grouped-query attention: each kv head serves n_heads / n_kv_heads query heads.
        group = cfg.n_heads // cfg.n_kv_heads
        k = k.repeat_interleave(group, dim=1)
        v = v.repeat_interleave(group, dim=1)
        y = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
        return self.wo(y.transpose(1, 2).reshape(b, t, cfg.dim))


class FeedForward(nn.Module):
    """SwiGLU: w2(silu(w1 x) * w3 x)."""

    def __init__(self, cfg: ModelConfig) -> None:
        super().__init__()
        self.w1 = nn.Linear(cfg.dim, cfg.intermediate, bias=False)
        self.w3 = nn.Linear(cfg.dim, cfg.intermediate, bias=False)
        self.w2 = nn.Linear(cfg.intermediate, cfg.dim, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.w2(F.silu(self.w1(x)) * self.w3(x))


class ConditionalFeedForward(nn.Module):
    """E SwiGLU experts stored as (E, out, in) tensors; forward gathers the selected ones."""

    def __init__(self, cfg: ModelConfig) -> None:
        super().__init__()
        e, d, h = cfg.num_experts, cfg.dim, cfg.intermediate
        self.w1 = nn.Parameter(torch.empty(e, h, d))
        self.w3 = nn.Parameter(torch.empty(e, h, d))
        self.w2 = nn.Parameter(torch.empty(e, d, h))

    def project(self, name: str, x: torch.Tensor, idx: torch.Tensor) -> torch.Tensor:
        """x (T, k, in) through each token's selected experts' ``name`` matrix -> (T, k, out)."""
        return torch.einsum("tki,tkoi->tko", x, getattr(self, name)[idx])

    def forward(self, x: torch.Tensor, expert_idx: torch.Tensor) -> torch.Tensor:
        # x: (T, D); expert_idx: (T, k) -> (T, k, D)
        xk = x.unsqueeze(1).expand(-1, expert_idx.shape[1], -1)
        h = F.silu(self.project("w1", xk, expert_idx)) * self.project("w3", xk, expert_idx)
        return self.project("w2", h, expert_idx)


class MoEFeedForward(nn.Module):
    def __init__(self, cfg: ModelConfig) -> None:
        super().__init__()
        self.cfg = cfg
        self.gate = nn.Linear(cfg.dim, cfg.num_experts, bias=False)
        self.cond_ffn = ConditionalFeedForward(cfg)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        shape = x.shape
        x = x.reshape(-1, self.cfg.dim)
        scores = F.softmax(self.gate(x).float(), dim=-1)
        weights, idx = torch.topk(scores, self.cfg.experts_per_token, dim=-1)
        weights = (weights / weights.sum(dim=-1, keepdim=True)).to(x.dtype)
        out = self.cond_ffn(x, idx)
        return torch.einsum("tki,tk->ti", out, weights).reshape(shape)


class Block(nn.Module):
    def __init__(self, cfg: ModelConfig) -> None:
        super().__init__()
        self.attention_norm = RMSNorm(cfg.dim, cfg.norm_eps)
        self.attention = Attention(cfg)
        self.ffn_norm = RMSNorm(cfg.dim, cfg.norm_eps)
        self.feed_forward: nn.Module = MoEFeedForward(cfg) if cfg.num_experts else FeedForward(cfg)

    def forward(self, x: torch.Tensor, rope: torch.Tensor, mask: torch.Tensor, input_pos: torch.Tensor) -> torch.Tensor:
        h = x + self.attention(self.attention_norm(x), rope, mask, input_pos)
        return h + self.feed_forward(self.ffn_norm(h))


class Transformer(nn.Module):
    def __init__(self, cfg: ModelConfig) -> None:
        super().__init__()
        self.cfg = cfg
        self.tok_embeddings = nn.Embedding(cfg.vocab, cfg.dim)
        self.layers = nn.ModuleList(Block(cfg) for _ in range(cfg.n_layers))
        self.norm = RMSNorm(cfg.dim, cfg.norm_eps)
        self.output = nn.Linear(cfg.dim, cfg.vocab, bias=False)

    def setup_caches(self, dtype: torch.dtype, device: torch.device | str) -> None:
        cfg = self.cfg
        for layer in self.layers:
            layer.attention.kv_cache = KVCache(cfg.n_kv_heads, cfg.max_seq, cfg.head_dim, dtype).to(device)
        self.register_buffer(
            "rope", rotary_table(cfg.max_seq, cfg.head_dim, cfg.rope_base).to(device), persistent=False
        )
        causal = torch.tril(torch.ones(cfg.max_seq, cfg.max_seq, dtype=torch.bool, device=device))
        self.register_buffer("causal_mask", causal, persistent=False)

    def forward(self, idx: torch.Tensor, input_pos: torch.Tensor) -> torch.Tensor:
        """idx: (1, T) token ids at positions input_pos (T,) -> logits (1, T, vocab)."""
        mask = self.causal_mask[None, None, input_pos]
        rope = self.rope[input_pos]
        x = self.tok_embeddings(idx)
        for layer in self.layers:
            x = layer(x, rope, mask, input_pos)
        return self.output(self.norm(x))


# -- random weights ------------------------------------------------------------

def meta_model(cfg: ModelConfig, dtype: torch.dtype = torch.bfloat16, int8: bool = False) -> Transformer:
    """The model's structure without storage: its byte counts are exact and cost nothing."""
    with torch.device("meta"):
        model = Transformer(cfg).to(dtype)
        return quantize_int8(model) if int8 else model


@torch.no_grad()
def build_model(
    cfg: ModelConfig, device: str, dtype: torch.dtype = torch.bfloat16, int8: bool = False, seed: int = 0
) -> Transformer:
    """The model with seeded random weights, made on ``device`` one module at a time.

    With ``int8`` each linear weight and expert tensor is quantised as soon as
    it is made, so the peak memory is the int8 model plus one bf16 tensor,
    never the whole bf16 model (a 16-layer Mixtral in bf16 is ~45 GB).
    """
    with torch.device("meta"):
        model = Transformer(cfg).to(dtype)
    gen = torch.Generator(device=device).manual_seed(seed)

    def init(module: nn.Module) -> None:
        module.to_empty(device=device, recurse=False)
        for p in module.parameters(recurse=False):
            if isinstance(module, RMSNorm):
                p.fill_(1.0)
            else:
                # Scaled so activations stay O(1) through the layers.
                p.normal_(0.0, 1.0 / math.sqrt(p.shape[-1]), generator=gen)

    def materialize(parent: nn.Module) -> None:
        for name, child in list(parent.named_children()):
            if isinstance(child, (nn.Linear, nn.Embedding, RMSNorm, ConditionalFeedForward)):
                init(child)
                if int8 and isinstance(child, nn.Linear):
                    setattr(parent, name, WeightOnlyInt8Linear(*quantize_per_channel(child.weight)))
                elif int8 and isinstance(child, ConditionalFeedForward):
                    setattr(parent, name, ConditionalFeedForwardInt8(child))
            else:
                materialize(child)

    materialize(model)
    left = [n for n, t in [*model.named_parameters(), *model.named_buffers()] if t.is_meta]
    if left:
        raise RuntimeError(f"{cfg.name}: tensors left unmaterialised: {left[:5]}")
    model.setup_caches(dtype, device)
    return model.eval()


# -- int8 weight-only quantisation ---------------------------------------------

def quantize_per_channel(w: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Symmetric int8 per output channel (the second-to-last dim's rows): w ~= q * scale[..., None]."""
    wf = w.float()
    scale = wf.abs().amax(dim=-1).clamp(min=1e-8) / 127.0
    q = torch.round(wf / scale.unsqueeze(-1)).clamp(-128, 127).to(torch.int8)
    return q, scale.to(w.dtype)


class WeightOnlyInt8Linear(nn.Module):
    def __init__(self, weight: torch.Tensor, scales: torch.Tensor) -> None:
        super().__init__()
        self.register_buffer("weight", weight)
        self.register_buffer("scales", scales)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.linear(x, self.weight.to(x.dtype)) * self.scales


class ConditionalFeedForwardInt8(ConditionalFeedForward):
    def __init__(self, source: ConditionalFeedForward) -> None:
        nn.Module.__init__(self)
        for name in ("w1", "w2", "w3"):
            q, s = quantize_per_channel(getattr(source, name).data)
            self.register_buffer(name, q)
            self.register_buffer(f"{name}_scales", s)

    def project(self, name: str, x: torch.Tensor, idx: torch.Tensor) -> torch.Tensor:
        # Scale the (T, k, out) product, not the gathered (T, k, out, in) weights.
        w = getattr(self, name)[idx].to(x.dtype)
        return torch.einsum("tki,tkoi->tko", x, w) * getattr(self, f"{name}_scales")[idx]


@torch.no_grad()
def quantize_int8(model: Transformer) -> Transformer:
    """Replace every linear weight (the router's too) and expert tensor with int8 + per-channel scales."""
    for parent in list(model.modules()):
        for child_name, child in list(parent.named_children()):
            if isinstance(child, nn.Linear):
                q, s = quantize_per_channel(child.weight.data)
                setattr(parent, child_name, WeightOnlyInt8Linear(q, s))
            elif type(child) is ConditionalFeedForward:
                setattr(parent, child_name, ConditionalFeedForwardInt8(child))
    return model


# -- bytes a decode step reads ---------------------------------------------------

_WEIGHT_BUFFERS = ("weight", "scales", "w1", "w2", "w3", "w1_scales", "w2_scales", "w3_scales")


def _weight_tensors(module: nn.Module) -> list[torch.Tensor]:
    """A module's own weights: parameters, and the int8 modules' weight buffers (not KV caches or tables)."""
    own = list(module.parameters(recurse=False))
    own += [b for n, b in module.named_buffers(recurse=False) if n in _WEIGHT_BUFFERS]
    return own


def _nbytes(tensors: list[torch.Tensor]) -> int:
    return sum(t.numel() * t.element_size() for t in tensors)


def parameter_bytes(model: nn.Module) -> int:
    """Bytes of every weight the model holds."""
    return sum(_nbytes(_weight_tensors(m)) for m in model.modules())


def parameter_bytes_read_per_token(model: Transformer) -> int:
    """Weight bytes one batch-1 decode step reads.

    Every weight once, except: the embedding table, of which the step reads
    one row; and the experts, of which it reads the k it selected out of E
    (top-k picks k distinct experts, so exactly k/E of each expert tensor).
    KV-cache and rotary-table reads are not parameter bytes and are not
    counted (kv_cache_bytes_read_per_token gives the former).
    """
    cfg = model.cfg
    total = 0
    for module in model.modules():
        tensors = _weight_tensors(module)
        if isinstance(module, nn.Embedding):
            total += module.weight.shape[1] * module.weight.element_size()
        elif isinstance(module, ConditionalFeedForward):
            total += _nbytes(tensors) * cfg.experts_per_token // cfg.num_experts
        else:
            total += _nbytes(tensors)
    return total


def kv_cache_bytes_read_per_token(model: Transformer) -> int:
    """The static cache is read whole (masked) each step: K and V of every layer."""
    return sum(_nbytes([layer.attention.kv_cache.k, layer.attention.kv_cache.v]) for layer in model.layers)


def decode_one_token(model: Transformer, token: torch.Tensor, input_pos: torch.Tensor) -> torch.Tensor:
    """One greedy decode step: (1, 1) token at input_pos (1,) -> next token (1, 1)."""
    logits = model(token, input_pos)
    return torch.argmax(logits[:, -1], dim=-1, keepdim=True).to(token.dtype)


def config_summary(cfg: ModelConfig) -> dict[str, Any]:
    return dataclasses.asdict(cfg)
