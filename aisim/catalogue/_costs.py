"""Efficiency and overhead terms of the roofline cost model, each with its public source.

Two term sets: ``MEASURED_TERMS`` (the default ``roofline`` estimator: achievable bandwidths and
throughputs, per-kernel and per-step overheads, measured all-reduce latencies) and ``IDEAL_TERMS``
(the ``roofline_ideal`` bound: the historical round efficiencies and no overheads). Every value of
``MEASURED_TERMS`` names its source in ``COST_SOURCES`` (rendered in docs/estimators.md); a value
derived from a public measurement says which one and how.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final


@dataclass(frozen=True, eq=False)
class CostSource:
    """One documented term: its name, value, unit and where the value comes from."""

    name: str
    value: str
    unit: str
    source: str
    how: str


@dataclass(frozen=True, eq=False)
class CostTerms:
    """The efficiency and overhead terms one roofline variant applies (frozen: the term sets
    are shared by every estimator in the process).

    * ``gemm_compute_efficiency`` / ``attention_compute_efficiency``: fraction of the dense BF16
      peak a compute-bound GEMM / attention kernel reaches;
    * ``weight_bandwidth_efficiency``: fraction of peak HBM bandwidth a streaming kernel (weights,
      activations, logits) reaches; ``kv_bandwidth_efficiency``: the same for attention's KV reads;
    * ``link_efficiency`` and ``allreduce_latency_s``: the bandwidth all-reduce model (ideal only);
      ``allreduce_curve``: measured all-reduce latency by TP size and message bytes (seconds), used
      instead when not empty;
    * ``kernel_overhead_s``: time each kernel adds beyond its roofline time (launch/dispatch);
    * ``step_overhead_s``: host-side time every forward pass pays (input preparation, sampling
      synchronisation, scheduling not hidden behind the GPU);
    * ``ngram_proposal_s_per_request``: host-side n-gram lookup per request per round;
    * ``charge_sampling``: price the sampler / rejection sampler reading the fp32 logits;
    * ``mtp_legacy_scale``: price MTP as the (depth + L) / L compute scale instead of draft steps;
    * ``allreduce_bus_bytes_per_s``: NCCL all-reduce bus bandwidth by per-GPU NVLink line rate
      (bytes/s), for messages beyond the measured latency curve up to
      ``custom_allreduce_max_bytes``;
    * ``link_protocol_efficiency``: the fraction of the NVLink line rate NCCL moves as payload
      (ring all-reduce bus bandwidth where no NVLS figure is known; all-to-all bandwidth);
    * ``linear_state_bandwidth_efficiency``: fraction of peak HBM bandwidth the linear-attention
      (Gated DeltaNet) kernels reach on the per-request recurrent state they read and write;
    * ``eager_linear_layer_s``: host time per linear-attention layer of a pass that carries
      prefill tokens (such a pass is not a uniform decode batch, so the engine replays the
      piecewise CUDA graphs and launches the layer's recurrent core eagerly);
    * ``dspark_markov_step_s``: host time per drafted position of a DSpark round (vLLM runs the
      block's sequential Markov correction and draft sampler as a Python loop of eager kernels,
      one iteration per position);
    * ``draft_step_host_s``: host time each sequential draft step adds beyond its GPU work
      (0 in both sets: the 2026 engines of the public GPU runs hide it; an engine version that
      does not, vLLM mid-2025, is priced by replacing it, ``qualification.public``);
    * ``scaled_mm_fp8_efficiency``: fraction of the dense FP8 peak a compute-bound fp8 GEMM with
      per-tensor / per-channel scales (vLLM's ``cutlass_scaled_mm``: fp8 deployments with
      ``token``, ``static`` or ``tensor`` activation scales) reaches, by the GPU's SM version;
      an SM version not listed takes ``gemm_compute_efficiency``;
    * ``attention_efficiency_by_sm``: ``attention_compute_efficiency`` for the GPUs of one SM
      version whose attention kernel has its own measurement (an SM version not listed takes
      ``attention_compute_efficiency``);
    * ``custom_allreduce_max_bytes``: the largest message the engines' custom all-reduce takes;
      a larger one goes to NCCL and is priced from ``allreduce_nccl_bus_curve`` (0: no limit);
    * ``allreduce_nccl_bus_curve``: NCCL's measured all-reduce bus bandwidth by message size
      ((bytes, bus bytes/s) points, ascending), keyed by the per-GPU NVLink line rate;
    * ``allreduce_symm_mem_curve``: vLLM's torch symmetric-memory all-reduce, measured latency
      ((bytes, seconds) points, ascending) by SM version and TP size, over the sizes vLLM gives
      it; beyond the custom all-reduce limit a message costs the faster of it and NCCL.
    """

    name: str
    gemm_compute_efficiency: float
    attention_compute_efficiency: float
    weight_bandwidth_efficiency: float
    kv_bandwidth_efficiency: float
    link_efficiency: float
    allreduce_latency_s: float
    allreduce_curve: dict[int, list[tuple[float, float]]]
    kernel_overhead_s: float
    step_overhead_s: float
    ngram_proposal_s_per_request: float
    charge_sampling: bool
    mtp_legacy_scale: bool
    allreduce_bus_bytes_per_s: dict[float, float]
    link_protocol_efficiency: float
    linear_state_bandwidth_efficiency: float
    eager_linear_layer_s: float
    dspark_markov_step_s: float
    draft_step_host_s: float
    scaled_mm_fp8_efficiency: dict[int, float]
    attention_efficiency_by_sm: dict[int, float]
    custom_allreduce_max_bytes: float
    allreduce_nccl_bus_curve: dict[float, list[tuple[float, float]]]
    allreduce_symm_mem_curve: dict[int, dict[int, list[tuple[float, float]]]]


def _non_decreasing(points: list[tuple[float, float]]) -> list[tuple[float, float]]:
    """The running maximum of a latency curve (a larger message never costs less)."""
    result: list[tuple[float, float]] = []
    highest = 0.0
    for size, seconds in points:
        highest = seconds if seconds > highest else highest
        result.append((size, highest))
    return result


_ALLREDUCE_BYTES: Final = (512.0, 4096.0, 32768.0, 262144.0, 524288.0, 1048576.0)
# SGLang PR #2904 (H100, custom all-reduce, test_trt_reduce.py), latency in ms per message size.
_ALLREDUCE_MS: Final = {
    2: (0.0037, 0.0039, 0.0045, 0.0079, 0.0125, 0.0199),
    4: (0.0048, 0.0037, 0.0048, 0.0139, 0.0202, 0.0311),
    8: (0.0059, 0.0057, 0.0078, 0.0167, 0.0221, 0.0338),
}
#: All-reduce latency (s) by TP size over message bytes, made non-decreasing in size.
ALLREDUCE_CURVE: Final[dict[int, list[tuple[float, float]]]] = {
    tp: _non_decreasing(
        [(size, ms / 1000.0) for size, ms in zip(_ALLREDUCE_BYTES, values, strict=True)]
    )
    for tp, values in _ALLREDUCE_MS.items()
}

#: NCCL all-reduce bus bandwidth (nccl-tests' busBw) on 8 GPUs, by the per-GPU NVLink line rate
#: (bytes/s, one direction), for messages between the latency curve's last point (1 MiB) and the
#: custom all-reduce limit (8 MiB; beyond it ``ALLREDUCE_NCCL_BUS_CURVE``): NVLink4 (H100/H200,
#: 450 GB/s) ~480 GB/s with NVLink SHARP (NCCL maintainer, NVIDIA/nccl-tests#212; 8x H200
#: measured 475 GB/s in NVIDIA/nccl-tests#272);
#: NVLink5 (B200, 900 GB/s) 830 GB/s measured on 8x B200 (NVIDIA/nccl#1807, NCCL 2.27).
ALLREDUCE_BUS_BYTES_PER_S: Final[dict[float, float]] = {450e9: 480e9, 900e9: 830e9}
#: The engines' custom all-reduce takes messages up to 8 MiB: vLLM
#: ``vllm/distributed/device_communicators/custom_all_reduce.py`` and SGLang
#: ``python/sglang/srt/distributed/device_communicators/custom_all_reduce.py``,
#: ``CustomAllreduce.__init__(..., max_size=8192 * 1024)``; a larger message goes to NCCL.
CUSTOM_ALLREDUCE_MAX_BYTES: Final = 8192.0 * 1024.0
_MIB: Final = 1048576.0
#: NCCL all-reduce bus bandwidth by message size (nccl-tests' busBw, in-place), from the Azure AI
#: benchmarking guide's published runs (Azure/AI-benchmarking-guide): 8x H200, NCCL 2.20.5, NVLS
#: (``Azure_Results/ND_H200_v5_results.md``) for NVLink4 (H100, H200: 450 GB/s per GPU); 4x
#: GB200 in one host, NCCL 2.25.1 (``Azure_Results/ND_GB200_v6_results.md``) for NVLink5 (B200,
#: GB200: 900 GB/s). Every point from 16 MiB (the first size above the custom all-reduce limit)
#: to 8 GiB, GB/s as published.
_NCCL_BUS_GBPS: Final = {
    450e9: (240.41, 300.91, 368.11, 412.45, 432.24, 442.72, 467.58, 472.57, 477.41, 479.98),
    900e9: (331.09, 422.62, 550.73, 574.19, 593.53, 618.74, 646.87, 666.63, 673.06, 679.61),
}
#: (message bytes, bus bytes/s) by NVLink line rate: 16 MiB .. 8 GiB, doubling.
ALLREDUCE_NCCL_BUS_CURVE: Final[dict[float, list[tuple[float, float]]]] = {
    line: [(16.0 * _MIB * 2.0**index, gbps * 1e9) for index, gbps in enumerate(values)]
    for line, values in _NCCL_BUS_GBPS.items()
}
#: vLLM's torch symmetric-memory all-reduce (``multimem_all_reduce_`` on 8 GPUs), (message bytes,
#: seconds) by SM version and TP size: Hopper (SM 9.0), world size 8, 0.046 / 0.087 / 0.165 /
#: 0.244 / 0.320 ms at 8 / 16 / 32 / 47.84 / 64 MiB (vllm-project/vllm#42324,
#: ``symm_mem_multimem`` column). vLLM sends Hopper TP 8 messages up to 64 MiB to it
#: (``vllm/distributed/device_communicators/all_reduce_utils.py``,
#: ``SYMM_MEM_ALL_REDUCE_MAX_SIZES["9.0"][8]``, read by
#: ``SymmMemCommunicator.should_use_symm_mem`` in ``symm_mem.py``).
ALLREDUCE_SYMM_MEM_CURVE: Final[dict[int, dict[int, list[tuple[float, float]]]]] = {
    90: {
        8: [
            (8.0 * _MIB, 0.046 / 1000.0),
            (16.0 * _MIB, 0.087 / 1000.0),
            (32.0 * _MIB, 0.165 / 1000.0),
            (47.84 * _MIB, 0.244 / 1000.0),
            (64.0 * _MIB, 0.320 / 1000.0),
        ]
    },
}
#: NCCL's effective NVLink payload bandwidth: 370 of 450 GB/s on H100 (~20 % protocol
#: overhead; NVIDIA/nccl-tests#212), the bus bandwidth of ring and non-all-reduce collectives.
LINK_PROTOCOL_EFFICIENCY: Final = 370.0 / 450.0

#: GEMMs that are compute-bound reach ~70 % of the dense BF16 peak (the unchanged ideal value,
#: consistent with FlashAttention-3's GEMM-like kernels at 75 % and cuBLAS large GEMMs).
GEMM_COMPUTE_EFFICIENCY: Final = 0.7
#: vLLM's CUTLASS fp8 GEMM on Blackwell (``cutlass_scaled_mm``, SM100 kernels of
#: ``csrc/quantization/w8a8/cutlass/c3x/scaled_mm_sm100_fp8_dispatch.cuh``: one 256 x 128 x 128
#: tile, 2 x 2 cluster config for every M > 256) reaches 2545 TFLOP/s of B200's 4500 dense FP8
#: without the activation quantization (vllm-project/vllm#19566, ``bench_fp8_gemm.py`` on B200,
#: Llama-3.1-8B shapes, batch 16384: BF16 1513, fp8 per-tensor 2226 with the quantization, 2545
#: without), where the BF16 GEMM reaches 1513 of 2250 (0.67, about ``GEMM_COMPUTE_EFFICIENCY``).
#: Hopper keeps ``GEMM_COMPUTE_EFFICIENCY``: row-scaled fp8 GEMMs run 1.9..2.1 x the BF16 GEMM's
#: TFLOP/s on H100 (pytorch/FBGEMM#2546: 1125 / 585 at 8192^3, 1083 / 575 and 1141 / 546 at
#: 65536-row shapes), the doubled peak at the BF16 efficiency.
SCALED_MM_FP8_EFFICIENCY: Final[dict[int, float]] = {100: 2545.0 / 4500.0}
#: FlashAttention-3 reaches 740 TFLOP/s of H100's 989 (75 %) in BF16/FP16 forward attention.
ATTENTION_COMPUTE_EFFICIENCY: Final = 0.75
#: On Blackwell (SM100) FlashAttention-4: 1534.8 TFLOP/s of B200's 2250 dense BF16 in the
#: non-causal BF16 forward, head dim 128, 8192 tokens (Dao-AILab/flash-attention#2280; causal
#: 1418.1, 0.63), where FlashAttention-3's figure is a Hopper kernel's.
ATTENTION_EFFICIENCY_BY_SM: Final[dict[int, float]] = {100: 1534.8 / 2250.0}
#: The next four are fitted on public GPU serving runs (evidence/public-gpu/fitted_terms.json,
#: ``python -m qualification.public_gpu.fit``): 432 InferenceX history rows (DeepSeek-R1, SGLang
#: and TensorRT-LLM, H200 and B200, no SD, not also in the latest file); held out: the latest
#: file, the Qwen3.8-27B sweep, every MTP row and ``aisim qualify public``'s figures.
#: Streaming kernels reach 0.834 of peak HBM: the H100 profile's 0.78 (mikamirai.com, "MLP
#: weight load") times the fitted factor 1.070 (1.059 before the all-reduce's NCCL curves and
#: B200's FlashAttention-4 efficiency were priced, 1.057 before the quantized GEMMs' activation
#: quantization was priced, 1.050 before the norms were priced as fused add-RMSNorms).
WEIGHT_BANDWIDTH_EFFICIENCY: Final = 0.834
#: Attention's KV reads: the same profile's 0.57 ("attention K/V access") times the same factor.
KV_BANDWIDTH_EFFICIENCY: Final = 0.610
#: Time each kernel adds beyond its roofline time (launch gaps, tails, small-kernel floors):
#: fitted, 3.49 us (3.48 before the all-reduce's NCCL curves and B200's FlashAttention-4
#: efficiency; unchanged by the activation quantization's traffic; 3.47 us before the fused
#: add-RMSNorms, 3.87 us before expert parallelism
#: priced the busiest expert group; the laptop CUDA-graph replay figure, 0.58 us, was the first
#: value).
KERNEL_OVERHEAD_S: Final = 3.49e-6
#: Host time per forward pass that the GPU does not hide: fitted, 0 (the per-kernel term takes
#: the whole per-pass cost; SGLang's and TensorRT-LLM's overlap schedulers and vLLM V1's async
#: scheduling prepare the next step while the GPU runs). The former 1.1 ms was derived from
#: vLLM's mid-2025 batch-1 TPOT (vllm-project/vllm#20780), which is now a held-out row.
STEP_OVERHEAD_S: Final = 0.0
#: Host-side n-gram proposal per request per round (vLLM's numba KMP lookup over the context):
#: 1.9 s cumulative over a 5K-request ShareGPT run (vllm-project/vllm#13365) spread over about
#: 0.7 M request-rounds (about 200 output tokens per request, about 1.4 tokens per round).
NGRAM_PROPOSAL_S_PER_REQUEST: Final = 2.7e-6
#: The next two are fitted on the HumanEval half of the vLLM Qwen3.8-27B sweep on one B200
#: (evidence/public-gpu/fitted_terms.json, ``hybrid``); the math_reasoning half is held out.
#: The Gated DeltaNet kernels' recurrent-state traffic (fp32, read and written per request and
#: layer by ``fused_sigmoid_gating_delta_rule_update``) reaches this fraction of peak HBM (0.44
#: before the refit with B200's FlashAttention-4 efficiency and the streaming efficiency 0.834,
#: 0.46 before the refit with 0.826).
LINEAR_STATE_BANDWIDTH_EFFICIENCY: Final = 0.41
#: Host time per Gated DeltaNet layer of a pass with prefill tokens: vLLM splits its piecewise
#: CUDA graphs at the GDN core op (``CompilationConfig._attention_ops``), and a batch that is
#: not uniform decode replays the piecewise graphs, so the core (conv, the chunked delta-rule
#: kernels, state gather / scatter, the decode kernel) is launched from the host layer by layer
#: (200 us before the same refit, 260 before the refit with 0.826).
EAGER_LINEAR_LAYER_S: Final = 100e-6
#: Host time per drafted position of a DSpark round: vLLM's ``DSparkProposer._sample_draft_tokens``
#: (``vllm/v1/spec_decode/dspark.py``) runs ``sample_dspark_markov_block``
#: (``dspark_sampling.py``), a Python loop over the block's positions, each the Markov bias
#: (``apply_dspark_markov_bias``) and the eager sampler (about 10 launches a step, as the fused
#: variant's docstring counts them), outside any CUDA graph. Fitted on the HumanEval DSpark points
#: of the same sweep at 1..64 streams (evidence/public-gpu/fitted_terms.json, ``dspark``); the
#: math_reasoning DSpark points are held out (314.3 us before the refit with the all-reduce's
#: NCCL curves and B200's FlashAttention-4 efficiency; 319 us before the prompt's drafting and the
#: block drafter's context K/V were priced).
DSPARK_MARKOV_STEP_S: Final = 305.0e-6

MEASURED_TERMS: Final = CostTerms(
    name="roofline",
    gemm_compute_efficiency=GEMM_COMPUTE_EFFICIENCY,
    attention_compute_efficiency=ATTENTION_COMPUTE_EFFICIENCY,
    weight_bandwidth_efficiency=WEIGHT_BANDWIDTH_EFFICIENCY,
    kv_bandwidth_efficiency=KV_BANDWIDTH_EFFICIENCY,
    link_efficiency=0.7,
    allreduce_latency_s=0.0,
    allreduce_curve=ALLREDUCE_CURVE,
    kernel_overhead_s=KERNEL_OVERHEAD_S,
    step_overhead_s=STEP_OVERHEAD_S,
    ngram_proposal_s_per_request=NGRAM_PROPOSAL_S_PER_REQUEST,
    charge_sampling=True,
    mtp_legacy_scale=False,
    allreduce_bus_bytes_per_s=ALLREDUCE_BUS_BYTES_PER_S,
    link_protocol_efficiency=LINK_PROTOCOL_EFFICIENCY,
    linear_state_bandwidth_efficiency=LINEAR_STATE_BANDWIDTH_EFFICIENCY,
    eager_linear_layer_s=EAGER_LINEAR_LAYER_S,
    dspark_markov_step_s=DSPARK_MARKOV_STEP_S,
    draft_step_host_s=0.0,
    scaled_mm_fp8_efficiency=SCALED_MM_FP8_EFFICIENCY,
    attention_efficiency_by_sm=ATTENTION_EFFICIENCY_BY_SM,
    custom_allreduce_max_bytes=CUSTOM_ALLREDUCE_MAX_BYTES,
    allreduce_nccl_bus_curve=ALLREDUCE_NCCL_BUS_CURVE,
    allreduce_symm_mem_curve=ALLREDUCE_SYMM_MEM_CURVE,
)

#: The pure roofline: the round efficiencies it always had, no overheads (a bound, not a forecast).
IDEAL_TERMS: Final = CostTerms(
    name="roofline_ideal",
    gemm_compute_efficiency=0.7,
    attention_compute_efficiency=0.5,
    weight_bandwidth_efficiency=0.8,
    kv_bandwidth_efficiency=0.8,
    link_efficiency=0.7,
    allreduce_latency_s=5e-6,
    allreduce_curve={},
    kernel_overhead_s=0.0,
    step_overhead_s=0.0,
    ngram_proposal_s_per_request=0.0,
    charge_sampling=False,
    mtp_legacy_scale=True,
    allreduce_bus_bytes_per_s={},
    link_protocol_efficiency=0.7,
    linear_state_bandwidth_efficiency=0.8,
    eager_linear_layer_s=0.0,
    dspark_markov_step_s=0.0,
    draft_step_host_s=0.0,
    scaled_mm_fp8_efficiency={},
    attention_efficiency_by_sm={},
    custom_allreduce_max_bytes=0.0,
    allreduce_nccl_bus_curve={},
    allreduce_symm_mem_curve={},
)

COST_SOURCES: Final = (
    CostSource(
        "GEMM_COMPUTE_EFFICIENCY",
        "0.7",
        "of dense BF16 peak",
        "https://arxiv.org/abs/2407.08608 (FlashAttention-3: 75 % of H100 peak for tuned "
        "tensor-core kernels)",
        "compute-bound GEMMs only (prefill); kept at the historical 0.7, below the FA-3 figure",
    ),
    CostSource(
        "SCALED_MM_FP8_EFFICIENCY",
        "0.566 (SM100)",
        "of dense FP8 peak",
        "https://github.com/vllm-project/vllm/pull/19566 (bench_fp8_gemm.py on B200, Llama-3.1-8B "
        "shapes, batch 16384: fp8 per-tensor without the quantization 2545 TFLOP/s, BF16 1513); "
        "Hopper: https://github.com/pytorch/FBGEMM/pull/2546 (H100 row-scaled fp8 1.9..2.1 x BF16)",
        "2545 / 4500: fp8 GEMMs with per-tensor / per-channel scales (vLLM cutlass_scaled_mm; "
        "activation_scales token, static or tensor) on SM100; other GPUs and block-scaled fp8 "
        "keep GEMM_COMPUTE_EFFICIENCY",
    ),
    CostSource(
        "ATTENTION_COMPUTE_EFFICIENCY",
        "0.75",
        "of dense BF16 peak",
        "https://arxiv.org/abs/2407.08608 (FlashAttention-3: up to 740 TFLOP/s BF16/FP16 on H100)",
        "740 / 989",
    ),
    CostSource(
        "ATTENTION_EFFICIENCY_BY_SM",
        "0.682 (SM100)",
        "of dense BF16 peak",
        "https://github.com/Dao-AILab/flash-attention/pull/2280 (FlashAttention-4 on B200: "
        "1534.8 TFLOP/s BF16 forward, head dim 128, non-causal; causal 1418.1)",
        "1534.8 / 2250: compute-bound attention on SM100 (B200, GB200) instead of "
        "ATTENTION_COMPUTE_EFFICIENCY (a Hopper kernel's figure)",
    ),
    CostSource(
        "WEIGHT_BANDWIDTH_EFFICIENCY",
        "0.834",
        "of peak HBM bandwidth",
        "https://github.com/SemiAnalysisAI/InferenceX-app (history fixture at 528c4146: fitted "
        "factor 1.070 on the profile's 0.78, https://mikamirai.com/blog/gpu-memory-bandwidth/)",
        "fitted (evidence/public-gpu/fitted_terms.json, 432 training rows); memory-bound GEMMs, "
        "norms, logits",
    ),
    CostSource(
        "KV_BANDWIDTH_EFFICIENCY",
        "0.610",
        "of peak HBM bandwidth",
        "https://github.com/SemiAnalysisAI/InferenceX-app (history fixture at 528c4146: the same "
        "factor on the profile's 0.57)",
        "fitted with the weight efficiency (one factor, the profile's ratio kept); KV reads",
    ),
    CostSource(
        "KERNEL_OVERHEAD_S",
        "3.49e-6",
        "s per kernel",
        "https://github.com/SemiAnalysisAI/InferenceX-app (history fixture at 528c4146: 432 "
        "DeepSeek-R1 SGLang / TensorRT-LLM runs on H200 and B200)",
        "fitted on median TPOT (qualification/public_gpu/_fit.py); x kernels per pass "
        "(LayerStack.kernels: per layer 10 dense, MLA +5, MoE 7 + 3 shared, + quantization)",
    ),
    CostSource(
        "STEP_OVERHEAD_S",
        "0.0",
        "s per forward pass",
        "https://github.com/SemiAnalysisAI/InferenceX-app (history fixture at 528c4146: fitted "
        "jointly with KERNEL_OVERHEAD_S, bounded below by 0)",
        "fitted: 0; the former 1.1 ms (derived from vllm-project/vllm#20780's batch-1 TPOT) is "
        "now a held-out check in aisim qualify public",
    ),
    CostSource(
        "ALLREDUCE_CURVE",
        "3.7..33.8e-6",
        "s per all-reduce (TP 2/4/8, 512 B..1 MiB)",
        "https://github.com/sgl-project/sglang/pull/2904 (H100 custom all-reduce latency table)",
        "the latency regime: interpolated linearly in bytes up to 1 MiB (beyond it the bandwidth "
        "regimes, ALLREDUCE_BUS_BYTES_PER_S and ALLREDUCE_NCCL_BUS_CURVE); other TP sizes use the "
        "next larger measured one "
        "(TP > 8: TP 8); made non-decreasing",
    ),
    CostSource(
        "ALLREDUCE_BUS_BYTES_PER_S",
        "480e9 (NVLink4), 830e9 (NVLink5)",
        "bytes/s NCCL all-reduce bus bandwidth, 8 GPUs",
        "https://github.com/NVIDIA/nccl-tests/issues/212 (NCCL maintainer: H100 NVLS peak busBw "
        "~480 GB/s on 8 GPUs; 8x H200 475 GB/s in NVIDIA/nccl-tests#272); "
        "https://github.com/NVIDIA/nccl/issues/1807 (8x B200 all_reduce_perf 830+ GB/s)",
        "messages beyond the measured latency curve up to CUSTOM_ALLREDUCE_MAX_BYTES: last "
        "measured latency + 2 (n - 1) / n x extra bytes / bus bandwidth",
    ),
    CostSource(
        "CUSTOM_ALLREDUCE_MAX_BYTES",
        "8388608.0",
        "bytes (8 MiB)",
        "https://github.com/vllm-project/vllm (vllm/distributed/device_communicators/"
        "custom_all_reduce.py, CustomAllreduce.__init__ max_size=8192 * 1024; SGLang's "
        "python/sglang/srt/distributed/device_communicators/custom_all_reduce.py the same)",
        "the largest message the engines' custom all-reduce takes: up to it the latency curve "
        "and ALLREDUCE_BUS_BYTES_PER_S; beyond it ALLREDUCE_NCCL_BUS_CURVE (and "
        "ALLREDUCE_SYMM_MEM_CURVE where measured)",
    ),
    CostSource(
        "ALLREDUCE_NCCL_BUS_CURVE",
        "240..480e9 (NVLink4), 331..680e9 (NVLink5) at 16 MiB..8 GiB",
        "bytes/s NCCL all-reduce bus bandwidth by message size",
        "https://github.com/Azure/AI-benchmarking-guide (Azure_Results/ND_H200_v5_results.md: "
        "8x H200, NCCL 2.20.5, NVLS; Azure_Results/ND_GB200_v6_results.md: 4x GB200, NCCL "
        "2.25.1)",
        "messages beyond CUSTOM_ALLREDUCE_MAX_BYTES: 2 (n - 1) / n x message / bus bandwidth at "
        "that size, linear in log2(size) between the published points, the end points held "
        "beyond them; keyed by the GPU's NVLink line rate, every TP size",
    ),
    CostSource(
        "ALLREDUCE_SYMM_MEM_CURVE",
        "46..320e-6 (SM90, TP 8, 8..64 MiB)",
        "s per all-reduce",
        "https://github.com/vllm-project/vllm/pull/42324 (symm_mem_multimem on Hopper, 8 GPUs: "
        "0.046 / 0.087 / 0.165 / 0.244 / 0.320 ms at 8 / 16 / 32 / 47.84 / 64 MiB); vLLM "
        "vllm/distributed/device_communicators/all_reduce_utils.py "
        "SYMM_MEM_ALL_REDUCE_MAX_SIZES (SM 9.0, 8 GPUs: 64 MiB)",
        "Hopper TP 8 messages beyond CUSTOM_ALLREDUCE_MAX_BYTES and up to 64 MiB: the faster of "
        "it (linear in bytes between the points) and ALLREDUCE_NCCL_BUS_CURVE",
    ),
    CostSource(
        "LINK_PROTOCOL_EFFICIENCY",
        repr(370.0 / 450.0),
        "of the NVLink line rate",
        "https://github.com/NVIDIA/nccl-tests/issues/212 (370 of 450 GB/s after NCCL's protocol "
        "overhead)",
        "370 / 450: ring all-reduce bus bandwidth on a GPU without an NVLS figure, and the "
        "MoE all-to-all's bandwidth (its latency: the all-reduce curve's smallest point)",
    ),
    CostSource(
        "NGRAM_PROPOSAL_S_PER_REQUEST",
        "2.7e-6",
        "s per request per round",
        "https://github.com/vllm-project/vllm/pull/13365 (numba n-gram matching: cumulative "
        "overhead 1.9 s for a 5K-request ShareGPT benchmark)",
        "derived: 1.9 s / (5000 requests x ~200 output tokens / ~1.4 tokens per round = ~0.7 M "
        "request-rounds); the output length and tokens per round are assumptions, not measured",
    ),
    CostSource(
        "LINEAR_STATE_BANDWIDTH_EFFICIENCY",
        "0.41",
        "of peak HBM bandwidth",
        "https://github.com/vllm-project/speculators (examples/evaluate/results/"
        "qwen3_8_27b_dspark: the HumanEval no-SD and MTP points, vLLM 0.30 on one B200)",
        "fitted (evidence/public-gpu/fitted_terms.json, hybrid: 16 training points, the "
        "math_reasoning half held out); the Gated DeltaNet layers' fp32 recurrent-state reads "
        "and writes",
    ),
    CostSource(
        "EAGER_LINEAR_LAYER_S",
        "100e-6",
        "s per Gated DeltaNet layer of a pass with prefill tokens",
        "https://github.com/vllm-project/speculators (the same 16 HumanEval points); the "
        "mechanism: vllm-project/vllm vllm/config/compilation.py CompilationConfig._attention_ops "
        "(piecewise graphs split at the GDN core) and docs/design/cuda_graphs.md (non-uniform "
        "batches replay the piecewise graphs)",
        "fitted with LINEAR_STATE_BANDWIDTH_EFFICIENCY; x the linear-attention layers of a pass "
        "that carries prefill tokens (48 on Qwen3.5/3.6-27B: 4.8 ms)",
    ),
    CostSource(
        "DSPARK_MARKOV_STEP_S",
        "305.0e-6",
        "s per drafted position of a DSpark round",
        "https://github.com/vllm-project/speculators (the 7 HumanEval DSpark points at 1..64 "
        "streams); the mechanism: vllm-project/vllm vllm/v1/spec_decode/dspark.py "
        "DSparkProposer._sample_draft_tokens and dspark_sampling.py sample_dspark_markov_block "
        "(a Python loop over the block's positions, eager kernels, no CUDA graph)",
        "fitted on median output throughput (the math_reasoning DSpark points held out); x the "
        "drafted positions of a DSpark round (7: 2.1 ms), on every pass that drafts (a prefill's "
        "included)",
    ),
)
