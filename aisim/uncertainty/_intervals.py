"""Prediction intervals by Monte Carlo: N replicas of a replay, each with its own sampled inputs
(``Sources``), reduced to the p50 and a central 90 % interval per headline metric.

The point prediction is today's replay of the config as given; the replicas run on the sweep's
process pool or Ray (``aisim.sweep``'s backends, one task per replica), so the same seed gives
the same replicas and the same intervals whatever ran them.
"""

from __future__ import annotations

import copy
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

from aisim.errors import ConfigError
from aisim.uncertainty._acceptance import AcceptanceCounts, AcceptanceSpread, ProfileSpread
from aisim.uncertainty._cost_errors import CostErrorTable, CostFactors, load_cost_errors
from aisim.uncertainty._draw import Draw, WorkerDraw
from aisim.uncertainty._sources import Sources

#: The interval metrics: sweep row name -> label (docs/design.md#uncertainty).
METRICS: Final = {
    "mean_ttft_ms": "mean TTFT (ms)",
    "p90_ttft_ms": "p90 TTFT (ms)",
    "mean_tpot_ms": "mean TPOT (ms)",
    "p90_tpot_ms": "p90 TPOT (ms)",
    "mean_e2e_ms": "mean E2E (ms)",
    "p90_e2e_ms": "p90 E2E (ms)",
    "request_throughput_rps": "throughput (req/s)",
    "output_throughput_tok_s": "output throughput (tok/s)",
    "goodput_rps": "goodput (req/s)",
}
CONFIDENCE: Final = 0.90
#: Seeds a replica draws are below this (aisim's config seeds go to 2**63 - 1).
SEED_LIMIT: Final = 1 << 62
#: Stream of each source (numpy SeedSequence entropy [seed, stream]): switching one source
#: off leaves the others' draws unchanged.
STREAMS: Final = {"simulation": 0, "acceptance": 1, "cost": 2}
#: The estimator whose evidence prices an SD round when an STP estimator applies the
#: STP->SD scaling rule (docs/design.md#the-stp-sd-scaling-rule).
RULE_EVIDENCE: Final = "stp_rule"


def check_replicas(replicas: object, path: str = "--intervals") -> int:
    if isinstance(replicas, bool) or not isinstance(replicas, int) or replicas < 2:
        raise ConfigError(f"{path}: expected an integer >= 2 (replicas), got {replicas!r}")
    return replicas


def quantile(values: list[float], q: float) -> float:
    """Nearest-rank (inverted CDF) quantile: always one of the replicas' values, so a discrete
    outcome gives an exact value and identical replicas a zero-width interval."""
    ordered = sorted(values)
    rank = max(1, math.ceil(q * len(ordered) - 1e-12))
    return ordered[rank - 1]


@dataclass
class WorkerFacts:
    """What the draws need to know of one worker of the base plan."""

    role: str
    speculating: bool
    point_rates: list[float]
    estimator: str
    native: bool
    counts: AcceptanceSpread | None


@dataclass
class Setup:
    """The base run's facts and which sources actually contribute (with why not)."""

    workers: list[WorkerFacts]
    sources: dict[str, dict[str, Any]] = field(default_factory=dict)


