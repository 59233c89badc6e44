"""Score the roofline estimators against public measurements, and cross-check the published rule.

* ``score(estimator)``: every row of ``measurements.json`` (decode steps, EAGLE-3 round / STP
  ratios) predicted by ``roofline`` or ``roofline_ideal``, with the absolute percentage error,
  the MAPE over all rows and over the held-out rows (``validation`` rows no version term saw).
  ``roofline`` prices a row whose engine has a version term (``version_terms``: a cost term
  the engine version stated by the source pays and the default does not) with that term:
  ``draft_step_host_s`` fitted on the rows in its ``fitted_on`` (``fit_version_terms``), and
  ``step_host_s``, the host time per engine step measured on a real vLLM V1 engine
  (``step_host_terms``; ``qualification/engine/probe_step_host.py``), which sees no row;
  ``version_terms=False`` keeps the default, ``step_host=False`` leaves the measured term out
  (and fits the draft-step term without it: the pricing the cost-error table of
  ``qualification.uncertainty`` was built with).
* ``prefill_reference(estimator)``: Llama-3.1-70B prefill at TP 4 / 8 against a silicon-based
  reference simulator's figures (``reference_prefill.json``, ``_prefill``).
* ``rulecheck(...)``: the default's ``T_SD / F_STP((d + 1) B, K)`` over d, B, K on each built-in
  GPU next to the published factor ``0.08 d + 1.25``, and where (and why) the default prices a
  round below the widened STP pass.
"""

from __future__ import annotations

import dataclasses
import json
import statistics
from importlib import resources
from typing import Any, Final

from aisim.catalogue import gpu_names
from aisim.config import best_available, get_gpu, get_model
from aisim.fpm import ForwardPassMetrics, RooflineModel, scaling_factor
from qualification.cases import draft_config
from qualification.public._prefill import (
    PREFILL_WEIGHTS,
    load_reference_prefill,
    prefill_error_percent,
    prefill_markdown,
    prefill_reference,
)

ESTIMATORS: Final = ("roofline", "roofline_ideal")
RULE_DEPTHS: Final = (1, 2, 3, 4, 5)
RULE_BATCHES: Final = (1, 2, 4, 8, 16, 32, 64)
RULE_CONTEXTS: Final = (1024, 4096, 8192, 16384, 32768)
#: The rule's drafters (docs/estimators.md): MTP and EAGLE-3 on Qwen3-8B.
RULE_SCHEMES: Final[dict[str, dict[str, Any]]] = {
    "mtp": {"kind": "mtp", "params": {"depth": 1}},
    "eagle3": {
        "kind": "eagle3",
        "params": {"num_speculative_tokens": 1},
        "draft_config": draft_config("eagle3_qwen3_8b"),
    },
}


def load_measurements() -> dict[str, Any]:
    """The committed public measurements (``measurements.json`` beside this module)."""
    text = resources.files(__package__).joinpath("measurements.json").read_text("utf-8")
    data: dict[str, Any] = json.loads(text)
    return data


def _model_field(row: dict[str, Any]) -> Any:
    config = row.get("model_config")
    if config is not None:
        return get_model({**config, "name": row["model"]})
    return row["model"]


def _estimator(row: dict[str, Any], estimator: str, speculation: Any = None) -> Any:
    config: dict[str, Any] = {
        "model": _model_field(row),
        "hardware": row["hardware"],
        "estimator": estimator,
    }
    if speculation is not None:
        config["speculation"] = speculation
    return best_available(config)


def _decode(batch: int, kv_per_request: int) -> ForwardPassMetrics:
    return ForwardPassMetrics(batch, batch * kv_per_request)


def _with_terms(model: Any, **changes: float) -> RooflineModel:
    """``model``'s roofline (the selection's first candidate) with its terms changed."""
    roof = model.candidates[0]
    terms = dataclasses.replace(roof.terms, **changes)
    return RooflineModel(
        roof.model_spec, roof.gpu, roof.tensor_parallel, roof.scheme, terms, roof.deployment
    )


