"""What the replicas of one config draw: the base plan's facts per worker (estimator, acceptance
spread), the draws themselves (one numpy stream per source, so switching one source off leaves
the others' draws unchanged) and the description of what each source includes."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

from aisim.uncertainty._acceptance import AcceptanceCounts, AcceptanceSpread, ProfileSpread
from aisim.uncertainty._cost_errors import CostErrorTable, CostFactors, overhead_regime
from aisim.uncertainty._draw import Draw, WorkerDraw
from aisim.uncertainty._sources import Sources

#: Seeds a replica draws are below this (aisim's config seeds go to 2**63 - 1).
SEED_LIMIT: Final = 1 << 62
#: Stream of each source (numpy SeedSequence entropy [seed, stream]).
STREAMS: Final = {
    "simulation": 0,
    "acceptance": 1,
    "cost": 2,
    "repeat": 3,
    "frontend": 4,
    "overhead": 5,
}
#: The estimator whose evidence prices an SD round when an STP estimator applies the
#: STP->SD scaling rule (docs/design.md#the-stp-sd-scaling-rule).
RULE_EVIDENCE: Final = "stp_rule"


@dataclass
class WorkerFacts:
    """What the draws need to know of one worker of the base plan."""

    role: str
    speculating: bool
    point_rates: list[float]
    estimator: str
    native: bool
    counts: AcceptanceSpread | None
    #: The front-end terms (step_ms, token_ms, request_ms) its model prices with, or None.
    frontend: tuple[float, float, float] | None = None


@dataclass
class Setup:
    """The base run's facts and which sources actually contribute (with why not)."""

    workers: list[WorkerFacts]
    sources: dict[str, dict[str, Any]] = field(default_factory=dict)


def _facts(
    plan: Any,
    description: dict[str, Any],
    acceptance_rounds: int | None,
    acceptance_spread: AcceptanceSpread | None = None,
) -> list[WorkerFacts]:
    from aisim.replay import PRICING_FIXED

    facts = []
    described = description.get("workers", [])
    for index, worker in enumerate(plan.workers):
        pricer = worker.pricer
        estimator = "fixed" if pricer.kind == PRICING_FIXED else estimator_name(pricer.model)
        speculation = worker.speculation
        counts: AcceptanceSpread | None = None
        info = described[index] if index < len(described) else {}
        if speculation.enabled:
            record = info.get("acceptance_from")
            if isinstance(record, dict) and record.get("format") == "profile":
                counts = ProfileSpread.from_entry(
                    record.get("entry") or {},
                    f"profile {record.get('name')}: published spread",
                )
            elif isinstance(record, dict):
                counts = AcceptanceCounts.from_record(
                    record, f"engine.workers.{worker.role}: acceptance_from counters"
                )
            if counts is None and acceptance_spread is not None:
                counts = acceptance_spread
            if counts is None and acceptance_rounds is not None:
                counts = AcceptanceCounts.from_rates(
                    list(speculation.conditional_rates),
                    acceptance_rounds,
                    f"the configured rates over {acceptance_rounds} rounds (--acceptance-rounds)",
                )
        front = getattr(getattr(pricer, "model", None), "frontend", None)
        facts.append(
            WorkerFacts(
                worker.role,
                speculation.enabled,
                list(speculation.conditional_rates),
                estimator,
                bool(pricer.prices_speculation_natively),
                counts,
                None
                if front is None
                else (float(front.step_ms), float(front.token_ms), float(front.request_ms)),
            )
        )
    return facts


def estimator_name(model: Any) -> str:
    """The estimator whose evidence applies to ``model``: its name, or for ``auto`` the
    estimator it tries first (``describe()["candidates"][0]``)."""
    name = str(getattr(model, "name", type(model).__name__))
    if name == "auto" and callable(getattr(model, "describe", None)):
        candidates = model.describe().get("candidates") or []
        if candidates:
            return str(candidates[0])
    return name


def _cost_factors(rng: Any, table: CostErrorTable, worker: WorkerFacts) -> CostFactors:
    factors = table.sample(rng, worker.estimator)
    if worker.speculating and not worker.native and worker.estimator != "fixed":
        rule = table.sample(rng, RULE_EVIDENCE)
        if "sd_round" in rule.sampled:
            return CostFactors(
                factors.prefill,
                factors.mixed,
                factors.decode,
                factors.decode * rule.sd_round,
                tuple(sorted(set(factors.sampled) | {"sd_round"})),
            )
    return factors


