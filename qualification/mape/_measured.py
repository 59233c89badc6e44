"""The ``measured_round`` predictor: another recording's rounds, scored against this dataset.

A ``measured_round`` estimator built from a dataset's own SD rounds prices every recorded
configuration at its own median round, so scoring it on that dataset is circular (only the
spread of rounds around their median would be left), and leaving one configuration out answers
nothing on the recorder's grids (B x K_total with two K per B: a held-out point is never inside
the others' envelope, and ``measured_round`` never extrapolates). What is meaningful is the
*reproducibility* of a measured table: price this dataset's configurations with the rounds of an
**independent** recording of the same identity (``--rounds FILE``: its ``sd_rounds.parquet``, or
an ``aisim.measured_rounds`` file), through ``aisim.fpm.load_table_models``, which checks the
file's SHA-256 and reduces each configuration to its median round.

Refused (``ConfigError``): no rounds file, the scored dataset's own rounds (same SHA-256), or a
file no table of which matches the dataset's identity at any recorded d (kind, draft identity,
timing scope, role, model, hardware, TP: both sides named). A d whose table does not match, or a
configuration outside the envelope, is unanswered with its reason.
"""

from __future__ import annotations

from pathlib import Path

from aisim.errors import AisimError, ConfigError, UnsupportedQuery
from qualification.datasets import SD_ROUNDS, RecordedDataset
from qualification.mape._predictors import Prediction, RoundQuery


class MeasuredRoundPredictor:
    """``measured_round`` from an independent recording's rounds (see the module docstring)."""

    name = "measured_round"

    def __init__(self, dataset: RecordedDataset, rounds: str | Path | None) -> None:
        from aisim.fpm import MeasuredRoundModel, load_table_models

        if rounds is None:
            raise ConfigError(
                "--rounds: --estimator measured_round needs --rounds FILE, the SD rounds "
                "of an independent recording (scoring a dataset's own rounds is circular)"
            )
        own = [
            model
            for model in load_table_models(dataset.directory / SD_ROUNDS.file_name)
            if isinstance(model, MeasuredRoundModel)
        ]
        loaded = [
            m
            for m in load_table_models(rounds, field="--rounds")
            if isinstance(m, MeasuredRoundModel)
        ]
        if not loaded:
            raise ConfigError(f"--rounds {str(rounds)!r}: holds no measured SD rounds")
        digest = loaded[0].data_identity or ""
        if digest == dataset.sha256:
            raise ConfigError(
                f"--rounds {str(rounds)!r}: is the scored dataset's own SD-round table "
                f"(SHA-256 {digest}); scoring it against itself is circular: give the rounds "
                "of an independent recording"
            )
        self.tables: dict[int, MeasuredRoundModel] = {}
        self.refusals: dict[int, str] = {}
        for expected in own:
            depth = int(expected.identity["draft_length"])
            same_depth = [m for m in loaded if m.identity.get("draft_length") == depth]
            reasons = [model.mismatch(expected.identity) for model in same_depth]
            matching = [m for m, reason in zip(same_depth, reasons, strict=True) if not reason]
            if matching:
                self.tables[depth] = matching[0]
            else:
                self.refusals[depth] = "; ".join(reasons) or "no rounds recorded at this d"
        if not self.tables:
            raise ConfigError(
                f"--rounds {str(rounds)!r}: no table matches {dataset.name!r} at any "
                f"recorded d (recorded = the --rounds file, query = the dataset): "
                f"{' | '.join(sorted(set(self.refusals.values())))}"
            )
        self.description = (
            f"measured_round (aisim.fpm): configurations priced at the median rounds of the "
            f"independent recording {str(rounds)!r} (SHA-256 {digest[:16]}...), identity "
            "matched; a dataset's own rounds are never used (circular)"
        )

    def predict(self, query: RoundQuery) -> Prediction:
        from aisim.fpm import ForwardPassMetrics

        table = self.tables.get(query.draft_length)
        if table is None:
            reason = self.refusals.get(query.draft_length, "no rounds at this d")
            return Prediction(None, reason=f"d={query.draft_length}: {reason}")
        metrics = ForwardPassMetrics(
            num_decode_requests=query.batch_size, sum_decode_kv_tokens=query.total_kv_tokens
        )
        try:
            return Prediction(float(table.estimate_forward_pass_time_ms(metrics)))
        except UnsupportedQuery:
            return Prediction(
                None,
                reason=(
                    f"UnsupportedQuery: outside the recorded envelope at d={query.draft_length} "
                    "(measured_round never extrapolates)"
                ),
            )
        except AisimError as exc:
            return Prediction(None, reason=f"{type(exc).__name__}: {exc}")
