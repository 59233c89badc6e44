"""``best_available(config)``: build the estimator a configuration asks for, with diagnostics.

Config keys (a mapping; the same keys appear under a replay worker's ``timing``):

* ``model`` (catalogue name, config.json path or mapping), ``hardware`` (catalogue name or file),
  ``backend`` (``vllm``/``sglang``, default ``vllm``), ``tensor_parallel`` (default 1);
* ``speculation``: a speculation block (or a ``ResolvedSpeculation``), optional;
* ``estimator``: ``auto`` (default) | ``roofline`` | ``roofline_ideal`` | ``table`` |
  ``regression`` | ``measured_round``; ``fallback_policy``: ``deny`` (default) | ``allow``;
* data: ``tables`` (paths of table files, see ``_table_files``; a recorder ``sd_rounds.parquet``
  gives one measured-round table per recorded draft length), ``points`` (in-memory STP point
  mappings) and ``measured_rounds`` (a list of ``{points, identity}`` mappings);
* ``role`` (``aggregated``/``prefill``/``decode``, default ``aggregated``) and ``timing_scope``
  (default ``round``): part of the identity measured rounds must match.

Order: measured_round (identity-matched) > table > regression (fitted to the accepted STP tables'
points) > roofline. ``auto`` asks them in that order per query; ``roofline_ideal`` (the pure
bound, no overheads) answers only when asked for by name. An explicit estimator with
``deny`` fails with the reason when it is unavailable (``ConfigError``) or does not cover a query
(``UnsupportedQuery``); ``allow`` falls back to the roofline, keeping the scheme.
"""

from __future__ import annotations

import os
from typing import Any, Final

from aisim._fields import as_int, as_list, as_mapping, as_str, join_path, reject_unknown
from aisim.catalogue import get_gpu, get_model
from aisim.catalogue._costs import IDEAL_TERMS, MEASURED_TERMS
from aisim.catalogue._specs import GpuSpec, ModelSpec
from aisim.errors import ConfigError
from aisim.fpm._chain import SelectedModel
from aisim.fpm._interpolate import points_identity
from aisim.fpm._measured import (
    MeasuredRoundModel,
    identity_mismatch,
    measured_rounds_from_points,
)
from aisim.fpm._model import ForwardPassModel
from aisim.fpm._regression import RegressionModel
from aisim.fpm._roofline import RooflineModel
from aisim.fpm._sd_cost import SpeculationCost
from aisim.fpm._table import TableModel, table_from_points
from aisim.fpm._table_files import load_table_models
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
CONFIG_KEYS: Final = (
    "model",
    "hardware",
    "backend",
    "tensor_parallel",
    "speculation",
    "estimator",
    "fallback_policy",
    "tables",
    "points",
    "measured_rounds",
    "role",
    "timing_scope",
)


class _Sources:
    """Candidates per estimator kind and the reasons some were not available."""

    def __init__(self) -> None:
        self.available: dict[str, list[ForwardPassModel]] = {name: [] for name in KINDS}
        self.skipped: list[tuple[str, str]] = []


def best_available(config: object, path: str = "") -> SelectedModel:
    """The estimator ``config`` selects (see the module docstring); ``ConfigError`` if none.

    ``config`` may also be a YAML/JSON file path; its relative table paths are then resolved
    against the file's folder.
    """
    base_dir = ""
    if isinstance(config, str):
        from aisim._io import load_config_file

        base_dir = os.path.dirname(config)
        config = load_config_file(config)
    mapping = as_mapping(config, path)
    reject_unknown(mapping, CONFIG_KEYS, path)
    model_spec: ModelSpec | None = None
    if mapping.get("model") is not None:
        model_spec = get_model(mapping["model"], join_path(path, "model"))
    gpu: GpuSpec | None = None
    if mapping.get("hardware") is not None:
        gpu = get_gpu(mapping["hardware"], join_path(path, "hardware"))
    backend = as_str(mapping.get("backend", "vllm"), join_path(path, "backend"), ("vllm", "sglang"))
    tp = as_int(mapping.get("tensor_parallel", 1), join_path(path, "tensor_parallel"), 1, 1024)
    estimator = as_str(mapping.get("estimator", "auto"), join_path(path, "estimator"), ESTIMATORS)
    policy = as_str(
        mapping.get("fallback_policy", "deny"),
        join_path(path, "fallback_policy"),
        FALLBACK_POLICIES,
    )
    role = as_str(
        mapping.get("role", "aggregated"),
        join_path(path, "role"),
        ("aggregated", "prefill", "decode"),
    )
    scope = as_str(mapping.get("timing_scope", "round"), join_path(path, "timing_scope"))
    # The only role gate (ngram *replay* on vllm only) is replay's, which resolves its worker
    # speculation with the role itself; an estimate of ngram on sglang is allowed (SPEC §2), so
    # ngram is resolved here without the role. Other kinds keep it (gate messages name it).
    raw_speculation = mapping.get("speculation")
    is_ngram = isinstance(raw_speculation, dict) and raw_speculation.get("kind") == "ngram"
    gate_role = None if is_ngram else role
    resolved = _resolve(raw_speculation, model_spec, backend, gate_role, tp, path)
    scheme: SpeculationCost | None = None
    geometry_error = ""
    if resolved is not None and resolved.enabled and model_spec is not None:
        draft_spec = _draft_spec(resolved)
        spec_path = join_path(path, "speculation")
        try:
            scheme = SpeculationCost.from_resolved(resolved, model_spec, tp, draft_spec, spec_path)
        except ConfigError as exc:
            geometry_error = str(exc)
            scheme = SpeculationCost.from_resolved(
                resolved, model_spec, tp, draft_spec, spec_path, require_geometry=False
            )
    if resolved is not None and resolved.enabled and model_spec is None:
        raise ConfigError(
            f"{join_path(path, 'model')}: a speculation scheme needs the target model"
        )
    common: dict[str, Any] = {"backend": backend, "tensor_parallel": tp}
    if model_spec is not None:
        common["model"] = model_spec.name
    if gpu is not None:
        common["hardware"] = gpu.name
    sources = _Sources()
    stp_tables, measured = _load_data(mapping, path, base_dir)
    _add_measured(sources, measured, resolved, common, role, scope)
    _add_stp(sources, stp_tables, common, model_spec)
    ideal = estimator == "roofline_ideal"
    _add_roofline(sources, model_spec, gpu, tp, scheme, geometry_error, ideal)
    candidates = _choose(sources, estimator, policy, path)
    return SelectedModel(estimator, candidates, sources.skipped, model_spec, scheme)


