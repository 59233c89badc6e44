"""Roofline time of one forward pass through a stack of decoder layers, op by op.

Each operation costs ``max(flops / (peak * compute efficiency), bytes / (HBM * bandwidth
efficiency))``; a pass is the sum of its operations. Per layer: the QKV projection GEMM, attention
(reads every request's KV bytes at the KV bandwidth efficiency), the output projection GEMM, the
MLP (dense SwiGLU, or MoE with the routed experts the batch touches plus shared experts), norms and
activation (memory-bound elementwise), and, when tensor parallel > 1, two all-reduces (measured
latency curve and NCCL's measured bus bandwidth by message size, ``allreduce_message_seconds``,
or the ideal ring-bandwidth model). Each norm is fused with the residual add: it
reads the input and the residual and writes both back (vLLM ``fused_add_rms_norm_kernel``,
``csrc/layernorm_kernels.cu``, from ``RMSNorm.forward_cuda`` with a residual; SGLang
``RMSNorm.forward_cuda`` and TensorRT-LLM ``RMSNorm.forward`` call FlashInfer's
``fused_add_rmsnorm``), 4 elements per token and hidden unit, except the first layer's input
norm, which has no residual yet (read and write, 2). After the layers: the final norm (fused with
the last residual, over every token of the pass) and the LM head for the tokens that need logits. Weights and heads are sharded over tensor parallel; MLA's
compressed KV is replicated. A quantized deployment (fp8 / fp4 weights) quantizes each block
GEMM's input first: a memory-bound kernel per quantized GEMM reads the checkpoint-dtype
activations and writes the quantized ones (``Deployment.quantization_bytes_per_element``: 3 bytes
per element for fp8 with group, token or static scales, 5 with a dynamic per-tensor scale, whose
absmax reduction reads the input once more), and the GEMM reads the quantized input; its
epilogue applies the scales while writing its output (no separate dequantization). The efficiencies are a ``CostTerms`` (``aisim.catalogue._costs``);
``kernels`` counts the kernels a pass launches (one per priced operation, attention two).
"""

from __future__ import annotations

import math

from aisim.catalogue import (
    CHECKPOINT,
    CostTerms,
    Deployment,
    GpuSpec,
    ModelSpec,
    alltoall_bytes_per_rank,
)


class PassShape:
    """The work of one fused pass, summed over its requests.

    ``tokens``: query tokens through the layers; ``logit_tokens``: tokens that need LM-head logits;
    ``attention_pairs``: (query token, key token) pairs attended (causal within new tokens);
    ``kv_tokens_read``: KV entries each attention layer reads (past plus new tokens);
    ``recurrent_states``: per-request recurrent states each linear-attention layer reads or
    writes (``decode_shape`` and ``prefill_shape`` say how many).
    """

    def __init__(
        self,
        tokens: float,
        logit_tokens: float,
        attention_pairs: float,
        kv_tokens_read: float,
        recurrent_states: float = 0.0,
    ) -> None:
        self.tokens = tokens
        self.logit_tokens = logit_tokens
        self.attention_pairs = attention_pairs
        self.kv_tokens_read = kv_tokens_read
        self.recurrent_states = recurrent_states


def decode_shape(requests: int, past_kv_tokens: int, query_per_request: int) -> PassShape:
    """``requests`` decode requests with ``query_per_request`` new tokens each (1 for STP, w for
    verification), reading ``past_kv_tokens`` past KV tokens in total.

    A linear-attention layer reads each request's recurrent state once and writes one state per
    new token, ``1 + q`` per request: vLLM's spec-decode path keeps the state after every
    verified position so a rejection can roll back (``fused_sigmoid_gating_delta_rule_update``
    with ``ssm_state_indices`` of ``num_spec + 1`` slots, ``INPLACE_FINAL_STATE``: one store per
    token; ``model_executor/layers/fla/ops/fused_sigmoid_gating.py``); plain decode is one read
    and one write."""
    q = float(query_per_request)
    b = float(requests)
    return PassShape(
        tokens=q * b,
        logit_tokens=q * b,
        attention_pairs=q * float(past_kv_tokens) + b * q * (q + 1.0) / 2.0,
        kv_tokens_read=float(past_kv_tokens) + q * b,
        recurrent_states=b * (1.0 + q),
    )