def describe_sources(
    sources: Sources,
    workers: list[WorkerFacts],
    table: CostErrorTable,
    config: dict[str, Any],
    frontend_borrowed: bool = False,
    request_overhead: str | None = None,
) -> dict[str, dict[str, Any]]:
    """Per source: switched ``on``, ``included`` (on and something to sample) and ``detail``."""
    traffic = _mapping_at(config, "traffic")
    load = _mapping_at(traffic, "load")
    source = _mapping_at(traffic, "source")
    load_type = load.get("type", "trace_timestamps")
    seeded_traffic = load_type == "poisson" or source.get("type") == "synthetic"
    speculating = any(worker.speculating for worker in workers)
    simulation_detail = []
    if seeded_traffic:
        simulation_detail.append("traffic seed (Poisson gaps, synthetic lengths)")
    if speculating:
        simulation_detail.append("acceptance draws' seed")
    described: dict[str, dict[str, Any]] = {
        "simulation": {
            "on": sources.simulation,
            "included": sources.simulation and bool(simulation_detail),
            "detail": simulation_detail
            or ["nothing seeded: arrivals and lengths come from the trace, no SD"],
        }
    }
    counted = [worker for worker in workers if worker.counts is not None]
    described["acceptance"] = {
        "on": sources.acceptance,
        "included": sources.acceptance and bool(counted),
        "detail": [
            {"worker": worker.role, **worker.counts.to_dict()}
            for worker in counted
            if worker.counts is not None
        ]
        or [
            "no counts: the acceptance is a point value (give acceptance_from an engine metrics "
            "file with counters, or --acceptance-rounds)"
            if speculating
            else "no speculation"
        ],
    }
    cost_detail = []
    for worker in workers:
        evidence = table.describe(worker.estimator)
        kinds = dict(evidence["kinds"])
        if worker.speculating and not worker.native and worker.estimator != "fixed":
            rule = table.describe(RULE_EVIDENCE)["kinds"].get("sd_round")
            if rule is not None:
                kinds["sd_round"] = {**rule, "estimator": RULE_EVIDENCE}
        cost_detail.append(
            {
                "worker": worker.role,
                "estimator": worker.estimator,
                "sampled_kinds": kinds,
                "without_evidence": [
                    kind for kind in ("prefill", "mixed", "decode", "sd_round") if kind not in kinds
                ],
                "sources": evidence["sources"],
            }
        )
    described["cost"] = {
        "on": sources.cost,
        "included": sources.cost and any(item["sampled_kinds"] for item in cost_detail),
        "detail": cost_detail,
    }
    estimator = repeat_estimator(workers, table)
    repeat_detail: list[Any]
    if estimator is None:
        repeat_detail = [
            "no repeat evidence for "
            + ", ".join(sorted({worker.estimator for worker in workers}))
            + " (the engine's run-to-run noise is measured on the engine recordings' repeated "
            "runs, priced by their step tables: engine-step-table)"
        ]
    else:
        repeat_detail = [
            {
                **table.describe_repeats(estimator),
                "not_carried": list(METRICS_NOT_REPEATED),
            }
        ]
    described["repeat"] = {
        "on": sources.repeat,
        "included": sources.repeat and estimator is not None,
        "detail": repeat_detail,
    }
    drifting = [table.describe_correlation(worker.estimator) for worker in workers]
    drift_detail: list[Any] = [item for item in drifting if item["runs"]]
    if not drift_detail:
        drift_detail = [
            "no step-price drift evidence for "
            + ", ".join(sorted({worker.estimator for worker in workers}))
            + " (measured on the engine recordings' served steps, priced by their step tables: "
            "engine-step-table); per-step scatter, where drawn, is independent per step"
        ]
    elif not sources.cost:
        drift_detail = ["needs the cost source (it shapes the cost source's per-step draws)"]
    described["drift"] = {
        "on": sources.drift,
        "included": sources.drift and sources.cost and any(item["runs"] for item in drifting),
        "detail": drift_detail,
    }
    fronted = [worker for worker in workers if worker.frontend is not None]
    drawable = [worker for worker in fronted if table.frontends_for(worker.estimator)]
    frontend_detail: list[Any]
    if not fronted:
        frontend_detail = ["no front-end model: the steps are priced as the engine's in process"]
    elif not frontend_borrowed:
        frontend_detail = [
            "front-end terms measured on the step table's own recording: not drawn (they were "
            "measured around the served runs; how the host's speed moved around them is the "
            "cost and drift sources')"
        ]
    elif not drawable:
        frontend_detail = [
            "no front-end evidence for "
            + ", ".join(sorted({worker.estimator for worker in fronted}))
            + " (the front-end models of the engine recordings probed through their front end)"
        ]
    else:
        frontend_detail = [
            {
                "worker": worker.role,
                "terms_ms": list(worker.frontend or ()),
                "drawn": "terms measured on another recording: each replica takes one "
                "probed recording's terms (step, token, request) instead",
                **table.describe_frontends(worker.estimator),
            }
            for worker in drawable
        ]
    described["frontend"] = {
        "on": sources.frontend,
        "included": sources.frontend and frontend_borrowed and bool(drawable),
        "detail": frontend_detail,
    }
    overhead_detail: list[Any]
    drawn_overhead = request_overhead is not None and bool(table.overheads_for(request_overhead))
    if request_overhead is None:
        overhead_detail = [
            "no per-request overhead priced: the replay's TTFT starts when the engine sees the "
            "request (a caller that adds an engine's fitted overhead before the first token "
            "names the engine: request_overhead)"
        ]
    elif not drawn_overhead:
        overhead_detail = [
            f"no overhead evidence for engine {request_overhead!r} (the per-request overheads "
            "fitted on public GPU serving points: "
            + (", ".join(sorted({o.engine for o in table.overheads})) or "none")
            + ")"
        ]
    else:
        overhead_detail = [
            {
                "drawn": "each replica adds one training point's error of the per-request "
                "overhead (measured minus predicted median TTFT, the overhead refitted without "
                "the point) to its TTFT and E2E, from the points of the replay's regime (its "
                "concurrency band) when the engine has enough there",
                **table.describe_overheads(request_overhead, load_regime(config)),
            }
        ]
    described["overhead"] = {
        "on": sources.overhead,
        "included": sources.overhead and drawn_overhead,
        "detail": overhead_detail,
    }
    return described


