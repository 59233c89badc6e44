"""``select_estimator``: build the estimator typed inputs ask for, with diagnostics.

The config edge (``aisim.config.best_available``) validates an estimator config, resolves the
catalogue entries and the speculation block, and loads the data files; this module only chooses.

Order: measured_round (identity-matched) > table > regression (fitted to the accepted STP tables'
points) > roofline. ``auto`` asks them in that order per query; ``roofline_ideal`` (the pure
bound, no overheads) answers only when asked for by name. An explicit estimator with
``deny`` fails with the reason when it is unavailable (``ConfigError``) or does not cover a query
(``UnsupportedQuery``); ``allow`` falls back to the roofline, keeping the scheme.
"""

from __future__ import annotations

from typing import Any, Final

from aisim._text import join_path
from aisim.catalogue import (
    CHECKPOINT,
    IDEAL_TERMS,
    MEASURED_TERMS,
    CostTerms,
    Deployment,
    GpuSpec,
    ModelSpec,
    builtin_gpu,
    builtin_model,
)
from aisim.errors import ConfigError
from aisim.fpm._chain import SelectedModel
from aisim.fpm._interpolate import points_identity
from aisim.fpm._measured import MeasuredRoundModel, identity_mismatch
from aisim.fpm._model import ForwardPassModel
from aisim.fpm._regression import RegressionModel
from aisim.fpm._roofline import RooflineModel
from aisim.fpm._sd_cost import SpeculationCost
from aisim.fpm._table import TableModel
from aisim.speculation import ResolvedSpeculation

ESTIMATORS: Final = (
    "auto",
    "roofline",
    "roofline_ideal",
    "table",
    "regression",
    "measured_round",
)
ORDER: Final = ("measured_round", "table", "regression", "roofline")
#: Every estimator kind that can be built (``roofline_ideal`` is never chosen by ``auto``).
KINDS: Final = (*ORDER, "roofline_ideal")
FALLBACK_POLICIES: Final = ("deny", "allow")


#: The term set of the default ``roofline`` (one slot; ``swap_default_terms``).
_default_terms: Final[list[CostTerms]] = [MEASURED_TERMS]


def swap_default_terms(terms: CostTerms) -> CostTerms:
    """Make ``terms`` the default ``roofline``'s term set for every estimator selected from now
    on, and return the one it replaces (pass that back to restore it). For fitting a cost term by
    full replays (``python -m qualification.public_gpu.fit --hybrid``); the library never calls
    it, so the default stays ``MEASURED_TERMS``."""
    previous = _default_terms[0]
    _default_terms[0] = terms
    return previous


class _Sources:
    """Candidates per estimator kind and the reasons some were not available."""

    def __init__(self) -> None:
        self.available: dict[str, list[ForwardPassModel]] = {name: [] for name in KINDS}
        self.skipped: list[tuple[str, str]] = []


def select_estimator(
    model_spec: ModelSpec | None,
    gpu: GpuSpec | None,
    backend: str,
    tensor_parallel: int,
    resolved: ResolvedSpeculation | None,
    draft_spec: ModelSpec | None,
    estimator: str,
    fallback_policy: str,
    role: str,
    timing_scope: str,
    stp_tables: list[TableModel],
    measured: list[MeasuredRoundModel],
    path: str = "",
    deployment: Deployment = CHECKPOINT,
) -> SelectedModel:
    """The estimator these validated inputs select; ``ConfigError`` if none is available.

    A scheme without ``model_spec`` is priced by no estimator (the edge refuses that config).

    ``draft_spec`` is the drafter's geometry (from its config, or a catalogue model named by its
    path), used to price the draft; ``path`` prefixes error fields (``engine.workers.x.timing``).
    ``deployment`` (precision, EP, attention DP) reaches the roofline only.
    """
    tp = tensor_parallel
    scheme: SpeculationCost | None = None
    geometry_error = ""
    if resolved is not None and resolved.enabled and model_spec is not None:
        spec_path = join_path(path, "speculation")
        try:
            scheme = SpeculationCost.from_resolved(resolved, model_spec, tp, draft_spec, spec_path)
        except ConfigError as exc:
            geometry_error = str(exc)
            scheme = SpeculationCost.from_resolved(
                resolved, model_spec, tp, draft_spec, spec_path, require_geometry=False
            )
    common: dict[str, Any] = {"backend": backend, "tensor_parallel": tp}
    if model_spec is not None:
        common["model"] = model_spec.name
    if gpu is not None:
        common["hardware"] = gpu.name
    sources = _Sources()
    _add_measured(sources, measured, resolved, common, role, timing_scope)
    _add_stp(sources, stp_tables, common, model_spec)
    ideal = estimator == "roofline_ideal"
    _add_roofline(sources, model_spec, gpu, tp, scheme, geometry_error, ideal, deployment, backend)
    candidates = _choose(sources, estimator, fallback_policy, path)
    return SelectedModel(estimator, candidates, sources.skipped, model_spec, scheme)


def _canonical_model(name: object) -> object:
    if not isinstance(name, str):
        return name
    spec = builtin_model(name)
    return name if spec is None else spec.name


