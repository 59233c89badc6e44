"""The ``roofline`` estimators: analytic cost from model geometry and GPU peaks (need no data).

``roofline`` (the default) applies the measured efficiency and overhead terms of
``aisim.catalogue._costs.MEASURED_TERMS``; ``roofline_ideal`` is the pure bound (``IDEAL_TERMS``:
the historical efficiencies, no overheads, MTP as the legacy compute scale).

Without a scheme a pass is one STP forward pass (prefill, decode, mixed): its operations, one
kernel overhead per kernel, the per-step host overhead and the sampler. With an enabled scheme a
pass that carries decode requests is priced as one whole SD round for the *logical* batch, part by
part as it runs:

* draft steps, sequential, each a forward pass paying the per-step and per-kernel overheads:
  eagle3: the fused-feature projection (3 * hidden -> hidden), one decoder layer and the
  drafter's LM head (its own, possibly reduced, vocabulary) per step, a chain's first step over
  the verified window (depth + 1 tokens per request, logits of one); dflash / dspark: one
  block-drafter forward over N tokens per request (dspark: plus its eager Markov sampler, one
  host step per drafted position); draft_model: K full decode steps of the draft
  model; mtp: per step the MTP block (2 * hidden -> hidden projection, one target decoder layer)
  and the shared LM head, the first of the depth steps over the verified window (depth + 1
  tokens per request, logits of one); every multi-step drafter's step reads the KV its earlier steps appended;
  ngram: no network, a host-side proposal per request;
* the target verification: every decode request runs ``verify_width`` query tokens;
* rejection sampling: the (rejection) sampler reading the verification's fp32 logits.

A pass with prefill tokens also drafts for its prompts (a network drafter's work on the prompt):
the first draft pass of a chain drafter (eagle3, mtp, draft_model) takes the prompt's tokens
beside the decode windows (logits of each prompt's last token), and the later steps, on vLLM,
the prompts' requests too (on SGLang a prompt gets one draft extend, its chain drafts in the
next decode batch); a block drafter (dflash, dspark) projects every computed token to its
context K/V (``LayerStack.context_kv_seconds``) and runs its block for the prompts' requests
too, DSpark's Markov sampler included. A prefill-only pass thus costs the target's prefill
plus that drafting.

``roofline_ideal`` keeps the former pricing: no overheads, no sampler, and MTP as the legacy
compute scale (depth + L) / L on the verification (published: 1.0833 for depth 3, L 36) with no
draft steps (so no MTP drafting on prefill passes either).
``draft_length`` is rejected: the roofline prices speculation natively; configure a scheme.
"""

from __future__ import annotations

from aisim.catalogue import CHECKPOINT, MEASURED_TERMS, CostTerms, Deployment, GpuSpec, ModelSpec
from aisim.errors import ConfigError
from aisim.fpm._model import ForwardPassModel
from aisim.fpm._pass_metrics import ForwardPassMetrics
from aisim.fpm._roofline_ops import (
    LayerStack,
    PassShape,
    add_shapes,
    decode_shape,
    prefill_shape,
)
from aisim.fpm._sd_cost import BLOCK_DRAFT_KINDS, SpeculationCost, heads_seconds


class RoundParts:
    """One rank's price, part by part, in seconds (their sum is the price).

    ``draft``: the draft steps (with their overheads and the host proposal); ``verify``: the
    target pass (verification, or the STP pass; with its overheads); ``sampling``: the sampler /
    rejection sampler; ``overhead``: the per-step and per-kernel overheads inside draft + verify
    (informational, already counted there); ``draft_steps``: sequential draft passes.
    """

    def __init__(self) -> None:
        self.draft = 0.0
        self.verify = 0.0
        self.sampling = 0.0
        self.overhead = 0.0
        self.draft_steps = 0

    @property
    def total(self) -> float:
        return self.verify + self.draft + self.sampling