#: Interval metrics no repeat sample carries (the recordings serve no SLO).
METRICS_NOT_REPEATED: Final = ("goodput_rps",)


def repeat_estimator(workers: list[WorkerFacts], table: CostErrorTable) -> str | None:
    """The estimator whose repeat noise a replica draws: the first worker's that has repeat
    samples (the noise is of the whole run, drawn once per replica), else None."""
    for worker in workers:
        if table.repeats_for(worker.estimator):
            return worker.estimator
    return None


def _mapping_at(mapping: dict[str, Any], key: str) -> dict[str, Any]:
    value = mapping.get(key)
    return value if isinstance(value, dict) else {}


def load_regime(config: dict[str, Any]) -> str | None:
    """The overhead's regime of a validated replay config, read from its traffic alone:
    ``overhead_regime`` of a closed loop's ``users``; None for any other load (rate, trace
    timestamps), whose concurrency the config does not fix."""
    load = _mapping_at(_mapping_at(config, "traffic"), "load")
    users = load.get("users")
    if (
        load.get("type") != "concurrency"
        or isinstance(users, bool)
        or not isinstance(users, (int, float))
    ):
        return None
    return overhead_regime(int(users))


def plan_draws(
    config: dict[str, Any],
    base_dir: Path,
    replicas: int,
    *,
    seed: int,
    sources: Sources,
    table: CostErrorTable,
    acceptance_rounds: int | None = None,
    forward_pass_model: object | None = None,
    frontend_borrowed: bool = False,
    request_overhead: str | None = None,
    acceptance_spread: AcceptanceSpread | None = None,
) -> tuple[list[Draw], Setup]:
    """The ``replicas`` draws of ``config`` (deterministic for ``seed``) and what they include.
    ``frontend_borrowed``: the front-end model's terms were measured on another recording than
    the step table's (then the ``frontend`` source draws them; terms measured on the table's
    own recording are not drawn). ``request_overhead``: the engine whose fitted per-request
    overhead before the first token the caller adds to every request's TTFT and E2E (then the
    ``overhead`` source draws its error, ``Draw.overhead_ms``). ``acceptance_spread``: how a
    speculating worker's configured rates are uncertain where neither engine counters nor a
    profile's published spread say (e.g. the spread of a fitted rate's training rows); it
    comes before ``acceptance_rounds``."""
    import numpy as np

    from aisim.config import build_plan, with_forward_pass_model

    plan, description = build_plan(config, base_dir)
    if forward_pass_model is not None:
        plan, description = with_forward_pass_model(plan, description, forward_pass_model)
    workers = _facts(plan, description, acceptance_rounds, acceptance_spread)
    streams = {name: np.random.default_rng([seed, stream]) for name, stream in STREAMS.items()}
    repeating = repeat_estimator(workers, table) if sources.repeat else None
    draws = []
    for replica in range(replicas):
        traffic_seed = (
            int(streams["simulation"].integers(SEED_LIMIT)) if sources.simulation else None
        )
        sampled = []
        # The first worker with a drawn front end sets the replica's admission shift (a
        # request reaches the engine once).
        admission: float | None = None
        for worker in workers:
            worker_seed = None
            if sources.simulation:
                drawn = int(streams["simulation"].integers(SEED_LIMIT))
                worker_seed = drawn if worker.speculating else None
            rates = None
            if sources.acceptance and worker.counts is not None:
                rates = tuple(worker.counts.sample(streams["acceptance"], worker.point_rates))
            factors = (
                _cost_factors(streams["cost"], table, worker) if sources.cost else CostFactors()
            )
            if not sources.drift and factors.step_correlation is not None:
                factors = dataclasses.replace(factors, step_correlation=None)
            front = None
            if sources.frontend and frontend_borrowed and worker.frontend is not None:
                front = table.sample_frontend(streams["frontend"], worker.estimator)
                if front is not None and admission is None:
                    admission = front[2] - worker.frontend[2]
            sampled.append(WorkerDraw(rates, worker_seed, factors, front))
        repeat = () if repeating is None else table.sample_repeat(streams["repeat"], repeating)
        overhead = None
        if sources.overhead and request_overhead is not None:
            overhead = table.sample_overhead(
                streams["overhead"], request_overhead, load_regime(config)
            )
        draws.append(
            Draw(replica, traffic_seed, tuple(sampled), repeat, admission or 0.0, overhead or 0.0)
        )
    setup = Setup(
        workers,
        describe_sources(sources, workers, table, config, frontend_borrowed, request_overhead),
    )
    return draws, setup
