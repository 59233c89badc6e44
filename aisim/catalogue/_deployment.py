"""How a model is deployed: weight and KV precision, expert parallelism, data-parallel attention.

A ``Deployment`` is what a serving engine chose, not what the checkpoint is: the same geometry
(``ModelSpec``) runs with fp8 or NVFP4 weights, an fp8 KV cache, experts spread over a group of
GPUs (expert parallelism) and attention replicated per data-parallel rank. The roofline reads it
(``aisim.fpm._roofline_ops.LayerStack``); capacity planning reads ``deployed_weight_bytes``.

Bytes per weight, each from the format's public definition:

* ``bf16`` / ``fp16``: 2 bytes;
* ``fp8``: DeepSeek-V3/R1's block-wise fp8 (e4m3), one fp32 scale per 128 x 128 block
  (``quantization_config.weight_block_size: [128, 128]`` in deepseek-ai/DeepSeek-R1's
  config.json): 1 + 4 / 16384 bytes;
* ``fp4``: NVFP4 (e2m1 values, one fp8 e4m3 scale per 16 values; NVIDIA, "Introducing NVFP4 for
  Efficient and Accurate Low-Precision Inference", 2025): 0.5 + 1 / 16 bytes (the one fp32
  scale per tensor is left out: a few bytes per matrix).

Only the linear layers inside the decoder blocks take the deployment's precision (both
checkpoints quantize those and keep embeddings, norms and the LM head at the checkpoint dtype:
the config's ``modules_to_not_convert`` / ``exclude_modules``); activations stay at the
checkpoint dtype. GEMMs of a quantized layer run at the GPU's fp8 (or fp4) tensor-core peak.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

from aisim.catalogue._specs import GpuSpec, ModelSpec

#: Bytes per weight of each precision (see the module docstring for the sources).
WEIGHT_BYTES_PER_PARAMETER: Final[dict[str, float]] = {
    "bf16": 2.0,
    "fp16": 2.0,
    "fp8": 1.0 + 4.0 / (128.0 * 128.0),
    "fp4": 0.5 + 1.0 / 16.0,
}
#: Bytes per KV-cache element of each KV precision.
KV_BYTES_PER_ELEMENT: Final[dict[str, float]] = {"bf16": 2.0, "fp16": 2.0, "fp8": 1.0}
#: Precision names a deployment may give ("" = the checkpoint's dtype).
WEIGHT_PRECISIONS: Final = ("bf16", "fp16", "fp8", "fp4")
KV_PRECISIONS: Final = ("bf16", "fp16", "fp8")


@dataclass(frozen=True)
class Deployment:
    """Precision and parallelism beyond tensor parallelism (defaults: as the checkpoint, no EP,
    no attention DP).

    * ``weights``: precision of the decoder blocks' linear layers ("" = checkpoint dtype);
    * ``kv_cache``: KV-cache element precision ("" = checkpoint dtype);
    * ``expert_parallel``: GPUs the routed experts are spread over as whole experts (1: each
      expert is split over the tensor-parallel GPUs instead);
    * ``attention_data_parallel``: data-parallel attention ranks of one replica (each holds its
      own requests and a full copy of the attention weights; the MoE layers span all of the
      replica's GPUs and tokens reach their experts through an all-to-all).
    """

    weights: str = ""
    kv_cache: str = ""
    expert_parallel: int = 1
    attention_data_parallel: int = 1

    def weight_bytes_per_parameter(self, spec: ModelSpec) -> float:
        """Bytes per weight of the decoder blocks' linear layers."""
        if self.weights == "":
            return float(spec.dtype_bytes)
        return WEIGHT_BYTES_PER_PARAMETER[self.weights]

    def kv_bytes_per_element(self, spec: ModelSpec) -> float:
        if self.kv_cache == "":
            return float(spec.dtype_bytes)
        return KV_BYTES_PER_ELEMENT[self.kv_cache]

    def gemm_peak_flops(self, gpu: GpuSpec) -> float:
        """Dense tensor-core peak the quantized GEMMs run at: fp4 on an fp4-capable GPU, fp8
        for fp8 (and fp4 without fp4 units), else BF16."""
        if self.weights == "fp4" and gpu.fp4_flops > 0.0:
            return gpu.fp4_flops
        if self.weights in ("fp8", "fp4") and gpu.fp8_flops > 0.0:
            return gpu.fp8_flops
        return gpu.bf16_flops

    def describe(self) -> str:
        parts = []
        if self.weights:
            parts.append(f"weights {self.weights}")
        if self.kv_cache:
            parts.append(f"KV {self.kv_cache}")
        if self.expert_parallel > 1:
            parts.append(f"EP {self.expert_parallel}")
        if self.attention_data_parallel > 1:
            parts.append(f"attention DP {self.attention_data_parallel}")
        return ", ".join(parts) if parts else "checkpoint dtype, no EP, no attention DP"


#: The checkpoint as it is: no quantization, no EP, no attention DP.
CHECKPOINT: Final = Deployment()


def block_linear_parameters(spec: ModelSpec) -> int:
    """Weights of the linear layers inside the decoder blocks (attention projections, MLP or
    routed + shared experts and router), the part a quantized checkpoint stores at low
    precision."""
    total = 0
    for index in range(spec.num_layers):
        mlp = spec.dense_mlp_parameters
        if spec.is_moe and index >= spec.first_dense_layers:
            mlp = spec.moe_mlp_parameters
        total += spec.attention_parameters_per_layer + mlp
    return total


def deployed_weight_bytes(spec: ModelSpec, deployment: Deployment) -> float:
    """Bytes of all weights as deployed: the blocks' linear layers at the deployment's
    precision, everything else (embeddings, norms, LM head) at the checkpoint dtype."""
    linear = block_linear_parameters(spec)
    rest = spec.num_parameters - linear
    return float(linear) * deployment.weight_bytes_per_parameter(spec) + float(
        rest * spec.dtype_bytes
    )


def alltoall_bytes_per_rank(
    tokens: float, experts_per_token: float, hidden: float, activation_bytes: float, ranks: int
) -> float:
    """Bytes one rank sends in one MoE layer's all-to-all, dispatch plus combine: each of its
    ``tokens`` goes to ``experts_per_token`` experts spread evenly over ``ranks`` GPUs, so
    (ranks - 1) / ranks of those copies leave the GPU (hidden x activation bytes each), and the
    expert outputs come back the same way."""
    if ranks <= 1:
        return 0.0
    remote = float(ranks - 1) / float(ranks)
    return 2.0 * tokens * experts_per_token * remote * hidden * activation_bytes