def _resolve(
    value: object, model: ModelSpec | None, backend: str, role: str | None, tp: int, path: str
) -> ResolvedSpeculation | None:
    if isinstance(value, ResolvedSpeculation):
        return value
    if value is None:
        return None
    from aisim.config import resolve_speculation

    return resolve_speculation(
        value,
        model=model,
        backend=backend,
        role=role,
        path=join_path(path, "speculation"),
        tensor_parallel=tp,
    )


def _draft_spec(resolved: ResolvedSpeculation) -> ModelSpec | None:
    """The drafter's geometry: from draft_config, else a catalogue model named by the path."""
    if resolved.draft_model is not None:
        return resolved.draft_model
    name = resolved.draft_model_path
    if name is None:
        return None
    try:
        return get_model(name, "speculation.draft_model_path")
    except ConfigError:
        return None


def _canonical_model(name: object) -> object:
    if not isinstance(name, str):
        return name
    try:
        return get_model(name).name
    except ConfigError:
        return name


def _canonical_gpu(name: object) -> object:
    if not isinstance(name, str):
        return name
    try:
        return get_gpu(name).name
    except ConfigError:
        return name


def _recorded(identity: dict[str, Any]) -> dict[str, Any]:
    """A table identity with model and hardware names in catalogue spelling."""
    result = dict(identity)
    if "model" in result:
        result["model"] = _canonical_model(result["model"])
    if "hardware" in result:
        result["hardware"] = _canonical_gpu(result["hardware"])
    return result


def _load_data(
    mapping: dict[str, Any], path: str, base_dir: str
) -> tuple[list[TableModel], list[MeasuredRoundModel]]:
    """Tables, in-memory points and measured rounds; relative paths resolve against
    ``base_dir`` (the config file's folder) when the config came from a file."""
    stp: list[TableModel] = []
    measured: list[MeasuredRoundModel] = []
    raw_tables = mapping.get("tables")
    if raw_tables is not None:
        files = [raw_tables] if isinstance(raw_tables, str) else as_list(raw_tables, "tables")
        for index, file in enumerate(files):
            if not isinstance(file, str):
                raise ConfigError(
                    f"{join_path(path, 'tables')}[{index}]: expected a file path, got {file!r}"
                )
            for loaded in load_table_models(os.path.join(base_dir, file) if base_dir else file):
                if isinstance(loaded, MeasuredRoundModel):
                    measured.append(loaded)
                else:
                    stp.append(loaded)
    if mapping.get("points") is not None:
        stp.append(table_from_points(mapping["points"]))
    raw_measured = mapping.get("measured_rounds")
    if raw_measured is not None:
        where = join_path(path, "measured_rounds")
        for index, entry in enumerate(as_list(raw_measured, where)):
            block = as_mapping(entry, f"{where}[{index}]")
            reject_unknown(block, ("points", "identity"), f"{where}[{index}]")
            measured.append(
                measured_rounds_from_points(block.get("points"), identity=block.get("identity"))
            )
    return stp, measured


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
) -> None:
    """The default roofline, or (``ideal``: asked for by name) the pure ``roofline_ideal``."""
    for terms in (IDEAL_TERMS,) if ideal else (MEASURED_TERMS,):
        name = terms.name
        if spec is None or gpu is None:
            missing = "model" if spec is None else "hardware"
            sources.skipped.append((name, f"no {missing} given; the roofline needs both"))
            continue
        if geometry_error:
            sources.skipped.append((name, geometry_error))
            continue
        try:
            sources.available[name].append(RooflineModel(spec, gpu, tp, scheme, terms))
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