class RooflineModel(ForwardPassModel):
    """Analytic roofline on ``gpu`` with ``tensor_parallel`` GPUs per model replica.

    ``terms`` selects the variant: ``MEASURED_TERMS`` (``roofline``, the default) or
    ``IDEAL_TERMS`` (``roofline_ideal``); the estimator's name is the terms' name.
    ``deployment``: weight / KV precision, expert parallelism and data-parallel attention
    (``aisim.catalogue._deployment``); a pass is then one attention rank's.
    """

    def __init__(
        self,
        model_spec: ModelSpec,
        gpu: GpuSpec,
        tensor_parallel: int = 1,
        scheme: SpeculationCost | None = None,
        terms: CostTerms = MEASURED_TERMS,
        deployment: Deployment = CHECKPOINT,
        backend: str = "vllm",
    ) -> None:
        if tensor_parallel < 1:
            raise ConfigError(f"tensor_parallel: expected an integer >= 1, got {tensor_parallel}")
        heads = model_spec.num_attention_heads
        if heads % tensor_parallel != 0:
            # vLLM refuses the same (ModelConfig.verify_with_parallel_config: the attention heads
            # must divide by tensor_parallel_size): each GPU holds heads / TP whole heads.
            raise ConfigError(
                f"tensor_parallel: {tensor_parallel} does not divide the {heads} attention heads "
                f"of {model_spec.name} (each GPU must hold whole heads; use a divisor of {heads})"
            )
        if tensor_parallel > 1 and gpu.nvlink_bytes_per_s <= 0.0:
            raise ConfigError(
                f"tensor_parallel: {tensor_parallel} needs the GPU's nvlink_bytes_per_s_per_gpu; "
                f"hardware {gpu.name!r} has none"
            )
        native = scheme is not None
        super().__init__(
            name=terms.name,
            prices_speculation_natively=native,
            supports_draft_length=False,
            model_spec=model_spec,
            data_identity=None,
            speculation=scheme.describe() if scheme is not None else "none",
            draft_length_refusal=(
                "prices speculation natively (scheme-native SD round); omit draft_length"
                if native
                else "prices speculation natively; configure a speculation scheme instead of "
                "draft_length"
            ),
        )
        # Analytic: a price is a function of the query and of what is set here.
        self.pure_prices = True
        self.gpu = gpu
        self.terms = terms
        self.backend = backend
        #: The draft steps a prefill pass runs for its prompts: vLLM proposes the prompt's
        #: first drafts in the prefill's own step, every step of the chain (its model runner
        #: drafts after each sampling); SGLang runs one draft extend over the prompt
        #: (``speculative/eagle_worker.py``: ``forward_target_extend`` then
        #: ``forward_draft_extend``) and drafts the chain in the next decode batch.
        self.prompt_draft_chain = backend != "sglang"
        self.deployment = deployment
        self.tensor_parallel = tensor_parallel
        self.scheme = scheme
        self.target = LayerStack(
            model_spec,
            gpu,
            tensor_parallel,
            model_spec.num_layers,
            model_spec.vocab_size,
            terms,
            deployment=deployment,
            linear_layers=model_spec.linear_attention_layers,
        )
        self.verify_width = scheme.verify_width if scheme is not None else 1
        self.mtp_scale = 1.0
        self.draft: LayerStack | None = None
        self.draft_step_tokens: list[int] = []
        self.host_proposal_s_per_request = 0.0
        #: MTP: the first draft pass covers the verified window but needs logits of one token
        #: per request.
        self.wide_first_draft_pass = False
        if scheme is not None:
            self.draft_weight_bytes = scheme.draft_weight_bytes
            self.draft_kv_bytes_per_token = scheme.draft_kv_bytes_per_token
            self.draft_step_tokens = list(scheme.draft_step_tokens)
            if scheme.kind == "mtp" and terms.mtp_legacy_scale:
                layers = float(model_spec.num_layers)
                self.mtp_scale = (float(scheme.mtp_depth) + layers) / layers
            elif scheme.kind == "mtp":
                # The MTP block: 2 hidden -> hidden projection, one target layer (a MoE layer
                # on a MoE target), and the target's LM head, once per draft step.
                self.draft = LayerStack(
                    model_spec,
                    gpu,
                    tensor_parallel,
                    1,
                    model_spec.vocab_size,
                    terms,
                    2 * model_spec.hidden_size,
                    all_moe=True,
                    deployment=deployment,
                )
                # The first draft pass of a round runs the MTP block over the verified window,
                # (depth + 1) tokens per request (the draft KV of the accepted tokens, logits of
                # the last one); the other depth - 1 passes take one token per request: SGLang
                # speculative/eagle_worker_v2.py EagleDraftWorker._draft_extend_for_decode
                # (num_tokens_per_req = steps + 1) then draft_forward; TensorRT-LLM
                # _torch/speculative/mtp.py MTPSpecMetadata.prepare (MTP Eagle: max_draft_len + 1
                # tokens in the 1st draft forward, one in the following ones); vLLM
                # v1/spec_decode/eagle.py EagleProposer.propose (the target's scheduled tokens).
                depth = scheme.mtp_depth
                self.draft_step_tokens = [depth + 1] + [1] * (depth - 1) if depth > 0 else []
                self.wide_first_draft_pass = depth > 0
            chain = scheme.draft_step_tokens
            if (
                scheme.kind == "eagle3"
                and not terms.mtp_legacy_scale
                and len(chain) > 1
                and all(tokens == 1 for tokens in chain)
            ):
                # EAGLE-3's first draft pass likewise runs over the verified window (the target
                # pass's tokens, depth + 1 per request, through the fused-feature projection and
                # the draft layer; logits of the last one): vLLM v1/spec_decode/eagle.py
                # EagleProposer.propose (num_tokens = target_token_ids.shape[0],
                # combine_hidden_states over all of them, compute_logits at
                # last_token_indices); SGLang speculative/eagle_worker.py
                # forward_draft_extend_after_decode. A tree or P-EAGLE round keeps its shape.
                self.draft_step_tokens = [len(chain) + 1] + [1] * (len(chain) - 1)
                self.wide_first_draft_pass = True
            if scheme.kind == "ngram":
                self.host_proposal_s_per_request = terms.ngram_proposal_s_per_request
            elif scheme.kind == "suffix":
                self.host_proposal_s_per_request = scheme.host_lookup_s_per_request
            draft_spec = scheme.draft_spec
            if draft_spec is not None and scheme.draft_layers > 0:
                if scheme.draft_tp_size > 1 and gpu.nvlink_bytes_per_s <= 0.0:
                    raise ConfigError(
                        f"speculation.params.draft_tp_size: {scheme.draft_tp_size} needs the "
                        f"GPU's nvlink_bytes_per_s_per_gpu; hardware {gpu.name!r} has none"
                    )
                self.draft = LayerStack(
                    draft_spec,
                    gpu,
                    scheme.draft_tp_size,
                    scheme.draft_layers,
                    scheme.draft_vocab,
                    terms,
                    scheme.fused_feature_inputs,
                )

    def at_draft_count(self, drafts: int) -> RooflineModel | None:
        """This roofline pricing a suffix round that drafted ``drafts`` tokens per request
        (``SpeculationCost.at_draft_count``); ``None`` when the scheme is not suffix."""
        scheme = self.scheme
        if scheme is None:
            return None
        narrowed = scheme.at_draft_count(drafts)
        spec = self.model_spec
        if narrowed is None or spec is None:
            return None
        return RooflineModel(
            spec,
            self.gpu,
            self.tensor_parallel,
            narrowed,
            self.terms,
            self.deployment,
            self.backend,
        )

    def _pass_overhead(self, stack: LayerStack, shape: PassShape) -> float:
        """Per-kernel and per-step host overhead of one forward pass of ``shape``."""
        terms = self.terms
        return stack.kernels(shape) * terms.kernel_overhead_s + terms.step_overhead_s

    def _target_shape(self, rank: ForwardPassMetrics) -> PassShape:
        shape = PassShape(0.0, 0.0, 0.0, 0.0)
        if rank.num_prefill_requests > 0:
            shape = prefill_shape(
                rank.num_prefill_requests,
                rank.sum_prefill_tokens,
                rank.extend_lengths,
                rank.prefill_past_kv_lengths,
            )
        if rank.num_decode_requests > 0:
            decode = decode_shape(
                rank.num_decode_requests, rank.sum_decode_kv_tokens, self.verify_width
            )
            shape = add_shapes(shape, decode)
        return shape

    def _parts(self, rank: ForwardPassMetrics) -> RoundParts:
        parts = RoundParts()
        shape = self._target_shape(rank)
        verify = self.target.seconds(shape)
        if rank.num_decode_requests > 0:
            verify *= self.mtp_scale
        overhead = self._pass_overhead(self.target, shape)
        if rank.num_prefill_requests > 0:
            # A pass with prefill tokens is not a uniform decode batch: vLLM replays the
            # piecewise CUDA graphs, split at the Gated DeltaNet core (CompilationConfig.
            # _attention_ops), so each linear-attention layer's core runs eagerly from the host.
            overhead += self.target.linear_layers * self.terms.eager_linear_layer_s
        parts.verify = verify + overhead
        parts.overhead = overhead
        if self.terms.charge_sampling:
            parts.sampling = self.target.sampling_seconds(shape.logit_tokens)
        requests = rank.num_decode_requests
        # vLLM drafts after every pass that sampled, the prefill's included: the model runner
        # proposes right after sampling, before the step's output is returned
        # (gpu_model_runner.py, ``propose_draft_token_ids`` when ``input_fits_in_drafter``),
        # so a prompt's first token waits for its first drafts. A network drafter's first pass
        # takes every scheduled token, the prompt's included (``llm_base_proposer.py``
        # ``set_inputs_first_pass``: ``num_tokens = target_token_ids.shape[0]``), and its
        # later steps every request.
        prefills = rank.num_prefill_requests if self.draft is not None else 0
        if requests == 0 and prefills == 0:
            return parts
        parts.draft = self.host_proposal_s_per_request * float(requests)
        heads = self.scheme.heads if self.scheme is not None else None
        if heads is not None and requests > 0:
            # Medusa / MLP speculator: one pass of the heads (aisim.fpm._sd_cost.HeadsPass).
            target = self.target
            head_overhead = (
                heads.kernels * self.terms.kernel_overhead_s + self.terms.step_overhead_s
            )
            parts.draft += head_overhead + heads_seconds(
                heads,
                float(requests),
                self.tensor_parallel,
                target.head_flops_per_s,
                target.bytes_per_s,
                target.dtype,
            )
            parts.overhead += head_overhead
            parts.draft_steps += 1
        scheme = self.scheme
        if scheme is not None and scheme.kind == "dspark":
            # vLLM's DSpark Markov correction: one eager sampler step per drafted position
            # (DSparkProposer._sample_draft_tokens -> sample_dspark_markov_block).
            markov = float(scheme.num_draft_tokens) * self.terms.dspark_markov_step_s
            parts.draft += markov
            parts.overhead += markov
        draft = self.draft
        if draft is None:
            return parts
        past = rank.sum_decode_kv_tokens
        prompt_kv = rank.sum_prefill_tokens + sum(rank.prefill_past_kv_lengths or [])
        block = scheme is not None and scheme.kind in BLOCK_DRAFT_KINDS
        if block:
            # The block drafter's context K/V over every token the target computed.
            context = float(rank.sum_prefill_tokens + requests * self.verify_width)
            context_overhead = draft.context_kv_kernels() * self.terms.kernel_overhead_s
            parts.draft += draft.context_kv_seconds(context) + context_overhead
            parts.overhead += context_overhead
        for index, tokens in enumerate(self.draft_step_tokens):
            if requests == 0 and index > 0 and not self.prompt_draft_chain:
                break
            step = decode_shape(requests, past, tokens)
            if index == 0 and self.wide_first_draft_pass:
                step.logit_tokens = float(requests)
            if prefills > 0 and index == 0 and not block:
                # A chain drafter's first pass runs over the prompt's tokens (its draft KV),
                # with logits of each prompt's last token.
                prompt = prefill_shape(
                    prefills,
                    rank.sum_prefill_tokens,
                    rank.extend_lengths,
                    rank.prefill_past_kv_lengths,
                )
                step = add_shapes(step, prompt)
            elif prefills > 0 and (index == 0 or self.prompt_draft_chain):
                step = add_shapes(step, decode_shape(prefills, prompt_kv, tokens))
            step_overhead = self._pass_overhead(draft, step) + self.terms.draft_step_host_s
            parts.draft += draft.seconds(step) + step_overhead
            parts.overhead += step_overhead
            parts.draft_steps += 1
            past += tokens * requests  # each draft step appends its tokens to the draft KV
            prompt_kv += tokens * prefills
        return parts

    def _rank_ms(self, rank: ForwardPassMetrics, path: str) -> float:
        return 1000.0 * self._parts(rank).total

    def _rank_details(self, rank: ForwardPassMetrics) -> dict[str, float]:
        parts = self._parts(rank)
        return {
            "target_ms": 1000.0 * parts.verify,
            "draft_ms": 1000.0 * parts.draft,
            "sampling_ms": 1000.0 * parts.sampling,
            "overhead_ms": 1000.0 * parts.overhead,
            "draft_steps": float(parts.draft_steps),
            "verify_width": float(self.verify_width),
            "mtp_compute_scale": self.mtp_scale,
        }

    def _notes(self) -> list[str]:
        notes = [
            f"{self.terms.name} on {self.gpu.name}, tensor_parallel={self.tensor_parallel}",
        ]
        if self.deployment != CHECKPOINT:
            notes.append(f"deployment: {self.deployment.describe()}")
        if self.scheme is not None:
            notes.append(f"scheme-native SD round: {self.scheme.describe()}")
        return notes

    def stp_ms(self, batch_size: int, total_kv_tokens: int) -> float:
        """Target-only STP decode price (ms) with this model's terms, ignoring any scheme (for
        comparisons such as the published-rule cross-check)."""
        shape = decode_shape(batch_size, total_kv_tokens, 1)
        seconds = self.target.seconds(shape) + self._pass_overhead(self.target, shape)
        if self.terms.charge_sampling:
            seconds += self.target.sampling_seconds(shape.logit_tokens)
        return 1000.0 * seconds
