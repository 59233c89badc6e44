"""Deployments: quantized weight bytes, the MoE all-to-all volume, all-reduce in both regimes,
the busiest expert-parallel group's expert reads.

Every expected number is derived by hand in the comments from published geometry and the
sources named in aisim/catalogue/_deployment.py and _costs.py.
"""

from __future__ import annotations

import pytest

from aisim.catalogue import builtin_gpu, builtin_model
from aisim.catalogue._costs import ALLREDUCE_CURVE, MEASURED_TERMS
from aisim.catalogue._deployment import (
    Deployment,
    alltoall_bytes_per_rank,
    block_linear_parameters,
    deployed_weight_bytes,
)
from aisim.fpm._roofline_ops import (
    LayerStack,
    allreduce_bus_bytes_per_s,
    allreduce_seconds,
    decode_shape,
    expert_parallel_load,
    prefill_shape,
)

# Qwen3-8B per layer: attention 2 x 4096 x 32 x 128 + 2 x 4096 x 8 x 128 = 41,943,040,
# MLP 3 x 4096 x 12288 = 150,994,944; 36 layers: 6,945,767,424 linear weights. The rest:
# embeddings and the untied head 2 x 151,936 x 4096 = 1,244,659,712, norms 36 x 2 x 4096 +
# 4096 = 299,008: 1,244,958,720 weights at 2 bytes = 2,489,917,440 bytes.
QWEN3_8B_LINEAR = 6_945_767_424
QWEN3_8B_REST_BYTES = 2_489_917_440


def test_block_linear_parameters_of_qwen3_8b() -> None:
    spec = builtin_model("Qwen/Qwen3-8B")
    assert spec is not None
    assert block_linear_parameters(spec) == QWEN3_8B_LINEAR


def test_fp8_weight_bytes_add_one_fp32_scale_per_128x128_block() -> None:
    # 1 byte per weight + 4 bytes per 16,384 weights: 6,945,767,424 + 1,695,744.
    spec = builtin_model("Qwen/Qwen3-8B")
    assert spec is not None
    fp8 = deployed_weight_bytes(spec, Deployment(weights="fp8"))
    assert fp8 == pytest.approx(6_947_463_168 + QWEN3_8B_REST_BYTES, rel=1e-12)


def test_fp4_weight_bytes_add_one_fp8_scale_per_16_weights() -> None:
    # NVFP4: 0.5 byte per weight + 1 byte per 16 weights = 9/16: 434,110,464 x 9.
    spec = builtin_model("Qwen/Qwen3-8B")
    assert spec is not None
    fp4 = deployed_weight_bytes(spec, Deployment(weights="fp4"))
    assert fp4 == pytest.approx(3_906_994_176 + QWEN3_8B_REST_BYTES, rel=1e-12)
    # The checkpoint deployment is the checkpoint's own weight bytes.
    assert deployed_weight_bytes(spec, Deployment()) == spec.weight_bytes


def test_activation_quantization_bytes_and_launches_by_scale_scheme() -> None:
    # bf16 checkpoint (2 bytes). fp8 group (DeepSeek's 1 x 128): read 2, write 1 + one fp32
    # scale per 128 elements; token and static: read 2, write 1; tensor: the absmax reduction
    # reads every element first (2 + 2 + 1); NVFP4: read 2, write 0.5 + one fp8 scale per 16.
    spec = builtin_model("Qwen/Qwen3-8B")
    assert spec is not None
    cases = {
        Deployment(): (0.0, 0.0, 2.0),
        Deployment(weights="fp8"): (3.0 + 4.0 / 128.0, 1.0, 1.0),
        Deployment(weights="fp8", activation_scales="group"): (3.03125, 1.0, 1.0),
        Deployment(weights="fp8", activation_scales="token"): (3.0, 1.0, 1.0),
        Deployment(weights="fp8", activation_scales="static"): (3.0, 1.0, 1.0),
        Deployment(weights="fp8", activation_scales="tensor"): (5.0, 3.0, 1.0),
        Deployment(weights="fp4"): (2.5625, 1.0, 0.5625),
    }
    for deployment, (moved, launches, read) in cases.items():
        assert deployment.quantization_bytes_per_element(spec) == moved, deployment
        assert deployment.quantization_kernels() == launches, deployment
        assert deployment.activation_bytes_per_element(spec) == read, deployment
    # Per-tensor / per-channel weight scales: 1 byte per weight, no 128 x 128 block scales.
    assert (
        Deployment(weights="fp8", activation_scales="tensor").weight_bytes_per_parameter(spec)
        == 1.0
    )
    assert Deployment(weights="fp8").weight_bytes_per_parameter(spec) == 1.0 + 4.0 / 16384.0


