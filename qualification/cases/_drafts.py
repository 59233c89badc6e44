"""Draft ``config.json`` mappings: the one home of the draft geometries that the case suites,
the harness and the tests use (illustrative public geometries, as data files in ``drafts/``)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

DRAFTS = Path(__file__).resolve().parent / "drafts"


def draft_config(name: str) -> dict[str, Any]:
    """A fresh copy of ``drafts/<name>.json`` (callers may change it freely)."""
    loaded: dict[str, Any] = json.loads((DRAFTS / f"{name}.json").read_text(encoding="utf-8"))
    return loaded


#: The published EAGLE-3 head for Llama-3.1-8B: one decoder layer, a 32000-token draft vocab.
EAGLE3_LLAMA_8B: dict[str, Any] = draft_config("eagle3_llama_3.1_8b")
#: An EAGLE-3 head for Qwen3-8B: one Qwen3 layer (hidden 4096, MLP 12288), 32000-token draft vocab.
EAGLE3_QWEN3_8B_HEAD: dict[str, Any] = draft_config("eagle3_qwen3_8b")
#: The Llama head relabelled qwen3 with Qwen3's vocabulary (the speculation goldens' variant).
EAGLE3_QWEN3_8B: dict[str, Any] = {**EAGLE3_LLAMA_8B, "model_type": "qwen3", "vocab_size": 151936}
#: An EAGLE-3 head with the wrong hidden size for an 8B target.
EAGLE3_HIDDEN_2048: dict[str, Any] = {**EAGLE3_LLAMA_8B, "hidden_size": 2048}
#: A DFlash block drafter (block 16 -> 15 drafts by default) for Qwen3-8B.
DFLASH_QWEN3_8B: dict[str, Any] = draft_config("dflash_qwen3_8b")
#: A DSpark block drafter (block 4, two layers) for Qwen3-8B.
DSPARK_QWEN3_8B: dict[str, Any] = {**DFLASH_QWEN3_8B, "num_hidden_layers": 2, "block_size": 4}
#: Qwen3-0.6B as a separate draft model.
QWEN3_0_6B: dict[str, Any] = draft_config("qwen3_0.6b")
