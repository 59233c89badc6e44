"""Plain, frozen model-geometry and GPU records (compiled; no parsing, no I/O).

The config edge (``aisim.config.get_model`` / ``get_gpu``) builds them from users' files and
mappings; ``aisim.catalogue._data`` holds the built-in ones.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

# Dense decoders with the Llama block shape (RMSNorm, GQA attention, SwiGLU MLP). ``qwen3_5_text``
# (Qwen3.5 / 3.6 dense) interleaves Gated DeltaNet linear-attention layers with gated full
# attention (``ModelSpec.linear_attention_layers``, ``attention_output_gate``); its MLPs, norms and
# full-attention layers are of that shape.
LLAMA_LIKE_MODEL_TYPES: Final = ("llama", "qwen2", "qwen3", "mistral", "mimo", "qwen3_5_text")

#: Largest model size field (elements, layers, heads, experts, positions): 2**24.
MAX_GEOMETRY: Final = 1 << 24

#: Largest GPU figure (FLOP/s, bytes/s, bytes, watts): 1e20, above any accelerator's.
MAX_GPU_FIGURE: Final = 1e20

#: Bytes per element of each ``torch_dtype`` a model file may name.
DTYPE_BYTES: Final = {"bfloat16": 2, "float16": 2, "float32": 4, "fp8": 1, "float8": 1}


@dataclass(frozen=True)
class ModelSpec:
    """Decoder geometry of one target (or draft) model. Sizes are element counts.

    Frozen: a catalogue entry is shared by every caller, so assignment raises
    (``dataclasses.replace`` gives a changed copy).
    """

    name: str
    model_type: str
    num_layers: int
    hidden_size: int
    intermediate_size: int
    num_attention_heads: int
    num_kv_heads: int
    head_dim: int
    vocab_size: int
    tie_word_embeddings: bool = False
    num_experts: int = 0
    experts_per_token: int = 0
    moe_intermediate_size: int = 0
    num_shared_experts: int = 0
    first_dense_layers: int = 0
    kv_lora_rank: int = 0
    q_lora_rank: int = 0
    qk_nope_head_dim: int = 0
    qk_rope_head_dim: int = 0
    v_head_dim: int = 0
    num_nextn_predict_layers: int = 0
    dtype_bytes: int = 2
    max_position_embeddings: int = 0
    #: Hybrid decoders (Qwen3-Next / Qwen3.5): how many of ``num_layers`` are Gated DeltaNet
    #: linear-attention layers (no KV cache; a constant recurrent state per request), and their
    #: heads (``linear_num_key_heads`` / ``linear_num_value_heads`` of ``linear_key_head_dim`` /
    #: ``linear_value_head_dim``); ``linear_state_dtype_bytes`` is the recurrent state's element
    #: size (vLLM's ``mamba_ssm_cache_dtype``; 0: the model's dtype).
    linear_attention_layers: int = 0
    linear_num_key_heads: int = 0
    linear_num_value_heads: int = 0
    linear_key_head_dim: int = 0
    linear_value_head_dim: int = 0
    linear_state_dtype_bytes: int = 0
    #: Gated full attention (Qwen3.5 ``attn_output_gate``): the query projection also produces a
    #: per-head output gate, doubling its width.
    attention_output_gate: bool = False

    @property
    def full_attention_layers(self) -> int:
        """Layers with softmax attention and a KV cache (all but the linear-attention ones)."""
        return self.num_layers - self.linear_attention_layers

    @property
    def linear_attention_parameters_per_layer(self) -> int:
        """Weights of one Gated DeltaNet block: ``in_proj_qkvz`` (hidden -> 2 key_dim + 2
        value_dim), ``in_proj_ba`` (hidden -> 2 value heads) and ``out_proj`` (value_dim ->
        hidden); vLLM ``model_executor/layers/mamba/gdn/qwen_gdn_linear_attn.py``
        ``QwenGatedDeltaNetAttention`` (the short conv1d, gates and norm weights, under 0.1 %,
        are left out). 0 without linear-attention layers."""
        if self.linear_attention_layers <= 0:
            return 0
        key_dim = self.linear_num_key_heads * self.linear_key_head_dim
        value_dim = self.linear_num_value_heads * self.linear_value_head_dim
        projections = 2 * key_dim + 2 * value_dim + 2 * self.linear_num_value_heads
        return self.hidden_size * projections + value_dim * self.hidden_size

    @property
    def linear_state_bytes_per_layer(self) -> int:
        """One request's recurrent state in one linear-attention layer: value heads x
        value_dim x key_dim elements (vLLM ``MambaStateShapeCalculator.gated_delta_net_state_shape``,
        the temporal state) at ``linear_state_dtype_bytes``."""
        if self.linear_attention_layers <= 0:
            return 0
        element = self.linear_state_dtype_bytes or self.dtype_bytes
        return (
            self.linear_num_value_heads
            * self.linear_value_head_dim
            * self.linear_key_head_dim
            * element
        )

    @property
    def is_moe(self) -> bool:
        return self.num_experts > 0

    @property
    def uses_mla(self) -> bool:
        """Multi-head latent attention (DeepSeek-V2/V3 style compressed KV)."""
        return self.kv_lora_rank > 0

    @property
    def is_llama_like(self) -> bool:
        """A dense decoder of the Llama block shape (the family EAGLE-3 drafters target)."""
        return (
            (not self.is_moe) and (not self.uses_mla) and self.model_type in LLAMA_LIKE_MODEL_TYPES
        )

    @property
    def family(self) -> str:
        """The model family used in scheme gates and messages (``llama``, ``moe``, ``mla``)."""
        if self.uses_mla:
            return "mla"
        if self.is_moe:
            return "moe"
        if self.model_type in LLAMA_LIKE_MODEL_TYPES:
            return "llama"
        return self.model_type

    @property
    def kv_bytes_per_token(self) -> int:
        """KV-cache bytes one token occupies across all layers."""
        if self.uses_mla:
            per_layer = self.kv_lora_rank + self.qk_rope_head_dim
        else:
            per_layer = 2 * self.num_kv_heads * self.head_dim
        return per_layer * self.full_attention_layers * self.dtype_bytes

    @property
    def attention_parameters_per_layer(self) -> int:
        """Weights of one attention block (projections only)."""
        hidden = self.hidden_size
        heads = self.num_attention_heads
        if self.uses_mla:
            qk_dim = self.qk_nope_head_dim + self.qk_rope_head_dim
            if self.q_lora_rank > 0:
                q_proj = hidden * self.q_lora_rank + self.q_lora_rank * heads * qk_dim
            else:
                q_proj = hidden * heads * qk_dim
            kv_proj = hidden * (
                self.kv_lora_rank + self.qk_rope_head_dim
            ) + self.kv_lora_rank * heads * (self.qk_nope_head_dim + self.v_head_dim)
            return q_proj + kv_proj + heads * self.v_head_dim * hidden
        q_and_o = 2 * hidden * heads * self.head_dim
        k_and_v = 2 * hidden * self.num_kv_heads * self.head_dim
        gate = hidden * heads * self.head_dim if self.attention_output_gate else 0
        return q_and_o + k_and_v + gate

    @property
    def dense_mlp_parameters(self) -> int:
        """Weights of one dense SwiGLU MLP (gate, up, down)."""
        return 3 * self.hidden_size * self.intermediate_size

    @property
    def moe_mlp_parameters(self) -> int:
        """Weights of one MoE layer: all routed experts, shared experts and the router."""
        expert = 3 * self.hidden_size * self.moe_intermediate_size
        return (
            self.num_experts + self.num_shared_experts
        ) * expert + self.hidden_size * self.num_experts

    @property
    def num_parameters(self) -> int:
        """Total weight count (embeddings, decoder layers, LM head unless tied)."""
        embeddings = self.vocab_size * self.hidden_size
        lm_head = 0 if self.tie_word_embeddings else embeddings
        layers = 0
        for index in range(self.num_layers):
            mlp = self.dense_mlp_parameters
            if self.is_moe and index >= self.first_dense_layers:
                mlp = self.moe_mlp_parameters
            layers += self.attention_parameters_per_layer + mlp + 2 * self.hidden_size
        mixers = self.attention_parameters_per_layer - self.linear_attention_parameters_per_layer
        layers -= self.linear_attention_layers * mixers
        return embeddings + lm_head + layers + self.hidden_size

    @property
    def weight_bytes(self) -> int:
        """Bytes of all weights at the model's dtype."""
        return self.num_parameters * self.dtype_bytes

    def geometry_items(self) -> list[tuple[str, int | str | bool]]:
        """The fields that determine cost, in a fixed order (for identities and hashing)."""
        return [
            ("model_type", self.model_type),
            ("num_layers", self.num_layers),
            ("hidden_size", self.hidden_size),
            ("intermediate_size", self.intermediate_size),
            ("num_attention_heads", self.num_attention_heads),
            ("num_kv_heads", self.num_kv_heads),
            ("head_dim", self.head_dim),
            ("vocab_size", self.vocab_size),
            ("tie_word_embeddings", self.tie_word_embeddings),
            ("num_experts", self.num_experts),
            ("experts_per_token", self.experts_per_token),
            ("moe_intermediate_size", self.moe_intermediate_size),
            ("num_shared_experts", self.num_shared_experts),
            ("first_dense_layers", self.first_dense_layers),
            ("kv_lora_rank", self.kv_lora_rank),
            ("q_lora_rank", self.q_lora_rank),
            ("qk_nope_head_dim", self.qk_nope_head_dim),
            ("qk_rope_head_dim", self.qk_rope_head_dim),
            ("v_head_dim", self.v_head_dim),
            ("num_nextn_predict_layers", self.num_nextn_predict_layers),
            ("dtype_bytes", self.dtype_bytes),
            *self._hybrid_items(),
        ]

    def _hybrid_items(self) -> list[tuple[str, int | str | bool]]:
        """The hybrid-attention fields, listed only when set (older identities unchanged)."""
        items: list[tuple[str, int | str | bool]] = []
        if self.linear_attention_layers > 0:
            items.extend(
                [
                    ("linear_attention_layers", self.linear_attention_layers),
                    ("linear_num_key_heads", self.linear_num_key_heads),
                    ("linear_num_value_heads", self.linear_num_value_heads),
                    ("linear_key_head_dim", self.linear_key_head_dim),
                    ("linear_value_head_dim", self.linear_value_head_dim),
                    ("linear_state_dtype_bytes", self.linear_state_dtype_bytes),
                ]
            )
        if self.attention_output_gate:
            items.append(("attention_output_gate", True))
        return items

    def __repr__(self) -> str:
        return (
            f"ModelSpec({self.name!r}, layers={self.num_layers}, hidden={self.hidden_size}, "
            f"vocab={self.vocab_size}, family={self.family!r})"
        )


@dataclass(frozen=True)
class GpuSpec:
    """Vendor peak numbers of one accelerator (upper bounds; efficiencies live in estimators).

    Frozen, like ``ModelSpec``.
    """

    name: str
    bf16_flops: float
    fp8_flops: float
    hbm_bytes_per_s: float
    hbm_capacity_bytes: int
    nvlink_bytes_per_s: float
    tdp_w: float
    sm_version: int
    #: Dense FP4 tensor-core peak (0: no FP4 units).
    fp4_flops: float = 0.0

    def __repr__(self) -> str:
        return f"GpuSpec({self.name!r}, bf16={self.bf16_flops:.3g} FLOP/s, hbm={self.hbm_bytes_per_s:.3g} B/s)"
