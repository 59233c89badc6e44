"""The ``roofline`` estimator: analytic cost from model geometry and GPU peaks (needs no data).

Without a scheme it prices STP passes (prefill, decode, mixed). With an enabled scheme a pass that
carries decode requests is priced as one whole SD round for the *logical* batch (scheme-native):

* target verification: every decode request runs ``verify_width`` query tokens;
* eagle3: per draft step the fused-feature projection (3 * hidden -> hidden), one decoder layer
  of the drafter and the drafter's LM head (its own, possibly reduced, vocabulary);
* dflash / dspark: one block-drafter forward over N tokens per request (its layers and head);
* draft_model: K full decode steps of the draft model (step i reads K_total + i * B past KV);
  every multi-step drafter's step reads the KV its earlier steps appended;
* ngram: no draft operations;
* mtp: the legacy compute scale (depth + L) / L applied to the target verification (published:
  1.0833 for depth 3, L 36), no separate draft operations.

Prefill work is priced as target-only (draft prefill is not charged). ``draft_length`` is rejected:
the roofline prices speculation natively; configure a scheme instead.
"""

from __future__ import annotations

from aisim.catalogue._specs import GpuSpec, ModelSpec
from aisim.errors import ConfigError
from aisim.fpm._metrics import ForwardPassMetrics
from aisim.fpm._model import ForwardPassModel
from aisim.fpm._roofline_ops import (
    LayerStack,
    PassShape,
    add_shapes,
    decode_shape,
    prefill_shape,
)
from aisim.fpm._sd_cost import SpeculationCost


class RooflineModel(ForwardPassModel):
    """Analytic roofline on ``gpu`` with ``tensor_parallel`` GPUs per model replica."""

    def __init__(
        self,
        model_spec: ModelSpec,
        gpu: GpuSpec,
        tensor_parallel: int = 1,
        scheme: SpeculationCost | None = None,
    ) -> None:
        if tensor_parallel < 1:
            raise ConfigError(f"tensor_parallel: expected an integer >= 1, got {tensor_parallel}")
        if tensor_parallel > 1 and gpu.nvlink_bytes_per_s <= 0.0:
            raise ConfigError(
                f"tensor_parallel: {tensor_parallel} needs the GPU's nvlink_bytes_per_s_per_gpu; "
                f"hardware {gpu.name!r} has none"
            )
        native = scheme is not None
        super().__init__(
            name="roofline",
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
        self.gpu = gpu
        self.tensor_parallel = tensor_parallel
        self.scheme = scheme
        self.target = LayerStack(
            model_spec, gpu, tensor_parallel, model_spec.num_layers, model_spec.vocab_size
        )
        self.verify_width = scheme.verify_width if scheme is not None else 1
        self.mtp_scale = 1.0
        self.draft: LayerStack | None = None
        if scheme is not None:
            self.draft_weight_bytes = scheme.draft_weight_bytes
            self.draft_kv_bytes_per_token = scheme.draft_kv_bytes_per_token
            if scheme.kind == "mtp":
                layers = float(model_spec.num_layers)
                self.mtp_scale = (float(scheme.mtp_depth) + layers) / layers
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
                    scheme.fused_feature_inputs,
                )

    def _target_seconds(self, rank: ForwardPassMetrics) -> float:
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
        seconds = self.target.seconds(shape)
        if rank.num_decode_requests > 0:
            seconds *= self.mtp_scale
        return seconds

    def _draft_seconds(self, rank: ForwardPassMetrics) -> float:
        draft = self.draft
        scheme = self.scheme
        requests = rank.num_decode_requests
        if draft is None or scheme is None or requests == 0:
            return 0.0
        seconds = 0.0
        past = rank.sum_decode_kv_tokens
        for tokens in scheme.draft_step_tokens:
            seconds += draft.seconds(decode_shape(requests, past, tokens))
            past += tokens * requests  # each draft step appends its tokens to the draft KV
        return seconds

    def _rank_ms(self, rank: ForwardPassMetrics, path: str) -> float:
        return 1000.0 * (self._target_seconds(rank) + self._draft_seconds(rank))

    def _rank_details(self, rank: ForwardPassMetrics) -> dict[str, float]:
        return {
            "target_ms": 1000.0 * self._target_seconds(rank),
            "draft_ms": 1000.0 * self._draft_seconds(rank),
            "verify_width": float(self.verify_width),
            "mtp_compute_scale": self.mtp_scale,
        }

    def _notes(self) -> list[str]:
        notes = [
            f"roofline on {self.gpu.name}, tensor_parallel={self.tensor_parallel}",
        ]
        if self.scheme is not None:
            notes.append(f"scheme-native SD round: {self.scheme.describe()}")
        return notes

    def stp_ms(self, batch_size: int, total_kv_tokens: int) -> float:
        """Target-only STP decode price (ms), ignoring any scheme (for comparisons and plots)."""
        return 1000.0 * self.target.seconds(decode_shape(batch_size, total_kv_tokens, 1))