def _facts(
    plan: Any, description: dict[str, Any], acceptance_rounds: int | None
) -> list[WorkerFacts]:
    from aisim.replay._pricing import PRICING_FIXED

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
            if counts is None and acceptance_rounds is not None:
                counts = AcceptanceCounts.from_rates(
                    list(speculation.conditional_rates),
                    acceptance_rounds,
                    f"the configured rates over {acceptance_rounds} rounds (--acceptance-rounds)",
                )
        facts.append(
            WorkerFacts(
                worker.role,
                speculation.enabled,
                list(speculation.conditional_rates),
                estimator,
                bool(pricer.prices_speculation_natively),
                counts,
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
    sources: Sources, workers: list[WorkerFacts], table: CostErrorTable, config: dict[str, Any]
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
    return described


def _mapping_at(mapping: dict[str, Any], key: str) -> dict[str, Any]:
    value = mapping.get(key)
    return value if isinstance(value, dict) else {}


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
) -> tuple[list[Draw], Setup]:
    """The ``replicas`` draws of ``config`` (deterministic for ``seed``) and what they include."""
    import numpy as np

    from aisim.config._replay import build_plan
    from aisim.config._run_replay import _with_model

    plan, description = build_plan(config, base_dir)
    if forward_pass_model is not None:
        plan, description = _with_model(plan, description, forward_pass_model)
    workers = _facts(plan, description, acceptance_rounds)
    streams = {name: np.random.default_rng([seed, stream]) for name, stream in STREAMS.items()}
    draws = []
    for replica in range(replicas):
        traffic_seed = (
            int(streams["simulation"].integers(SEED_LIMIT)) if sources.simulation else None
        )
        sampled = []
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
            sampled.append(WorkerDraw(rates, worker_seed, factors))
        draws.append(Draw(replica, traffic_seed, tuple(sampled)))
    setup = Setup(workers, describe_sources(sources, workers, table, config))
    return draws, setup


def reduce(
    point: dict[str, Any], rows: list[dict[str, Any]], names: Any = None
) -> dict[str, dict[str, Any]]:
    """Per metric: the point prediction, the replicas' p50 and central 90 % interval
    (5th and 95th percentiles, nearest rank), and how many replicas had the metric."""
    low_q = (1.0 - CONFIDENCE) / 2.0
    reduced: dict[str, dict[str, Any]] = {}
    for name in METRICS if names is None else names:
        values = [float(row[name]) for row in rows if _defined(row.get(name))]
        value: Any = point.get(name)
        reduced[name] = {
            "point": float(value) if _defined(value) else None,
            "p50": quantile(values, 0.5) if values else None,
            "low": quantile(values, low_q) if values else None,
            "high": quantile(values, 1.0 - low_q) if values else None,
            "replicas": len(values),
        }
    return reduced


def _defined(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def replay_intervals(
    config: object,
    replicas: int,
    *,
    seed: int = 0,
    sources: Sources | None = None,
    slos: dict[str, dict[str, float]] | None = None,
    table: CostErrorTable | None = None,
    acceptance_rounds: int | None = None,
    backend: str = "pool",
    workers: int | None = 1,
    address: str | None = None,
    base_dir: Path | None = None,
    forward_pass_model: object | None = None,
) -> dict[str, Any]:
    """Intervals of ``config``'s headline metrics over ``replicas`` Monte Carlo replays.

    ``config``: a replay config mapping or file path (docs/replay.md). ``sources`` (default all
    three) say what is sampled; ``table`` the cost evidence (default the committed one);
    ``acceptance_rounds`` treats configured rates as observed over that many rounds (a binomial
    spread) where no engine counters or profile spread give one. ``slos``
    (``{"ttft_ms": {"p90": 200}}``, as a sweep's) define goodput. Replicas run on ``backend``
    (``pool``, ``workers`` processes, or ``ray``) unless ``forward_pass_model`` is given (then in
    this process). Returns a JSON-ready mapping: ``metrics`` (point, p50, low, high per metric),
    ``sources`` (what each interval includes and what it cannot), ``replicas``, ``seed``,
    ``confidence``.
    """
    mapping, folder = _mapping(config, base_dir)
    if forward_pass_model is not None:
        return _in_process(
            mapping,
            folder,
            replicas,
            seed,
            sources or Sources(),
            slos or {},
            table if table is not None else load_cost_errors(),
            acceptance_rounds,
            forward_pass_model,
        )
    (runs,) = run_replicas(
        [mapping],
        folder,
        replicas,
        seed=seed,
        sources=sources,
        slos=slos,
        table=table,
        acceptance_rounds=acceptance_rounds,
        backend=backend,
        workers=workers,
        address=address,
    )
    return report(runs)


class Replicas:
    """One config's point row, replica rows (in replica order) and what they include."""

    def __init__(
        self,
        point: dict[str, Any],
        rows: list[dict[str, Any]],
        setup: Setup,
        replicas: int,
        seed: int,
    ) -> None:
        self.point = point
        self.rows = rows
        self.setup = setup
        self.replicas = replicas
        self.seed = seed


def report(runs: Replicas) -> dict[str, Any]:
    """The JSON-ready interval report of one config's replicas."""
    return {
        "replicas": runs.replicas,
        "seed": runs.seed,
        "confidence": CONFIDENCE,
        "sources": runs.setup.sources,
        "includes": [name for name, item in runs.setup.sources.items() if item["included"]],
        "metrics": reduce(runs.point, runs.rows),
        "mean_acceptance_length": reduce_acceptance(runs.point, runs.rows),
    }


def check_seed(seed: object) -> int:
    if isinstance(seed, bool) or not isinstance(seed, int) or not 0 <= seed < SEED_LIMIT:
        raise ConfigError(f"--seed: expected an integer in 0..{SEED_LIMIT - 1}, got {seed!r}")
    return seed


def run_replicas(
    configs: list[dict[str, Any]],
    folder: Path,
    replicas: int,
    *,
    seed: int = 0,
    sources: Sources | None = None,
    slos: dict[str, dict[str, float]] | None = None,
    table: CostErrorTable | None = None,
    acceptance_rounds: int | None = None,
    backend: str = "pool",
    workers: int | None = 1,
    address: str | None = None,
) -> list[Replicas]:
    """The point run and ``replicas`` replicas of every config (mappings whose relative paths
    resolve against ``folder``), all as tasks of one sweep-backend run. Every config draws with
    the same ``seed``: replica i of two configs shares its traffic seed and its evidence group
    (common random numbers), so configs compare replica by replica."""
    from aisim.sweep._backends import Task, run_tasks

    check_replicas(replicas)
    check_seed(seed)
    chosen = sources if sources is not None else Sources()
    evidence = table if table is not None else load_cost_errors()
    limits = slos or {}
    tasks = []
    setups = []
    stride = replicas + 1
    for index, mapping in enumerate(configs):
        draws, setup = plan_draws(
            mapping,
            folder,
            replicas,
            seed=seed,
            sources=chosen,
            table=evidence,
            acceptance_rounds=acceptance_rounds,
        )
        setups.append(setup)
        tasks.append(Task(index * stride, mapping))
        tasks.extend(Task(index * stride + 1 + draw.replica, mapping, draw) for draw in draws)
    rows: dict[int, dict[str, Any]] = {}

    def on_row(index: int, row: dict[str, Any]) -> None:
        rows[index] = row

    run_tasks(tasks, str(folder), limits, on_row, backend=backend, workers=workers, address=address)
    failed = [rows[task.point] for task in tasks if rows[task.point].get("status") != "ok"]
    if failed:
        raise ConfigError(str(failed[0]["error"]).split(": ", 1)[-1])
    return [
        Replicas(
            rows[index * stride],
            [rows[index * stride + 1 + replica] for replica in range(replicas)],
            setups[index],
            replicas,
            seed,
        )
        for index in range(len(configs))
    ]


def _in_process(
    mapping: dict[str, Any],
    folder: Path,
    replicas: int,
    seed: int,
    sources: Sources,
    slos: dict[str, dict[str, float]],
    table: CostErrorTable,
    acceptance_rounds: int | None,
    forward_pass_model: object,
) -> dict[str, Any]:
    """``replay_intervals`` with a forward-pass model (not sent to other processes)."""
    from aisim.config import run_replay
    from aisim.sweep._evaluate import point_metrics
    from aisim.uncertainty._draw import run_draw

    check_replicas(replicas)
    check_seed(seed)
    draws, setup = plan_draws(
        mapping,
        folder,
        replicas,
        seed=seed,
        sources=sources,
        table=table,
        acceptance_rounds=acceptance_rounds,
        forward_pass_model=forward_pass_model,
    )
    base = run_replay(mapping, base_dir=folder, forward_pass_model=forward_pass_model)
    point = point_metrics(base.summary, base.columns, slos)
    rows = []
    for draw in draws:
        result = run_draw(mapping, folder, draw, forward_pass_model)
        rows.append(point_metrics(result.summary, result.columns, slos))
    return report(Replicas(point, rows, setup, replicas, seed))


def reduce_acceptance(point: dict[str, Any], rows: list[dict[str, Any]]) -> dict[str, Any]:
    values = [
        float(row["mean_acceptance_length"])
        for row in rows
        if _defined(row.get("mean_acceptance_length"))
    ]
    value: Any = point.get("mean_acceptance_length")
    return {
        "point": float(value) if _defined(value) else None,
        "p50": quantile(values, 0.5) if values else None,
        "low": quantile(values, 0.05) if values else None,
        "high": quantile(values, 0.95) if values else None,
        "replicas": len(values),
    }


def _mapping(config: object, base_dir: Path | None) -> tuple[dict[str, Any], Path]:
    import os

    if isinstance(config, (str, os.PathLike)):
        from aisim._io import load_config_file

        loaded = load_config_file(config, "config")
        if not isinstance(loaded, dict):
            raise ConfigError(f"config: expected a mapping, got {type(loaded).__name__}")
        return loaded, Path(config).resolve().parent
    if not isinstance(config, dict):
        raise ConfigError(f"config: expected a mapping or a file path, got {type(config).__name__}")
    return copy.deepcopy(config), (base_dir or Path.cwd()).resolve()