def _round_model(setup: dict[str, Any], estimator: str, draft_tokens: int) -> Any:
    speculation = {
        "kind": "eagle3",
        "params": {"num_speculative_tokens": draft_tokens},
        "draft_config": setup["draft_config"],
    }
    return _estimator(setup, estimator, speculation)


#: The version-term kinds: one fitted on public rows, one measured apart from them.
FITTED_TERM: Final = "draft_step_host_s"
MEASURED_TERM: Final = "step_host_s"


def step_host_terms(data: dict[str, Any] | None = None) -> dict[str, dict[str, Any]]:
    """Each measured ``step_host_s`` of ``measurements.json``, keyed by engine:
    ``{"step_host_ms": value_ms, "batch": batch}``, the host time one engine step of that
    version adds to the GPU's work at that batch (``version_terms[i]``)."""
    data = data if data is not None else load_measurements()
    terms: dict[str, dict[str, Any]] = {}
    for index, entry in enumerate(data.get("version_terms", [])):
        if entry["term"] != MEASURED_TERM:
            continue
        value = entry.get("value_ms")
        batch = entry.get("batch")
        if not isinstance(value, int | float) or isinstance(value, bool) or value < 0:
            raise ValueError(
                f"version_terms[{index}].value_ms: {value!r}; expected milliseconds >= 0"
            )
        if not isinstance(batch, int) or isinstance(batch, bool) or batch < 1:
            raise ValueError(f"version_terms[{index}].batch: {batch!r}; expected an int >= 1")
        terms[entry["engine"]] = {"step_host_ms": float(value), "batch": batch}
    return terms


def _step_host_ms(terms: dict[str, dict[str, Any]], row: dict[str, Any]) -> float:
    """The measured host time per step a row's engine pays (0 where it has none); refuses a
    row at a batch the term was not measured at."""
    term = terms.get(row["engine"])
    if term is None:
        return 0.0
    if row["batch"] != term["batch"]:
        raise ValueError(
            f"{row.get('id', 'sd_round_setup')}.batch: {row['batch']}; the {MEASURED_TERM} of "
            f"{row['engine']} was measured at batch {term['batch']} only"
        )
    value: float = term["step_host_ms"]
    return value


def fit_version_terms(
    data: dict[str, Any] | None = None, step_host: bool = True
) -> dict[str, dict[str, Any]]:
    """Each fitted version term of ``measurements.json`` on its ``fitted_on`` rows (roofline).

    ``draft_step_host_s`` (the only fitted kind): the round / STP ratio of an EAGLE-3 row with
    ``k`` draft steps is ``(R + s + k h) / (S + s)`` (``R`` the default's round, ``S`` its STP
    step, which has no draft step, ``s`` the engine's measured ``step_host_s``, paid once by
    both; 0 with ``step_host=False`` or none), linear in ``h``; least squares over the rows on
    the round's milliseconds gives ``h = sum k (m (S + s) - R - s) / sum k^2`` (``m`` the
    measured ratio). Keyed by engine."""
    data = data if data is not None else load_measurements()
    setup = data["sd_round_setup"]
    hosts = step_host_terms(data) if step_host else {}
    fitted: dict[str, dict[str, Any]] = {}
    for entry in data.get("version_terms", []):
        if entry["term"] == MEASURED_TERM:
            continue
        if entry["term"] != FITTED_TERM or entry["engine"] != setup["engine"]:
            raise ValueError(
                f"version_terms: no fit for {entry['term']} on {entry['engine']}; fitted: "
                f"{FITTED_TERM} on {setup['engine']}, measured: {MEASURED_TERM}"
            )
        host = _step_host_ms(hosts, setup)
        stp = _estimator(setup, "roofline").estimate_forward_pass_time_ms(
            _decode(setup["batch"], setup["kv_per_request"])
        )
        rows = {row["id"]: row for row in data["sd_round_ratios"]}
        numerator = denominator = 0.0
        for row_id in entry["fitted_on"]:
            row = rows[row_id]
            steps = float(row["draft_tokens"])
            base = _round_model(setup, "roofline", row["draft_tokens"])
            round_ms = base.estimate_forward_pass_time_ms(
                _decode(setup["batch"], setup["kv_per_request"])
            )
            measured = row["tpot_ms"] * row["acceptance_length"] / setup["stp_ms"]
            numerator += steps * (measured * (stp + host) - round_ms - host)
            denominator += steps * steps
        fitted[entry["engine"]] = {
            "term": entry["term"],
            "draft_step_host_ms": numerator / denominator,
            "fitted_on": list(entry["fitted_on"]),
            "step_host_ms": host,
        }
    return fitted


