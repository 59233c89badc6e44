"""The default roofline's efficiency and overhead terms against hand-derived values, its SD round
parts, and its monotonicity (the pure bound ``roofline_ideal`` is covered by test_fpm_roofline).

Hand derivations use the published Qwen3-8B geometry (36 layers, hidden 4096, FFN 12288, 32 / 8
heads of 128, vocab 151936, bf16) and the terms of docs/estimators.md: weight streaming at
83.4 % and KV reads at 61.0 % of 3.35 TB/s, 3.49 us per kernel, no per-pass host time (the last
three fitted on public GPU runs, evidence/public-gpu/fitted_terms.json).
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from aisim.catalogue._costs import ALLREDUCE_CURVE
from aisim.config import best_available
from aisim.fpm import ForwardPassMetrics, SelectedModel
from aisim.fpm._roofline_ops import interpolate_latency
from qualification.cases._drafts import draft_config

WEIGHT_BYTES_PER_S = 3.35e12 * 0.834
KV_BYTES_PER_S = 3.35e12 * 0.610
KERNEL_S = 3.49e-6
STEP_S = 0.0
LAYER = 2 * 4096 * 32 * 128 + 2 * 4096 * 8 * 128 + 3 * 4096 * 12288  # attention + MLP weights
HEAD = 151936 * 4096
KERNELS_PER_PASS = 36 * 10 + 2  # 7 per attention block + 3 per dense MLP, final norm + head
KV_BYTES_PER_TOKEN = 36 * 2 * 8 * 128 * 2

EAGLE3_QWEN3_8B = draft_config("eagle3_qwen3_8b")


def _default(speculation: Any = None, **extra: Any) -> SelectedModel:
    config: dict[str, Any] = {"model": "Qwen/Qwen3-8B", "hardware": "h100"}
    if speculation is not None:
        config["speculation"] = speculation
    config.update(extra)
    return best_available(config)


def test_batch_one_step_is_weights_at_83_percent_plus_kernels_step_and_sampler() -> None:
    streamed_s = (36 * LAYER + HEAD) * 2 / WEIGHT_BYTES_PER_S
    sampler_s = 151936 * 4 / WEIGHT_BYTES_PER_S  # fp32 logits read once
    expected_ms = (streamed_s + KERNELS_PER_PASS * KERNEL_S + STEP_S + sampler_s) * 1000.0
    result = _default().estimate_forward_pass_detailed(ForwardPassMetrics(1, 1))
    assert expected_ms <= result.latency_ms <= expected_ms * 1.005  # norms, activations: < 0.5 %
    details = result.diagnostics.details
    assert details["overhead_ms"] == pytest.approx((KERNELS_PER_PASS * KERNEL_S + STEP_S) * 1e3)
    assert details["sampling_ms"] == pytest.approx(sampler_s * 1000.0, rel=1e-12)


def test_kv_reads_cost_61_percent_of_peak_bandwidth() -> None:
    model = _default()
    extra_tokens = 1_000_000
    short = model.estimate_forward_pass_time_ms(ForwardPassMetrics(1, 1))
    long = model.estimate_forward_pass_time_ms(ForwardPassMetrics(1, 1 + extra_tokens))
    expected_ms = extra_tokens * KV_BYTES_PER_TOKEN / KV_BYTES_PER_S * 1000.0  # 72.2 ms
    assert long - short == pytest.approx(expected_ms, rel=1e-9)


def test_allreduce_curve_is_the_published_table_interpolated() -> None:
    tp2 = ALLREDUCE_CURVE[2]
    assert interpolate_latency(tp2, 32768.0) == pytest.approx(4.5e-6)
    midpoint = (32768.0 + 262144.0) / 2.0
    assert interpolate_latency(tp2, midpoint) == pytest.approx((4.5e-6 + 7.9e-6) / 2.0)
    assert interpolate_latency(tp2, 100.0) == pytest.approx(3.7e-6)  # below the first point
    slope = (19.9e-6 - 12.5e-6) / (1048576.0 - 524288.0)
    assert interpolate_latency(tp2, 2097152.0) == pytest.approx(19.9e-6 + slope * 1048576.0)
    # TP 4 measured 3.7 us at 4 KiB after 4.8 us at 512 B: made non-decreasing.
    assert interpolate_latency(ALLREDUCE_CURVE[4], 4096.0) == pytest.approx(4.8e-6)


def test_tensor_parallel_pays_two_measured_allreduces_per_layer() -> None:
    # One decode token at TP 2: each all-reduce moves 4096 * 2 bytes = 8 KiB, 512..4096 B on the
    # curve is 3.7..3.9 us, 8192 B lies between 4096 and 32768 B (3.9 -> 4.5 us).
    message = 4096 * 2.0
    per_allreduce = 3.9e-6 + (message - 4096.0) / (32768.0 - 4096.0) * (4.5e-6 - 3.9e-6)
    tp1 = _default().estimate_forward_pass_time_ms(ForwardPassMetrics(1, 1))
    tp2 = _default(tensor_parallel=2).estimate_forward_pass_time_ms(ForwardPassMetrics(1, 1))
    halved_weights_ms = (36 * LAYER + HEAD) * 2 / 2 / WEIGHT_BYTES_PER_S * 1000.0
    expected_tp2 = tp1 - halved_weights_ms + 72 * per_allreduce * 1000.0
    assert tp2 == pytest.approx(expected_tp2, rel=2e-3)  # sharded norms/activations differ


def test_mtp_draft_step_is_block_plus_shared_head_with_its_overheads() -> None:
    model = _default({"kind": "mtp", "params": {"depth": 1}})
    details = model.estimate_forward_pass_detailed(ForwardPassMetrics(1, 1)).diagnostics.details
    block_bytes = (LAYER + 2 * 4096 * 4096 + HEAD) * 2
    kernels = 10 + 1 + 2  # one layer, the 2h -> h projection, final norm + head
    expected_ms = (block_bytes / WEIGHT_BYTES_PER_S + kernels * KERNEL_S + STEP_S) * 1000.0
    assert details["draft_steps"] == 1.0
    assert expected_ms <= details["draft_ms"] <= expected_ms * 1.005


def test_mtp_first_draft_pass_covers_the_verified_window_with_one_logit_per_request() -> None:
    # Depth 1 at B = 512 on H100: the one draft pass runs the MTP block over the verified window
    # (d + 1 = 2 tokens per request, 1024 tokens; SGLang _draft_extend_for_decode, TensorRT-LLM
    # MTP Eagle, vLLM EagleProposer.propose) but the shared LM head only over the last token of
    # each request (512 logits). Both are compute-bound (1024 and 512 FLOP per weight byte, over
    # H100's 989e12 * 0.7 / 2.76e12 = 251 FLOP/byte ridge), so by hand:
    gemm_flops_per_s = 989e12 * 0.7
    block_ms = 2.0 * 1024 * (LAYER + 2 * 4096 * 4096) / gemm_flops_per_s * 1000.0  # 0.670 ms
    head_ms = 2.0 * 512 * HEAD / gemm_flops_per_s * 1000.0  # 0.920 ms
    kernels_ms = (10 + 1 + 2) * KERNEL_S * 1000.0
    # Memory-bound parts: the layer's KV read (64 past + 2 new tokens per request, 60.4 %),
    # the SwiGLU activation (3 x 1024 x 12288 bf16) and the norms: the block's input norm
    # (no residual: read and write, 2 x 1024 x 4096 bf16), its post-attention norm and the final
    # norm, both fused with the residual add (read input and residual, write both: 4 x 1024 x
    # 4096 each; vLLM fused_add_rms_norm_kernel).
    kv_ms = 512 * 66 * (2 * 8 * 128 * 2) / KV_BYTES_PER_S * 1000.0  # 0.068 ms
    elementwise_ms = (3 * 1024 * 12288 + 10 * 1024 * 4096) * 2 / WEIGHT_BYTES_PER_S * 1000.0
    expected_ms = block_ms + head_ms + kernels_ms + kv_ms + elementwise_ms  # 1.761 ms
    model = _default({"kind": "mtp", "params": {"depth": 1}})
    metrics = ForwardPassMetrics(512, 512 * 64)
    details = model.estimate_forward_pass_detailed(metrics).diagnostics.details
    # Left out: the attention's query/output bytes (< 1 %). One token per
    # request would give about 1.36 ms; logits of every window token about 2.67 ms.
    assert expected_ms <= details["draft_ms"] <= expected_ms * 1.01
    assert details["draft_steps"] == 1.0


def test_mtp_later_draft_passes_take_one_token_per_request() -> None:
    # Depth 2 adds one pass of one token per request after the wide first pass: at B = 512 the
    # block's GEMMs see 512 tokens (0.335 ms) and the head 512 logits (0.920 ms) again.
    gemm_flops_per_s = 989e12 * 0.7
    second_ms = (
        2.0 * 512 * (LAYER + 2 * 4096 * 4096 + HEAD) / gemm_flops_per_s + 13 * KERNEL_S
    ) * 1000.0
    metrics = ForwardPassMetrics(512, 512 * 64)
    one = _default({"kind": "mtp", "params": {"depth": 1}}).estimate_forward_pass_detailed(metrics)
    two = _default({"kind": "mtp", "params": {"depth": 2}}).estimate_forward_pass_detailed(metrics)
    extra = two.diagnostics.details["draft_ms"] - one.diagnostics.details["draft_ms"]
    # The depth-2 first pass is 3 tokens wide (+0.335 ms of block GEMMs over depth 1's).
    block_extra_ms = 2.0 * 512 * (LAYER + 2 * 4096 * 4096) / gemm_flops_per_s * 1000.0
    # Memory-bound parts: the second pass reads 64 + 3 + 1 KV tokens per request; 512 more
    # tokens through the first pass's and 512 through the second's activation and norms (10 x
    # 4096 per token: the plain input norm's 2, the fused post-attention and final norms' 4 each).
    kv_ms = 512 * 68 * (2 * 8 * 128 * 2) / KV_BYTES_PER_S * 1000.0
    elementwise_ms = 2 * 512 * (3 * 12288 + 10 * 4096) * 2 / WEIGHT_BYTES_PER_S * 1000.0
    expected_ms = second_ms + block_extra_ms + kv_ms + elementwise_ms  # 1.764 ms
    assert expected_ms <= extra <= expected_ms * 1.01
    assert two.diagnostics.details["draft_steps"] == 2.0


def test_ngram_round_pays_the_host_proposal_per_request() -> None:
    model = _default({"kind": "ngram", "params": {"num_speculative_tokens": 3}})
    details = model.estimate_forward_pass_detailed(ForwardPassMetrics(8, 8)).diagnostics.details
    assert details["draft_ms"] == pytest.approx(8 * 2.7e-6 * 1000.0, rel=1e-12)
    assert details["draft_steps"] == 0.0


SCHEMES = st.sampled_from(
    [
        None,
        {"kind": "ngram", "params": {"num_speculative_tokens": 3}},
        {"kind": "mtp", "params": {"depth": 2}},
        {
            "kind": "eagle3",
            "params": {"num_speculative_tokens": 3},
            "draft_config": EAGLE3_QWEN3_8B,
        },
        {
            "kind": "draft_model",
            "params": {"num_speculative_tokens": 2},
            "draft_model_path": "Qwen/Qwen3-0.6B",
        },
    ]
)


@given(
    scheme=SCHEMES,
    batch=st.integers(min_value=1, max_value=128),
    kv=st.integers(min_value=0, max_value=4_000_000),
    prefill=st.integers(min_value=0, max_value=4096),
)
def test_round_parts_sum_to_the_price(
    scheme: dict[str, Any] | None, batch: int, kv: int, prefill: int
) -> None:
    metrics = ForwardPassMetrics(
        batch, kv, num_prefill_requests=1 if prefill else 0, sum_prefill_tokens=prefill
    )
    result = _default(scheme).estimate_forward_pass_detailed(metrics)
    details = result.diagnostics.details
    parts = details["draft_ms"] + details["target_ms"] + details["sampling_ms"]
    assert parts == pytest.approx(result.latency_ms, rel=1e-12)
    assert 0.0 <= details["overhead_ms"] <= details["draft_ms"] + details["target_ms"]


@given(
    scheme=SCHEMES,
    tp=st.sampled_from([1, 2, 4, 8]),  # divisors of the 32 heads (TP 3 is refused)
    batch=st.integers(min_value=1, max_value=256),
    kv=st.integers(min_value=0, max_value=4_000_000),
    extra_kv=st.integers(min_value=1, max_value=100_000),
)
def test_default_is_monotone_in_batch_and_kv(
    scheme: dict[str, Any] | None, tp: int, batch: int, kv: int, extra_kv: int
) -> None:
    model = _default(scheme, tensor_parallel=tp)
    base = model.estimate_forward_pass_time_ms(ForwardPassMetrics(batch, kv))
    assert base <= model.estimate_forward_pass_time_ms(ForwardPassMetrics(batch + 1, kv))
    assert base <= model.estimate_forward_pass_time_ms(ForwardPassMetrics(batch, kv + extra_kv))


@given(
    kind=st.sampled_from(["mtp", "eagle3", "ngram"]),
    depth=st.integers(min_value=1, max_value=4),
    batch=st.integers(min_value=1, max_value=64),
    kv=st.integers(min_value=1024, max_value=32768),
)
def test_default_round_grows_with_depth(kind: str, depth: int, batch: int, kv: int) -> None:
    def priced(d: int) -> float:
        key = "depth" if kind == "mtp" else "num_speculative_tokens"
        spec: dict[str, Any] = {"kind": kind, "params": {key: d}}
        if kind == "eagle3":
            spec["draft_config"] = EAGLE3_QWEN3_8B
        return _default(spec).estimate_forward_pass_time_ms(ForwardPassMetrics(batch, batch * kv))

    assert priced(depth) < priced(depth + 1)


def test_the_default_prices_mtp_above_the_widened_stp_pass() -> None:
    # B 8, K 1024, MTP depth 3 (once 1.09x the STP step with draft_ms 0): the round is the
    # widened verification plus three draft steps. Each step streams one Qwen3-8B layer, the
    # 2h -> h projection and the head (LAYER + 2 x 4096^2 + HEAD weights at 2 bytes: 0.4 ms at
    # 81.9 % of 3.35 TB/s) and pays its 13 kernels (45 us), so the drafts add at least 1.35 ms.
    mtp = _default({"kind": "mtp", "params": {"depth": 3}})
    stp = _default()
    round_ms = mtp.estimate_forward_pass_time_ms(ForwardPassMetrics(8, 8 * 1024))
    widened_ms = stp.estimate_forward_pass_time_ms(ForwardPassMetrics(32, 8 * 1024))
    step_ms = ((LAYER + 2 * 4096 * 4096 + HEAD) * 2 / WEIGHT_BYTES_PER_S + 13 * KERNEL_S) * 1e3
    assert round_ms > widened_ms + 3 * step_ms


def test_roofline_ideal_is_reachable_and_never_above_the_default() -> None:
    ideal = best_available(
        {"model": "Qwen/Qwen3-8B", "hardware": "h100", "estimator": "roofline_ideal"}
    )
    assert ideal.candidates[0].name == "roofline_ideal"
    for batch, kv in ((1, 1024), (64, 64 * 8192)):
        metrics = ForwardPassMetrics(batch, kv)
        assert ideal.estimate_forward_pass_time_ms(
            metrics
        ) < _default().estimate_forward_pass_time_ms(metrics)


def test_long_prefill_is_gemms_at_70_and_attention_at_75_percent_of_peak() -> None:
    tokens = 8192
    gemm_s = 2 * tokens * 36 * LAYER / (989e12 * 0.7)
    attention_s = 4 * 32 * 128 * (tokens * (tokens + 1) / 2) * 36 / (989e12 * 0.75)
    fixed_s = KERNELS_PER_PASS * KERNEL_S + STEP_S
    expected_ms = (gemm_s + attention_s + fixed_s) * 1000.0  # 192.4 ms
    prefill = ForwardPassMetrics(num_prefill_requests=1, sum_prefill_tokens=tokens)
    estimate = _default().estimate_forward_pass_time_ms(prefill)
    assert expected_ms <= estimate <= expected_ms * 1.08  # LM head, norms, activations on top
