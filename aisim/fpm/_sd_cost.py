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

from aisim.catalogue._specs import ModelSpec
from aisim.errors import ConfigError
from aisim.speculation._resolved import ResolvedSpeculation

#: Kinds the roofline cannot price, and why (a measured-round or fixed-timing estimator can).
UNPRICED_KINDS: Final = {
    "suffix": "the roofline has no measured host-side suffix-tree lookup cost per request "
    "(vLLM runs it on the CPU, SuffixDecodingProposer.propose), and its draft length varies "
    "per round; price it with a measured_round estimator or fixed timing",
    "medusa": "the roofline has no operator model of Medusa heads (residual blocks and one LM "
    "head per head); price it with a measured_round estimator or fixed timing",
    "mlp_speculator": "the roofline has no operator model of MLP-speculator stages; price it "
    "with a measured_round estimator or fixed timing",
}

#: Kinds whose drafter is a neural network described by ``draft_config``/``draft_model_path``.
NETWORK_DRAFT_KINDS: Final = ("eagle3", "dflash", "dspark", "draft_model")


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
    """KV-cache bytes one token occupies in one layer of ``spec``."""
    if spec.num_layers <= 0:
        return 0
    return spec.kv_bytes_per_token // spec.num_layers


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
        elif kind in UNPRICED_KINDS:
            raise ConfigError(f"{path}.kind: kind {kind}: {UNPRICED_KINDS[kind]}")
        elif kind != "ngram" and kind not in NETWORK_DRAFT_KINDS:
            raise ConfigError(f"{path}.kind: the roofline has no cost model for kind {kind!r}")
        return SpeculationCost(
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

    def describe(self) -> str:
        """``eagle3 d=3 w=4`` style label for diagnostics."""
        return f"{self.kind} d={self.num_draft_tokens} w={self.verify_width}"
