"""Prediction intervals by Monte Carlo: N replicas of a replay, each with its own sampled inputs
(``Sources``), reduced to the p50 and a central 90 % interval per headline metric.

The point prediction is today's replay of the config as given; the replicas run on the sweep's
process pool or Ray (``aisim.sweep``'s backends, one task per replica), so the same seed gives
the same replicas and the same intervals whatever ran them.
"""

from __future__ import annotations

import copy
import math
from collections.abc import Callable
from pathlib import Path
from typing import Any, Final

from aisim.errors import ConfigError
from aisim.uncertainty._cost_errors import CostErrorTable, load_cost_errors
from aisim.uncertainty._draw import apply_repeat
from aisim.uncertainty._replicas import (
    SEED_LIMIT,
    Setup,
    WorkerFacts,
    _cost_factors,
    estimator_name,
    plan_draws,
)
from aisim.uncertainty._sources import Sources

__all__ = ["WorkerFacts", "_cost_factors", "estimator_name", "plan_draws"]

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
#: Most replicas one interval may ask for. Every replica's draws are planned up front, so
#: ``--intervals 100000000`` grew past 2 GB in minutes before its first replay finished; at
#: 10,000 the 90 % bounds are the 500th smallest and largest (their Monte Carlo error is far
#: below any source's spread), and the replays alone take hours.
MAX_REPLICAS: Final = 10_000


def check_replicas(replicas: object, path: str = "--intervals") -> int:
    """``replicas`` if it is an integer in 2..``MAX_REPLICAS``; else a one-line error naming
    ``path``."""
    if (
        isinstance(replicas, bool)
        or not isinstance(replicas, int)
        or not 2 <= replicas <= MAX_REPLICAS
    ):
        raise ConfigError(
            f"{path}: expected an integer in 2..{MAX_REPLICAS} (replicas), got {replicas!r}"
        )
    return replicas


def quantile(values: list[float], q: float) -> float:
    """Nearest-rank (inverted CDF) quantile: always one of the replicas' values, so a discrete
    outcome gives an exact value and identical replicas a zero-width interval."""
    ordered = sorted(values)
    rank = max(1, math.ceil(q * len(ordered) - 1e-12))
    return ordered[rank - 1]


