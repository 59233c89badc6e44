"""What a speculation scheme adds to a round, as geometry the roofline can price.

``SpeculationCost.from_resolved`` turns a ``ResolvedSpeculation`` into plain numbers: the target's
verification width, the drafter's forward passes per round (tokens per request in each), the
drafter's geometry, and the draft weight / KV bytes a capacity planner must reserve. Assumptions
(documented in docs/estimators.md): EAGLE-3 drafters share the target's input embeddings; block
drafters (dflash, dspark) share the target's LM head; MTP modules default to one per
``num_nextn_predict_layers`` of the target (at least one).
"""

from __future__ import annotations

from typing import Final

from aisim.catalogue import ModelSpec
from aisim.errors import ConfigError
from aisim.speculation import ResolvedSpeculation

#: Why the roofline cannot price a suffix block without the user's lookup time.
SUFFIX_LOOKUP_MISSING: Final = (
    "the roofline needs the host's suffix-tree lookup time, which has no published per-request "
    "figure (vLLM runs it on the CPU, SuffixDecodingProposer.propose); give "
    "suffix_lookup_us_per_request (microseconds per request per round, measured on your host), "
    "or price it with a measured_round estimator or fixed timing"
)

#: Kinds whose drafter is a set of heads on the target's hidden state (``draft_config`` is
#: the heads' config.json), priced as ``HeadsPass``.
HEADS_KINDS: Final = ("medusa", "mlp_speculator")


class HeadsPass:
    """The one draft pass of a heads drafter per round, as vLLM runs it, for ``B`` decode
    requests (one token each: the target's hidden state at the request's last position).

    * ``gemms``: ``(in_features, out_features, vocab_parallel)`` of every linear layer the pass
      runs, in order; the LM heads are vocab-parallel (``ParallelLMHead``: split over the
      tensor-parallel GPUs), the other linears plain ``nn.Linear`` (replicated).
    * ``bytes_per_token``: activation bytes the pass's element-wise operations and its
      argmax / sampler read and write per request.
    * ``kernels``: kernels the pass launches.

    Medusa (``vllm/model_executor/models/medusa.py``: ``ResidualBlock.forward``,
    ``Medusa.forward`` / ``compute_logits``; ``vllm/v1/spec_decode/medusa.py``,
    ``MedusaProposer.propose``: one forward of every head, argmax per head): per head
    ``num_hidden_layers`` x (hidden -> hidden linear, SiLU, residual add: 3 kernels) and its LM
    head (hidden -> vocab, 1 kernel); then the heads' logits stacked as fp32 and one argmax
    (2 kernels). MLP speculator (``vllm/model_executor/models/mlp_speculator.py``,
    ``MLPSpeculator.generate_proposals``): K sequential stages, each an embedding lookup of the
    last token (inner_dim), a projection (emb_dim -> inner_dim at stage 0, else inner_dim ->
    inner_dim), the weighted add, the L2 layer norm (``MLPSpeculatorLayerNorm``: square, mean,
    rsqrt, scale, weight, bias), GELU, the LM head (inner_dim -> vocab) and the sampler's argmax
    over fp32 logits: 12 kernels per stage.
    """

    def __init__(self, gemms: list[tuple[int, int, bool]], bytes_per_token: int, kernels: int):
        self.gemms = gemms
        self.bytes_per_token = bytes_per_token
        self.kernels = kernels

    @staticmethod
    def medusa(heads: int, layers: int, hidden: int, vocab: int, dtype: int) -> HeadsPass:
        gemms: list[tuple[int, int, bool]] = []
        for _ in range(heads):
            gemms.extend([(hidden, hidden, False)] * layers)
            gemms.append((hidden, vocab, True))
        # Per linear: SiLU (read, write) and the residual add (two reads, one write).
        elementwise = heads * layers * 5 * hidden * dtype
        # The heads' logits stacked as fp32 (read, write) and read by the argmax.
        logits = heads * vocab * (dtype + 4 + 4)
        return HeadsPass(gemms, elementwise + logits, heads * (3 * layers + 1) + 2)

    @staticmethod
    def mlp_speculator(
        stages: int, emb_dim: int, inner_dim: int, vocab: int, dtype: int
    ) -> HeadsPass:
        gemms: list[tuple[int, int, bool]] = []
        for stage in range(stages):
            gemms.append((emb_dim if stage == 0 else inner_dim, inner_dim, False))
            gemms.append((inner_dim, vocab, True))
        # Per stage: the embedding row (read, write), the add (two reads, one write), the
        # layer norm (six passes of read + write), GELU (read, write); the logits read as fp32.
        per_stage = (2 + 3 + 12 + 2) * inner_dim * dtype + vocab * (dtype + 4)
        return HeadsPass(gemms, stages * per_stage, 12 * stages)

    def weight_parameters(self) -> int:
        total = 0
        for inputs, outputs, _ in self.gemms:
            total += inputs * outputs
        return total


