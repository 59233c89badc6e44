"""Deployments: quantized weight bytes, the MoE all-to-all volume, all-reduce in both regimes.

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
from aisim.fpm._roofline_ops import allreduce_bus_bytes_per_s, allreduce_seconds

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


def test_alltoall_volume_of_one_deepseek_moe_layer_at_ep8() -> None:
    # 128 tokens on a rank, 8 experts each over 8 GPUs: 7/8 of the 1024 copies leave the GPU,
    # 896 x 7168 x 2 bytes = 12,845,056 dispatched, the same combined back: 25,690,112.
    assert alltoall_bytes_per_rank(128.0, 8.0, 7168.0, 2.0, 8) == 25_690_112.0
    # At EP 2 half of them leave: 2 x 128 x 8 x 1/2 x 7168 x 2.
    assert alltoall_bytes_per_rank(128.0, 8.0, 7168.0, 2.0, 2) == 14_680_064.0
    assert alltoall_bytes_per_rank(128.0, 8.0, 7168.0, 2.0, 1) == 0.0


def test_allreduce_latency_regime_reads_the_measured_curve() -> None:
    # SGLang #2904, TP 8 on H100: 16.7 us at 256 KiB, 22.1 us at 512 KiB; halfway 19.45 us.
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