def central_bounds(values: list[float], confidence: float = CONFIDENCE) -> tuple[float, float]:
    """The central ``confidence`` interval of N replicas: the k-th smallest and the k-th
    largest value, k = max(1, floor((1 - confidence) / 2 * (N + 1))). A new value exchangeable
    with the N falls below the k-th smallest with probability k / (N + 1), and above the k-th
    largest with the same, so inside with (N + 1 - 2k) / (N + 1): at least ``confidence`` once
    N >= 2 / (1 - confidence) - 1 (19 replicas for 90 %), equal tails at any N (N = 20: the
    smallest and the largest, 19 / 21 = 90.5 %). Always a replica's value."""
    ordered = sorted(values)
    k = max(1, math.floor((1.0 - confidence) / 2.0 * (len(ordered) + 1) + 1e-9))
    k = min(k, (len(ordered) + 1) // 2)
    return ordered[k - 1], ordered[len(ordered) - k]


def reduce(
    point: dict[str, Any], rows: list[dict[str, Any]], names: Any = None
) -> dict[str, dict[str, Any]]:
    """Per metric: the point prediction, the replicas' p50 (nearest rank) and central 90 %
    interval (``central_bounds``), and how many replicas had the metric."""
    reduced: dict[str, dict[str, Any]] = {}
    for name in METRICS if names is None else names:
        values = [float(row[name]) for row in rows if _defined(row.get(name))]
        value: Any = point.get(name)
        low, high = central_bounds(values) if values else (None, None)
        reduced[name] = {
            "point": float(value) if _defined(value) else None,
            "p50": quantile(values, 0.5) if values else None,
            "low": low,
            "high": high,
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
    frontend_borrowed: bool = False,
    admission_ms: float = 0.0,
    request_overhead: str | None = None,
    model_factory: Callable[[], object] | None = None,
) -> dict[str, Any]:
    """Intervals of ``config``'s headline metrics over ``replicas`` Monte Carlo replays.

    ``config``: a replay config mapping or file path (docs/replay.md). ``sources`` (default all
    four) say what is sampled; ``table`` the cost evidence (default the committed one);
    ``acceptance_rounds`` treats configured rates as observed over that many rounds (a binomial
    spread) where no engine counters or profile spread give one. ``slos``
    (``{"ttft_ms": {"p90": 200}}``, as a sweep's) define goodput. Replicas run on ``backend``
    (``pool``, ``workers`` processes, or ``ray``) unless ``forward_pass_model`` is given (then in
    this process; ``frontend_borrowed``: its front-end terms were measured on another
    recording than its step table, so the ``frontend`` source draws them; ``admission_ms``: its
    front end's per-request term, ``run_replay``'s, so the point is ``aisim replay
    --step-table``'s). ``request_overhead``: the engine whose fitted per-request overhead before
    the first token the caller adds to every request's TTFT and E2E (as ``aisim qualify
    public-gpu`` does): the ``overhead`` source adds its drawn error to each replica's.
    ``model_factory`` (instead of ``forward_pass_model``): builds a fresh model for the point and
    for each replica, for a stateful model (an engine step table's primitive caches: one model
    shared by the replays would hand each the caches the previous one left). Returns a
    JSON-ready mapping: ``metrics`` (point, p50, low, high per metric),
    ``sources`` (what each interval includes and what it cannot), ``replicas``, ``seed``,
    ``confidence``.
    """
    mapping, folder = _mapping(config, base_dir)
    if model_factory is not None:
        if forward_pass_model is not None:
            raise ConfigError(
                "replay_intervals: give forward_pass_model or model_factory, not both"
            )
        forward_pass_model = model_factory()
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
            frontend_borrowed,
            admission_ms,
            request_overhead,
            model_factory,
        )
    if admission_ms:
        raise ConfigError(
            f"admission_ms: {admission_ms!r}: a front end's per-request term needs the "
            "forward_pass_model it belongs to"
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
        request_overhead=request_overhead,
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


def check_seed(seed: object, flag: str = "--seed") -> int:
    """``seed`` as an int in 0..SEED_LIMIT - 1; else a one-line error naming ``flag``."""
    if isinstance(seed, bool) or not isinstance(seed, int) or not 0 <= seed < SEED_LIMIT:
        raise ConfigError(f"{flag}: expected an integer in 0..{SEED_LIMIT - 1}, got {seed!r}")
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
    request_overhead: str | None = None,
) -> list[Replicas]:
    """The point run and ``replicas`` replicas of every config (mappings whose relative paths
    resolve against ``folder``), all as tasks of one sweep-backend run. Every config draws with
    the same ``seed``: replica i of two configs shares its traffic seed and its evidence group
    (common random numbers), so configs compare replica by replica."""
    runner = ReplicaRunner(
        configs,
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
        request_overhead=request_overhead,
    )
    runner.run({index: replicas for index in range(len(configs))})
    return [runner.replicas(index) for index in range(len(configs))]