#: Kinds whose drafter is a neural network described by ``draft_config``/``draft_model_path``.
NETWORK_DRAFT_KINDS: Final = ("eagle3", "dflash", "dspark", "draft_model")
#: Network drafters that draft a whole block in one pass from the target's hidden states (their
#: context K/V is projected from every token the target computed).
BLOCK_DRAFT_KINDS: Final = ("dflash", "dspark")


def layer_parameters(spec: ModelSpec) -> int:
    """Weights of one dense decoder layer of ``spec`` (attention, SwiGLU MLP, two norms)."""
    return spec.attention_parameters_per_layer + spec.dense_mlp_parameters + 2 * spec.hidden_size


def mtp_layer_parameters(target: ModelSpec) -> int:
    """Weights of one MTP module's decoder layer: a MoE layer on a MoE target (DeepSeek-V3's
    MTP block carries all routed experts, like the target's later layers), else a dense one."""
    if target.is_moe and target.num_layers > target.first_dense_layers:
        return (
            target.attention_parameters_per_layer
            + target.moe_mlp_parameters
            + 2 * target.hidden_size
        )
    return layer_parameters(target)


def layer_kv_bytes_per_token(spec: ModelSpec) -> int:
    """KV-cache bytes one token occupies in one (full-attention) layer of ``spec``; an MTP or
    draft layer is a full-attention layer, linear-attention layers hold no KV."""
    if spec.num_layers <= 0:
        return 0
    layers = spec.full_attention_layers
    return spec.kv_bytes_per_token // layers if layers > 0 else 0