def test_per_tensor_fp8_prefill_pays_the_absmax_pass_and_two_launches_per_gemm() -> None:
    # Qwen3-8B on one H100, a 4096-token prefill, fp8 with per-tensor dynamic against group
    # scales: the GEMMs are compute-bound (the same time), so the passes differ by the
    # quantization's extra bytes and launches. Quantized inputs per token and layer: QKV 4096,
    # O 4096, gate/up 4096, down 12288 = 24576; 36 layers x 4096 tokens: 3.624 G elements x
    # (5 - 3.03125) bytes / (3.35 TB/s x 0.826) = 2.5783 ms; plus 2 more launches per
    # quantized GEMM: 36 x 4 x 2 x 3.48 us = 1.0022 ms.
    spec = builtin_model("Qwen/Qwen3-8B")
    gpu = builtin_gpu("h100_sxm")
    assert spec is not None and gpu is not None
    shape = prefill_shape(1, 4096, None, None)
    prices = {}
    for scales in ("group", "tensor"):
        stack = LayerStack(
            spec,
            gpu,
            1,
            36,
            spec.vocab_size,
            MEASURED_TERMS,
            deployment=Deployment(weights="fp8", activation_scales=scales),
        )
        prices[scales] = stack.seconds(shape) + stack.kernels(shape) * 3.48e-6
    elements = 24576.0 * 36 * 4096
    expected = elements * (5.0 - 3.03125) / (3.35e12 * 0.826) + 36 * 4 * 2 * 3.48e-6
    assert expected == pytest.approx(3.5806e-3, abs=1e-7)
    assert prices["tensor"] - prices["group"] == pytest.approx(expected, rel=1e-9)


def test_alltoall_volume_of_one_deepseek_moe_layer_at_ep8() -> None:
    # 128 tokens on a rank, 8 experts each over 8 GPUs: 7/8 of the 1024 copies leave the GPU,
    # 896 x 7168 x 2 bytes = 12,845,056 dispatched, the same combined back: 25,690,112.
    assert alltoall_bytes_per_rank(128.0, 8.0, 7168.0, 2.0, 8) == 25_690_112.0
    # At EP 2 half of them leave: 2 x 128 x 8 x 1/2 x 7168 x 2.
    assert alltoall_bytes_per_rank(128.0, 8.0, 7168.0, 2.0, 2) == 14_680_064.0
    assert alltoall_bytes_per_rank(128.0, 8.0, 7168.0, 2.0, 1) == 0.0


def test_expert_parallel_load_of_a_two_group_toy_layer() -> None:
    # 4 experts, top-1, one token, 2 groups of 2: each expert touched with p = 1 - 3/4 = 1/4,
    # a group's count Binomial(2, 1/4): F(0) = 9/16, F(1) = 15/16; the busiest of two:
    # (1 - (9/16)^2) + (1 - (15/16)^2) = 175/256 + 31/256 = 206/256 = 0.8046875.
    assert expert_parallel_load(4.0, 1.0, 1.0, 2) == pytest.approx(0.8046875, rel=1e-12)
    # Every expert touched: the busiest group holds all of its 2; no tokens: none.
    assert expert_parallel_load(4.0, 1.0, 1000.0, 2) == 2.0
    assert expert_parallel_load(4.0, 1.0, 0.0, 2) == 0.0


