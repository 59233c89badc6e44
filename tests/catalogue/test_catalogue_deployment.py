"""Deployments: quantized weight bytes, the MoE all-to-all volume, all-reduce in both regimes,
the busiest expert-parallel group's expert reads.

Every expected number is derived by hand in the comments from published geometry and the
sources named in aisim/catalogue/_deployment.py and _costs.py.
"""

from __future__ import annotations

import dataclasses

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
    # (5 - 3.03125) bytes / (3.35 TB/s x 0.834) = 2.5536 ms; plus 2 more launches per
    # quantized GEMM: 36 x 4 x 2 x 3.49 us = 1.0051 ms.
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
        prices[scales] = stack.seconds(shape) + stack.kernels(shape) * 3.49e-6
    elements = 24576.0 * 36 * 4096
    expected = elements * (5.0 - 3.03125) / (3.35e12 * 0.834) + 36 * 4 * 2 * 3.49e-6
    assert expected == pytest.approx(3.5587e-3, abs=1e-7)
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
    # (EP8 load - EP1 touched) x 3 x 7168 x 2048 / 8 weights x fp8 bytes / (7.7 TB/s x 0.834, catalogue b200_sxm).
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
    expected = 58 * (load - touched) * expert_weights * weight_bytes / (7.7e12 * 0.834)
    assert stacks[1].seconds(shape) - stacks[0].seconds(shape) == pytest.approx(expected, rel=1e-9)
    assert expected == pytest.approx(1.10e-3, abs=0.01e-3)  # about 1.1 ms a step
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


def _llama_70b_stack(gpu_name: str, tensor_parallel: int) -> LayerStack:
    # Llama-3.1-70B: hidden 8192, bf16, so one token's all-reduce message is 16 KiB.
    return LayerStack(_llama_spec(), _gpu(gpu_name), tensor_parallel, 80, 0, MEASURED_TERMS)


MIB = 1_048_576.0


def test_allreduce_up_to_the_custom_allreduce_limit_keeps_the_curve_and_peak_bus() -> None:
    # Up to 8 MiB (CustomAllreduce(max_size=8192 * 1024)): the 1 MiB point of the TP 8 curve
    # (33.8 us) + 2 x 7/8 x the extra bytes at NCCL's peak (480 GB/s NVLink4, 830 NVLink5).
    # H100 at 4 MiB: 33.8 + 1.75 x 3,145,728 / 480e9 s = 33.8 + 11.4688 = 45.2688 us;
    # at 8 MiB: 33.8 + 1.75 x 7,340,032 / 480e9 = 60.5605 us.
    h100 = _llama_70b_stack("h100_sxm", 8)
    assert h100.allreduce_message_seconds(4 * MIB) == pytest.approx(45.2688e-6, rel=1e-5)
    assert h100.allreduce_message_seconds(8 * MIB) == pytest.approx(60.5605e-6, rel=1e-5)
    # B200 at 4 MiB: 33.8 + 1.75 x 3,145,728 / 830e9 = 40.4326 us; 8 MiB: 49.2760 us.
    b200 = _llama_70b_stack("b200_sxm", 8)
    assert b200.allreduce_message_seconds(4 * MIB) == pytest.approx(40.4326e-6, rel=1e-5)
    assert b200.allreduce_message_seconds(8 * MIB) == pytest.approx(49.2760e-6, rel=1e-5)