class SpeculationCost:
    """Per-round cost geometry of one enabled scheme.

    * ``verify_width``: target query tokens per request in the verification pass.
    * ``draft_step_tokens``: one entry per sequential draft forward pass, the query tokens per
      request in it (EAGLE-3 chain: ``[1] * d``; tree: ``tree_shape``; block drafters: ``[N]``;
      draft_model: ``[1] * K``; ngram and mtp: ``[]``).
    * ``draft_spec`` / ``draft_layers`` / ``draft_vocab``: the drafter network priced per step.
    * ``fused_feature_inputs``: input width of EAGLE-3's fused-feature projection (3 * hidden).
    * ``mtp_depth``: MTP's depth (the legacy compute scale is (depth + L) / L).
    """

    def __init__(
        self,
        kind: str,
        num_draft_tokens: int,
        verify_width: int,
        draft_step_tokens: list[int],
        draft_spec: ModelSpec | None,
        draft_layers: int,
        draft_vocab: int,
        draft_tp_size: int,
        fused_feature_inputs: int,
        mtp_depth: int,
        draft_weight_bytes: int,
        draft_kv_bytes_per_token: int,
        identity: str,
    ) -> None:
        self.kind = kind
        self.num_draft_tokens = num_draft_tokens
        self.verify_width = verify_width
        self.draft_step_tokens = draft_step_tokens
        self.draft_spec = draft_spec
        self.draft_layers = draft_layers
        self.draft_vocab = draft_vocab
        self.draft_tp_size = draft_tp_size
        self.fused_feature_inputs = fused_feature_inputs
        self.mtp_depth = mtp_depth
        self.draft_weight_bytes = draft_weight_bytes
        self.draft_kv_bytes_per_token = draft_kv_bytes_per_token
        self.identity = identity
        #: Medusa / MLP speculator: the heads' draft pass (``None`` for other kinds).
        self.heads: HeadsPass | None = None
        #: suffix: the host's suffix-tree lookup per request per round (seconds; the user's).
        self.host_lookup_s_per_request = 0.0

    @staticmethod
    def from_resolved(
        resolved: ResolvedSpeculation,
        target: ModelSpec,
        tensor_parallel: int,
        draft_spec: ModelSpec | None = None,
        path: str = "speculation",
        require_geometry: bool = True,
    ) -> SpeculationCost | None:
        """The cost geometry of ``resolved`` on ``target`` (``None`` when speculation is off).

        ``draft_spec`` overrides ``resolved.draft_model`` (the selection layer passes the
        catalogue model named by ``draft_model_path``). Raises ``ConfigError`` when a network
        drafter's geometry is unknown, unless ``require_geometry`` is false: then the result
        has no draft operations and zero draft bytes (data-driven estimators need no geometry).
        """
        if not resolved.enabled:
            return None
        kind = resolved.kind
        drafts = resolved.num_draft_tokens
        spec = draft_spec if draft_spec is not None else resolved.draft_model
        if kind in NETWORK_DRAFT_KINDS and spec is None and require_geometry:
            raise ConfigError(
                f"{path}: kind {kind}: the roofline needs the drafter's geometry; give "
                "draft_config (a config.json mapping) or a draft_model_path naming a catalogue model"
            )
        dtype = target.dtype_bytes
        hidden = target.hidden_size
        steps: list[int] = []
        layers = 0
        vocab = 0
        fused = 0
        depth = 0
        weights = 0
        host_lookup = 0.0
        kv_bytes = 0
        draft_tp = tensor_parallel
        if kind == "mtp":
            depth = drafts
            modules = max(1, target.num_nextn_predict_layers)
            weights = modules * (mtp_layer_parameters(target) + 2 * hidden * hidden) * dtype
            kv_bytes = modules * layer_kv_bytes_per_token(target)
        elif kind == "eagle3" and spec is not None:
            tree = resolved.tree_shape
            steps = list(tree) if tree is not None else [1] * drafts
            if resolved.params.get("parallel_drafting"):
                steps = [drafts]  # vLLM's P-EAGLE: one draft pass of K queries
            layers = 1
            vocab = resolved.draft_vocab_size or spec.vocab_size
            fused = 3 * hidden
            weights = (fused * hidden + layer_parameters(spec) + vocab * spec.hidden_size) * (
                spec.dtype_bytes
            )
            kv_bytes = layer_kv_bytes_per_token(spec)
        elif kind in ("dflash", "dspark") and spec is not None:
            steps = [drafts]
            layers = resolved.num_draft_layers or spec.num_layers
            vocab = resolved.draft_vocab_size or target.vocab_size
            weights = layers * layer_parameters(spec) * spec.dtype_bytes
            kv_bytes = layers * layer_kv_bytes_per_token(spec)
        elif kind == "draft_model" and spec is not None:
            # vLLM's parallel drafting (PARD): all K drafts in one draft pass of K queries.
            steps = [drafts] if resolved.params.get("parallel_drafting") else [1] * drafts
            layers = spec.num_layers
            vocab = spec.vocab_size
            draft_tp = resolved.draft_tp_size or tensor_parallel
            weights = spec.weight_bytes
            kv_bytes = spec.kv_bytes_per_token
        elif kind in HEADS_KINDS:
            heads = heads_pass(resolved, dtype)
            weights = heads.weight_parameters() * dtype
            if kind == "mlp_speculator":
                # One vocab-parallel embedding (vocab x inner_dim) per stage.
                config = resolved.draft_config
                assert config is not None
                embedding = int(config["vocab_size"]) * int(config["inner_dim"])
                weights += drafts * embedding * dtype
        elif kind == "suffix":
            lookup = resolved.suffix_lookup_us_per_request
            if lookup is None and require_geometry:
                raise ConfigError(
                    f"{path}.suffix_lookup_us_per_request: kind suffix: {SUFFIX_LOOKUP_MISSING}"
                )
            host_lookup = 0.0 if lookup is None else lookup * 1e-6
        elif kind != "ngram" and kind not in NETWORK_DRAFT_KINDS:
            raise ConfigError(f"{path}.kind: the roofline has no cost model for kind {kind!r}")
        cost = SpeculationCost(
            kind=kind,
            num_draft_tokens=drafts,
            verify_width=resolved.verify_width,
            draft_step_tokens=steps,
            draft_spec=spec if kind in NETWORK_DRAFT_KINDS else None,
            draft_layers=layers,
            draft_vocab=vocab,
            draft_tp_size=draft_tp,
            fused_feature_inputs=fused,
            mtp_depth=depth,
            draft_weight_bytes=weights,
            draft_kv_bytes_per_token=kv_bytes,
            identity=resolved.cost_identity,
        )
        if kind in HEADS_KINDS:
            cost.heads = heads_pass(resolved, target.dtype_bytes)
        cost.host_lookup_s_per_request = host_lookup
        return cost

    def at_draft_count(self, drafts: int) -> SpeculationCost | None:
        """This suffix scheme as a round that drafted ``drafts`` tokens per request (0..K):
        verify width ``drafts + 1`` and the same host lookup per request (vLLM looks every
        decode request up, whatever it finds). ``None`` for every other kind (their rounds
        are priced at the configured length)."""
        if self.kind != "suffix" or drafts < 0 or drafts > self.num_draft_tokens:
            return None
        cost = SpeculationCost(
            kind=self.kind,
            num_draft_tokens=drafts,
            verify_width=drafts + 1,
            draft_step_tokens=[],
            draft_spec=None,
            draft_layers=0,
            draft_vocab=0,
            draft_tp_size=self.draft_tp_size,
            fused_feature_inputs=0,
            mtp_depth=0,
            draft_weight_bytes=0,
            draft_kv_bytes_per_token=0,
            identity=self.identity,
        )
        cost.host_lookup_s_per_request = self.host_lookup_s_per_request
        return cost

    def describe(self) -> str:
        """``eagle3 d=3 w=4`` style label for diagnostics."""
        return f"{self.kind} d={self.num_draft_tokens} w={self.verify_width}"


