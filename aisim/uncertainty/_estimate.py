"""``aisim estimate --intervals``: the interval of one step price from the cost-error evidence
(the cost source alone: one forward pass has no acceptance or simulation randomness)."""

from __future__ import annotations

from typing import Any, Final

from aisim.uncertainty._cost_errors import CostErrorTable, load_cost_errors
from aisim.uncertainty._intervals import (
    CONFIDENCE,
    WorkerFacts,
    _cost_factors,
    check_replicas,
    check_seed,
    estimator_name,
    quantile,
)
from aisim.uncertainty._replicas import RULE_EVIDENCE

#: Draws of the step's factor (no replay: each draw is one table lookup).
DRAWS: Final = 2000


def step_kind(metrics: Any, speculating: bool) -> str:
    prefill = metrics.num_prefill_requests > 0
    decode = metrics.num_decode_requests > 0
    if prefill and decode:
        return "mixed"
    if prefill:
        return "prefill"
    return "sd_round" if speculating else "decode"


def estimate_interval(
    model: Any,
    metrics: Any,
    latency_ms: float,
    draft_length: int | None,
    *,
    seed: int = 0,
    draws: int = DRAWS,
    table: CostErrorTable | None = None,
) -> dict[str, Any]:
    """p50 and central 90 % interval of ``latency_ms`` (``model``'s price of ``metrics``) times
    the step kind's cost-error factor, over ``draws`` draws; what the factor was drawn from."""
    import numpy as np

    check_replicas(draws, "draws")
    check_seed(seed)
    evidence = table if table is not None else load_cost_errors()
    native = bool(getattr(model, "prices_speculation_natively", False))
    speculating = (draft_length is not None) or (
        native and str(model.describe().get("speculation", "none")) != "none"
    )
    estimator = estimator_name(model)
    facts = WorkerFacts("estimate", speculating, [], estimator, native, None)
    kind = step_kind(metrics, speculating)
    rng = np.random.default_rng([seed, 2])
    values = []
    sampled = False
    for _ in range(draws):
        factors = _cost_factors(rng, evidence, facts)
        sampled = sampled or kind in factors.sampled
        values.append(latency_ms * factors.of(kind))
    low = (1.0 - CONFIDENCE) / 2.0
    described = evidence.describe(estimator)
    kinds = dict(described["kinds"])
    sources = list(described["sources"])
    if speculating and not native and estimator != "fixed":
        # An SD round priced by the STP->SD scaling rule draws the rule's own errors (times
        # the estimator's decode factor: ``_cost_factors``); say so, as describe_sources does.
        rule = evidence.describe(RULE_EVIDENCE)
        if "sd_round" in rule["kinds"]:
            kinds["sd_round"] = {**rule["kinds"]["sd_round"], "estimator": RULE_EVIDENCE}
            if "decode" not in kinds:
                kinds["sd_round"].pop("relative_to", None)
            sources.extend(rule["sources"])
    return {
        "estimator": estimator,
        "step_kind": kind,
        "included": sampled,
        "draws": draws,
        "seed": seed,
        "confidence": CONFIDENCE,
        "point_ms": latency_ms,
        "p50_ms": quantile(values, 0.5),
        "low_ms": quantile(values, low),
        "high_ms": quantile(values, 1.0 - low),
        "evidence": kinds.get(kind),
        "sources": sorted({source.split("#")[0] for source in sources}),
    }


def render_interval(interval: dict[str, Any]) -> str:
    if not interval["included"]:
        return (
            f"interval: none: the cost-error table has no {interval['step_kind']} samples for "
            f"estimator {interval['estimator']} (the price is as estimated)\n"
        )
    evidence = interval["evidence"] or {}
    relative = evidence.get("relative_to")
    of = f" (x the {relative} factor)" if relative else ""
    errors = evidence.get("estimator", interval["estimator"])
    return (
        f"interval: p50 {interval['p50_ms']:.4f} ms, central {interval['confidence']:.0%} "
        f"[{interval['low_ms']:.4f}, {interval['high_ms']:.4f}] ms ({interval['draws']} draws "
        f"of the {errors} {interval['step_kind']} cost errors: "
        f"{evidence.get('samples', 0)} samples{of} from {', '.join(interval['sources'])})\n"
    )