def prefill_shape(
    requests: int, tokens: int, extend_lengths: list[int] | None, past_lengths: list[int] | None
) -> PassShape:
    """Prefill of ``requests`` requests, ``tokens`` new tokens in total; without per-request
    lengths the tokens are split evenly; ``past_lengths`` is cached context (default none). A
    linear-attention layer's chunked kernel reads a request's initial state and writes its final
    one (2 per request)."""
    if requests <= 0:
        return PassShape(0.0, 0.0, 0.0, 0.0)
    states = 2.0 * float(requests)
    if extend_lengths is None and past_lengths is None:
        new = float(tokens) / float(requests)  # closed form: equal chunks, no cached context
        pairs = float(requests) * new * (new + 1.0) / 2.0
        return PassShape(float(tokens), float(requests), pairs, float(tokens), states)
    pairs = 0.0
    read = 0.0
    for index in range(requests):  # bounded: a per-request list of this length exists
        if extend_lengths is not None:
            new = float(extend_lengths[index])
        else:
            new = float(tokens) / float(requests)
        past = float(past_lengths[index]) if past_lengths is not None else 0.0
        pairs += new * past + new * (new + 1.0) / 2.0
        read += past + new
    return PassShape(float(tokens), float(requests), pairs, read, states)


def add_shapes(first: PassShape, second: PassShape) -> PassShape:
    return PassShape(
        first.tokens + second.tokens,
        first.logit_tokens + second.logit_tokens,
        first.attention_pairs + second.attention_pairs,
        first.kv_tokens_read + second.kv_tokens_read,
        first.recurrent_states + second.recurrent_states,
    )


def op_seconds(flops: float, bytes_moved: float, peak_flops: float, bandwidth: float) -> float:
    """Roofline time of one operation: the larger of its compute and memory time."""
    compute = flops / peak_flops
    memory = bytes_moved / bandwidth
    return compute if compute > memory else memory