def heads_pass(resolved: ResolvedSpeculation, dtype: int) -> HeadsPass:
    """The heads' draft pass of a Medusa or MLP-speculator block, from its ``draft_config``
    (the fields ``heads_geometry`` validated; they are the cost identity's draft geometry)."""
    config = resolved.draft_config
    assert config is not None
    drafts = resolved.num_draft_tokens
    if resolved.kind == "medusa":
        return HeadsPass.medusa(
            drafts,
            int(config["num_hidden_layers"]),
            int(config["hidden_size"]),
            int(config["vocab_size"]),
            dtype,
        )
    return HeadsPass.mlp_speculator(
        drafts,
        int(config["emb_dim"]),
        int(config["inner_dim"]),
        int(config["vocab_size"]),
        dtype,
    )


def heads_seconds(
    heads: HeadsPass,
    requests: float,
    tensor_parallel: int,
    flops_per_s: float,
    bytes_per_s: float,
    dtype: float,
) -> float:
    """Roofline time of the heads' pass for ``requests`` tokens (no overheads): every linear at
    the larger of its compute and memory time (the LM heads split over ``tensor_parallel``
    GPUs), then the element-wise and argmax bytes at ``bytes_per_s``."""
    tp = float(tensor_parallel)
    seconds = 0.0
    for inputs, outputs, vocab_parallel in heads.gemms:
        out = float(outputs) / tp if vocab_parallel else float(outputs)
        params = float(inputs) * out
        flops = 2.0 * requests * params
        moved = (params + requests * (float(inputs) + out)) * dtype
        compute = flops / flops_per_s
        memory = moved / bytes_per_s
        seconds += compute if compute > memory else memory
    return seconds + requests * float(heads.bytes_per_token) / bytes_per_s
