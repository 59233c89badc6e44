"""A minimal Qwen3/Llama-shaped decoder and three drafters, random weights, static KV cache.

Only shapes matter for timing, so weights are random (seeded, small std so activations stay in
range; denormals are flushed by the caller). Requests of a batch are left-padded: request i's
past KV occupies ``[P - L_i, P)`` of its cache row and new tokens are written at ``P + offset``,
so one slice assignment writes the whole batch and a boolean mask (built outside the timed
region) hides padding and applies the bottom-right causal rule to multi-token verification.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from qualification.record._geometry import DecoderGeometry, DrafterGeometry

_INIT_STD = 0.02


@dataclass(frozen=True)
class StepMeta:
    """Everything a forward step needs besides tokens, prepared before timing starts."""

    batch: int
    padded_past: int  # P: the longest past KV length of the batch
    offset: int  # tokens already written after P in this round
    queries: int  # query tokens per request in this step
    cos: Tensor  # [batch, 1, queries, head_dim]
    sin: Tensor
    mask: Tensor  # bool [batch, 1, queries, P + offset + queries]


def make_step_meta(
    past_lengths: list[int],
    offset: int,
    queries: int,
    head_dim: int,
    theta: float,
    device: str,
    dtype: torch.dtype = torch.float32,
) -> StepMeta:
    """Positions, rotary tables and mask for a step over requests with ``past_lengths``."""
    batch, padded = len(past_lengths), max(past_lengths)
    past = torch.tensor(past_lengths, dtype=torch.int64, device=device)
    step = torch.arange(queries, device=device)
    positions = (past[:, None] + offset + step[None, :]).to(torch.float32)  # [b, q]
    inv_freq = 1.0 / theta ** (torch.arange(0, head_dim, 2, device=device) / head_dim)
    angles = positions[:, :, None] * inv_freq[None, None, :]
    angles = torch.cat([angles, angles], dim=-1)[:, None]  # [b, 1, q, hd]
    kv_index = torch.arange(padded + offset + queries, device=device)
    first_valid = (padded - past)[:, None, None]  # [b, 1, 1]
    last_valid = (padded + offset + step)[None, :, None]  # [1, q, 1]
    mask = (kv_index[None, None, :] >= first_valid) & (kv_index[None, None, :] <= last_valid)
    cos, sin = angles.cos().to(dtype), angles.sin().to(dtype)
    return StepMeta(batch, padded, offset, queries, cos, sin, mask[:, None])


class KVCache:
    """One preallocated buffer per layer for K and for V; shapes are views into it."""

    def __init__(
        self,
        geometry: DecoderGeometry,
        capacity_tokens: int,
        device: str,
        dtype: torch.dtype = torch.float32,
    ) -> None:
        per_token = geometry.num_kv_heads * geometry.head_dim
        self.geometry = geometry
        self.capacity_tokens = capacity_tokens
        # zeros (not empty) touches every page once here, never inside a timed region.
        self.keys = [
            torch.zeros(capacity_tokens * per_token, device=device, dtype=dtype)
            for _ in range(geometry.num_layers)
        ]
        self.values = [
            torch.zeros(capacity_tokens * per_token, device=device, dtype=dtype)
            for _ in range(geometry.num_layers)
        ]
        self.batch = 0
        self.length = 0

    def shape_for(self, batch: int, length: int) -> None:
        """Use the buffers as [batch, kv_heads, length, head_dim] until the next call."""
        if batch * length > self.capacity_tokens:
            raise ValueError(
                f"KV cache holds {self.capacity_tokens} tokens, asked {batch * length}"
            )
        self.batch, self.length = batch, length

    def layer(self, index: int) -> tuple[Tensor, Tensor]:
        g = self.geometry
        shape = (self.batch, g.num_kv_heads, self.length, g.head_dim)
        size = self.batch * self.length * g.num_kv_heads * g.head_dim
        return self.keys[index][:size].view(shape), self.values[index][:size].view(shape)


def _rotate(x: Tensor, cos: Tensor, sin: Tensor) -> Tensor:
    half = x.shape[-1] // 2
    rotated = torch.cat([-x[..., half:], x[..., :half]], dim=-1)
    return x * cos + rotated * sin


class RMSNorm(nn.Module):
    def __init__(self, size: int, eps: float) -> None:
        super().__init__()
        self.weight = nn.Parameter(torch.ones(size))
        self.eps = eps

    def forward(self, x: Tensor) -> Tensor:
        return F.rms_norm(x, (x.shape[-1],), self.weight, self.eps)


class Block(nn.Module):
    """One decoder layer: attention (q/k-norm, RoPE, GQA via SDPA) and a SwiGLU MLP."""

    def __init__(self, g: DecoderGeometry) -> None:
        super().__init__()
        self.g = g
        q_width, kv_width = g.num_attention_heads * g.head_dim, g.num_kv_heads * g.head_dim
        self.input_norm = RMSNorm(g.hidden_size, g.rms_norm_eps)
        self.q_proj = nn.Linear(g.hidden_size, q_width, bias=False)
        self.k_proj = nn.Linear(g.hidden_size, kv_width, bias=False)
        self.v_proj = nn.Linear(g.hidden_size, kv_width, bias=False)
        self.o_proj = nn.Linear(q_width, g.hidden_size, bias=False)
        self.q_norm = RMSNorm(g.head_dim, g.rms_norm_eps)
        self.k_norm = RMSNorm(g.head_dim, g.rms_norm_eps)
        self.post_norm = RMSNorm(g.hidden_size, g.rms_norm_eps)
        self.gate_proj = nn.Linear(g.hidden_size, g.intermediate_size, bias=False)
        self.up_proj = nn.Linear(g.hidden_size, g.intermediate_size, bias=False)
        self.down_proj = nn.Linear(g.intermediate_size, g.hidden_size, bias=False)

    def forward(self, x: Tensor, meta: StepMeta, cache_k: Tensor, cache_v: Tensor) -> Tensor:
        g, (b, q, _) = self.g, x.shape
        h = self.input_norm(x)
        query = self.q_norm(self.q_proj(h).view(b, q, g.num_attention_heads, g.head_dim))
        key = self.k_norm(self.k_proj(h).view(b, q, g.num_kv_heads, g.head_dim))
        value = self.v_proj(h).view(b, q, g.num_kv_heads, g.head_dim).transpose(1, 2)
        query = _rotate(query.transpose(1, 2), meta.cos, meta.sin)
        key = _rotate(key.transpose(1, 2), meta.cos, meta.sin)
        start = meta.padded_past + meta.offset
        cache_k[:, :, start : start + q] = key
        cache_v[:, :, start : start + q] = value
        attended = F.scaled_dot_product_attention(
            query,
            cache_k[:, :, : start + q],
            cache_v[:, :, : start + q],
            attn_mask=meta.mask,
            enable_gqa=True,
        )
        x = x + self.o_proj(attended.transpose(1, 2).reshape(b, q, -1))
        h = self.post_norm(x)
        out: Tensor = x + self.down_proj(F.silu(self.gate_proj(h)) * self.up_proj(h))
        return out


def init_random(module: nn.Module, seed: int) -> None:
    """Seeded N(0, 0.02) weights (norm weights stay 1): reproducible, activations in range."""
    generator = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, parameter in sorted(module.named_parameters()):
            if not name.endswith("norm.weight"):
                values = torch.randn(parameter.shape, generator=generator) * _INIT_STD
                parameter.copy_(values.to(parameter.device, parameter.dtype))


class Decoder(nn.Module):
    """The target (and the independent draft LM): embeddings, blocks, final norm, LM head."""

    def __init__(self, g: DecoderGeometry) -> None:
        super().__init__()
        self.g = g
        self.embed = nn.Embedding(g.vocab_size, g.hidden_size)
        self.blocks = nn.ModuleList([Block(g) for _ in range(g.num_layers)])
        self.norm = RMSNorm(g.hidden_size, g.rms_norm_eps)
        self.lm_head = nn.Linear(g.hidden_size, g.vocab_size, bias=False)
        if g.tie_word_embeddings:
            self.lm_head.weight = self.embed.weight
        layers = g.num_layers
        self.aux_layers = (min(1, layers - 1), layers // 2, max(layers - 2, 0))

    def forward(
        self, tokens: Tensor, meta: StepMeta, cache: KVCache
    ) -> tuple[Tensor, Tensor, Tensor]:
        """Greedy next tokens [b, q], the last hidden state [b, q, h] and the three auxiliary
        hidden states EAGLE-3 fuses [b, q, 3h]."""
        x = self.embed(tokens)
        aux = []
        for index, block in enumerate(self.blocks):
            k, v = cache.layer(index)
            x = block(x, meta, k, v)
            if index in self.aux_layers:
                aux.append(x)
        while len(aux) < 3:
            aux.append(x)
        logits = self.lm_head(self.norm(x))
        return logits.argmax(dim=-1), x, torch.cat(aux[:3], dim=-1)


class Drafter(nn.Module):
    """One draft step per call: the next draft token [b, 1] and the hidden state to carry."""

    def __init__(self, geometry: DrafterGeometry, target: Decoder) -> None:
        super().__init__()
        self.kind = geometry.kind
        g = geometry.decoder
        if geometry.kind == "draft_model":
            self.model = Decoder(g)
            return
        h = g.hidden_size
        self.target = [target]  # shared embedding / head, not registered as a submodule
        self.block = Block(g)
        self.norm = RMSNorm(h, g.rms_norm_eps)
        self.embed_norm = RMSNorm(h, g.rms_norm_eps)
        self.hidden_norm = RMSNorm(h, g.rms_norm_eps)
        self.fc = nn.Linear(2 * h, h, bias=False)
        if geometry.kind == "eagle3":
            self.fuse = nn.Linear(3 * h, h, bias=False)
            self.lm_head = nn.Linear(h, geometry.draft_vocab_size, bias=False)
            self.register_buffer(
                "draft_to_target", torch.arange(geometry.draft_vocab_size, dtype=torch.int64)
            )

    def step(
        self, tokens: Tensor, carried: Tensor, first: bool, meta: StepMeta, cache: KVCache
    ) -> tuple[Tensor, Tensor]:
        if self.kind == "draft_model":
            next_tokens, hidden, _ = self.model(tokens, meta, cache)
            return next_tokens, hidden
        target = self.target[0]
        if self.kind == "eagle3" and first:
            carried = self.fuse(carried)
        x = self.fc(
            torch.cat([self.embed_norm(target.embed(tokens)), self.hidden_norm(carried)], dim=-1)
        )
        k, v = cache.layer(0)
        hidden = self.block(x, meta, k, v)
        if self.kind == "eagle3":
            draft_ids = self.lm_head(self.norm(hidden)).argmax(dim=-1)
            mapping: Tensor = self.draft_to_target  # type: ignore[assignment]
            return mapping[draft_ids], hidden
        return target.lm_head(self.norm(hidden)).argmax(dim=-1), hidden

    def cache_geometry(self) -> DecoderGeometry:
        if self.kind == "draft_model":
            return self.model.g
        return self.block.g
