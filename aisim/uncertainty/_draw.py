"""One Monte Carlo replica (``Draw``: plain values, picklable for a process pool or Ray) and how
it is applied to a replay plan: seeds and acceptance rates replace the plan's, cost factors
multiply each pass's price by the factor of its step kind.

The factors reach the compiled core as a fixed pricer with scaled prices, or as a model pricer's
``PriceScale`` (per step kind, applied in the pricer: no Python call per pass).
"""

from __future__ import annotations

import copy
import dataclasses
import random
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from aisim.uncertainty._cost_errors import CostFactors


@dataclass(frozen=True)
class WorkerDraw:
    """A worker's sampled inputs: ``conditional_rates`` (None: the plan's), ``seed`` of its
    acceptance draws (None: the plan's), ``factors`` on its step prices."""

    conditional_rates: tuple[float, ...] | None = None
    seed: int | None = None
    factors: CostFactors = CostFactors()
    #: (step_ms, token_ms, request_ms): the front-end terms its model prices with (the
    #: ``frontend`` source; None: the model's own). The per-request term reaches the figures
    #: through ``Draw.admission_ms``.
    frontend: tuple[float, float, float] | None = None


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
    #: The drawn front end's per-request term minus the model's (``frontend`` source), added to
    #: the replica's TTFT and E2E figures after its replay (``apply_repeat``): the front end's
    #: per-request cost is time before the engine sees a request, which the caller adds to
    #: every request's TTFT and E2E (as the engine scorer adds the model's term).
    admission_ms: float = 0.0
    #: The drawn error of the caller's per-request overhead before the first token
    #: (``overhead`` source, ms): added to the replica's TTFT and E2E figures after its replay
    #: (``apply_repeat``), as the caller adds the overhead itself to every request's.
    overhead_ms: float = 0.0

    def run(self, config: dict[str, Any], base_dir: Path) -> Any:
        """Replay ``config`` as this replica (``run_draw``): what a sweep point's task calls,
        so the sweep runs replicas without importing this package."""
        return run_draw(config, base_dir, self)


#: The figures a front end's per-request term moves (``Draw.admission_ms``): every request's
#: TTFT and E2E move by it, so their mean and p90 do too.
ADMITTED: Final = ("mean_ttft_ms", "p90_ttft_ms", "mean_e2e_ms", "p90_e2e_ms")


def apply_repeat(row: dict[str, Any], draw: Draw | None) -> dict[str, Any]:
    """A replica's figures (a sweep row) with its draw's front-end admission shift and its
    overhead error added (``Draw.admission_ms``, ``Draw.overhead_ms``) and then its repeat
    factors multiplied in: a copy, or ``row`` itself when the draw has none of them. A figure
    that is not a number stays as it is."""
    shift = 0.0 if draw is None else draw.admission_ms + draw.overhead_ms
    if draw is None or (not draw.repeat and not draw.admission_ms and not draw.overhead_ms):
        return row
    changed = dict(row)
    if draw.admission_ms or draw.overhead_ms:
        for name in ADMITTED:
            value = changed.get(name)
            if isinstance(value, (int, float)) and not isinstance(value, bool):
                changed[name] = float(value) + shift
    for name, factor in draw.repeat:
        value = changed.get(name)
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            changed[name] = float(value) * factor
    return changed


def scaled_pricer(pricer: Any, factors: CostFactors, speculating: bool) -> Any:
    """``pricer`` (an ``aisim.replay`` pass pricer) with ``factors`` applied; itself when every
    factor is 1 (so a replica without cost uncertainty prices exactly as the point run). A fixed
    pricer takes the run-level factors only (its per-step scatter has no evidence). A model
    pricer multiplies each of its model's answers by the factor of the pass's step kind, and by a
    draw from that kind's per-step scatter where the evidence has one (``PriceScale``, compiled:
    one stream, seeded by ``factors.noise_seed``, shared by the plain-decode model), correlated
    in time when ``factors.step_correlation`` is set (the ``drift`` source)."""
    from aisim.replay import PRICING_FIXED, SCALE_KINDS, PassPricer, PriceScale

    if factors.is_identity:
        return pricer
    if pricer.kind == PRICING_FIXED:
        decode = factors.sd_round if speculating else factors.decode
        return PassPricer.fixed(pricer.prefill_ms * factors.prefill, pricer.decode_ms * decode)
    share, time_ms = factors.step_correlation or (0.0, 0.0)
    scale = PriceScale(
        [factors.of(kind) for kind in SCALE_KINDS],
        [factors.noise(kind) or () for kind in SCALE_KINDS],
        random.Random(factors.noise_seed),
        speculating,
        share,
        time_ms,
    )
    # The length models of suffix decoding are not carried over: a scaled pricer prices every
    # pass with its main model (as the per-pass wrapper it replaces did).
    return PassPricer.from_model(
        pricer.model,
        pricer.metrics_factory,
        pricer.prices_speculation_natively,
        pricer.wants_request_lists,
        pricer.plain_model,
        scale=scale,
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
    config: dict[str, Any],
    base_dir: Path,
    draw: Draw,
    forward_pass_model: object | None = None,
    admission_ms: float = 0.0,
) -> Any:
    """Replay ``config`` (a mapping) as replica ``draw``; returns the ``ReplayResult``.
    ``forward_pass_model`` and ``admission_ms``: ``aisim.config.run_replay``'s."""
    from aisim.config import build_plan, with_forward_pass_model
    from aisim.replay import run

    plan, description = build_plan(with_traffic_seed(config, draw.traffic_seed), base_dir)
    if forward_pass_model is not None:
        plan, description = with_forward_pass_model(plan, description, forward_pass_model)
    if admission_ms > 0:
        plan = dataclasses.replace(plan, admission_ms=float(admission_ms))
    swapped = swap_frontends(plan, draw)
    try:
        return run(apply_draw(plan, draw), description)
    finally:
        for model, terms in reversed(swapped):
            model.frontend = terms


def frontend_models(model: Any) -> list[Any]:
    """The objects that price ``model``'s front end (``frontend`` attribute): the model and its
    plain-decode model (SD), where they have one."""
    found = []
    while model is not None and getattr(model, "frontend", None) is not None:
        found.append(model)
        model = getattr(model, "plain_decode_model", None)
    return found


def swap_frontends(plan: Any, draw: Draw) -> list[tuple[Any, Any]]:
    """Give each worker's model the front-end terms its draw carries (``WorkerDraw.frontend``);
    returns (model, previous terms) to restore after the replay (a model passed in by the
    caller is shared by the replicas)."""
    from aisim.fpm import FrontEndCost

    swapped: list[tuple[Any, Any]] = []
    for worker, sampled in zip(plan.workers, draw.workers, strict=True):
        if sampled.frontend is None:
            continue
        for model in frontend_models(getattr(worker.pricer, "model", None)):
            previous = model.frontend
            step_ms, token_ms, request_ms = sampled.frontend
            model.frontend = FrontEndCost(
                step_ms, token_ms, request_ms, f"{previous.source} (frontend source: drawn)"
            )
            swapped.append((model, previous))
    return swapped