def _canonical_gpu(name: object) -> object:
    if not isinstance(name, str):
        return name
    spec = builtin_gpu(name)
    return name if spec is None else spec.name


def _recorded(identity: dict[str, Any]) -> dict[str, Any]:
    """A table identity with model and hardware names in catalogue spelling."""
    result = dict(identity)
    if "model" in result:
        result["model"] = _canonical_model(result["model"])
    if "hardware" in result:
        result["hardware"] = _canonical_gpu(result["hardware"])
    return result


def _add_measured(
    sources: _Sources,
    tables: list[MeasuredRoundModel],
    resolved: ResolvedSpeculation | None,
    common: dict[str, Any],
    role: str,
    scope: str,
) -> None:
    if not tables:
        sources.skipped.append(("measured_round", "no measured SD-round table configured"))
        return
    if resolved is None or not resolved.enabled:
        sources.skipped.append(
            ("measured_round", "no speculation scheme configured; measured rounds price SD only")
        )
        return
    expected = dict(common)
    expected.update(
        {
            "kind": resolved.kind,
            "draft_length": resolved.num_draft_tokens,
            "draft_identity": resolved.draft_identity,
            "timing_scope": scope,
            "role": role,
        }
    )
    for table in tables:
        reason = identity_mismatch(_recorded(table.identity), expected)
        if reason:
            sources.skipped.append(
                ("measured_round", f"{table.source}: identity does not match ({reason})")
            )
        else:
            sources.available["measured_round"].append(table)


def _add_stp(
    sources: _Sources, tables: list[TableModel], common: dict[str, Any], spec: ModelSpec | None
) -> None:
    if not tables:
        sources.skipped.append(("table", "no STP table configured"))
        sources.skipped.append(("regression", "no STP points to fit"))
        return
    accepted: list[TableModel] = []
    for table in tables:
        recorded = _recorded(table.identity)
        reasons = [
            f"{key}: recorded {recorded[key]!r}, query {common[key]!r}"
            for key in ("model", "hardware", "backend", "tensor_parallel")
            if key in recorded and key in common and recorded[key] != common[key]
        ]
        if reasons:
            sources.skipped.append(
                ("table", f"{table.source}: identity does not match ({'; '.join(reasons)})")
            )
        else:
            accepted.append(table.with_model_spec(spec))
    sources.available["table"].extend(accepted)
    if not accepted:
        sources.skipped.append(("regression", "no identity-matched STP points to fit"))
        return
    points: dict[tuple[int, int], float] = {}
    for table in accepted:
        for batch, kv, latency in table.points:
            points.setdefault((batch, kv), latency)
    merged = sorted((b, k, latency) for (b, k), latency in points.items())
    identity = accepted[0].identity
    data_identity = accepted[0].data_identity or ""
    source = accepted[0].source
    if len(accepted) > 1:
        data_identity = points_identity(merged, {})
        source = " + ".join(table.source for table in accepted)
    try:
        fitted = RegressionModel(merged, identity, data_identity, source)
    except ConfigError as exc:
        sources.skipped.append(("regression", f"cannot fit the STP points: {exc}"))
        return
    fitted.model_spec = spec
    sources.available["regression"].append(fitted)


def _add_roofline(
    sources: _Sources,
    spec: ModelSpec | None,
    gpu: GpuSpec | None,
    tp: int,
    scheme: SpeculationCost | None,
    geometry_error: str,
    ideal: bool,
    deployment: Deployment,
    backend: str,
) -> None:
    """The default roofline, or (``ideal``: asked for by name) the pure ``roofline_ideal``."""
    for terms in (IDEAL_TERMS,) if ideal else (_default_terms[0],):
        name = terms.name
        if spec is None or gpu is None:
            missing = "model" if spec is None else "hardware"
            sources.skipped.append((name, f"no {missing} given; the roofline needs both"))
            continue
        if geometry_error:
            sources.skipped.append((name, geometry_error))
            continue
        try:
            sources.available[name].append(
                RooflineModel(spec, gpu, tp, scheme, terms, deployment, backend)
            )
        except ConfigError as exc:
            sources.skipped.append((name, str(exc)))


def _choose(sources: _Sources, estimator: str, policy: str, path: str) -> list[ForwardPassModel]:
    if estimator == "auto":
        chosen = [model for name in ORDER for model in sources.available[name]]
    else:
        chosen = list(sources.available[estimator])
        if not chosen and policy == "deny":
            reasons = [reason for name, reason in sources.skipped if name == estimator]
            raise ConfigError(
                f"{join_path(path, 'estimator')}: {estimator} is not available and "
                f"fallback_policy is deny: {'; '.join(reasons) or 'no data'}"
            )
        if policy == "allow" and estimator not in ("roofline", "roofline_ideal"):
            chosen.extend(sources.available["roofline"])
    if not chosen:
        reasons = [f"{name}: {reason}" for name, reason in sources.skipped]
        raise ConfigError(
            f"{join_path(path, 'estimator')}: no estimator is available for {estimator}: "
            + " | ".join(reasons)
        )
    return chosen
