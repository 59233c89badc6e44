"""Plain, frozen model-geometry and GPU records, and their construction from config mappings.

``ModelSpec.from_hf_config`` reads a Hugging Face style ``config.json`` mapping (the same fields
the built-in catalogue holds), so a user's own model file and the catalogue share one path.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Final

from aisim._fields import as_bool, as_float, as_int, as_mapping, as_str, join_path
from aisim.errors import ConfigError

# Dense decoders with the Llama block shape (RMSNorm, GQA attention, SwiGLU MLP).
LLAMA_LIKE_MODEL_TYPES: Final = ("llama", "qwen2", "qwen3", "mistral", "mimo")

#: Largest model size field (elements, layers, heads, experts, positions): 2**24.
MAX_GEOMETRY: Final = 1 << 24

#: Largest GPU figure (FLOP/s, bytes/s, bytes, watts): 1e20, above any accelerator's.
MAX_GPU_FIGURE: Final = 1e20

_DTYPE_BYTES: Final = {"bfloat16": 2, "float16": 2, "float32": 4, "fp8": 1, "float8": 1}


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
        return per_layer * self.num_layers * self.dtype_bytes

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
        return q_and_o + k_and_v

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
        ]

    def __repr__(self) -> str:
        return (
            f"ModelSpec({self.name!r}, layers={self.num_layers}, hidden={self.hidden_size}, "
            f"vocab={self.vocab_size}, family={self.family!r})"
        )

    @staticmethod
    def from_hf_config(mapping: object, name: str, path: str = "model") -> ModelSpec:
        """Build from a ``config.json`` mapping (JSON numbers and booleans; a numeric string
        such as ``"8"`` is an error, not an integer).

        Sizes are integers in 1..``MAX_GEOMETRY`` where a zero is meaningless (layers, hidden
        size, heads, KV heads, head_dim, intermediate size, vocabulary) and in
        0..``MAX_GEOMETRY`` where zero means "absent" (experts, MLA ranks, MTP layers); the
        bound keeps every derived byte and FLOP count finite as a float.
        """
        config = as_mapping(mapping, path)

        def integer(key: str, default: int | None = None, minimum: int = 1) -> int:
            raw = config.get(key)
            if raw is None:
                if default is None:
                    raise ConfigError(f"{join_path(path, key)}: required field is missing")
                return default
            return as_int(raw, join_path(path, key), minimum, MAX_GEOMETRY)

        model_type = as_str(config.get("model_type", "llama"), join_path(path, "model_type"))
        hidden = integer("hidden_size")
        heads = integer("num_attention_heads")
        if config.get("head_dim") is None and hidden % heads != 0:
            raise ConfigError(
                f"{join_path(path, 'head_dim')}: required when hidden_size ({hidden}) is not "
                f"divisible by num_attention_heads ({heads})"
            )
        head_dim = integer("head_dim", hidden // heads)
        experts = max(
            integer("num_experts", 0, 0),
            integer("num_local_experts", 0, 0),
            integer("n_routed_experts", 0, 0),
        )
        tie_raw = config.get("tie_word_embeddings")
        tie = False
        if tie_raw is not None:
            tie = as_bool(tie_raw, join_path(path, "tie_word_embeddings"))
        dtype_raw = config.get("torch_dtype", "bfloat16")
        dtype = as_str(
            dtype_raw if dtype_raw is not None else "bfloat16", join_path(path, "torch_dtype")
        )
        if dtype not in _DTYPE_BYTES:
            raise ConfigError(
                f"{join_path(path, 'torch_dtype')}: expected one of "
                f"{', '.join(sorted(_DTYPE_BYTES))}, got {dtype!r}"
            )
        spec = ModelSpec(
            name=name,
            model_type=model_type,
            num_layers=integer("num_hidden_layers"),
            hidden_size=hidden,
            intermediate_size=integer("intermediate_size", 4 * hidden),
            num_attention_heads=heads,
            num_kv_heads=integer("num_key_value_heads", heads),
            head_dim=head_dim,
            vocab_size=integer("vocab_size"),
            tie_word_embeddings=tie,
            num_experts=experts,
            experts_per_token=integer("num_experts_per_tok", 0, 0),
            # Mixtral-style configs size experts with intermediate_size.
            moe_intermediate_size=integer(
                "moe_intermediate_size",
                integer("intermediate_size", 4 * hidden) if experts else 0,
                0,
            ),
            num_shared_experts=integer("n_shared_experts", 0, 0),
            first_dense_layers=integer("first_k_dense_replace", 0, 0),
            kv_lora_rank=integer("kv_lora_rank", 0, 0),
            q_lora_rank=integer("q_lora_rank", 0, 0),
            qk_nope_head_dim=integer("qk_nope_head_dim", 0, 0),
            qk_rope_head_dim=integer("qk_rope_head_dim", 0, 0),
            v_head_dim=integer("v_head_dim", 0, 0),
            num_nextn_predict_layers=integer("num_nextn_predict_layers", 0, 0),
            dtype_bytes=_DTYPE_BYTES[dtype],
            max_position_embeddings=integer("max_position_embeddings", 0, 0),
        )
        return spec


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

    def __repr__(self) -> str:
        return f"GpuSpec({self.name!r}, bf16={self.bf16_flops:.3g} FLOP/s, hbm={self.hbm_bytes_per_s:.3g} B/s)"

    @staticmethod
    def from_mapping(mapping: object, name: str, path: str = "hardware") -> GpuSpec:
        """Build from a mapping with the ``gpus.csv`` columns (JSON/YAML numbers; a numeric
        string is an error). Each is finite and at most ``MAX_GPU_FIGURE`` (1e20), so the
        times priced from them stay finite."""
        config = as_mapping(mapping, path)

        def number(key: str, required: bool) -> float:
            raw: Any = config.get(key)
            if raw is None:
                if required:
                    raise ConfigError(f"{join_path(path, key)}: required field is missing")
                return 0.0
            return as_float(raw, join_path(path, key), 0.0, MAX_GPU_FIGURE)

        bf16 = number("bf16_dense_flops", True)
        hbm = number("hbm_bytes_per_s", True)
        if bf16 < 1.0 or hbm < 1.0:
            raise ConfigError(f"{path}: bf16_dense_flops and hbm_bytes_per_s must be >= 1")
        return GpuSpec(
            name=name,
            bf16_flops=bf16,
            fp8_flops=number("fp8_dense_flops", False),
            hbm_bytes_per_s=hbm,
            hbm_capacity_bytes=int(number("hbm_capacity_bytes", True)),
            nvlink_bytes_per_s=number("nvlink_bytes_per_s_per_gpu", False),
            tdp_w=number("tdp_w", False),
            sm_version=int(number("sm_version", False)),
        )
