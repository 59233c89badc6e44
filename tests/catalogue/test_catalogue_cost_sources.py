"""Every cost term of the default roofline names a public source, and the docs list it."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from aisim.catalogue import _costs
from aisim.catalogue._costs import COST_SOURCES, IDEAL_TERMS, MEASURED_TERMS

DOC = Path(__file__).resolve().parents[2] / "docs" / "estimators.md"


def test_each_source_is_a_public_address_listed_in_the_docs_next_to_its_value() -> None:
    text = DOC.read_text()
    assert len(COST_SOURCES) == 18
    for source in COST_SOURCES:
        assert source.source.startswith("https://"), source.name
        row = re.search(rf"^\| `{source.name}` \|(.*)$", text, re.M)
        assert row is not None, f"{source.name} missing from docs/estimators.md"
        address = source.source.split()[0]
        assert address in row.group(1), f"{source.name}: docs row does not cite {address}"


def test_scalar_values_in_the_sources_are_the_constants_the_model_uses() -> None:
    for source in COST_SOURCES:
        if source.name in (
            "ALLREDUCE_CURVE",
            "ALLREDUCE_BUS_BYTES_PER_S",
            "ALLREDUCE_NCCL_BUS_CURVE",
            "ALLREDUCE_SYMM_MEM_CURVE",
            "SCALED_MM_FP8_EFFICIENCY",
            "ATTENTION_EFFICIENCY_BY_SM",
        ):
            continue
        assert float(source.value) == getattr(_costs, source.name), source.name
    assert MEASURED_TERMS.weight_bandwidth_efficiency == _costs.WEIGHT_BANDWIDTH_EFFICIENCY
    assert MEASURED_TERMS.kv_bandwidth_efficiency == _costs.KV_BANDWIDTH_EFFICIENCY
    assert MEASURED_TERMS.kernel_overhead_s == _costs.KERNEL_OVERHEAD_S
    assert MEASURED_TERMS.step_overhead_s == _costs.STEP_OVERHEAD_S
    assert MEASURED_TERMS.ngram_proposal_s_per_request == _costs.NGRAM_PROPOSAL_S_PER_REQUEST
    assert MEASURED_TERMS.attention_compute_efficiency == _costs.ATTENTION_COMPUTE_EFFICIENCY
    assert MEASURED_TERMS.gemm_compute_efficiency == _costs.GEMM_COMPUTE_EFFICIENCY
    # vllm#19566: 2545 of B200's 4500 dense FP8 TFLOP/s, SM100 only.
    assert MEASURED_TERMS.scaled_mm_fp8_efficiency == {100: 2545.0 / 4500.0}
    # flash-attention#2280: FlashAttention-4, 1534.8 of B200's 2250 dense BF16 TFLOP/s.
    assert MEASURED_TERMS.attention_efficiency_by_sm == {100: 1534.8 / 2250.0}
    assert MEASURED_TERMS.custom_allreduce_max_bytes == 8192 * 1024
    assert (
        MEASURED_TERMS.linear_state_bandwidth_efficiency == _costs.LINEAR_STATE_BANDWIDTH_EFFICIENCY
    )
    assert MEASURED_TERMS.eager_linear_layer_s == _costs.EAGER_LINEAR_LAYER_S
    assert MEASURED_TERMS.dspark_markov_step_s == _costs.DSPARK_MARKOV_STEP_S


def test_the_allreduce_curve_is_the_published_table_made_non_decreasing() -> None:
    # sglang#2904, H100 custom all-reduce, ms at 512 B .. 1 MiB, copied by hand.
    published = {
        2: [0.0037, 0.0039, 0.0045, 0.0079, 0.0125, 0.0199],
        4: [0.0048, 0.0048, 0.0048, 0.0139, 0.0202, 0.0311],  # 4 KiB measured 0.0037
        8: [0.0059, 0.0059, 0.0078, 0.0167, 0.0221, 0.0338],  # 4 KiB measured 0.0057
    }
    for tp, milliseconds in published.items():
        curve = _costs.ALLREDUCE_CURVE[tp]
        assert [size for size, _ in curve] == [512, 4096, 32768, 262144, 524288, 1048576]
        assert [seconds * 1000.0 for _, seconds in curve] == pytest.approx(milliseconds)


def test_the_large_message_allreduce_curves_are_the_published_tables() -> None:
    # Azure/AI-benchmarking-guide, NCCL all_reduce busBw in GB/s at 16 MiB .. 8 GiB (the
    # tables write 16M, 33M, 67M, 134M, 268M, 536M, 1G, 2G, 4G, 8G), copied by hand:
    # ND_H200_v5_results.md (8x H200, NVLS) and ND_GB200_v6_results.md (4x GB200).
    h200 = [240.41, 300.91, 368.11, 412.45, 432.24, 442.72, 467.58, 472.57, 477.41, 479.98]
    gb200 = [331.09, 422.62, 550.73, 574.19, 593.53, 618.74, 646.87, 666.63, 673.06, 679.61]
    sizes = [16 * 2**20 * 2**i for i in range(10)]
    for line_rate, published in ((450e9, h200), (900e9, gb200)):
        curve = _costs.ALLREDUCE_NCCL_BUS_CURVE[line_rate]
        assert [size for size, _ in curve] == sizes
        assert [bus / 1e9 for _, bus in curve] == pytest.approx(published)
    assert sizes[-1] == 8 * 2**30
    # vllm#42324, Hopper world size 8, symm_mem_multimem ms at 8 .. 64 MiB.
    (tp8,) = _costs.ALLREDUCE_SYMM_MEM_CURVE[90].values()
    assert list(_costs.ALLREDUCE_SYMM_MEM_CURVE) == [90]
    assert list(_costs.ALLREDUCE_SYMM_MEM_CURVE[90]) == [8]
    assert [size / 2**20 for size, _ in tp8] == pytest.approx([8, 16, 32, 47.84, 64])
    assert [seconds * 1000.0 for _, seconds in tp8] == pytest.approx(
        [0.046, 0.087, 0.165, 0.244, 0.320]
    )


def test_the_ideal_terms_are_the_former_constants_without_overheads() -> None:
    assert (
        IDEAL_TERMS.gemm_compute_efficiency,
        IDEAL_TERMS.attention_compute_efficiency,
        IDEAL_TERMS.weight_bandwidth_efficiency,
        IDEAL_TERMS.kv_bandwidth_efficiency,
        IDEAL_TERMS.link_efficiency,
        IDEAL_TERMS.allreduce_latency_s,
    ) == (0.7, 0.5, 0.8, 0.8, 0.7, 5e-6)
    assert IDEAL_TERMS.kernel_overhead_s == IDEAL_TERMS.step_overhead_s == 0.0
    assert IDEAL_TERMS.eager_linear_layer_s == 0.0
    assert IDEAL_TERMS.dspark_markov_step_s == 0.0
    assert IDEAL_TERMS.linear_state_bandwidth_efficiency == 0.8
    assert IDEAL_TERMS.mtp_legacy_scale and not IDEAL_TERMS.charge_sampling
