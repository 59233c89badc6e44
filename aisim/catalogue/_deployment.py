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

A quantized GEMM multiplies quantized activations too: before each one a separate memory-bound
kernel reads the checkpoint-dtype activations and writes them at the GEMM's precision with their
scales, and the GEMM reads those (its epilogue applies the activation and weight scales while
writing the checkpoint-dtype output: vLLM ``CutlassFP8ScaledMMLinearKernel.apply_scaled_mm``,
"Fused GEMM_DQ"). ``activation_scales`` says how the fp8 scales are computed, which sets the
kernel's traffic (vLLM ``csrc/quantization/w8a8/fp8/common.cu`` and ``per_token_group_quant.cu``,
called from ``QuantFP8.forward_cuda``, ``layers/quantization/input_quant_fp8.py``):

* ``group`` (the fp8 default, DeepSeek-V3/R1's block fp8): one dynamic scale per token and 128
  elements, one kernel (``per_token_group_quant_fp8``): read 2, write 1 + 4 / 128 bytes per
  element (bf16 checkpoint);
* ``token``: one dynamic scale per token, one kernel (``dynamic_per_token_scaled_fp8_quant``: a
  block per token reduces the row's absmax and quantizes it, the second read from cache): read
  2, write 1;
* ``static``: a calibrated per-tensor scale, one kernel (``static_scaled_fp8_quant``): read 2,
  write 1;
* ``tensor``: one dynamic scale for the whole tensor (``dynamic_scaled_fp8_quant``): a memset of
  the scale, ``segmented_max_reduction_strided`` over every element (read 2), then
  ``scaled_fp8_quant_kernel_strided_dynamic`` (read 2, write 1): 5 bytes, three launches.

With ``token``, ``static`` and ``tensor`` the weights carry one scale per tensor (or channel), 1
byte per weight. NVFP4 (``fp4``) quantizes activations in blocks of 16 (``scaled_fp4_quant``): read
2, write 0.5 + 1 / 16 bytes per element, one kernel.
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
#: How fp8 activation scales are computed ("" = the precision's default: ``group`` for fp8).
ACTIVATION_SCALES: Final = ("group", "token", "static", "tensor")
#: Bytes per element a quantized GEMM reads of its quantized input (scales included).
ACTIVATION_BYTES_PER_ELEMENT: Final[dict[str, float]] = {
    "fp8": 1.0,
    "fp4": 0.5 + 1.0 / 16.0,
}


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
      replica's GPUs and tokens reach their experts through an all-to-all);
    * ``activation_scales``: how fp8 activations are scaled (``ACTIVATION_SCALES``; "" = ``group``,
      the module docstring says what each costs).
    """

    weights: str = ""
    kv_cache: str = ""
    expert_parallel: int = 1
    attention_data_parallel: int = 1
    activation_scales: str = ""

    def weight_bytes_per_parameter(self, spec: ModelSpec) -> float:
        """Bytes per weight of the decoder blocks' linear layers."""
        if self.weights == "":
            return float(spec.dtype_bytes)
        if self.scaled_mm:
            return 1.0  # one scale per tensor or channel: a few bytes per matrix
        return WEIGHT_BYTES_PER_PARAMETER[self.weights]

    @property
    def scaled_mm(self) -> bool:
        """Whether the fp8 GEMMs carry per-tensor / per-channel scales (vLLM's
        ``cutlass_scaled_mm``) rather than 128 x 128 block scales."""
        return self.weights == "fp8" and self.activation_scales not in ("", "group")

    @property
    def quantized(self) -> bool:
        """Whether the blocks' GEMMs take quantized activations (fp8 or fp4 weights)."""
        return self.weights in ACTIVATION_BYTES_PER_ELEMENT

    def activation_bytes_per_element(self, spec: ModelSpec) -> float:
        """Bytes per input element a block GEMM reads: the quantized activation (with its
        scales) for fp8 / fp4, else the checkpoint dtype."""
        if self.weights in ACTIVATION_BYTES_PER_ELEMENT:
            return ACTIVATION_BYTES_PER_ELEMENT[self.weights]
        return float(spec.dtype_bytes)

    def quantization_bytes_per_element(self, spec: ModelSpec) -> float:
        """Bytes the activation-quantization kernels move per input element of a quantized
        GEMM (0 when the GEMMs are not quantized): read the checkpoint-dtype activation, write
        the quantized one with its scales (fp8 ``group``: one fp32 scale per 128 elements), and
        for a dynamic per-tensor scale read every element once more for the absmax first."""
        if not self.quantized:
            return 0.0
        dtype = float(spec.dtype_bytes)
        written = ACTIVATION_BYTES_PER_ELEMENT[self.weights]
        if self.weights == "fp8":
            if self.activation_scales in ("", "group"):
                written += 4.0 / 128.0
            elif self.activation_scales == "tensor":
                return 2.0 * dtype + written
        return dtype + written

    def quantization_kernels(self) -> float:
        """Launches of one quantized GEMM's activation quantization (0 when not quantized):
        three for a dynamic per-tensor scale (memset, absmax reduction, quantize), else one."""
        if not self.quantized:
            return 0.0
        return 3.0 if self.weights == "fp8" and self.activation_scales == "tensor" else 1.0

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
        if self.activation_scales:
            parts.append(f"{self.activation_scales} activation scales")
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
