"""The drafting vLLM does after a prefill (issue 26): the prompt's first drafts are proposed in
the prefill's own step (``gpu_model_runner.py``, ``propose_draft_token_ids``), a chain drafter's
first pass runs over the prompt's tokens, and a block drafter projects every computed token's
hidden state to its context K/V (``qwen3_dflash.py``, ``precompute_and_store_context_kv``)."""

from __future__ import annotations

from typing import Any

import pytest

from aisim.catalogue import MEASURED_TERMS, builtin_gpu
from aisim.config import best_available
from aisim.fpm import ForwardPassMetrics
from qualification.cases._drafts import DSPARK_QWEN3_8B

PREFILL = ForwardPassMetrics(num_prefill_requests=1, sum_prefill_tokens=500)
DECODE = ForwardPassMetrics(num_decode_requests=4, sum_decode_kv_tokens=4 * 800)
MIXED = ForwardPassMetrics(
    num_decode_requests=4,
    sum_decode_kv_tokens=4 * 800,
    num_prefill_requests=1,
    sum_prefill_tokens=500,
)


def _model(speculation: dict[str, Any] | None) -> Any:
    config: dict[str, Any] = {"model": "Qwen/Qwen3-8B", "hardware": "h100", "estimator": "roofline"}
    if speculation is not None:
        config["speculation"] = speculation
    return best_available(config).candidates[0]


def _details(model: Any, metrics: ForwardPassMetrics) -> dict[str, float]:
    details: dict[str, float] = model.estimate_forward_pass_detailed(metrics).diagnostics.details
    return details


def test_context_kv_of_a_block_drafter_by_hand() -> None:
    # DSpark drafter of 2 Qwen3-8B-shaped layers (hidden 4096, 8 KV heads of 128) on one H100
    # (989 TFLOP/s BF16, 3.35 TB/s), 100 context tokens:
    # fused K/V GEMM 4096 -> 2 x 2 x 8 x 128 = 4096: 16,777,216 weights; memory-bound:
    #   (16,777,216 x 2 + 100 x (4096 x 2 + 4096 x 2)) B / (3.35e12 x 0.834) = 12.596 us
    #   (compute 2 x 100 x 16,777,216 / (989e12 x 0.7) = 4.85 us);
    # K norm and RoPE, read + write of K (2048 wide): 4 x 100 x 2048 x 2 B / bw = 0.586 us;
    # cache write: 100 x (4096 x 2 + 2 x 4096 x 0.834 / 0.610) B / bw = 0.694 us.
    model = _model(
        {"kind": "dspark", "params": {"num_draft_tokens": 3}, "draft_config": DSPARK_QWEN3_8B}
    )
    gpu = builtin_gpu("h100")
    assert gpu is not None and gpu.hbm_bytes_per_s == 3.35e12 and gpu.bf16_flops == 989e12
    terms = MEASURED_TERMS
    bandwidth = 3.35e12 * terms.weight_bandwidth_efficiency
    gemm = max(
        2 * 100 * 16_777_216 / (989e12 * terms.gemm_compute_efficiency),
        (16_777_216 * 2 + 100 * (4096 * 2 + 4096 * 2)) / bandwidth,
    )
    norm_rope = 4 * 100 * 2048 * 2 / bandwidth
    scale = terms.weight_bandwidth_efficiency / terms.kv_bandwidth_efficiency
    write = 100 * (4096 * 2 + 2 * 4096 * scale) / bandwidth
    assert model.draft.context_kv_seconds(100.0) == pytest.approx(
        gemm + norm_rope + write, rel=1e-9
    )
    assert model.draft.context_kv_seconds(100.0) * 1e6 == pytest.approx(13.877, abs=1e-3)
    # The fused GEMM, the K norm, RoPE and one cache write per layer.
    assert model.draft.context_kv_kernels() == 5.0
    assert model.draft.context_kv_seconds(0.0) == 0.0


def test_a_prefill_pass_pays_its_drafting() -> None:
    plain = _model(None)
    mtp = _model({"kind": "mtp", "params": {"depth": 2}})
    eagle3 = _model(
        {
            "kind": "eagle3",
            "params": {"num_speculative_tokens": 3},
            "draft_config": {
                "model_type": "llama",
                "hidden_size": 4096,
                "intermediate_size": 14336,
                "num_hidden_layers": 1,
                "num_attention_heads": 32,
                "num_key_value_heads": 8,
                "vocab_size": 151936,
            },
        }
    )
    dspark = _model(
        {"kind": "dspark", "params": {"num_draft_tokens": 3}, "draft_config": DSPARK_QWEN3_8B}
    )
    base = plain.estimate_forward_pass_time_ms(PREFILL)
    for model, steps in ((mtp, 2.0), (eagle3, 3.0), (dspark, 1.0)):
        details = _details(model, PREFILL)
        # The target's prefill is priced as without a drafter; the drafting comes on top.
        assert details["target_ms"] + details["sampling_ms"] == pytest.approx(base, rel=1e-12)
        assert details["draft_steps"] == steps
        assert details["draft_ms"] > 0.0
        assert model.estimate_forward_pass_time_ms(PREFILL) > base
    # A longer prompt costs a chain drafter's first pass more.
    longer = ForwardPassMetrics(num_prefill_requests=1, sum_prefill_tokens=4000)
    assert _details(mtp, longer)["draft_ms"] > _details(mtp, PREFILL)["draft_ms"]
    # A prompt beside decode requests adds its tokens to the first draft pass: a mixed pass's
    # drafting costs more than the decode requests' alone, and at most that plus the prompt's.
    for model in (mtp, eagle3, dspark):
        mixed = _details(model, MIXED)["draft_ms"]
        decode = _details(model, DECODE)["draft_ms"]
        alone = _details(model, PREFILL)["draft_ms"]
        assert decode < mixed <= decode + alone


def test_schemes_without_a_drafter_network_draft_nothing_after_a_prefill() -> None:
    plain = _model(None).estimate_forward_pass_time_ms(PREFILL)
    ngram = _model({"kind": "ngram", "params": {"num_speculative_tokens": 3}})
    assert ngram.estimate_forward_pass_time_ms(PREFILL) == pytest.approx(plain, rel=1e-12)


def test_sglang_runs_one_draft_extend_for_a_prompt() -> None:
    # SGLang: forward_target_extend then one forward_draft_extend over the prompt; the chain's
    # other steps run in the next decode batch. vLLM: the whole chain after the prefill.
    config: dict[str, Any] = {
        "model": "Qwen/Qwen3-8B",
        "hardware": "h100",
        "estimator": "roofline",
        "speculation": {"kind": "mtp", "params": {"depth": 3}},
    }
    vllm = best_available(config).candidates[0]
    sglang = best_available({**config, "backend": "sglang"}).candidates[0]
    assert _details(vllm, PREFILL)["draft_steps"] == 3.0
    assert _details(sglang, PREFILL)["draft_steps"] == 1.0
    # Decode rounds are the same on both.
    assert _details(sglang, DECODE) == _details(vllm, DECODE)
    assert _details(sglang, DECODE)["draft_steps"] == 3.0
