"""Draft ``config.json`` mappings shared by the case suites (illustrative public geometries)."""

from __future__ import annotations

from typing import Any

#: The published EAGLE-3 head for Llama-3.1-8B: one decoder layer, a 32000-token draft vocab.
EAGLE3_LLAMA_8B: dict[str, Any] = {
    "model_type": "llama",
    "hidden_size": 4096,
    "intermediate_size": 14336,
    "num_hidden_layers": 1,
    "num_attention_heads": 32,
    "num_key_value_heads": 8,
    "vocab_size": 128256,
    "draft_vocab_size": 32000,
}
#: An EAGLE-3 head sized for Qwen3-8B (hidden 4096).
EAGLE3_QWEN3_8B: dict[str, Any] = {**EAGLE3_LLAMA_8B, "model_type": "qwen3", "vocab_size": 151936}
#: An EAGLE-3 head with the wrong hidden size for an 8B target.
EAGLE3_HIDDEN_2048: dict[str, Any] = {**EAGLE3_LLAMA_8B, "hidden_size": 2048}
#: A DFlash block drafter (block 16 -> 15 drafts by default) for Qwen3-8B.
DFLASH_QWEN3_8B: dict[str, Any] = {
    "model_type": "qwen3",
    "hidden_size": 4096,
    "intermediate_size": 12288,
    "num_hidden_layers": 5,
    "num_attention_heads": 32,
    "num_key_value_heads": 8,
    "head_dim": 128,
    "vocab_size": 151936,
    "block_size": 16,
}
#: A DSpark block drafter (block 4, two layers) for Qwen3-8B.
DSPARK_QWEN3_8B: dict[str, Any] = {**DFLASH_QWEN3_8B, "num_hidden_layers": 2, "block_size": 4}
#: Qwen3-0.6B as a separate draft model.
QWEN3_0_6B: dict[str, Any] = {
    "model_type": "qwen3",
    "hidden_size": 1024,
    "intermediate_size": 3072,
    "num_hidden_layers": 28,
    "num_attention_heads": 16,
    "num_key_value_heads": 8,
    "head_dim": 128,
    "vocab_size": 151936,
    "tie_word_embeddings": True,
}