#: The name a row seen by a version term carries in ``seen_by``.
VERSION_TERM: Final = FITTED_TERM


def score(
    estimator: str = "roofline", version_terms: bool = True, step_host: bool = True
) -> dict[str, Any]:
    """Predicted vs measured for every public row, with MAPE (all rows and held-out rows).

    With the version terms (roofline only), a decode row of an engine with a measured
    ``step_host_s`` costs the default's step plus that host time, and the SD round / STP
    ratio of such an engine pays it once in the round and once in the STP step."""
    data = load_measurements()
    priced = version_terms and estimator == "roofline"
    fitted = fit_version_terms(data, step_host) if priced else {}
    hosts = step_host_terms(data) if priced and step_host else {}
    rows: list[dict[str, Any]] = []
    for row in data["decode_steps"]:
        model = _estimator(row, estimator)
        predicted = model.estimate_forward_pass_time_ms(
            _decode(row["batch"], row["kv_per_request"])
        ) + _step_host_ms(hosts, row)
        rows.append(_scored(row["id"], "decode_ms", row["measured_ms"], predicted, row["role"]))
    setup = data["sd_round_setup"]
    host = _step_host_ms(hosts, setup)
    stp = host + _estimator(setup, estimator).estimate_forward_pass_time_ms(
        _decode(setup["batch"], setup["kv_per_request"])
    )
    term = fitted.get(setup["engine"])
    for row in data["sd_round_ratios"]:
        model = _round_model(setup, estimator, row["draft_tokens"])
        if term is not None:
            model = _with_terms(model, draft_step_host_s=term["draft_step_host_ms"] / 1000.0)
        round_ms = host + model.estimate_forward_pass_time_ms(
            _decode(setup["batch"], setup["kv_per_request"])
        )
        measured = row["tpot_ms"] * row["acceptance_length"] / setup["stp_ms"]
        seen = [VERSION_TERM] if term is not None and row["id"] in term["fitted_on"] else []
        rows.append(
            _scored(row["id"], "round_over_stp", measured, round_ms / stp, setup["role"], seen)
        )
    held = [r for r in rows if r["held_out"]]
    return {
        "estimator": estimator,
        "version_terms": fitted,
        "step_host_terms": hosts,
        "rows": rows,
        "mape_percent": _mape(rows),
        "mape_held_out_percent": _mape(held),
        "mape_decode_percent": _mape([r for r in held if r["quantity"] == "decode_ms"]),
        "mape_sd_percent": _mape([r for r in held if r["quantity"] == "round_over_stp"]),
    }


def _scored(
    row_id: str,
    quantity: str,
    measured: float,
    predicted: float,
    role: str,
    seen_by: list[str] | None = None,
) -> dict[str, Any]:
    seen = seen_by or []
    return {
        "id": row_id,
        "quantity": quantity,
        "measured": measured,
        "predicted": predicted,
        "error_percent": 100.0 * (predicted - measured) / measured,
        "role": role,
        "seen_by": seen,
        "held_out": role == "validation" and not seen,
    }


