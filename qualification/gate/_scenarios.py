"""Gate scenarios: a YAML/JSON file listing named prediction queries, and their evaluation.

File shape::

    format: 1
    scenarios:
      - id: roofline/qwen3-8b/h100/decode-b8-k8k        # unique, stable
        kind: estimate                                   # estimate | replay
        config: {model: Qwen/Qwen3-8B, hardware: h100_sxm, estimator: roofline}
        metrics: [{num_decode_requests: 8, sum_decode_kv_tokens: 65536}]   # one per rank
        draft_length: 3                                  # optional (scaling rule)
      - id: replay/vllm/mtp3
        kind: replay
        config: {...}                                    # an aisim.replay config mapping
        outputs: [mean_ttft_ms, mean_tpot_ms]            # optional: summary keys to keep

Each scenario evaluates to a flat ``{metric: number}`` mapping; an aisim error becomes
``{"error": "ConfigError: ..."}`` so a scenario that starts or stops failing is a moved prediction.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from aisim.errors import AisimError, ConfigError
from aisim.fields import as_int, as_list, as_mapping, as_str, join_path, reject_unknown
from aisim.files import load_config_file

SCENARIO_FORMAT = 1
KINDS = ("estimate", "replay")
#: The per-rank metric fields of docs/design.md#forward-pass-cost a scenario may give.
METRIC_FIELDS = (
    "num_prefill_requests",
    "sum_prefill_tokens",
    "num_decode_requests",
    "sum_decode_kv_tokens",
    "past_kv_lengths",
    "extend_lengths",
)
_FIELDS = {
    "estimate": ("id", "kind", "config", "metrics", "draft_length"),
    "replay": ("id", "kind", "config", "outputs"),
}


@dataclass(frozen=True)
class Scenario:
    """One named query: ``kind`` selects the evaluator, ``spec`` is the validated entry."""

    id: str
    kind: str
    spec: Mapping[str, Any]


def parse_scenarios(document: object, path: str = "scenarios") -> list[Scenario]:
    """Validate a scenario document (see the module docstring); errors are ConfigErrors."""
    root = as_mapping(document, path)
    reject_unknown(root, ("format", "scenarios"), path)
    version = as_int(root.get("format", SCENARIO_FORMAT), join_path(path, "format"))
    if version != SCENARIO_FORMAT:
        raise ConfigError(f"{join_path(path, 'format')}: expected {SCENARIO_FORMAT}, got {version}")
    entries = as_list(root.get("scenarios"), join_path(path, "scenarios"))
    scenarios: list[Scenario] = []
    seen: set[str] = set()
    for index, raw in enumerate(entries):
        where = f"{path}.scenarios[{index}]"
        entry = as_mapping(raw, where)
        kind = as_str(entry.get("kind"), join_path(where, "kind"), KINDS)
        reject_unknown(entry, _FIELDS[kind], where)
        scenario_id = as_str(entry.get("id"), join_path(where, "id"))
        if not scenario_id or scenario_id in seen or not scenario_id.isprintable():
            raise ConfigError(
                f"{join_path(where, 'id')}: expected a unique non-empty id of printable "
                f"characters, got {scenario_id!r}"
            )
        seen.add(scenario_id)
        as_mapping(entry.get("config"), join_path(where, "config"))
        if kind == "estimate" and "metrics" not in entry:
            raise ConfigError(f"{join_path(where, 'metrics')}: required for an estimate scenario")
        if kind == "replay" and "outputs" in entry:
            for position, name in enumerate(as_list(entry["outputs"], join_path(where, "outputs"))):
                as_str(name, f"{where}.outputs[{position}]")
        scenarios.append(Scenario(scenario_id, kind, entry))
    if not scenarios:
        # A snapshot of nothing compares equal to any other snapshot of nothing: a gate that
        # can never fail.
        raise ConfigError(f"{join_path(path, 'scenarios')}: empty; expected at least one scenario")
    return scenarios


def load_scenarios(path: str | Path) -> list[Scenario]:
    """Read and validate a scenario file (YAML or JSON)."""
    return parse_scenarios(load_config_file(path), str(path))


def _number(value: Any) -> Any:
    """JSON-safe numbers: non-finite floats are spelled as strings."""
    if isinstance(value, float) and not math.isfinite(value):
        return "nan" if math.isnan(value) else ("inf" if value > 0 else "-inf")
    return value


def _estimate(spec: Mapping[str, Any]) -> dict[str, Any]:
    from aisim.config import best_available
    from aisim.fpm import ForwardPassMetrics

    model = best_available(spec["config"])
    raw_metrics = spec["metrics"]
    ranks = raw_metrics if isinstance(raw_metrics, list) else [raw_metrics]
    metrics = []
    for index, rank in enumerate(ranks):
        fields = as_mapping(rank, f"metrics[{index}]")
        reject_unknown(fields, METRIC_FIELDS, f"metrics[{index}]")
        metrics.append(ForwardPassMetrics(**fields))
    draft_length = spec.get("draft_length")
    detailed = model.estimate_forward_pass_detailed(metrics, draft_length=draft_length)
    result: dict[str, Any] = {"latency_ms": _number(float(detailed.latency_ms))}
    if detailed.scaling_factor is not None and detailed.stp_reference is not None:
        result["scaling_factor"] = _number(float(detailed.scaling_factor))
        result["stp_latency_ms"] = _number(float(detailed.stp_reference.latency_ms))
    return result


def _replay(spec: Mapping[str, Any]) -> dict[str, Any]:
    from aisim.config import run_replay

    # ``outputs`` name keys of the summary's JSON form (docs/replay.md), as a scenario file does.
    summary = run_replay(dict(spec["config"])).run_summary.to_dict()
    wanted = spec.get("outputs")
    keys = sorted(summary) if wanted is None else list(wanted)
    result: dict[str, Any] = {}
    for key in keys:
        if key not in summary:
            raise ConfigError(f"outputs: {key!r} is not a replay summary key")
        value = summary[key]
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            result[key] = _number(value)
    return result


def evaluate(scenario: Scenario) -> dict[str, Any]:
    """The predictions of one scenario (``{"error": ...}`` when aisim rejects it)."""
    try:
        if scenario.kind == "estimate":
            return _estimate(scenario.spec)
        return _replay(scenario.spec)
    except AisimError as exc:
        return {"error": f"{type(exc).__name__}: {exc}"}