def _busiest_of(groups: int, n: int, p: float) -> float:
    """E[max] of ``groups`` Binomial(n, p) counts, from the pmf by math.comb (the test's own
    arithmetic: sum over m of P(max > m))."""
    import math

    total = 0.0
    for m in range(n):
        cdf = sum(math.comb(n, j) * p**j * (1.0 - p) ** (n - j) for j in range(m + 1))
        total += 1.0 - cdf**groups
    return total


def test_ep8_prices_the_busiest_groups_experts_in_a_deepseek_decode_step() -> None:
    # DeepSeek-R1 on 8 B200s, TP 8, fp8 weights, 4 decode requests of 1000 past tokens. 256
    # experts, top-8: p = 1 - (248/256)^4; EP 1 reads 256 p touched experts, each split over
    # the 8 GPUs; EP 8 holds 32 whole experts per GPU and waits for the busiest GPU, 8 x
    # E[max of 8 Binomial(32, p)] experts' worth. Everything else is equal, and the MoE layers
    # are memory-bound at 4 tokens, so the 58 MoE layers differ by
    # (EP8 load - EP1 touched) x 3 x 7168 x 2048 / 8 weights x fp8 bytes / (7.7 TB/s x 0.826, catalogue b200_sxm).
    spec = builtin_model("deepseek-ai/DeepSeek-R1")
    gpu = builtin_gpu("b200_sxm")
    assert spec is not None and gpu is not None
    p = 1.0 - (248.0 / 256.0) ** 4
    touched = 256.0 * p  # 30.52
    load = 8.0 * _busiest_of(8, 32, p)
    assert load == pytest.approx(52.5, abs=0.5)  # the busiest GPU: 6.6 of its 32 experts
    stacks = []
    for ep in (1, 8):
        deployment = Deployment("fp8", "fp8", ep, 1)
        stacks.append(
            LayerStack(spec, gpu, 8, 61, spec.vocab_size, MEASURED_TERMS, deployment=deployment)
        )
    shape = decode_shape(4, 4000, 1)
    weight_bytes = Deployment("fp8").weight_bytes_per_parameter(spec)
    expert_weights = 3.0 * 7168.0 * 2048.0 / 8.0
    expected = 58 * (load - touched) * expert_weights * weight_bytes / (7.7e12 * 0.826)
    assert stacks[1].seconds(shape) - stacks[0].seconds(shape) == pytest.approx(expected, rel=1e-9)
    assert expected == pytest.approx(1.11e-3, abs=0.01e-3)  # about 1.1 ms a step
    # Once the batch touches (nearly: p = 1 - 8e-8) every expert the groups are equal.
    wide = decode_shape(512, 512_000, 1)
    assert stacks[1].seconds(wide) == pytest.approx(stacks[0].seconds(wide), rel=1e-6)


def test_allreduce_latency_regime_reads_the_measured_curve() -> None:
    # SGLang #2904, TP 8 on H100: 16.7 us at 256 KiB, 22.1 us at 512 KiB; halfway (384 KiB)
    # 16.7 + (22.1 - 16.7) / 2 = 19.4 us.
    points = ALLREDUCE_CURVE[8]
    bus = allreduce_bus_bytes_per_s(MEASURED_TERMS, _gpu("h100_sxm"))
    assert allreduce_seconds(points, bus, 8, 262_144.0) == pytest.approx(16.7e-6, rel=1e-12)
    assert allreduce_seconds(points, bus, 8, 393_216.0) == pytest.approx(19.4e-6, rel=1e-12)


