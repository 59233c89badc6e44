"""One Monte Carlo replica (``Draw``: plain values, picklable for a process pool or Ray) and how
it is applied to a replay plan: seeds and acceptance rates replace the plan's, cost factors
multiply each pass's price by the factor of its step kind.

The compiled core is untouched: the factors reach it as a fixed pricer with scaled prices, or
as an estimator wrapped by ``ScaledModel`` (``_scaled``, compiled: one call per pass, never per
event).
"""

from __future__ import annotations

import copy
import dataclasses
import random
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from aisim.uncertainty._cost_errors import CostFactors
from aisim.uncertainty._scaled import ScaledModel


@dataclass(frozen=True)
class WorkerDraw:
    """A worker's sampled inputs: ``conditional_rates`` (None: the plan's), ``seed`` of its
    acceptance draws (None: the plan's), ``factors`` on its step prices."""

    conditional_rates: tuple[float, ...] | None = None
    seed: int | None = None
    factors: CostFactors = CostFactors()


@dataclass(frozen=True)
class Draw:
    """Replica ``replica``: the traffic seed (None: the config's) and one ``WorkerDraw`` per
    worker, in the plan's worker order."""

    replica: int
    traffic_seed: int | None
    workers: tuple[WorkerDraw, ...]

    def run(self, config: dict[str, Any], base_dir: Path) -> Any:
        """Replay ``config`` as this replica (``run_draw``): what a sweep point's task calls,
        so the sweep runs replicas without importing this package."""
        return run_draw(config, base_dir, self)


def scaled_model(
    model: Any,
    factors: CostFactors,
    speculating: bool,
    undrafted: bool,
    noise: random.Random | None = None,
) -> ScaledModel:
    """``model`` with ``factors`` applied per pass (``ScaledModel``, compiled). ``undrafted``: it
    prices plain decode steps of a speculating worker. ``noise``: the scatter draws (None: a
    fresh stream seeded by ``factors.noise_seed``)."""
    return ScaledModel(
        model,
        (factors.of("prefill"), factors.of("mixed"), factors.of("decode"), factors.of("sd_round")),
        (
            factors.noise("prefill"),
            factors.noise("mixed"),
            factors.noise("decode"),
            factors.noise("sd_round"),
        ),
        speculating and not undrafted,
        noise if noise is not None else random.Random(factors.noise_seed),
    )


def scaled_pricer(pricer: Any, factors: CostFactors, speculating: bool) -> Any:
    """``pricer`` (an ``aisim.replay`` pass pricer) with ``factors`` applied; itself when every
    factor is 1 (so a replica without cost uncertainty prices exactly as the point run). A fixed
    pricer takes the run-level factors only (its per-step scatter has no evidence)."""
    from aisim.replay import PRICING_FIXED, PassPricer

    if factors.is_identity:
        return pricer
    if pricer.kind == PRICING_FIXED:
        decode = factors.sd_round if speculating else factors.decode
        return PassPricer.fixed(pricer.prefill_ms * factors.prefill, pricer.decode_ms * decode)
    plain = pricer.plain_model
    main = scaled_model(pricer.model, factors, speculating, False)
    return PassPricer.from_model(
        main,
        pricer.metrics_factory,
        pricer.prices_speculation_natively,
        pricer.wants_request_lists,
        None if plain is None else scaled_model(plain, factors, speculating, True, main.noise),
    )


def with_traffic_seed(config: dict[str, Any], seed: int | None) -> dict[str, Any]:
    """``config`` with ``traffic.seed`` replaced (a copy; the config itself when ``seed`` is None)."""
    if seed is None:
        return config
    changed = copy.deepcopy(config)
    traffic = changed.get("traffic")
    if isinstance(traffic, dict):
        traffic["seed"] = seed
    return changed


def apply_draw(plan: Any, draw: Draw) -> Any:
    """``plan`` with ``draw``'s acceptance rates, seeds and cost factors."""
    workers = []
    for worker, sampled in zip(plan.workers, draw.workers, strict=True):
        speculation = worker.speculation
        changes: dict[str, Any] = {}
        if sampled.conditional_rates is not None:
            changes["conditional_rates"] = list(sampled.conditional_rates)
        if sampled.seed is not None:
            changes["seed"] = sampled.seed
        if changes:
            speculation = dataclasses.replace(speculation, **changes)
        pricer = scaled_pricer(worker.pricer, sampled.factors, speculation.enabled)
        if speculation is not worker.speculation or pricer is not worker.pricer:
            worker = dataclasses.replace(worker, speculation=speculation, pricer=pricer)
        workers.append(worker)
    return dataclasses.replace(plan, workers=workers)


def run_draw(
    config: dict[str, Any], base_dir: Path, draw: Draw, forward_pass_model: object | None = None
) -> Any:
    """Replay ``config`` (a mapping) as replica ``draw``; returns the ``ReplayResult``."""
    from aisim.config import build_plan, with_forward_pass_model
    from aisim.replay import run

    plan, description = build_plan(with_traffic_seed(config, draw.traffic_seed), base_dir)
    if forward_pass_model is not None:
        plan, description = with_forward_pass_model(plan, description, forward_pass_model)
    return run(apply_draw(plan, draw), description)