def _mape(rows: list[dict[str, Any]]) -> float:
    if not rows:
        return float("nan")
    return statistics.fmean(abs(row["error_percent"]) for row in rows)


def score_markdown(before: dict[str, Any], after: dict[str, Any]) -> str:
    """Both estimators side by side, one row per public figure, then the MAPE lines."""
    lines = [
        f"| figure | quantity | measured | {before['estimator']} | error | "
        f"{after['estimator']} | error | role |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for old, new in zip(before["rows"], after["rows"], strict=True):
        role = new["role"]
        if new["seen_by"]:
            role += f" (fitted {', '.join(new['seen_by'])} for {after['estimator']})"
        lines.append(
            f"| {new['id']} | {new['quantity']} | {new['measured']:.3f} | "
            f"{old['predicted']:.3f} | {old['error_percent']:+.1f} % | {new['predicted']:.3f} | "
            f"{new['error_percent']:+.1f} % | {role} |"
        )
    lines.append("")
    for engine, host in sorted(after.get("step_host_terms", {}).items()):
        lines.append(
            f"- version term of {engine} ({after['estimator']}): {MEASURED_TERM} = "
            f"{host['step_host_ms']:.3f} ms per engine step at batch {host['batch']}, measured "
            "(qualification/engine/probe_step_host.py), seen by no row"
        )
    for engine, term in sorted(after.get("version_terms", {}).items()):
        lines.append(
            f"- version term of {engine} ({after['estimator']}): {term['term']} = "
            f"{term['draft_step_host_ms']:.3f} ms per draft step, fitted on "
            f"{', '.join(term['fitted_on'])}"
        )
    for key, label in (
        ("mape_percent", "MAPE, all rows"),
        ("mape_held_out_percent", "MAPE, held-out rows"),
        ("mape_decode_percent", "MAPE, decode steps (held out)"),
        ("mape_sd_percent", "MAPE, SD round / STP (held out)"),
    ):
        lines.append(
            f"- {label}: {before['estimator']} {before[key]:.1f} %, "
            f"{after['estimator']} {after[key]:.1f} %"
        )
    return "\n".join(lines) + "\n"


def rulecheck(
    model: str = "Qwen/Qwen3-8B",
    gpus: tuple[str, ...] | None = None,
    schemes: tuple[str, ...] = ("mtp", "eagle3"),
) -> list[dict[str, Any]]:
    """One row per (scheme, GPU, d): the default's round / widened-STP ratio over B and K.

    The ratio is ``T_SD(B, K, d) / F_STP((d + 1) B, K)``, both priced by the default roofline;
    the published rule says ``0.08 d + 1.25``. ``calibrated_median`` is the median over the
    rule's published calibration region (B <= 8, K <= 4096). ``below_widened_count`` counts the (B, K) points
    where the round costs less than the widened STP pass, with the reason. Points whose weights
    plus KV cache exceed the GPU's memory are left out (``over_capacity``).
    """
    rows: list[dict[str, Any]] = []
    spec = get_model(model)
    for scheme in schemes:
        for gpu in gpus or tuple(gpu_names()):
            capacity = get_gpu(gpu).hbm_capacity_bytes
            stp = best_available({"model": model, "hardware": gpu, "estimator": "roofline"})
            for depth in RULE_DEPTHS:
                ratios: list[float] = []
                places: list[tuple[int, int]] = []
                over_capacity = 0
                for batch in RULE_BATCHES:
                    for context in RULE_CONTEXTS:
                        needed = spec.weight_bytes + batch * context * spec.kv_bytes_per_token
                        if needed > capacity:
                            over_capacity += 1
                            continue
                        metrics = _decode(batch, context)
                        widened = ForwardPassMetrics((depth + 1) * batch, batch * context)
                        sd = _scheme_model(model, gpu, scheme, depth)
                        ratio = sd.estimate_forward_pass_time_ms(
                            metrics
                        ) / stp.estimate_forward_pass_time_ms(widened)
                        ratios.append(ratio)
                        places.append((batch, context))
                rule = scaling_factor(depth)
                below = sum(1 for ratio in ratios if ratio < 1.0)
                calibrated = [
                    ratio
                    for ratio, (batch, context) in zip(ratios, places, strict=True)
                    if batch <= 8 and context <= 4096
                ]
                median = statistics.median(ratios)
                rows.append(
                    {
                        "scheme": scheme,
                        "hardware": gpu,
                        "d": depth,
                        "rule_factor": rule,
                        "ratio_min": min(ratios),
                        "ratio_median": median,
                        "ratio_max": max(ratios),
                        "median_vs_rule_percent": 100.0 * (median - rule) / rule,
                        "calibrated_median": statistics.median(calibrated),
                        "below_widened_count": below,
                        "points": len(ratios),
                        "over_capacity": over_capacity,
                        "min_at": places[ratios.index(min(ratios))],
                        "max_at": places[ratios.index(max(ratios))],
                        "why": _why(
                            median,
                            rule,
                            below,
                            places[ratios.index(min(ratios))],
                            places[ratios.index(max(ratios))],
                        ),
                    }
                )
    return rows


_SCHEME_CACHE: dict[tuple[str, str, str, int], Any] = {}


def _scheme_model(model: str, gpu: str, scheme: str, depth: int) -> Any:
    key = (model, gpu, scheme, depth)
    if key not in _SCHEME_CACHE:
        speculation = json.loads(json.dumps(RULE_SCHEMES[scheme]))
        params = speculation["params"]
        params["depth" if scheme == "mtp" else "num_speculative_tokens"] = depth
        _SCHEME_CACHE[key] = best_available(
            {"model": model, "hardware": gpu, "estimator": "roofline", "speculation": speculation}
        )
    return _SCHEME_CACHE[key]


def _why(
    median: float, rule: float, below: int, low: tuple[int, int], high: tuple[int, int]
) -> str:
    """Where the default's ratio is lowest and highest, and why it sits off the rule there."""
    text = (
        f"lowest at B={low[0]}, K={low[1]}: the KV read dominates the widened pass, so the "
        f"draft steps add little; highest at B={high[0]}, K={high[1]}: every draft step pays "
        "its kernels and a head pass next to a short target pass"
    )
    side = "under" if median < rule else "over"
    text += f"; the median is {side} the rule"
    if below:
        text += (
            f"; {below} points price the round below the widened STP pass (the verification "
            "is that pass, so only a cheaper sampler can do this)"
        )
    else:
        text += "; never below the widened STP pass (the verification is that pass)"
    return text


def rulecheck_markdown(rows: list[dict[str, Any]]) -> str:
    lines = [
        "| scheme | hardware | d | rule 0.08 d + 1.25 | default min | median | max | "
        "median vs rule | median at B <= 8, K <= 4k | below widened STP | over capacity | why |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for row in rows:
        lines.append(
            f"| {row['scheme']} | {row['hardware']} | {row['d']} | {row['rule_factor']:.2f} | "
            f"{row['ratio_min']:.2f} | {row['ratio_median']:.2f} | {row['ratio_max']:.2f} | "
            f"{row['median_vs_rule_percent']:+.1f} % | {row['calibrated_median']:.2f} | "
            f"{row['below_widened_count']}/"
            f"{row['points']} | {row['over_capacity']} | {row['why']} |"
        )
    return "\n".join(lines) + "\n"


__all__ = [
    "ESTIMATORS",
    "FITTED_TERM",
    "MEASURED_TERM",
    "PREFILL_WEIGHTS",
    "VERSION_TERM",
    "fit_version_terms",
    "load_measurements",
    "load_reference_prefill",
    "prefill_error_percent",
    "prefill_markdown",
    "prefill_reference",
    "rulecheck",
    "rulecheck_markdown",
    "score",
    "score_markdown",
    "step_host_terms",
]
