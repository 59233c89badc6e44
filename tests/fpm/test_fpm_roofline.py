"""Roofline sanity against hand-derived numbers, monotonicity, and scheme-native SD pricing.

Geometry below is copied by hand from the models' published config.json files; the
expected times are weight bytes / (HBM peak x 0.8) for memory-bound work and FLOPs / (BF16 peak x
efficiency) for compute-bound work, with the documented efficiencies (GEMM 0.7, attention 0.5).
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from aisim.config import best_available
from aisim.errors import ConfigError, UnsupportedQuery
from aisim.fpm import ForwardPassMetrics, SelectedModel
from qualification.cases._drafts import draft_config

H100_BYTES_PER_S = 3.35e12 * 0.8
H100_GEMM_FLOPS = 989e12 * 0.7
H100_ATTENTION_FLOPS = 989e12 * 0.5

# Qwen3-8B: 36 layers, hidden 4096, FFN 12288, 32 query / 8 KV heads of 128, vocab 151936, bf16.
QWEN3_8B_ATTENTION = 2 * 4096 * 32 * 128 + 2 * 4096 * 8 * 128  # q and o, k and v
QWEN3_8B_MLP = 3 * 4096 * 12288
QWEN3_8B_LAYER = QWEN3_8B_ATTENTION + QWEN3_8B_MLP  # 192_937_984 weights
QWEN3_8B_STREAMED_BYTES = (36 * QWEN3_8B_LAYER + 151936 * 4096) * 2  # layers + LM head


def _roofline(model: str = "Qwen/Qwen3-8B", **extra: Any) -> SelectedModel:
    config: dict[str, Any] = {"model": model, "hardware": "h100", "estimator": "roofline_ideal"}
    config.update(extra)
    return best_available(config)


def test_decode_at_batch_one_is_memory_bound() -> None:
    expected_ms = QWEN3_8B_STREAMED_BYTES / H100_BYTES_PER_S * 1000.0  # 5.6478 ms
    model = _roofline()
    single = model.estimate_forward_pass_time_ms(ForwardPassMetrics(1, 1))
    assert expected_ms <= single <= expected_ms * 1.01
    double = model.estimate_forward_pass_time_ms(ForwardPassMetrics(2, 2))
    assert single < double < single * 1.01  # a second request is almost free


def test_long_prefill_is_compute_bound() -> None:
    tokens = 8192
    gemm_s = 2 * tokens * 36 * QWEN3_8B_LAYER / H100_GEMM_FLOPS
    pairs = tokens * (tokens + 1) / 2  # causal (query, key) pairs
    attention_s = 4 * 32 * 128 * pairs * 36 / H100_ATTENTION_FLOPS
    compute_ms = (gemm_s + attention_s) * 1000.0  # 204.4 ms
    model = _roofline()
    prefill = ForwardPassMetrics(num_prefill_requests=1, sum_prefill_tokens=tokens)
    estimate = model.estimate_forward_pass_time_ms(prefill)
    assert compute_ms <= estimate <= compute_ms * 1.08
    weights_ms = QWEN3_8B_STREAMED_BYTES / H100_BYTES_PER_S * 1000.0
    assert estimate > 30 * weights_ms


MODELS = st.sampled_from(
    [
        ("Qwen/Qwen3-8B", 1, None),
        ("Qwen/Qwen3-8B", 2, None),
        ("Qwen/Qwen3-30B-A3B", 1, None),
        ("deepseek-ai/DeepSeek-V3", 8, None),
        (
            "meta-llama/Meta-Llama-3.1-8B",
            1,
            {"kind": "ngram", "params": {"num_speculative_tokens": 3}},
        ),
        ("Qwen/Qwen3-8B", 1, {"kind": "mtp", "params": {"depth": 2}}),
        (
            "Qwen/Qwen3-8B",
            1,
            {
                "kind": "draft_model",
                "params": {"num_speculative_tokens": 3},
                "draft_model_path": "Qwen/Qwen3-0.6B",
            },
        ),
    ]
)


@given(
    setup=MODELS,
    batch=st.integers(min_value=1, max_value=256),
    kv=st.integers(min_value=0, max_value=2_000_000),
    extra_kv=st.integers(min_value=1, max_value=100_000),
)
def test_monotone_in_batch_and_kv(
    setup: tuple[str, int, dict[str, Any] | None], batch: int, kv: int, extra_kv: int
) -> None:
    name, tp, speculation = setup
    model = _roofline(name, tensor_parallel=tp, speculation=speculation)
    base = model.estimate_forward_pass_time_ms(ForwardPassMetrics(batch, kv))
    more_requests = model.estimate_forward_pass_time_ms(ForwardPassMetrics(batch + 1, kv))
    more_kv = model.estimate_forward_pass_time_ms(ForwardPassMetrics(batch, kv + extra_kv))
    assert 0.0 < base <= more_requests
    assert base <= more_kv


def test_mtp_depth_3_costs_39_over_36_of_the_width_4_verification() -> None:
    ngram = _roofline(speculation={"kind": "ngram", "params": {"num_speculative_tokens": 3}})
    mtp = _roofline(speculation={"kind": "mtp", "params": {"depth": 3}})
    for metrics in (ForwardPassMetrics(1, 1024), ForwardPassMetrics(64, 64 * 8192)):
        width_4 = ngram.estimate_forward_pass_time_ms(metrics)  # verification only, no drafts
        assert mtp.estimate_forward_pass_time_ms(metrics) == pytest.approx(
            width_4 * 39.0 / 36.0, rel=1e-12
        )
    scale = mtp.estimate_forward_pass_detailed(ForwardPassMetrics(1, 1)).diagnostics.details
    assert round(scale["mtp_compute_scale"], 4) == 1.0833  # published for nextn 3, L 36


# bfloat16 is the default torch_dtype, as in the published config.
EAGLE3_DRAFT = draft_config("eagle3_llama_3.1_8b")
# Fused-feature projection 3H -> H, one Llama layer (q/o, k/v, SwiGLU, 2 norms), 32k-vocab head.
EAGLE3_STEP_WEIGHTS = (
    3 * 4096 * 4096
    + (2 * 4096 * 4096 + 2 * 4096 * 1024)
    + 3 * 4096 * 14336
    + 2 * 4096
    + 32000 * 4096
)


def test_eagle3_draft_steps_and_capacity_by_hand() -> None:
    speculation = {
        "kind": "eagle3",
        "params": {"num_speculative_tokens": 3},
        "draft_config": EAGLE3_DRAFT,
    }
    model = _roofline("meta-llama/Meta-Llama-3.1-8B", speculation=speculation)
    assert model.prices_speculation_natively and not model.supports_draft_length
    assert model.draft_weight_bytes == EAGLE3_STEP_WEIGHTS * 2 == 799_031_296
    assert model.draft_kv_bytes_per_token == 2 * 8 * 128 * 2  # one layer's K and V
    details = model.estimate_forward_pass_detailed(ForwardPassMetrics(1, 1)).diagnostics.details
    step_ms = EAGLE3_STEP_WEIGHTS * 2 / H100_BYTES_PER_S * 1000.0  # memory-bound at B = 1
    assert 3 * step_ms <= details["draft_ms"] <= 3 * step_ms * 1.01
    assert details["verify_width"] == 4.0
    ngram = _roofline(
        "meta-llama/Meta-Llama-3.1-8B",
        speculation={"kind": "ngram", "params": {"num_speculative_tokens": 3}},
    )
    round_ms = model.estimate_forward_pass_time_ms(ForwardPassMetrics(1, 1))
    verify_ms = ngram.estimate_forward_pass_time_ms(ForwardPassMetrics(1, 1))
    assert round_ms == pytest.approx(verify_ms + details["draft_ms"], rel=1e-12)


def test_draft_model_runs_k_full_draft_steps() -> None:
    speculation = {
        "kind": "draft_model",
        "params": {"num_speculative_tokens": 3},
        "draft_model_path": "Qwen/Qwen3-0.6B",
    }
    model = _roofline(speculation=speculation)
    # Qwen3-0.6B: 28 layers (hidden 1024, FFN 3072, 16 / 8 heads of 128), tied 151936 x 1024
    # embedding (the LM head still streams it).
    layer = (2 * 1024 * 16 * 128 + 2 * 1024 * 8 * 128) + 3 * 1024 * 3072
    step_bytes = (28 * layer + 151936 * 1024) * 2
    details = model.estimate_forward_pass_detailed(ForwardPassMetrics(1, 1)).diagnostics.details
    step_ms = step_bytes / H100_BYTES_PER_S * 1000.0
    assert 3 * step_ms <= details["draft_ms"] <= 3 * step_ms * 1.02
    total_weights = (151936 * 1024 + 28 * (layer + 2 * 1024) + 1024) * 2
    assert model.draft_weight_bytes == total_weights
    assert model.draft_kv_bytes_per_token == 28 * 2 * 8 * 128 * 2


def test_block_drafter_is_one_forward_over_n_tokens() -> None:
    draft = {
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
    model = _roofline(
        speculation={"kind": "dflash", "params": {"num_draft_tokens": 7}, "draft_config": draft}
    )
    details = model.estimate_forward_pass_detailed(ForwardPassMetrics(1, 1)).diagnostics.details
    # One forward of the 5 layers and the LM head, and the context K/V of the verified tokens
    # (one fused GEMM 4096 -> 5 x 2 x 8 x 128: vLLM precompute_and_store_context_kv).
    context_kv = 5 * 4096 * 2 * 8 * 128
    one_forward_ms = (
        (5 * QWEN3_8B_LAYER + 151936 * 4096 + context_kv) * 2 / H100_BYTES_PER_S * 1000.0
    )
    assert one_forward_ms <= details["draft_ms"] <= one_forward_ms * 1.02
    assert details["verify_width"] == 8.0


def test_ngram_has_no_draft_cost_or_bytes() -> None:
    model = _roofline(speculation={"kind": "ngram", "params": {"num_speculative_tokens": 2}})
    details = model.estimate_forward_pass_detailed(ForwardPassMetrics(4, 4096)).diagnostics.details
    assert details["draft_ms"] == 0.0
    assert model.draft_weight_bytes == 0 and model.draft_kv_bytes_per_token == 0


def test_tensor_parallel_helps_large_batches_and_needs_nvlink() -> None:
    metrics = ForwardPassMetrics(64, 64 * 8192)
    tp1 = _roofline().estimate_forward_pass_time_ms(metrics)
    tp2 = _roofline(tensor_parallel=2).estimate_forward_pass_time_ms(metrics)
    assert tp2 < tp1
    gpu = {
        "system": "lab",
        "bf16_dense_flops": 1e15,
        "hbm_bytes_per_s": 3e12,
        "hbm_capacity_bytes": 8e10,
    }
    with pytest.raises(ConfigError, match="nvlink"):
        best_available(
            {
                "model": "Qwen/Qwen3-8B",
                "hardware": gpu,
                "tensor_parallel": 2,
                "estimator": "roofline",
            }
        )


def test_idle_ranks_cost_zero_and_latency_is_the_slowest_rank() -> None:
    model = _roofline()
    busy = ForwardPassMetrics(8, 8 * 1024)
    alone = model.estimate_forward_pass_time_ms(busy)
    ranks = [ForwardPassMetrics(), busy, ForwardPassMetrics(1, 10)]
    result = model.estimate_forward_pass_detailed(ranks)
    assert result.latency_ms == alone
    assert result.per_rank_latency_ms[0] == 0.0
    assert model.estimate_forward_pass_time_ms([ForwardPassMetrics()]) == 0.0


def test_roofline_rejects_draft_length() -> None:
    with pytest.raises(UnsupportedQuery, match="draft_length"):
        _roofline().estimate_forward_pass_time_ms(ForwardPassMetrics(1, 1), draft_length=2)


def test_prefill_without_lists_is_closed_form_and_bounded() -> None:
    model = _roofline()
    even = ForwardPassMetrics(num_prefill_requests=4, sum_prefill_tokens=4096)
    listed = ForwardPassMetrics(
        num_prefill_requests=4, sum_prefill_tokens=4096, extend_lengths=[1024] * 4
    )
    assert model.estimate_forward_pass_time_ms(even) == pytest.approx(
        model.estimate_forward_pass_time_ms(listed), rel=1e-12
    )
    # A cached prefix makes a chunk read (and attend to) more KV.
    chunk = ForwardPassMetrics(
        num_prefill_requests=1, sum_prefill_tokens=1024, prefill_past_kv_lengths=[8192]
    )
    fresh = ForwardPassMetrics(num_prefill_requests=1, sum_prefill_tokens=1024)
    assert model.estimate_forward_pass_time_ms(chunk) > model.estimate_forward_pass_time_ms(fresh)
    # 2**40 one-token prefills: answered from the closed form, no per-request loop.
    huge = ForwardPassMetrics(num_prefill_requests=2**40, sum_prefill_tokens=2**40)
    assert model.estimate_forward_pass_time_ms(huge) > 0.0


def test_eagle3_tree_runs_one_draft_step_per_level_and_verifies_the_budget() -> None:
    speculation = {
        "kind": "eagle3",
        "params": {"tree_shape": [2, 2, 1]},
        "draft_config": EAGLE3_DRAFT,
    }
    model = _roofline("meta-llama/Meta-Llama-3.1-8B", speculation=speculation)
    details = model.estimate_forward_pass_detailed(ForwardPassMetrics(1, 1)).diagnostics.details
    assert details["verify_width"] == 6.0  # default verify_token_budget = sum(tree) + 1
    step_ms = EAGLE3_STEP_WEIGHTS * 2 / H100_BYTES_PER_S * 1000.0
    assert 3 * step_ms <= details["draft_ms"] <= 3 * step_ms * 1.01


def test_mtp_draft_weights_of_a_moe_target_hold_its_routed_experts() -> None:
    # DeepSeek-V3 (published config): hidden 7168, 128 heads, q_lora 1536, kv_lora 512,
    # qk_nope 128, qk_rope 64, v_head 128, 256 routed + 1 shared expert of 2048, one MTP module.
    # Its MTP block is a MoE layer; DeepSeek publishes 14B MTP weights (with its own embedding
    # and head, which aisim counts as shared with the target), so the block is ~11.6B, not 0.7B.
    q_proj = 7168 * 1536 + 1536 * 128 * (128 + 64)
    kv_proj = 7168 * (512 + 64) + 512 * 128 * (128 + 128)
    attention = q_proj + kv_proj + 128 * 128 * 7168  # 187_105_280
    moe = (256 + 1) * 3 * 7168 * 2048 + 7168 * 256  # experts + router: 11_320_164_352
    module = attention + moe + 2 * 7168 + 2 * 7168 * 7168  # norms, eh_proj: 11_610_044_416
    model = _roofline(
        "deepseek-ai/DeepSeek-V3", speculation={"kind": "mtp", "params": {"depth": 1}}
    )
    assert model.draft_weight_bytes == module * 2 == 23_220_088_832
    assert model.draft_kv_bytes_per_token == (512 + 64) * 2  # one MLA layer's latent


def test_draft_tensor_parallel_without_nvlink_is_a_config_error() -> None:
    # A user GPU file without nvlink_bytes_per_s_per_gpu: target TP 1 prices fine, but a draft
    # at draft_tp_size 2 needs all-reduces; that must be a named error, not ZeroDivisionError.
    gpu = {"bf16_dense_flops": 1e15, "hbm_bytes_per_s": 3e12, "hbm_capacity_bytes": 8e10}
    speculation = {
        "kind": "draft_model",
        "draft_model_path": "Qwen/Qwen3-0.6B",
        "params": {"num_speculative_tokens": 3, "draft_tp_size": 2},
    }
    with pytest.raises(ConfigError, match="draft_tp_size: 2 needs the GPU's nvlink"):
        best_available(
            {"model": "Qwen/Qwen3-8B", "hardware": gpu, "speculation": speculation}
        ).estimate_forward_pass_time_ms(ForwardPassMetrics(1, 10))


def test_norms_are_fused_add_rmsnorms_except_the_first_input_norm() -> None:
    # Llama-3.1-8B on H100 (989 TFLOP/s BF16, 3.35 TB/s), TP 1, one 4096-token prefill, no head,
    # the default terms: GEMMs at 0.7 and attention at 0.75 of the peak (compute-bound here),
    # elementwise traffic at the weights' bandwidth efficiency.
    from aisim.catalogue import MEASURED_TERMS, builtin_gpu, builtin_model
    from aisim.fpm._roofline_ops import LayerStack, prefill_shape

    spec, gpu = builtin_model("meta-llama/Meta-Llama-3.1-8B"), builtin_gpu("h100")
    assert spec is not None and gpu is not None
    t, hidden, ffn = 4096, 4096, 14336
    gemm, attention = 989e12 * 0.7, 989e12 * 0.75
    bandwidth = 3.35e12 * MEASURED_TERMS.weight_bandwidth_efficiency
    # q 4096 x 4096, k and v 4096 x 1024 each, o 4096 x 4096; up 2 x 4096 x 14336, down.
    gemms = 2.0 * t * (4096 * 6144 + 4096 * 4096 + 3 * 4096 * ffn) / gemm
    pairs = t * (t + 1) / 2  # causal
    attend = pairs * 4 * 32 * 128 / attention
    activation = 3.0 * t * ffn * 2 / bandwidth  # SwiGLU: read gate and up, write one (bf16)
    # vLLM fused_add_rms_norm_kernel (csrc/layernorm_kernels.cu): each of a layer's two norms
    # reads the input and the residual and writes both back: 4 x 4096 x 4096 bf16 per norm.
    norms = 2 * 4 * t * hidden * 2 / bandwidth
    shape = prefill_shape(1, t, None, None)
    one = LayerStack(spec, gpu, 1, 1, 0, MEASURED_TERMS).seconds(shape)
    two = LayerStack(spec, gpu, 1, 2, 0, MEASURED_TERMS).seconds(shape)
    assert two - one == pytest.approx(gemms + attend + activation + norms, rel=1e-9)
    # The first layer's input norm has no residual yet (LlamaModel.forward passes None): a
    # plain norm, read and write, 2 x 4096 x 4096 bf16 less than a fused one.
    assert (two - one) - one == pytest.approx(2 * t * hidden * 2 / bandwidth, rel=1e-9)
