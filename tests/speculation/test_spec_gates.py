"""Gates by model family and backend (docs/design.md#speculation-kinds): each failure names scheme, family, backend, role."""

from __future__ import annotations

from typing import Any

import pytest

from aisim import ConfigError, resolve_speculation
from aisim.config import get_model

LLAMA_8B = "meta-llama/Meta-Llama-3.1-8B"


def _block(kind: str, eagle3: dict[str, Any], block: dict[str, Any]) -> dict[str, Any]:
    if kind == "mtp":
        return {"kind": "mtp", "params": {"depth": 2}}
    if kind == "ngram":
        return {"kind": "ngram", "params": {"num_speculative_tokens": 2}}
    if kind == "eagle3":
        return {"kind": "eagle3", "draft_config": eagle3}
    if kind in ("dflash", "dspark"):
        return {"kind": kind, "params": {"num_draft_tokens": 3}, "draft_config": block}
    return {
        "kind": "draft_model",
        "params": {"num_speculative_tokens": 2},
        "draft_model_path": "Qwen/Qwen3-0.6B",
    }


# (kind, backend) pairs that docs/design.md#speculation-kinds allows, with a Llama-family target of hidden size 4096.
ALLOWED = [
    ("mtp", "vllm"),
    ("mtp", "sglang"),
    ("ngram", "vllm"),
    ("ngram", "sglang"),  # allowed for estimation; replay (a role) is vllm-only, below
    ("eagle3", "vllm"),
    ("eagle3", "sglang"),
    ("dflash", "vllm"),
    ("dspark", "vllm"),
    ("dspark", "sglang"),
    ("draft_model", "vllm"),
]
REFUSED_BACKENDS = [("dflash", "sglang"), ("draft_model", "sglang")]


@pytest.mark.parametrize(("kind", "backend"), ALLOWED)
def test_allowed_combinations_resolve(
    kind: str, backend: str, eagle3_draft: dict[str, Any], block_draft: dict[str, Any]
) -> None:
    resolved = resolve_speculation(
        _block(kind, eagle3_draft, block_draft), model=LLAMA_8B, backend=backend
    )
    assert resolved.kind == kind


@pytest.mark.parametrize(("kind", "backend"), REFUSED_BACKENDS)
@pytest.mark.parametrize("role", [None, "decode"])
def test_backend_gates(
    kind: str,
    backend: str,
    role: str | None,
    eagle3_draft: dict[str, Any],
    block_draft: dict[str, Any],
) -> None:
    with pytest.raises(ConfigError) as caught:
        resolve_speculation(
            _block(kind, eagle3_draft, block_draft),
            model=LLAMA_8B,
            backend=backend,
            role=role,
            path="workers.decode.speculation",
        )
    message = str(caught.value)
    assert message.startswith("workers.decode.speculation.kind: ")
    assert f"scheme {kind}" in message
    assert "model family llama" in message
    assert f"backend {backend}" in message
    assert f"role {role or 'unspecified'}" in message
    assert "vllm only" in message


@pytest.mark.parametrize("role", ["aggregated", "prefill", "decode"])
def test_ngram_replay_is_vllm_only(
    role: str, eagle3_draft: dict[str, Any], block_draft: dict[str, Any]
) -> None:
    block = _block("ngram", eagle3_draft, block_draft)
    assert resolve_speculation(block, backend="vllm", role=role).kind == "ngram"
    with pytest.raises(ConfigError) as caught:
        resolve_speculation(block, model="Qwen/Qwen3-8B", backend="sglang", role=role)
    message = str(caught.value)
    assert "ngram replay is supported on vllm only" in message
    assert f"role {role}" in message and "backend sglang" in message
    assert "model family llama" in message


@pytest.mark.parametrize(
    ("model", "family"),
    [
        ("Qwen/Qwen3-30B-A3B", "moe"),
        ("mistralai/Mixtral-8x7B-v0.1", "moe"),
        ("deepseek-ai/DeepSeek-V3", "mla"),
    ],
)
def test_eagle3_needs_a_dense_llama_family_target(
    model: str, family: str, eagle3_draft: dict[str, Any]
) -> None:
    with pytest.raises(ConfigError) as caught:
        resolve_speculation(
            {"kind": "eagle3", "draft_config": eagle3_draft},
            model=model,
            backend="vllm",
            role="decode",
        )
    message = str(caught.value)
    assert "scheme eagle3" in message
    assert f"model family {family}" in message
    assert "backend vllm" in message and "role decode" in message
    assert "dense llama-family target" in message


@pytest.mark.parametrize("model", ["Qwen/Qwen3-8B", "XiaomiMiMo/MiMo-7B-Base", LLAMA_8B])
def test_eagle3_accepts_llama_shaped_targets_of_equal_hidden_size(
    model: str, eagle3_draft: dict[str, Any]
) -> None:
    assert get_model(model).hidden_size == 4096
    resolved = resolve_speculation(
        {"kind": "eagle3", "draft_config": eagle3_draft}, model=model, backend="sglang"
    )
    assert resolved.kind == "eagle3"


def test_eagle3_draft_hidden_size_must_match_target(eagle3_draft: dict[str, Any]) -> None:
    # Llama-3.1-70B has hidden size 8192; the 8B head has 4096
    with pytest.raises(ConfigError) as caught:
        resolve_speculation(
            {"kind": "eagle3", "draft_config": eagle3_draft},
            model="meta-llama/Meta-Llama-3.1-70B",
            backend="vllm",
        )
    message = str(caught.value)
    assert message.startswith("speculation.draft_config.hidden_size: ")
    assert "scheme eagle3, model family llama, backend vllm, role unspecified" in message
    assert "8192" in message and "4096" in message


def test_model_gate_applies_without_a_backend(eagle3_draft: dict[str, Any]) -> None:
    with pytest.raises(ConfigError, match="backend unspecified"):
        resolve_speculation({"kind": "eagle3", "draft_config": eagle3_draft}, model="Qwen3-30B-A3B")


def test_backend_gate_applies_without_a_model(block_draft: dict[str, Any]) -> None:
    with pytest.raises(ConfigError, match="model family unknown"):
        resolve_speculation(
            {"kind": "dflash", "draft_config": block_draft}, backend="sglang", role="decode"
        )


def test_model_may_be_a_model_spec(eagle3_draft: dict[str, Any]) -> None:
    target = get_model(LLAMA_8B)
    resolved = resolve_speculation(
        {"kind": "eagle3", "draft_config": eagle3_draft}, model=target, backend="vllm"
    )
    assert resolved.kind == "eagle3"


@pytest.mark.parametrize(
    ("keyword", "value", "field"),
    [
        ("backend", "trtllm", "backend"),
        ("backend", 1, "backend"),
        ("role", "router", "role"),
        ("model", "no-such-model", "model"),
        ("model", 42, "model"),
    ],
)
def test_bad_context_arguments(keyword: str, value: object, field: str) -> None:
    kwargs: dict[str, Any] = {keyword: value}
    with pytest.raises(ConfigError) as caught:
        resolve_speculation({"kind": "mtp", "params": {"depth": 1}}, **kwargs)
    assert str(caught.value).startswith(field + ":")
