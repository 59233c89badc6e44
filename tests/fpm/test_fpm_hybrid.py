"""Hybrid decoders (Gated DeltaNet linear attention interleaved with gated full attention, the
Qwen3.5 / 3.6 dense text models): sizes, the recurrent-state traffic and kernels, by hand."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from aisim.catalogue import MEASURED_TERMS, GpuSpec, builtin_gpu
from aisim.config._catalogue import model_spec
from aisim.errors import ConfigError
from aisim.fpm._roofline_ops import LayerStack, PassShape, decode_shape, prefill_shape
from aisim.fpm._sd_cost import layer_kv_bytes_per_token

#: The public Qwen3.5 / Qwen3.6-27B text config's cost fields.
QWEN35_27B: dict[str, Any] = {
    "model_type": "qwen3_5_text",
    "num_hidden_layers": 64,
    "hidden_size": 5120,
    "intermediate_size": 17408,
    "num_attention_heads": 24,
    "num_key_value_heads": 4,
    "head_dim": 256,
    "vocab_size": 248320,
    "tie_word_embeddings": False,
    "torch_dtype": "bfloat16",
    "full_attention_interval": 4,
    "linear_num_key_heads": 16,
    "linear_num_value_heads": 48,
    "linear_key_head_dim": 128,
    "linear_value_head_dim": 128,
    "mamba_ssm_dtype": "float32",
}


def _b200() -> GpuSpec:
    gpu = builtin_gpu("b200_sxm")
    assert gpu is not None
    return gpu


def test_qwen35_27b_sizes_by_hand() -> None:
    spec = model_spec(QWEN35_27B, "qwen3.5-27b")
    # Every 4th layer is full attention: 16 of 64; 48 Gated DeltaNet layers.
    assert spec.linear_attention_layers == 48
    assert spec.full_attention_layers == 16
    assert spec.attention_output_gate  # qwen3_5_text's default
    # KV only in the 16 full-attention layers: K and V x 4 heads x 256 x 16 x 2 bytes.
    assert spec.kv_bytes_per_token == 2 * 4 * 256 * 16 * 2 == 65_536
    assert layer_kv_bytes_per_token(spec) == 4_096
    # Recurrent state of one request in one layer: 48 value heads x 128 x 128 x 4 bytes (fp32).
    assert spec.linear_state_bytes_per_layer == 3_145_728
    # in_proj_qkvz 5120 -> 2 x 2048 + 2 x 6144, in_proj_ba 5120 -> 96, out_proj 6144 -> 5120.
    assert spec.linear_attention_parameters_per_layer == 5120 * 16480 + 6144 * 5120
    assert spec.linear_attention_parameters_per_layer == 115_834_880
    # Gated attention: q 5120 -> 2 x 6144 (query and gate), k and v 5120 -> 1024, o 6144 -> 5120.
    assert spec.attention_parameters_per_layer == 5120 * (12288 + 2048) + 6144 * 5120
    # Embeddings and untied head 2 x 248320 x 5120, MLPs 64 x 3 x 5120 x 17408, 16 attention and
    # 48 linear-attention mixers, 128 layer norms and the final norm of 5120.
    expected = (
        2 * 248320 * 5120
        + 64 * 3 * 5120 * 17408
        + 16 * 104_857_600
        + 48 * 115_834_880
        + 64 * 2 * 5120
        + 5120
    )
    assert spec.num_parameters == expected == 26_894_013_440


def test_layer_types_count_like_the_interval() -> None:
    config = {key: value for key, value in QWEN35_27B.items() if key != "full_attention_interval"}
    config["layer_types"] = (["linear_attention"] * 3 + ["full_attention"]) * 16
    assert model_spec(config, "q").linear_attention_layers == 48
    # Without either field the model has no linear-attention layers and the old sizes.
    plain = {key: value for key, value in config.items() if key != "layer_types"}
    plain["model_type"] = "qwen3"
    spec = model_spec(plain, "q")
    assert spec.linear_attention_layers == 0
    assert spec.kv_bytes_per_token == 2 * 4 * 256 * 64 * 2
    assert spec.geometry_items()[-1] == ("dtype_bytes", 2)


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (
            {"layer_types": ["linear_attention"] * 3},
            "model.layer_types: expected 64 entries (one per layer, num_hidden_layers), got 3",
        ),
        (
            {"layer_types": ["linear_attention", "full_attention", "sliding"] + ["x"] * 61},
            "model.layer_types[2]: expected 'linear_attention' or 'full_attention', got 'sliding'",
        ),
        (
            {"linear_num_value_heads": None},
            "model.linear_num_value_heads: a model with linear-attention layers needs",
        ),
    ],
)
def test_bad_hybrid_fields_are_one_line_errors(change: dict[str, Any], message: str) -> None:
    config = {**QWEN35_27B, **change}
    config = {key: value for key, value in config.items() if value is not None}
    with pytest.raises(ConfigError) as caught:
        model_spec(config, "q")
    text = str(caught.value)
    assert text.startswith(message)
    assert "\n" not in text


def test_recurrent_state_reads_and_writes_per_pass() -> None:
    # Verification of 3 tokens: one state read and 3 written per request (4 x 4).
    assert decode_shape(4, 1000, 3).recurrent_states == 16.0
    # Plain decode: one read, one write.
    assert decode_shape(4, 1000, 1).recurrent_states == 8.0
    # Prefill: initial state read, final state written, per request.
    assert prefill_shape(3, 300, None, None).recurrent_states == 6.0
    assert prefill_shape(2, 30, [10, 20], [5, 0]).recurrent_states == 4.0


def test_state_traffic_time_by_hand_on_b200() -> None:
    spec = model_spec(QWEN35_27B, "q")
    gpu = _b200()
    stack = LayerStack(spec, gpu, 1, 64, spec.vocab_size, MEASURED_TERMS, linear_layers=48)
    shape = decode_shape(64, 64 * 600, 3)
    without = PassShape(
        shape.tokens, shape.logit_tokens, shape.attention_pairs, shape.kv_tokens_read
    )
    extra = stack.seconds(shape) - stack.seconds(without)
    # 48 layers x 64 requests x (1 read + 3 writes) x 3 MiB = 38.65 GB, streamed at B200's
    # 7.7 TB/s times the state efficiency.
    bandwidth = 7.7e12 * MEASURED_TERMS.linear_state_bandwidth_efficiency
    assert extra == pytest.approx(48 * 256 * 3_145_728 / bandwidth, rel=1e-9)
    # At half of peak: 38.65e9 / 3.85e12 = 10.04 ms.
    half = dataclasses.replace(MEASURED_TERMS, linear_state_bandwidth_efficiency=0.5)
    slow = LayerStack(spec, gpu, 1, 64, spec.vocab_size, half, linear_layers=48)
    assert slow.seconds(shape) - slow.seconds(without) == pytest.approx(
        38_654_705_664 / 3.85e12, rel=1e-9
    )
    # The weights and KV keep their own efficiencies: the pass without state costs the same.
    assert slow.seconds(without) == pytest.approx(stack.seconds(without), rel=1e-12)
    # The same stack without linear layers moves no state.
    dense = LayerStack(spec, gpu, 1, 64, spec.vocab_size, MEASURED_TERMS)
    assert dense.seconds(shape) == pytest.approx(dense.seconds(without), rel=1e-12)


def test_hybrid_kernels_by_hand() -> None:
    spec = model_spec(QWEN35_27B, "q")
    gpu = _b200()
    stack = LayerStack(spec, gpu, 1, 64, spec.vocab_size, MEASURED_TERMS, linear_layers=48)
    # 16 attention layers x (7 + 3 MLP) + 48 Gated DeltaNet layers x (8 + 3 MLP), then the final
    # norm and LM head.
    assert stack.kernels(decode_shape(1, 10, 1)) == 16 * 10 + 48 * 11 + 2


def test_eagle3_first_draft_pass_runs_over_the_verified_window() -> None:
    from aisim.config import best_available
    from aisim.fpm import ForwardPassMetrics
    from qualification.cases._drafts import draft_config

    def roofline(estimator: str) -> Any:
        config = {
            "model": "meta-llama/Meta-Llama-3.1-8B",
            "hardware": "h100",
            "estimator": estimator,
            "speculation": {
                "kind": "eagle3",
                "params": {"num_speculative_tokens": 3},
                "draft_config": draft_config("eagle3_llama_3.1_8b"),
            },
        }
        return best_available(config).candidates[0]

    model = roofline("roofline")
    # vLLM EagleProposer.propose: the first pass takes the target pass's d + 1 = 4 tokens per
    # request, the next two one each; roofline_ideal keeps its former one-token steps.
    assert model.draft_step_tokens == [4, 1, 1] and model.wide_first_draft_pass
    assert roofline("roofline_ideal").draft_step_tokens == [1, 1, 1]
    metrics = ForwardPassMetrics(64, 64 * 2048)
    wide = model.estimate_forward_pass_detailed(metrics).diagnostics.details["draft_ms"]
    model.draft_step_tokens = [1, 1, 1]
    model.wide_first_draft_pass = False
    narrow = model.estimate_forward_pass_detailed(metrics).diagnostics.details["draft_ms"]
    model.draft_step_tokens = [4, 4, 4]
    model.wide_first_draft_pass = True
    all_wide = model.estimate_forward_pass_detailed(metrics).diagnostics.details["draft_ms"]
    # 256 query tokens instead of 64 in the first pass: dearer than a one-token chain, cheaper
    # than three such passes.
    assert narrow < wide < all_wide


def test_eager_linear_layers_of_a_pass_with_prefill_by_hand() -> None:
    from aisim.fpm import ForwardPassMetrics, RooflineModel

    spec = model_spec(QWEN35_27B, "q")
    gpu = _b200()
    terms = dataclasses.replace(MEASURED_TERMS, eager_linear_layer_s=100e-6)
    none = dataclasses.replace(MEASURED_TERMS, eager_linear_layer_s=0.0)
    mixed = ForwardPassMetrics(
        num_decode_requests=8,
        sum_decode_kv_tokens=8 * 500,
        num_prefill_requests=1,
        sum_prefill_tokens=200,
    )
    decode = ForwardPassMetrics(num_decode_requests=8, sum_decode_kv_tokens=8 * 500)
    prefill = ForwardPassMetrics(num_prefill_requests=2, sum_prefill_tokens=300)

    def ms(model_terms: Any, metrics: ForwardPassMetrics, layers: Any = spec) -> float:
        return RooflineModel(layers, gpu, 1, None, model_terms).estimate_forward_pass_time_ms(
            metrics
        )

    # A pass with prefill tokens runs the 48 Gated DeltaNet cores eagerly: 48 x 100 us = 4.8 ms.
    assert ms(terms, mixed) - ms(none, mixed) == pytest.approx(4.8, rel=1e-9)
    assert ms(terms, prefill) - ms(none, prefill) == pytest.approx(4.8, rel=1e-9)
    # A uniform decode batch replays the full CUDA graph: no eager layers.
    assert ms(terms, decode) == ms(none, decode)
    # A model without linear-attention layers has none to launch.
    dense = model_spec({**QWEN35_27B, "model_type": "qwen3", "full_attention_interval": 1}, "d")
    assert dense.linear_attention_layers == 0
    assert ms(terms, mixed, dense) == ms(none, mixed, dense)