class ReplicaRunner:
    """Replicas of several configs run in stages (``run``: bring configs up to a replica count),
    for an adaptive search. Every config's N draws are fixed up front (``plan_draws``), so
    replica i is the same replay whichever stage runs it: a config brought up to N in two
    stages has exactly the rows of a single run of N."""

    def __init__(
        self,
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
        request_overhead: str | None = None,
    ) -> None:
        check_replicas(replicas)
        check_seed(seed)
        chosen = sources if sources is not None else Sources()
        evidence = table if table is not None else load_cost_errors()
        self.configs = configs
        self.folder = folder
        self.total = replicas
        self.seed = seed
        self.slos = slos or {}
        self.backend = backend
        self.workers = workers
        self.address = address
        self.draws = []
        self.setups = []
        for mapping in configs:
            draws, setup = plan_draws(
                mapping,
                folder,
                replicas,
                seed=seed,
                sources=chosen,
                table=evidence,
                acceptance_rounds=acceptance_rounds,
                request_overhead=request_overhead,
            )
            self.draws.append(draws)
            self.setups.append(setup)
        self.points: dict[int, dict[str, Any]] = {}
        self.rows: dict[int, list[dict[str, Any]]] = {index: [] for index in range(len(configs))}
        #: Replays run so far (points and replicas).
        self.replays = 0

    def run(self, wanted: dict[int, int]) -> None:
        """Bring config ``index`` to ``wanted[index]`` replicas (and its point run), all as
        tasks of one sweep-backend run."""
        from aisim.sweep import Task, run_tasks

        stride = self.total + 1
        tasks = []
        for index, count in sorted(wanted.items()):
            if index not in self.points:
                tasks.append(Task(index * stride, self.configs[index]))
            have = len(self.rows[index])
            tasks.extend(
                Task(index * stride + 1 + draw.replica, self.configs[index], draw)
                for draw in self.draws[index][have : min(count, self.total)]
            )
        if not tasks:
            return
        found: dict[int, dict[str, Any]] = {}

        def on_row(task_index: int, row: dict[str, Any]) -> None:
            found[task_index] = row

        run_tasks(
            tasks,
            str(self.folder),
            self.slos,
            on_row,
            backend=self.backend,
            workers=self.workers,
            address=self.address,
        )
        failed = [found[task.point] for task in tasks if found[task.point].get("status") != "ok"]
        if failed:
            raise ConfigError(str(failed[0]["error"]).split(": ", 1)[-1])
        self.replays += len(tasks)
        for task in tasks:
            index, offset = divmod(task.point, stride)
            if offset == 0:
                self.points[index] = found[task.point]
        for index in sorted(wanted):
            have = len(self.rows[index])
            more = range(have, min(wanted[index], self.total))
            self.rows[index].extend(
                apply_repeat(found[index * stride + 1 + replica], self.draws[index][replica])
                for replica in more
            )

    def replicas(self, index: int) -> Replicas:
        """Config ``index``'s point and the replicas run so far (in replica order)."""
        rows = list(self.rows[index])
        return Replicas(self.points[index], rows, self.setups[index], len(rows), self.seed)


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
    frontend_borrowed: bool = False,
    admission_ms: float = 0.0,
    request_overhead: str | None = None,
    model_factory: Callable[[], object] | None = None,
) -> dict[str, Any]:
    """``replay_intervals`` with a forward-pass model (not sent to other processes): the point
    on ``forward_pass_model``, each replica on ``model_factory()`` when given, else on the same
    model."""
    from aisim.config import run_replay
    from aisim.sweep import point_metrics
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
        frontend_borrowed=frontend_borrowed,
        request_overhead=request_overhead,
    )
    base = run_replay(
        mapping, base_dir=folder, forward_pass_model=forward_pass_model, admission_ms=admission_ms
    )
    point = point_metrics(base.run_summary, base.columns, slos)
    rows = []
    for draw in draws:
        model = forward_pass_model if model_factory is None else model_factory()
        result = run_draw(mapping, folder, draw, model, admission_ms)
        rows.append(apply_repeat(point_metrics(result.run_summary, result.columns, slos), draw))
    return report(Replicas(point, rows, setup, replicas, seed))


def reduce_acceptance(point: dict[str, Any], rows: list[dict[str, Any]]) -> dict[str, Any]:
    values = [
        float(row["mean_acceptance_length"])
        for row in rows
        if _defined(row.get("mean_acceptance_length"))
    ]
    value: Any = point.get("mean_acceptance_length")
    low, high = central_bounds(values) if values else (None, None)
    return {
        "point": float(value) if _defined(value) else None,
        "p50": quantile(values, 0.5) if values else None,
        "low": low,
        "high": high,
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