def test_allreduce_bandwidth_regime_uses_nccl_bus_bandwidth_per_nvlink_generation() -> None:
    points = ALLREDUCE_CURVE[8]
    # H100 (NVLink4): 480 GB/s NVLS bus bandwidth. 64 MiB past the last point (1 MiB, 33.8 us):
    # 33.8 us + 2 x 7/8 x 67,108,864 / 480e9 = 33.8 + 244.6677 us.
    h100 = allreduce_bus_bytes_per_s(MEASURED_TERMS, _gpu("h100_sxm"))
    assert h100 == 480e9
    message = 1_048_576.0 + 67_108_864.0
    assert allreduce_seconds(points, h100, 8, message) == pytest.approx(278.4677e-6, rel=1e-6)
    # A second size on the same GPU, 16 MiB past: 33.8 + 1.75 x 16,777,216 / 480e9 us =
    # 33.8 + 61.1669 = 94.9669 us; at the last measured point the regimes meet (33.8 us).
    message = 1_048_576.0 + 16_777_216.0
    assert allreduce_seconds(points, h100, 8, message) == pytest.approx(94.9669e-6, rel=1e-6)
    assert allreduce_seconds(points, h100, 8, 1_048_576.0) == pytest.approx(33.8e-6, rel=1e-12)
    # B200 (NVLink5): 830 GB/s. 83 MB past 1 MiB: 33.8 us + 1.75 x 83e6 / 830e9 = 208.8 us.
    b200 = allreduce_bus_bytes_per_s(MEASURED_TERMS, _gpu("b200_sxm"))
    assert b200 == 830e9
    assert allreduce_seconds(points, b200, 8, 1_048_576.0 + 83e6) == pytest.approx(
        208.8e-6, rel=1e-9
    )
    # A GPU without an NVLS figure (A100, NVLink3 300 GB/s): the ring at 370/450 of line rate.
    assert allreduce_bus_bytes_per_s(MEASURED_TERMS, _gpu("a100_sxm")) == pytest.approx(
        300e9 * 370.0 / 450.0
    )


def _gpu(name: str):  # type: ignore[no-untyped-def]
    gpu = builtin_gpu(name)
    assert gpu is not None
    return gpu


def test_mla_verify_attention_of_three_query_tokens_on_h200_tp8() -> None:
    # DeepSeek-R1's absorbed MLA at TP 8 (16 of 128 heads per GPU): per (query, key) pair
    # QK over the 512 + 64 latent and PV over the 512 latent, 2 x 128 x 576 + 2 x 128 x 512 =
    # 278,528 FLOPs over 8 GPUs = 34,816. A verification of 3 tokens for 64 requests with 1,500
    # past tokens each: 3 x 96,000 past pairs + 64 x (3 x 4 / 2) causal pairs = 288,384 pairs;
    # the KV read stays 96,000 + 192 latent tokens of 576 bf16 elements (1,152 bytes).
    spec = builtin_model("deepseek-ai/DeepSeek-R1")
    gpu = builtin_gpu("h200_sxm")
    assert spec is not None and gpu is not None
    stack = LayerStack(spec, gpu, 8, 61, spec.vocab_size, MEASURED_TERMS)
    assert stack.flops_per_pair == 34_816.0
    assert stack.kv_bytes_per_token == 1_152.0
    shape = decode_shape(64, 96_000, 3)
    assert shape.attention_pairs == 288_384.0
    assert shape.kv_tokens_read == 96_192.0
    # Per layer: 10.04 GFLOP at 989 TFLOP/s x 0.75 is 13.5 us; 110.8 MB at 4.8 TB/s x the KV
    # efficiency 0.604 is 38.2 us: memory-bound, so the 3-token verification reads the KV once
    # and its attention costs what a 1-token step's does (0.2 % more KV for the new tokens).
    one = decode_shape(64, 96_000, 1)
    assert shape.kv_tokens_read / one.kv_tokens_read == pytest.approx(96_192.0 / 96_064.0)
