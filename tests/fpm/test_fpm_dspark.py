"""DSpark's eager Markov sampler (vLLM ``DSparkProposer._sample_draft_tokens`` ->
``sample_dspark_markov_block``: one host step per drafted position), priced by hand."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from aisim.catalogue import IDEAL_TERMS, MEASURED_TERMS
from aisim.config import best_available
from aisim.fpm import ForwardPassMetrics, RooflineModel
from qualification.cases._drafts import DSPARK_QWEN3_8B

TERMS = dataclasses.replace(MEASURED_TERMS, dspark_markov_step_s=100e-6)
NONE = dataclasses.replace(MEASURED_TERMS, dspark_markov_step_s=0.0)
DECODE = ForwardPassMetrics(num_decode_requests=8, sum_decode_kv_tokens=8 * 1000)
MIXED = ForwardPassMetrics(
    num_decode_requests=8,
    sum_decode_kv_tokens=8 * 1000,
    num_prefill_requests=1,
    sum_prefill_tokens=200,
)
PREFILL = ForwardPassMetrics(num_prefill_requests=2, sum_prefill_tokens=300)
#: A block drafter of block 8 (7 drafted positions at most).
DRAFT = {**DSPARK_QWEN3_8B, "block_size": 8}


def _model(speculation: dict[str, Any]) -> Any:
    config = {
        "model": "Qwen/Qwen3-8B",
        "hardware": "h100",
        "estimator": "roofline",
        "speculation": speculation,
    }
    return best_available(config).candidates[0]


def _ms(model: Any, terms: Any, metrics: ForwardPassMetrics) -> float:
    priced = RooflineModel(model.model_spec, model.gpu, 1, model.scheme, terms)
    return float(priced.estimate_forward_pass_time_ms(metrics))


def _dspark(drafts: int) -> Any:
    return _model({"kind": "dspark", "params": {"num_draft_tokens": drafts}, "draft_config": DRAFT})


def test_each_drafted_position_adds_one_markov_step() -> None:
    # 100 us per position: 7 positions 0.7 ms, 3 positions 0.3 ms, whatever the batch.
    for drafts, extra_ms in ((7, 0.7), (3, 0.3)):
        model = _dspark(drafts)
        assert model.scheme.kind == "dspark" and model.scheme.num_draft_tokens == drafts
        for metrics in (DECODE, MIXED):
            assert _ms(model, TERMS, metrics) - _ms(model, NONE, metrics) == pytest.approx(
                extra_ms, rel=1e-9
            )
        # The draft part carries it (the round's details).
        priced = RooflineModel(model.model_spec, model.gpu, 1, model.scheme, TERMS)
        unpriced = RooflineModel(model.model_spec, model.gpu, 1, model.scheme, NONE)
        details = priced.estimate_forward_pass_detailed(DECODE).diagnostics.details
        plain = unpriced.estimate_forward_pass_detailed(DECODE).diagnostics.details
        assert details["draft_ms"] - plain["draft_ms"] == pytest.approx(extra_ms, rel=1e-9)
        assert details["target_ms"] == plain["target_ms"]


def test_a_prefill_pass_drafts_too_and_other_schemes_pay_nothing() -> None:
    model = _dspark(7)
    # vLLM drafts after the prefill as well (the prompt's first drafts): 7 x 100 us.
    assert _ms(model, TERMS, PREFILL) - _ms(model, NONE, PREFILL) == pytest.approx(0.7, rel=1e-9)
    # DFlash shares the block layout but samples its block at once (no Markov loop).
    dflash = _model({"kind": "dflash", "params": {"num_draft_tokens": 7}, "draft_config": DRAFT})
    mtp = _model({"kind": "mtp", "params": {"depth": 3}})
    for other in (dflash, mtp):
        assert _ms(other, TERMS, DECODE) == _ms(other, NONE, DECODE)
    # The ideal bound has no overheads.
    assert IDEAL_TERMS.dspark_markov_step_s == 0.0


def test_a_draft_step_host_time_is_paid_once_per_sequential_draft_step() -> None:
    # 1 ms per draft step: an EAGLE-3 chain of 3 steps pays 3 ms, MTP of depth 2 pays 2 ms,
    # a DSpark block (one draft pass) 1 ms; a prefill-only pass drafts as well (vLLM proposes
    # the prompt's first drafts after its prefill), the same steps.
    host = dataclasses.replace(NONE, draft_step_host_s=1e-3)
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
    mtp = _model({"kind": "mtp", "params": {"depth": 2}})
    for model, extra_ms in ((eagle3, 3.0), (mtp, 2.0), (_dspark(7), 1.0)):
        assert _ms(model, host, DECODE) - _ms(model, NONE, DECODE) == pytest.approx(
            extra_ms, rel=1e-9
        )
        assert _ms(model, host, PREFILL) - _ms(model, NONE, PREFILL) == pytest.approx(
            extra_ms, rel=1e-9
        )
    assert MEASURED_TERMS.draft_step_host_s == IDEAL_TERMS.draft_step_host_s == 0.0
