"""Model shapes for engine recordings: Llama-shaped ``config.json`` files (float32, dummy
weights), small enough that a CPU engine serves a trace in minutes."""

from __future__ import annotations

from typing import Any, Final

from aisim.errors import ConfigError


def llama_config(
    layers: int, hidden: int, heads: int, kv_heads: int, ffn: int, vocab: int
) -> dict[str, Any]:
    """A Llama ``config.json`` (float32, untied head, head dim ``hidden // heads``)."""
    return {
        "architectures": ["LlamaForCausalLM"],
        "model_type": "llama",
        "hidden_size": hidden,
        "intermediate_size": ffn,
        "num_hidden_layers": layers,
        "num_attention_heads": heads,
        "num_key_value_heads": kv_heads,
        "head_dim": hidden // heads,
        "vocab_size": vocab,
        "max_position_embeddings": 4096,
        "rms_norm_eps": 1e-6,
        "rope_theta": 10000.0,
        "hidden_act": "silu",
        "tie_word_embeddings": False,
        "torch_dtype": "float32",
        "bos_token_id": 1,
        "eos_token_id": 2,
    }


#: Target shapes by name: layers x hidden.
SHAPES: Final = {
    "llama-4x256": llama_config(4, 256, 4, 2, 688, 8192),
    "llama-8x512": llama_config(8, 512, 8, 4, 1376, 16384),
    "llama-12x768": llama_config(12, 768, 12, 4, 2048, 16384),
    "llama-12x384": llama_config(12, 384, 6, 2, 1024, 16384),
    "llama-1x256": llama_config(1, 256, 4, 2, 688, 8192),
    "llama-1x384": llama_config(1, 384, 6, 2, 1024, 16384),
    "llama-1x512": llama_config(1, 512, 8, 4, 1376, 16384),
}


def shape_config(name: str, flag: str) -> dict[str, Any]:
    """The model config of shape ``name``; an unknown name is a ConfigError naming ``flag``,
    the command-line flag that gave it (``--shape``, ``--draft-shape``)."""
    if name not in SHAPES:
        raise ConfigError(f"{flag}: unknown shape {name!r}; known: {', '.join(SHAPES)}")
    return dict(SHAPES[name])
