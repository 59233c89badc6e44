"""Draft configs shared by the speculation tests (fresh copies per test)."""

from __future__ import annotations

from typing import Any

import pytest


@pytest.fixture
def eagle3_draft() -> dict[str, Any]:
    """The published EAGLE-3 head for Llama-3.1-8B: 1 layer, hidden 4096, draft vocab 32000."""
    return {
        "architectures": ["LlamaForCausalLMEagle3"],
        "model_type": "llama",
        "hidden_size": 4096,
        "intermediate_size": 14336,
        "num_hidden_layers": 1,
        "num_attention_heads": 32,
        "num_key_value_heads": 8,
        "vocab_size": 128256,
        "draft_vocab_size": 32000,
        "rms_norm_eps": 1e-05,
    }


@pytest.fixture
def block_draft() -> dict[str, Any]:
    """A block drafter for a Qwen3-8B target: 5 layers, hidden 4096, block_size 16."""
    return {
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


@pytest.fixture
def small_draft() -> dict[str, Any]:
    """Qwen3-0.6B geometry, as a separate draft model."""
    return {
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
