"""One Monte Carlo replica (``Draw``: plain values, picklable for a process pool or Ray) and how
it is applied to a replay plan: seeds and acceptance rates replace the plan's, cost factors
multiply each pass's price by the factor of its step kind.

The compiled core is untouched: the factors reach it as a fixed pricer with scaled prices, or
as an estimator wrapped by ``ScaledModel`` (one Python call per pass, never per event).
"""

from __future__ import annotations

import copy
import dataclasses
import random
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from aisim.uncertainty._cost_errors import STEP_KINDS, CostFactors


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
    #: (metric, factor): the engine's run-to-run repeat noise, multiplied into the replica's
    #: figures after its replay (``apply_repeat``); empty: none.
    repeat: tuple[tuple[str, float], ...] = ()

    def run(self, config: dict[str, Any], base_dir: Path) -> Any:
        """Replay ``config`` as this replica (``run_draw``): what a sweep point's task calls,
        so the sweep runs replicas without importing this package."""
        return run_draw(config, base_dir, self)


class ScaledModel:
    """A forward-pass model whose answers are multiplied by the factor of the pass's kind:
    ``mixed`` (prefill beside decode), ``prefill``, ``sd_round`` (decode work of a speculating
    worker) or ``decode``. ``undrafted``: it prices plain decode steps of a speculating worker."""

    def __init__(
        self,
        model: Any,
        factors: CostFactors,
        speculating: bool,
        undrafted: bool,
        noise: random.Random | None = None,
    ):
        self.model = model
        #: Draws of the per-step scatter (shared with the plain-decode model of the same pricer,
        #: so the passes draw in simulation order from one stream).
        self.noise = noise if noise is not None else random.Random(factors.noise_seed)
        self.factors = factors
        self.speculating = speculating and not undrafted
        self.name = getattr(model, "name", type(model).__name__)
        self.prices_speculation_natively = bool(
            getattr(model, "prices_speculation_natively", False)
        )
        self.supports_draft_length = bool(getattr(model, "supports_draft_length", False))
        #: Per kind: (factor, per-step scatter quantiles or None), looked up once per pass.
        self.scale = {kind: (factors.of(kind), factors.noise(kind)) for kind in STEP_KINDS}
        self.estimate = model.estimate_forward_pass_time_ms

    def estimate_forward_pass_time_ms(self, metrics: Any, draft_length: int | None = None) -> float:
        if draft_length is None:
            price = float(self.estimate(metrics))
        else:
            price = float(self.estimate(metrics, draft_length=draft_length))
        # Replay passes a list of one metrics object per rank (one rank: the common case).
        single = metrics if not isinstance(metrics, list) else None
        if single is None and len(metrics) == 1:
            single = metrics[0]
        if single is not None:
            prefill = single.num_prefill_requests > 0
            decode = single.num_decode_requests > 0
        else:
            prefill = any(rank.num_prefill_requests > 0 for rank in metrics)
            decode = any(rank.num_decode_requests > 0 for rank in metrics)
        if prefill and decode:
            kind = "mixed"
        elif prefill:
            kind = "prefill"
        elif self.speculating and (draft_length is not None or self.prices_speculation_natively):
            kind = "sd_round"
        else:
            kind = "decode"
        factor, quantiles = self.scale[kind]
        if quantiles is None:
            return price * factor
        return price * factor * interpolate(quantiles, self.noise.random())


def apply_repeat(row: dict[str, Any], draw: Draw | None) -> dict[str, Any]:
    """A replica's figures (a sweep row) with its draw's repeat factors multiplied in: a copy,
    or ``row`` itself when the draw has none. A figure that is not a number stays as it is."""
    if draw is None or not draw.repeat:
        return row
    changed = dict(row)
    for name, factor in draw.repeat:
        value = changed.get(name)
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            changed[name] = float(value) * factor
    return changed


def interpolate(quantiles: tuple[float, ...], u: float) -> float:
    """The value at probability ``u`` of evenly spaced ``quantiles`` (0 .. 100 %), linear
    between them: an inverse-CDF draw from the recorded per-step scatter."""
    position = u * (len(quantiles) - 1)
    index = min(int(position), len(quantiles) - 2)
    fraction = position - index
    return quantiles[index] + (quantiles[index + 1] - quantiles[index]) * fraction


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
    main = ScaledModel(pricer.model, factors, speculating, False)
    return PassPricer.from_model(
        main,
        pricer.metrics_factory,
        pricer.prices_speculation_natively,
        pricer.wants_request_lists,
        None if plain is None else ScaledModel(plain, factors, speculating, True, main.noise),
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