def test_allreduce_beyond_the_limit_reads_nccl_bus_bandwidth_by_size_per_nvlink_generation() -> (
    None
):
    # NVLink4 (Azure ND H200 v5, NCCL 2.20.5 NVLS busBw): 240.41 GB/s at 16 MiB, 300.91 at
    # 32 MiB, 412.45 at 128 MiB. TP 4 has no symmetric-memory figure: NCCL alone,
    # 2 x 3/4 x 16,777,216 / 240.41e9 = 104.6788 us; at 12 MiB (below the first point, held):
    # 1.5 x 12,582,912 / 240.41e9 = 78.5091 us.
    h100 = _llama_70b_stack("h100_sxm", 4)
    assert h100.allreduce_message_seconds(16 * MIB) == pytest.approx(104.6788e-6, rel=1e-5)
    assert h100.allreduce_message_seconds(12 * MIB) == pytest.approx(78.5091e-6, rel=1e-5)
    # TP 8 at 128 MiB (beyond vLLM's 64 MiB symmetric-memory limit): 1.75 x 134,217,728 /
    # 412.45e9 = 569.4776 us.
    h100_tp8 = _llama_70b_stack("h100_sxm", 8)
    assert h100_tp8.allreduce_message_seconds(128 * MIB) == pytest.approx(569.4776e-6, rel=1e-5)
    # NVLink5 (Azure ND GB200 v6, NCCL 2.25.1): 331.09 GB/s at 16 MiB, 422.62 at 32, 550.73
    # at 64. TP 8, 16 MiB: 1.75 x 16,777,216 / 331.09e9 = 88.6772 us; 24 MiB, log-size
    # linear: 331.09 + log2(1.5) x (422.62 - 331.09) = 331.09 + 0.5849625 x 91.53 = 384.6316
    # GB/s, 1.75 x 25,165,824 / 384.6316e9 = 114.4997 us.
    b200 = _llama_70b_stack("b200_sxm", 8)
    assert b200.allreduce_message_seconds(16 * MIB) == pytest.approx(88.6772e-6, rel=1e-5)
    assert b200.allreduce_message_seconds(24 * MIB) == pytest.approx(114.4997e-6, rel=1e-5)
    # Beyond the last point (8 GiB: 479.98 GB/s on NVLink4) the last figure is held:
    # 16 GiB at TP 8, 1.75 x 17,179,869,184 / 479.98e9 s = 62.6375 ms.
    assert h100_tp8.allreduce_message_seconds(16384 * MIB) == pytest.approx(62.6375e-3, rel=1e-5)


def test_allreduce_on_hopper_tp8_takes_the_faster_of_nccl_and_vllm_symmetric_memory() -> None:
    # vllm#42324, Hopper, 8 GPUs, symm_mem_multimem: 0.087 ms at 16 MiB, 0.165 at 32 MiB.
    # 16 MiB: NCCL 1.75 x 16,777,216 / 240.41e9 = 122.1252 us, so 87 us. 24 MiB: symmetric
    # memory halfway, (87 + 165) / 2 = 126 us; NCCL at 275.8002 GB/s (log-size linear between
    # 240.41 and 300.91) 1.75 x 25,165,824 / 275.8002e9 = 159.6815 us: 126 us.
    h100 = _llama_70b_stack("h100_sxm", 8)
    assert h100.allreduce_message_seconds(16 * MIB) == pytest.approx(87e-6, rel=1e-9)
    assert h100.allreduce_message_seconds(24 * MIB) == pytest.approx(126e-6, rel=1e-9)
    # B200 has no symmetric-memory table: NCCL (88.6772 us at 16 MiB, above).
    b200 = _llama_70b_stack("b200_sxm", 8)
    assert b200.allreduce_message_seconds(16 * MIB) == pytest.approx(88.6772e-6, rel=1e-5)


def test_b200_attention_runs_at_flashattention4s_measured_efficiency() -> None:
    # flash-attention#2280: FlashAttention-4 forward 1534.8 TFLOP/s (BF16, head dim 128,
    # non-causal) on B200; Hopper keeps FlashAttention-3's 0.75 of 989 = 741.75 TFLOP/s.
    assert _llama_70b_stack("b200_sxm", 8).attention_flops_per_s == pytest.approx(1534.8e12)
    assert _llama_70b_stack("h100_sxm", 8).attention_flops_per_s == pytest.approx(741.75e12)
    # A 8192-token prefill at TP 8 (8 of 64 query heads, head dim 128): 4 x 8 x 128 = 4096
    # FLOPs per (query, key) pair, 8192 x 8193 / 2 = 33,558,528 pairs: 137.456 GFLOP per
    # layer, 89.561 us at 1534.8 TFLOP/s where FlashAttention-3's 0.75 of 2250 (1687.5)
    # gave 81.455 us (compute-bound: the layer's KV and output reads are 16.8 MB, under 3 us),
    # 8.104 us more per layer, 648.3 us over 80 layers.
    b200 = _llama_70b_stack("b200_sxm", 8)
    fa3 = LayerStack(
        _llama_spec(),
        _gpu("b200_sxm"),
        8,
        80,
        0,
        dataclasses.replace(MEASURED_TERMS, attention_efficiency_by_sm={}),
    )
    shape = prefill_shape(1, 8192, None, None)
    difference = b200.seconds(shape) - fa3.seconds(shape)
    assert difference == pytest.approx(648.33e-6, rel=1e-4)


def _llama_spec():  # type: ignore[no-untyped-def]
    spec = builtin_model("meta-llama/Meta-Llama-3.1-70B")
    assert spec is not None
    return spec


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