class LayerStack:
    """Precomputed per-GPU sizes of ``num_layers`` decoder layers of ``spec`` (+ optional head).

    ``lm_head_vocab`` 0 omits the head; ``fused_feature_inputs`` > 0 adds a projection
    (``fused_feature_inputs`` -> hidden) in front of the layers (EAGLE-3's fused features, MTP's
    2 hidden -> hidden); ``all_moe`` makes every layer a MoE layer on a MoE ``spec`` (an MTP block).

    ``deployment`` (aisim.catalogue._deployment): the blocks' linear layers at its weight
    precision (bytes and tensor-core peak; the LM head stays at the checkpoint dtype), KV at its
    KV precision. With ``attention_data_parallel`` D > 1 a pass is one rank's: its attention,
    dense MLPs and LM head run on its own ``tensor_parallel`` GPUs, while the routed and shared
    experts span all D x tensor_parallel GPUs of the replica and see every rank's tokens (D x
    this rank's, ranks assumed equally loaded); tokens reach their experts and come back through
    an all-to-all (``alltoall_bytes_per_rank``) instead of the MoE's all-reduce.
    """

    def __init__(
        self,
        spec: ModelSpec,
        gpu: GpuSpec,
        tensor_parallel: int,
        num_layers: int,
        lm_head_vocab: int,
        terms: CostTerms,
        fused_feature_inputs: int = 0,
        all_moe: bool = False,
        deployment: Deployment = CHECKPOINT,
        linear_layers: int = 0,
    ) -> None:
        tp = float(tensor_parallel)
        dtype = float(spec.dtype_bytes)
        hidden = float(spec.hidden_size)
        heads = float(spec.num_attention_heads)
        ranks = deployment.attention_data_parallel
        self.terms = terms
        self.tensor_parallel = tensor_parallel
        self.dtype = dtype
        self.weight_bytes = deployment.weight_bytes_per_parameter(spec)
        # A block GEMM's input as it reads it (quantized on a quantized deployment) and the bytes
        # its activation-quantization kernels move per input element (0 when not quantized).
        self.gemm_input_bytes = deployment.activation_bytes_per_element(spec)
        self.quantize_bytes = deployment.quantization_bytes_per_element(spec)
        self.hidden = hidden
        efficiency = terms.gemm_compute_efficiency
        if deployment.scaled_mm:
            efficiency = terms.scaled_mm_fp8_efficiency.get(gpu.sm_version, efficiency)
        self.gemm_flops_per_s = deployment.gemm_peak_flops(gpu) * efficiency
        self.head_flops_per_s = gpu.bf16_flops * terms.gemm_compute_efficiency
        attention = terms.attention_efficiency_by_sm.get(
            gpu.sm_version, terms.attention_compute_efficiency
        )
        self.attention_flops_per_s = gpu.bf16_flops * attention
        self.bytes_per_s = gpu.hbm_bytes_per_s * terms.weight_bandwidth_efficiency
        # KV bytes are scaled so that one division by ``bytes_per_s`` prices them at the KV
        # efficiency (exactly 1.0 when both efficiencies are equal: the ideal roofline).
        self.kv_byte_scale = terms.weight_bandwidth_efficiency / terms.kv_bandwidth_efficiency
        self.link_bytes_per_s = gpu.nvlink_bytes_per_s * terms.link_efficiency
        self.allreduce_points: list[tuple[float, float]] = _allreduce_points(
            terms.allreduce_curve, tensor_parallel
        )
        # All-reduces beyond the measured latency curve, up to the custom all-reduce limit: NCCL's
        # peak bus bandwidth on this GPU's NVLink generation (NVLS where measured, else the
        # ring's protocol efficiency).
        self.allreduce_bus_bytes_per_s = allreduce_bus_bytes_per_s(terms, gpu)
        # Beyond the engines' custom all-reduce limit: NCCL's measured bus bandwidth by size for
        # this NVLink generation, or vLLM's symmetric memory where measured and faster.
        self.custom_allreduce_max_bytes = terms.custom_allreduce_max_bytes
        self.nccl_bus_curve = terms.allreduce_nccl_bus_curve.get(gpu.nvlink_bytes_per_s, [])
        self.symm_mem_points = terms.allreduce_symm_mem_curve.get(gpu.sm_version, {}).get(
            tensor_parallel, []
        )
        # Data-parallel attention: the replica's GPUs, the MoE's token multiplier, and the
        # all-to-all that carries tokens to their experts.
        self.attention_ranks = float(ranks)
        self.moe_group = float(tensor_parallel * ranks)
        self.alltoall_ranks = tensor_parallel * ranks if ranks > 1 else 1
        self.alltoall_bytes_per_s = gpu.nvlink_bytes_per_s * terms.link_protocol_efficiency
        group_points = _allreduce_points(terms.allreduce_curve, self.alltoall_ranks)
        self.alltoall_latency_s = group_points[0][1] if group_points else 0.0
        value_dim = float(spec.v_head_dim if spec.uses_mla else spec.head_dim)
        o_params = heads * value_dim * hidden
        self.qkv_params = (float(spec.attention_parameters_per_layer) - o_params) / tp
        self.qkv_out = (float(spec.attention_parameters_per_layer) - o_params) / hidden / tp
        self.o_params = o_params / tp
        self.o_in = heads * value_dim / tp
        # Quantized inputs of the attention block beyond the QKV GEMM's and the output
        # projection's: MLA's q_b projection reads the compressed query (q_lora_rank, replicated).
        self.extra_attention_inputs = float(spec.q_lora_rank) if spec.uses_mla else 0.0
        kv_element = deployment.kv_bytes_per_element(spec)
        if spec.uses_mla:
            latent = float(spec.kv_lora_rank + spec.qk_rope_head_dim)
            self.flops_per_pair = (2.0 * heads * latent + 2.0 * heads * spec.kv_lora_rank) / tp
            self.kv_bytes_per_token = latent * kv_element
            self.kv_width = latent
        else:
            kv_heads = float(-(-spec.num_kv_heads // tensor_parallel))
            self.flops_per_pair = 4.0 * heads * float(spec.head_dim) / tp
            self.kv_bytes_per_token = 2.0 * kv_heads * float(spec.head_dim) * kv_element
            self.kv_width = 2.0 * kv_heads * float(spec.head_dim)
        self.dense_mlp_params = float(spec.dense_mlp_parameters) / tp
        self.dense_intermediate = float(spec.intermediate_size) / tp
        self.num_experts = float(spec.num_experts)
        self.experts_per_token = float(spec.experts_per_token)
        self.shared_experts = float(spec.num_shared_experts)
        self.expert_params = 3.0 * hidden * float(spec.moe_intermediate_size) / self.moe_group
        self.expert_intermediate = float(spec.moe_intermediate_size) / self.moe_group
        self.router_params = hidden * float(spec.num_experts)
        # Linear-attention (Gated DeltaNet) layers among ``num_layers`` (the target stack of a
        # hybrid model; 0 for MTP and draft stacks, whose layers are full attention): their
        # mixer replaces the attention block (``_linear_layer``), the MLP is unchanged.
        self.linear_layers = float(min(max(linear_layers, 0), num_layers))
        key_dim = float(spec.linear_num_key_heads * spec.linear_key_head_dim)
        value_dim = float(spec.linear_num_value_heads * spec.linear_value_head_dim)
        self.linear_in_out = (
            2.0 * key_dim + 2.0 * value_dim + 2.0 * spec.linear_num_value_heads
        ) / tp
        self.linear_in_params = hidden * self.linear_in_out
        self.linear_value_dim = value_dim / tp
        self.linear_out_params = self.linear_value_dim * hidden
        self.linear_state_bytes = float(spec.linear_state_bytes_per_layer) / tp
        # The state traffic is priced at its own efficiency: scaled so that one division by
        # ``bytes_per_s`` prices it at ``linear_state_bandwidth_efficiency``.
        self.state_byte_scale = (
            terms.weight_bandwidth_efficiency / terms.linear_state_bandwidth_efficiency
        )
        # Recurrent update per token and value head: decay, k.h, the rank-1 update and q.h over
        # the value_dim x key_dim state, about 8 flops per state element.
        self.linear_state_flops_per_token = 8.0 * value_dim * float(spec.linear_key_head_dim) / tp
        # Expert parallelism: the routed experts lie whole on ``expert_groups`` groups of GPUs
        # (num_experts / EP each), so a MoE layer waits for the group whose experts the batch
        # touched most (``expert_parallel_load``); 1: every expert split over all GPUs.
        groups = min(deployment.expert_parallel, tensor_parallel * ranks)
        self.expert_groups = groups if spec.is_moe and groups > 1 else 1
        self._expert_load: dict[float, float] = {}
        moe_layers = 0
        if spec.is_moe:
            dense_first = 0 if all_moe else spec.first_dense_layers
            moe_layers = max(0, num_layers - min(num_layers, dense_first))
        self.moe_layers = float(moe_layers)
        self.dense_layers = float(num_layers - moe_layers)
        self.lm_head_params = float(lm_head_vocab) * hidden / tp
        self.fused_params = float(fused_feature_inputs) * hidden / tp
        self.fused_inputs = float(fused_feature_inputs)
        self.lm_head_vocab = float(lm_head_vocab)
        quantize_kernels = deployment.quantization_kernels()
        self.kernels_per_pass = _kernels_per_pass(
            spec, self.dense_layers, self.moe_layers, self.alltoall_ranks > 1, quantize_kernels
        )
        # A Gated DeltaNet layer launches in_proj_qkvz, in_proj_ba, the causal conv1d update, the
        # fused gating + delta-rule kernel, the gated RMSNorm, out_proj and the two norms (8; vLLM
        # ``QwenGatedDeltaNetAttention.forward_cuda``) where attention launched its 7 (plus the
        # quantized GEMMs' activation quantization).
        if self.linear_layers > 0.0:
            attention = 7.0 + (5.0 if spec.uses_mla else 0.0)
            linear = 8.0 + 3.0 * quantize_kernels
            attention += (3.0 if spec.uses_mla else 2.0) * quantize_kernels
            self.kernels_per_pass += self.linear_layers * (linear - attention)
        if self.fused_params > 0.0:
            self.kernels_per_pass += 1.0 + quantize_kernels
        # The final norm and LM head (counted when a pass needs logits).
        self.head_kernels = 2.0 if self.lm_head_params > 0.0 else 0.0

    def _gemm(self, tokens: float, params: float, in_features: float, out_features: float) -> float:
        """A linear layer of the decoder blocks (weights at the deployment's precision, the
        input as the GEMM reads it, the output at the checkpoint dtype), after its input's
        quantization on a quantized deployment (``_quantize``)."""
        flops = 2.0 * tokens * params
        moved = params * self.weight_bytes + tokens * (
            in_features * self.gemm_input_bytes + out_features * self.dtype
        )
        seconds = op_seconds(flops, moved, self.gemm_flops_per_s, self.bytes_per_s)
        return seconds + self._quantize(tokens * in_features)

    def _quantize(self, elements: float) -> float:
        """The activation quantization of ``elements`` GEMM input elements (memory-bound; 0 on
        an unquantized deployment)."""
        return elements * self.quantize_bytes / self.bytes_per_s

    def _head_gemm(self, tokens: float, params: float, out_features: float) -> float:
        """The LM head (checkpoint dtype, BF16 peak)."""
        flops = 2.0 * tokens * params
        moved = (params + tokens * (self.hidden + out_features)) * self.dtype
        return op_seconds(flops, moved, self.head_flops_per_s, self.bytes_per_s)

    def _allreduce(self, tokens: float) -> float:
        if self.tensor_parallel <= 1:
            return 0.0
        return self.allreduce_message_seconds(tokens * self.hidden * self.dtype)

    def allreduce_message_seconds(self, message: float) -> float:
        """One all-reduce of ``message`` bytes over this stack's tensor-parallel GPUs (TP > 1):
        up to the engines' custom all-reduce limit the measured latency curve and beyond its
        last point NCCL's peak bus bandwidth (``allreduce_seconds``); beyond the limit NCCL's
        bus bandwidth at that size, or vLLM's symmetric memory where measured and faster
        (``large_allreduce_seconds``); without a curve the ideal ring model."""
        if self.nccl_bus_curve and message > self.custom_allreduce_max_bytes > 0.0:
            return large_allreduce_seconds(
                self.nccl_bus_curve, self.symm_mem_points, self.tensor_parallel, message
            )
        if self.allreduce_points:
            return allreduce_seconds(
                self.allreduce_points,
                self.allreduce_bus_bytes_per_s,
                self.tensor_parallel,
                message,
            )
        tp = float(self.tensor_parallel)
        moved = 2.0 * (tp - 1.0) / tp * message
        return moved / self.link_bytes_per_s + self.terms.allreduce_latency_s

    def _alltoall(self, tokens: float) -> float:
        """One MoE layer's dispatch and combine over the replica's GPUs (attention DP only)."""
        if self.alltoall_ranks <= 1 or tokens <= 0.0:
            return 0.0
        moved = alltoall_bytes_per_rank(
            tokens, self.experts_per_token, self.hidden, self.dtype, self.alltoall_ranks
        )
        return 2.0 * self.alltoall_latency_s + moved / self.alltoall_bytes_per_s

    def _common_layer(self, shape: PassShape) -> float:
        """Everything in a layer except the MLP and its activation."""
        t = shape.tokens
        seconds = self._gemm(t, self.qkv_params, self.hidden, self.qkv_out)
        seconds += self._quantize(t * self.extra_attention_inputs)
        attention_bytes = shape.kv_tokens_read * self.kv_bytes_per_token * self.kv_byte_scale + (
            2.0 * t * (self.o_in * self.dtype)
        )
        seconds += op_seconds(
            shape.attention_pairs * self.flops_per_pair,
            attention_bytes,
            self.attention_flops_per_s,
            self.bytes_per_s,
        )
        seconds += self._gemm(t, self.o_params, self.o_in, self.hidden)
        seconds += 8.0 * t * self.hidden * self.dtype / self.bytes_per_s  # two add-RMSNorms
        seconds += 2.0 * self._allreduce(t)
        return seconds

    def _linear_layer(self, shape: PassShape) -> float:
        """One Gated DeltaNet layer's mixer and norms (replacing ``_common_layer``): the input
        projections, the recurrent-state traffic (each state read or written once, a contiguous
        stream priced at ``linear_state_bandwidth_efficiency``; its update flops, far below that
        traffic's time, at the attention peak), the gated norm, the output projection and the all-reduces."""
        t = shape.tokens
        seconds = self._gemm(t, self.linear_in_params, self.hidden, self.linear_in_out)
        seconds += self._quantize(t * self.hidden)  # in_proj_ba quantizes its own input
        state_bytes = shape.recurrent_states * self.linear_state_bytes * self.state_byte_scale + (
            2.0 * t * self.linear_in_out * self.dtype
        )
        seconds += op_seconds(
            t * self.linear_state_flops_per_token,
            state_bytes,
            self.attention_flops_per_s,
            self.bytes_per_s,
        )
        seconds += 3.0 * t * self.linear_value_dim * self.dtype / self.bytes_per_s  # gated norm
        seconds += self._gemm(t, self.linear_out_params, self.linear_value_dim, self.hidden)
        seconds += 8.0 * t * self.hidden * self.dtype / self.bytes_per_s  # two add-RMSNorms
        seconds += 2.0 * self._allreduce(t)
        return seconds

    def _dense_mlp(self, tokens: float) -> float:
        activation = 3.0 * tokens * self.dense_intermediate * self.dtype / self.bytes_per_s
        up = self._gemm(tokens, 2.0 * self.hidden * self.dense_intermediate, self.hidden, 0.0)
        down = self._gemm(tokens, self.hidden * self.dense_intermediate, 0.0, self.hidden)
        # The intermediate's traffic is the activation's (read gate and up, write the product);
        # the down GEMM's input quantization reads that product again.
        down += self._quantize(tokens * self.dense_intermediate)
        return up + activation + down

    def _moe_mlp(self, tokens: float) -> float:
        """One rank's share of a MoE layer: the experts see every attention rank's tokens
        (``attention_ranks`` x ``tokens``), each GPU its 1 / ``moe_group`` of them."""
        experts = self.num_experts
        chosen = self.experts_per_token
        if tokens <= 0.0:
            return 0.0
        routed = tokens * self.attention_ranks
        touched = experts * (1.0 - (1.0 - chosen / experts) ** routed) if experts > 0 else 0.0
        if self.expert_groups > 1:
            # The busiest expert group's touched experts, in units of whole-replica experts
            # (each GPU of a group holds its experts split over moe_group / EP GPUs).
            load = self._expert_load.get(routed)
            if load is None:
                load = float(self.expert_groups) * expert_parallel_load(
                    experts, chosen, routed, self.expert_groups
                )
                self._expert_load[routed] = load
            touched = load
        active = chosen + self.shared_experts
        flops = 2.0 * routed * active * self.expert_params
        moved = (touched + self.shared_experts) * self.expert_params * self.weight_bytes + (
            routed
            * active
            * self.hidden
            * (self.gemm_input_bytes + self.dtype)
            / self.attention_ranks
        )
        seconds = op_seconds(flops, moved, self.gemm_flops_per_s, self.bytes_per_s)
        # Quantized inputs: each token's hidden state once for the routed experts' up GEMM
        # (once more for the shared experts'), and every (token, expert) intermediate row for
        # the down GEMMs (the kernels ``_kernels_per_pass`` counts).
        shared_inputs = 1.0 if self.shared_experts > 0.0 else 0.0
        seconds += self._quantize(
            routed * (self.hidden * (1.0 + shared_inputs) + active * self.expert_intermediate)
        )
        seconds += self._head_gemm(tokens, self.router_params, experts)
        seconds += 3.0 * routed * active * self.expert_intermediate * self.dtype / self.bytes_per_s
        seconds += self._alltoall(tokens)
        return seconds

    def seconds(self, shape: PassShape) -> float:
        """Time of one pass of ``shape`` through the stack (0 for an empty pass)."""
        t = shape.tokens
        if t <= 0.0:
            return 0.0
        common = self._common_layer(shape)
        total = (self.dense_layers + self.moe_layers - self.linear_layers) * common
        if self.linear_layers > 0.0:
            total += self.linear_layers * self._linear_layer(shape)
        # The first layer's input norm has no residual yet: a plain norm (read and write, 2
        # elements per token and hidden unit) where the layers price the fused add-norm's 4.
        total -= 2.0 * t * self.hidden * self.dtype / self.bytes_per_s
        if self.dense_layers > 0.0:
            total += self.dense_layers * self._dense_mlp(t)
        if self.moe_layers > 0.0:
            total += self.moe_layers * self._moe_mlp(t)
        if self.fused_params > 0.0:
            total += self._gemm(t, self.fused_params, self.fused_inputs, self.hidden)
        if self.lm_head_params > 0.0 and shape.logit_tokens > 0.0:
            logits = shape.logit_tokens
            # The final norm adds the last layer's residual over every token of the pass.
            total += 4.0 * t * self.hidden * self.dtype / self.bytes_per_s
            vocab = self.lm_head_params / self.hidden
            total += self._head_gemm(logits, self.lm_head_params, vocab)
        return total

    def context_kv_seconds(self, tokens: float) -> float:
        """A block drafter's context K/V for ``tokens`` context tokens (every token the target
        computed in the pass, prompt tokens included): vLLM's DFlash drafter
        (``vllm/model_executor/models/qwen3_dflash.py``, ``precompute_and_store_context_kv``,
        run eagerly by ``DFlashProposer`` and ``DSparkProposer.build_model_inputs_first_pass``)
        projects the target's hidden states to every draft layer's K and V in one fused GEMM
        (hidden -> layers x K/V width), normalises K, applies RoPE and writes each layer's
        KV cache. Priced as that GEMM, the norm and RoPE reading and writing K, and the cache
        write reading K/V and storing it; ``context_kv_kernels`` launches."""
        if tokens <= 0.0:
            return 0.0
        layers = self.dense_layers + self.moe_layers
        width = layers * self.kv_width
        seconds = self._gemm(tokens, self.hidden * width, self.hidden, width)
        key = 0.5 * width
        seconds += 4.0 * tokens * key * self.dtype / self.bytes_per_s
        stored = layers * self.kv_bytes_per_token * self.kv_byte_scale
        seconds += tokens * (width * self.dtype + stored) / self.bytes_per_s
        return seconds

    def context_kv_kernels(self) -> float:
        """Kernels of ``context_kv_seconds``: the fused GEMM, the K norm, RoPE, and one cache
        write per draft layer."""
        return 3.0 + self.dense_layers + self.moe_layers

    def kernels(self, shape: PassShape) -> float:
        """Kernels one pass of ``shape`` launches: per layer QKV, RoPE, KV-cache write,
        attention, output projection and two norms (7); MLA adds five (its query and KV
        down-projections with their norms, and the absorbed up-projections before and after
        attention: sglang ``models/deepseek_v2.py``, ``DeepseekV2AttentionMLA.forward_absorb``);
        then up, activation and down (dense, 3) or router, top-k, token permutation, two grouped
        GEMMs, activation and the weighted combine (MoE, 7; ``DeepseekV2MoE.forward``), three
        more for shared experts, two more for an all-to-all's dispatch and combine; a quantized
        deployment adds one activation-quantization kernel per quantized GEMM (fp8 / NVFP4 GEMMs
        take quantized inputs; three with a dynamic per-tensor fp8 scale: memset, absmax
        reduction, quantize); a fused-feature projection (and its input's quantization); the
        final norm and LM head.
        All-reduce kernels are inside the measured all-reduce latency."""
        if shape.tokens <= 0.0:
            return 0.0
        if shape.logit_tokens > 0.0:
            return self.kernels_per_pass + self.head_kernels
        return self.kernels_per_pass

    def sampling_seconds(self, logit_tokens: float) -> float:
        """The sampler (or rejection sampler) reading ``logit_tokens`` rows of fp32 logits."""
        if logit_tokens <= 0.0 or self.lm_head_vocab <= 0.0:
            return 0.0
        return logit_tokens * self.lm_head_vocab * 4.0 / self.bytes_per_s


def expert_parallel_load(experts: float, chosen: float, tokens: float, groups: int) -> float:
    """Expected touched experts of the busiest of ``groups`` expert-parallel groups when
    ``tokens`` tokens each pick ``chosen`` of ``experts`` experts uniformly (the engines place
    experts / groups whole experts on each group: TensorRT-LLM ``fused_moe/interface.py``
    ``MoE.__init__``, ``expert_size_per_partition = num_experts // ep_size``; SGLang
    ``layers/moe/fused_moe_triton/layer.py`` ``FusedMoE.__init__``, ``num_local_experts =
    num_experts // moe_ep_size``), and a MoE layer lasts as long as its slowest GPU.

    Each expert is touched with probability ``p = 1 - (1 - chosen / experts) ** tokens``
    (uniform routing), independently (an approximation: a token's top-k are distinct), so a
    group's count is Binomial(n = experts / groups, p) and the busiest group's expectation is
    ``sum over m < n of 1 - F(m) ** groups``. Never below the mean ``n p``; ``n`` once every
    expert is touched."""
    n = int(experts) // groups
    if n <= 0 or tokens <= 0.0:
        return 0.0
    p = 1.0 - (1.0 - chosen / experts) ** tokens
    if p >= 1.0 - 1e-12:
        return float(n)
    q = 1.0 - p
    ratio = p / q
    pmf = q**n
    cdf = 0.0
    expected = 0.0
    for m in range(n):  # bounded by experts / groups
        cdf += pmf
        expected += 1.0 - min(cdf, 1.0) ** groups
        pmf *= float(n - m) / float(m + 1) * ratio
    return expected


def _allreduce_points(
    curve: dict[int, list[tuple[float, float]]], tensor_parallel: int
) -> list[tuple[float, float]]:
    """The measured curve for ``tensor_parallel``: its own, else the next larger measured TP,
    else the largest measured (empty when the terms have no curve)."""
    if not curve or tensor_parallel <= 1:
        return []
    sizes = sorted(curve)
    for size in sizes:
        if size >= tensor_parallel:
            return curve[size]
    return curve[sizes[-1]]


def _kernels_per_pass(
    spec: ModelSpec, dense_layers: float, moe_layers: float, alltoall: bool, quantize: float
) -> float:
    """Kernels of the decoder layers (``LayerStack.kernels`` says which); ``quantize``: the
    launches of one quantized GEMM's activation quantization (0 when not quantized)."""
    attention = 7.0 + (5.0 if spec.uses_mla else 0.0)
    attention_gemms = 3.0 if spec.uses_mla else 2.0
    dense = 3.0 + 2.0 * quantize
    moe = 7.0 + (3.0 if spec.num_shared_experts > 0 else 0.0) + (2.0 if alltoall else 0.0)
    moe += (2.0 + (2.0 if spec.num_shared_experts > 0 else 0.0)) * quantize
    attention += attention_gemms * quantize
    return dense_layers * (attention + dense) + moe_layers * (attention + moe)


def allreduce_bus_bytes_per_s(terms: CostTerms, gpu: GpuSpec) -> float:
    """NCCL's all-reduce bus bandwidth on ``gpu``: the measured NVLS figure of its NVLink
    generation (``terms.allreduce_bus_bytes_per_s``, keyed by the per-GPU NVLink line rate),
    else the ring at NCCL's protocol efficiency of the line rate (0 without NVLink)."""
    measured = terms.allreduce_bus_bytes_per_s.get(gpu.nvlink_bytes_per_s, 0.0)
    if measured > 0.0:
        return measured
    return gpu.nvlink_bytes_per_s * terms.link_protocol_efficiency


def allreduce_seconds(
    points: list[tuple[float, float]],
    bus_bytes_per_s: float,
    tensor_parallel: int,
    message_bytes: float,
) -> float:
    """All-reduce time of ``message_bytes`` over ``tensor_parallel`` GPUs.

    Latency regime (up to the last measured size): the measured curve (the engines' custom
    one-shot / two-shot all-reduce). Bandwidth regime (beyond it): the last measured latency plus
    the extra bytes at NCCL's bus bandwidth, ``2 (n - 1) / n x extra / bus`` (nccl-tests'
    definition of bus bandwidth), instead of extending the small-message slope."""
    last_bytes, last_s = points[-1]
    if message_bytes <= last_bytes or bus_bytes_per_s <= 0.0:
        return interpolate_latency(points, message_bytes)
    n = float(tensor_parallel)
    return last_s + 2.0 * (n - 1.0) / n * (message_bytes - last_bytes) / bus_bytes_per_s


def large_allreduce_seconds(
    nccl_bus_curve: list[tuple[float, float]],
    symm_mem_points: list[tuple[float, float]],
    tensor_parallel: int,
    message_bytes: float,
) -> float:
    """All-reduce time of a message beyond the engines' custom all-reduce limit.

    NCCL: ``2 (n - 1) / n x message / bus`` (nccl-tests' definition of bus bandwidth), the bus
    bandwidth read off the measured curve at this size (``nccl_bus_bandwidth``). Where vLLM's
    symmetric-memory all-reduce has a measured latency at this size (``symm_mem_points``, empty
    elsewhere), the faster of the two (linear in bytes between its points, not used outside
    them: vLLM hands larger messages to NCCL)."""
    n = float(tensor_parallel)
    seconds = (
        2.0 * (n - 1.0) / n * message_bytes / nccl_bus_bandwidth(nccl_bus_curve, message_bytes)
    )
    if symm_mem_points and symm_mem_points[0][0] <= message_bytes <= symm_mem_points[-1][0]:
        symmetric = interpolate_latency(symm_mem_points, message_bytes)
        seconds = symmetric if symmetric < seconds else seconds
    return seconds


def nccl_bus_bandwidth(curve: list[tuple[float, float]], message_bytes: float) -> float:
    """Bus bandwidth at ``message_bytes`` on a measured (bytes, bus bytes/s) curve: linear in
    log2(size) between points (the sizes double), the end points' values held beyond them."""
    first_bytes, first_bus = curve[0]
    if message_bytes <= first_bytes:
        return first_bus
    for index in range(1, len(curve)):
        high_bytes, high_bus = curve[index]
        if message_bytes <= high_bytes:
            low_bytes, low_bus = curve[index - 1]
            fraction = math.log(message_bytes / low_bytes) / math.log(high_bytes / low_bytes)
            return low_bus + fraction * (high_bus - low_bus)
    return curve[-1][1]


def interpolate_latency(points: list[tuple[float, float]], message_bytes: float) -> float:
    """Latency at ``message_bytes`` on a measured (bytes, seconds) curve: linear between points,
    the first point's latency below it, the last segment's slope beyond it."""
    first_bytes, first_s = points[0]
    if message_bytes <= first_bytes:
        return first_s
    for index in range(1, len(points)):
        high_bytes, high_s = points[index]
        if message_bytes <= high_bytes:
            low_bytes, low_s = points[index - 1]
            fraction = (message_bytes - low_bytes) / (high_bytes - low_bytes)
            return low_s + fraction * (high_s - low_s)
    low_bytes, low_s = points[-2]
    high_bytes, high_s = points[-1]
    slope = (high_s - low_s) / (high_bytes - low_bytes)
    return high_s + slope * (message_bytes - high_bytes)
