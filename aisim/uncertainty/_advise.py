"""``advise``: should this deployment turn speculative decoding on, with which method and depth,
and up to which load? Every configuration (SD off and each method x depth, at each load) is
replayed N times with its uncertain inputs drawn (``run_replicas``: common random numbers, so
configurations compare replica by replica), then ranked by goodput at the nominal load.

* ``P(beats SD off)``: the share of replicas in which the configuration's goodput is higher than
  SD off's in the same replica, or equal (within 0.1 %) with a lower headline latency.
* gain at a load: 1 - headline latency with SD / without SD, per replica (paired); its p50 and
  central 90 % interval.
* where SD stops helping: the load at which the best SD configuration's median gain crosses
  zero, linearly interpolated between the loads searched (None when it never does there).

The search is a race when ``screen`` < N. First every configuration at the nominal load gets
its point run and its first ``screen`` replicas. A configuration is *clearly dominated* when
each of the screen leader's replicas beats each of its own (goodput higher, or tied within
0.1 % with a lower headline latency). Then SD off and the best SD configuration get N replicas
at every load; every other configuration not clearly dominated gets N at the nominal load and
the screen at the other loads; a clearly dominated one gets its point run at the other loads
(its gain there is the point's, without an interval). When the best SD configuration changes
after that, the new one gets its N at every load too (repeated until it is stable). The rule's
error rate (a configuration as good as the leader dropped) is in docs/uncertainty.md. Replica
i is the same replay in whichever stage it runs, so a refined interval is exactly the one a
full search gives; a configuration that stopped early says so, with the replicas its interval
was made from.
"""

from __future__ import annotations

import copy
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

from aisim.errors import ConfigError
from aisim.uncertainty._intervals import (
    CONFIDENCE,
    ReplicaRunner,
    Replicas,
    central_bounds,
    quantile,
    reduce,
)
from aisim.uncertainty._sources import Sources

#: The params key carrying the draft count, per speculation kind.
DEPTH_PARAM: Final = {
    "mtp": "depth",
    "ngram": "num_speculative_tokens",
    "eagle3": "num_speculative_tokens",
    "draft_model": "num_speculative_tokens",
    "dflash": "num_draft_tokens",
    "dspark": "num_draft_tokens",
}
#: Kinds that need ``--draft-config`` / ``--draft-model``.
NEEDS_DRAFT_CONFIG: Final = ("eagle3", "dflash", "dspark")
NEEDS_DRAFT_MODEL: Final = ("draft_model",)
#: Goodputs within this relative difference are a tie (decided by the headline latency).
TIE: Final = 1e-3
DEFAULT_SLOS: Final = {"tpot_ms": {"p90": 50.0}, "ttft_ms": {"p90": 2000.0}}


@dataclass
class Variant:
    """SD off (``kind`` none) or one method at one depth, with its acceptance input."""

    kind: str
    depth: int
    acceptance: dict[str, Any] = field(default_factory=dict)

    @property
    def label(self) -> str:
        return "SD off" if self.kind == "none" else f"{self.kind} d={self.depth}"


@dataclass
class Question:
    """What ``advise`` is asked (checked values)."""

    engine: dict[str, Any]
    traffic: dict[str, Any]
    load_kind: str
    nominal_rate_rps: float
    loads: list[float]
    variants: list[Variant]
    slos: dict[str, dict[str, float]]
    replicas: int
    seed: int
    sources: Sources
    acceptance_rounds: int | None
    base_dir: Path
    notes: list[str] = field(default_factory=list)
    #: Replicas every configuration gets before the race (None or >= replicas: no race).
    screen: int | None = None


def parse_acceptance(texts: list[str]) -> dict[str, dict[str, Any]]:
    """``METHOD=RATE`` (an i.i.d. per-draft rate in [0, 1]) or ``METHOD=PROFILE`` (a published
    profile, ``aisim speculation profiles``) -> the speculation block's acceptance field."""
    from aisim.speculation import profile_names

    given: dict[str, dict[str, Any]] = {}
    first: dict[str, str] = {}
    for text in texts:
        method, _, value = text.partition("=")
        if method not in DEPTH_PARAM:
            raise ConfigError(
                f"--acceptance {text!r}: unknown method {method!r}; expected METHOD=RATE or "
                f"METHOD=PROFILE with METHOD one of {', '.join(DEPTH_PARAM)}"
            )
        if method in first:  # the later one used to replace the earlier, silently
            raise ConfigError(
                f"--acceptance {text!r}: {method} is already given ({first[method]!r}); give "
                "each method once"
            )
        first[method] = text
        if value in profile_names():
            given[method] = {"acceptance_profile": value}
            continue
        try:
            rate = float(value)
        except ValueError:
            rate = math.nan
        if not 0.0 <= rate <= 1.0:
            raise ConfigError(
                f"--acceptance {text!r}: expected a per-draft acceptance rate in [0, 1] or a "
                "profile name (aisim speculation profiles)"
            )
        given[method] = {"acceptance_rate": rate}
    return given


def variants(
    acceptance: dict[str, dict[str, Any]],
    depths: list[int],
    draft_config: dict[str, Any] | None,
    draft_model: str | None,
) -> tuple[list[Variant], list[str]]:
    """SD off, then every method given an acceptance at every depth it applies to (a profile
    published at K draft tokens applies at depth K only). Returns the variants and notes on
    what was left out and why."""
    from aisim.speculation import profile_depths

    found = [Variant("none", 0)]
    notes = []
    for method in sorted(acceptance):
        block = dict(acceptance[method])
        if method in NEEDS_DRAFT_CONFIG:
            if draft_config is None:
                notes.append(f"{method} left out: it needs --draft-config (the drafter's config)")
                continue
            block["draft_config"] = draft_config
        if method in NEEDS_DRAFT_MODEL:
            if draft_model is None:
                notes.append(f"{method} left out: it needs --draft-model")
                continue
            block["draft_model_path"] = draft_model
        usable = depths
        if "acceptance_profile" in block:
            published = profile_depths(block["acceptance_profile"])
            if published is not None:
                usable = [depth for depth in depths if depth in published] or published[:1]
                if usable != [depth for depth in depths if depth in published]:
                    notes.append(
                        f"{method}: profile {block['acceptance_profile']} was measured at "
                        f"{', '.join(str(k) for k in published)} draft tokens, none of the "
                        f"searched depths, so only {usable[0]} is searched"
                    )
        else:
            notes.append(
                f"{method}: the i.i.d. rate {block['acceptance_rate']:g} is assumed at every "
                "depth (acceptance measured at one depth does not transfer exactly)"
            )
        found.extend(Variant(method, depth, block) for depth in usable)
    return found, notes


def speculation_block(variant: Variant) -> dict[str, Any] | None:
    if variant.kind == "none":
        return None
    block: dict[str, Any] = {
        "kind": variant.kind,
        "params": {DEPTH_PARAM[variant.kind]: variant.depth},
        "seed": 0,
    }
    block.update(copy.deepcopy(variant.acceptance))
    return block


def config_for(question: Question, variant: Variant, load: float) -> dict[str, Any]:
    """The replay config of ``variant`` at ``load`` (a multiplier of the nominal load)."""
    engine = copy.deepcopy(question.engine)
    block = speculation_block(variant)
    if block is not None:
        engine["speculation"] = block
    traffic = copy.deepcopy(question.traffic)
    kind = question.load_kind
    if kind == "rate":
        traffic["load"]["rate_rps"] = traffic["load"]["rate_rps"] * load
    elif kind == "trace":
        traffic["load"]["time_scale"] = 1.0 / load
    else:
        traffic["load"]["users"] = max(1, int(round(traffic["load"]["users"] * load)))
    return {"traffic": traffic, "engine": engine}


def load_label(question: Question, load: float) -> float:
    """The load in requests/s (concurrency: users)."""
    if question.load_kind == "concurrency":
        return float(max(1, int(round(question.traffic["load"]["users"] * load))))
    return question.nominal_rate_rps * load


def _beats(candidate: dict[str, Any], baseline: dict[str, Any], latency: str) -> bool:
    good, base = float(candidate["goodput_rps"]), float(baseline["goodput_rps"])
    if good > base * (1 + TIE):
        return True
    if good < base * (1 - TIE):
        return False
    mine: Any = candidate.get(latency)
    theirs: Any = baseline.get(latency)
    if not _finite(mine) or not _finite(theirs):
        return False
    return float(mine) < float(theirs)


def _finite(value: Any) -> bool:
    return isinstance(value, (int, float)) and math.isfinite(value)


def headline(slos: dict[str, dict[str, float]]) -> str:
    """The latency the gains are measured on: the first SLO's (TPOT first), else p90 TPOT."""
    for metric in ("tpot_ms", "ttft_ms", "itl_ms", "e2e_ms"):
        for stat in ("p90", "mean", "p50", "p95", "p99"):
            if stat in slos.get(metric, {}) and metric != "itl_ms":
                return f"{stat}_{metric.removesuffix('_ms')}_ms"
    return "p90_tpot_ms"


def _interval(values: list[float]) -> dict[str, float | None]:
    if not values:
        return {"p50": None, "low": None, "high": None}
    low, high = central_bounds(values, CONFIDENCE)
    return {"p50": quantile(values, 0.5), "low": low, "high": high}


def advise(question: Question, *, workers: int = 1, backend: str = "pool") -> dict[str, Any]:
    """Replay every (variant, load), rank at the nominal load, find where SD stops helping."""
    if len(question.variants) < 2:
        why = "; ".join(note for note in question.notes if "left out" in note)
        raise ConfigError(
            "search space: no SD configuration to compare with SD off (give --acceptance "
            "METHOD=RATE|PROFILE for at least one applicable method, and --depths)"
            + (f": {why}" if why else "")
        )
    configs = []
    keys = []
    for variant in question.variants:
        for load in question.loads:
            configs.append(config_for(question, variant, load))
            keys.append((variant.label, load))
    runner = ReplicaRunner(
        configs,
        question.base_dir,
        question.replicas,
        seed=question.seed,
        sources=question.sources,
        slos=question.slos,
        acceptance_rounds=question.acceptance_rounds,
        backend=backend,
        workers=workers,
    )
    index_of = {key: index for index, key in enumerate(keys)}
    latency = headline(question.slos)
    nominal = 1.0
    full = question.replicas
    screen = min(question.screen if question.screen is not None else full, full)
    racing = screen < full
    refined: set[int] = set()
    point_only: list[int] = []
    if not racing:
        runner.run({index: full for index in range(len(configs))})
    else:
        # Stage 1: every configuration at the nominal load, its point and the screen.
        runner.run({index_of[(variant.label, nominal)]: screen for variant in question.variants})
        ranking = _ranking(question, runner, index_of, latency, nominal)
        leader = runner.replicas(index_of[(ranking[0]["configuration"], nominal)])
        dominated = {
            item["configuration"]
            for item in ranking
            if _dominated(
                runner.replicas(index_of[(item["configuration"], nominal)]), leader, latency
            )
        }
        best = next(item["configuration"] for item in ranking if item["kind"] != "none")
        # Stage 2: SD off and the best SD configuration get N at every load; every other
        # configuration not clearly dominated gets N at the nominal load and the screen at the
        # others; a clearly dominated one its point run at the other loads.
        wanted: dict[int, int] = {}
        for variant in question.variants:
            label = variant.label
            for load in question.loads:
                index = index_of[(label, load)]
                if variant.kind == "none" or label == best:
                    wanted[index] = full
                elif label in dominated:
                    if load != nominal:
                        wanted[index] = 0
                        point_only.append(index)
                elif load == nominal:
                    wanted[index] = full
                else:
                    wanted[index] = screen
        runner.run(wanted)
        refined = {index for index, count in wanted.items() if count == full}
        # A new best SD configuration (even one that was clearly dominated) gets N at every
        # load too, until the best is stable.
        while True:
            ranking = _ranking(question, runner, index_of, latency, nominal)
            best = next(item["configuration"] for item in ranking if item["kind"] != "none")
            more = {index_of[(best, load)] for load in question.loads} - refined
            if not more:
                break
            runner.run({index: full for index in sorted(more)})
            refined |= more
    by_key = {key: runner.replicas(index_of[key]) for key in keys}
    runs = list(by_key.values())
    ranking = _ranking(question, runner, index_of, latency, nominal)
    gains = _gains(question, by_key, latency)
    best_sd = next(item for item in ranking if item["kind"] != "none")
    crossover = _crossover(gains[best_sd["configuration"]])
    recommended = ranking[0]
    return {
        "schema": {"name": "aisim.advice", "version": 1},
        "recommendation": recommended["configuration"],
        "best_sd": best_sd["configuration"],
        "headline_latency": latency,
        "slos": question.slos,
        "replicas": question.replicas,
        "seed": question.seed,
        "confidence": CONFIDENCE,
        "sources": _sources_over(runs),
        "nominal_load": load_label(question, nominal),
        "load_unit": "users" if question.load_kind == "concurrency" else "req/s",
        "loads": [load_label(question, load) for load in question.loads],
        "ranking": ranking,
        "gain_vs_load": gains,
        "sd_stops_helping_at": crossover,
        "notes": question.notes,
        "configurations_searched": len(configs),
        "search": {
            "kind": "race" if racing else "full",
            "screen": screen,
            "replicas": full,
            "replays": runner.replays,
            "replays_of_a_full_search": len(configs) * (full + 1),
            "refined": [
                f"{keys[index][0]} at {load_label(question, keys[index][1]):g}"
                for index in sorted(refined)
            ],
            "point_only": [
                f"{keys[index][0]} at {load_label(question, keys[index][1]):g}"
                for index in sorted(point_only)
            ],
        },
    }


def _ranking(
    question: Question,
    runner: ReplicaRunner,
    index_of: dict[tuple[str, float], int],
    latency: str,
    nominal: float,
) -> list[dict[str, Any]]:
    """The configurations at the nominal load, best first: by goodput p50, then the headline
    latency's p50, then the label; each with the replicas its interval was made from (P(beats
    SD off) pairs replica i with SD off's replica i)."""
    off = runner.replicas(index_of[("SD off", nominal)])
    ranking: list[dict[str, Any]] = []
    for variant in question.variants:
        mine = runner.replicas(index_of[(variant.label, nominal)])
        reduced = reduce(mine.point, mine.rows)
        wins = [
            _beats(row, base, latency)
            for row, base in zip(mine.rows, off.rows[: len(mine.rows)], strict=True)
        ]
        ranking.append(
            {
                "configuration": variant.label,
                "kind": variant.kind,
                "depth": variant.depth,
                "acceptance": copy.deepcopy(variant.acceptance),
                "goodput_rps": reduced["goodput_rps"],
                "latency": reduced[latency],
                "metrics": reduced,
                "replicas": len(mine.rows),
                "p_beats_sd_off": None if variant.kind == "none" else sum(wins) / len(wins),
                "includes": [n for n, s in mine.setup.sources.items() if s["included"]],
            }
        )
    ranking.sort(
        key=lambda item: (
            -(item["goodput_rps"]["p50"] or 0.0),
            item["latency"]["p50"] if _finite(item["latency"]["p50"]) else math.inf,
            item["configuration"],
        )
    )
    return ranking


def _dominated(mine: Replicas, leader: Replicas, latency: str) -> bool:
    """Clearly dominated after the screen: each of the leader's replicas beats each of
    ``mine``'s (goodput higher, or tied within 0.1 % with a lower headline latency)."""
    if mine.point is leader.point or not mine.rows:
        return False
    return all(_beats(theirs, row, latency) for theirs in leader.rows for row in mine.rows)


def _sources_over(runs: list[Replicas]) -> dict[str, dict[str, Any]]:
    """Per source, its description in the first configuration that includes it (else in the
    first that speculates, else the first): what the answer's intervals include, over every
    configuration. (SD off's "no speculation" would misdescribe a search whose SD
    configurations have a point acceptance: their "no counts" is the reason.)"""
    described: dict[str, dict[str, Any]] = {}
    for name in runs[0].setup.sources:
        including = [r.setup.sources[name] for r in runs if r.setup.sources[name]["included"]]
        speculating = [
            r.setup.sources[name]
            for r in runs
            if r.setup.sources[name].get("detail") != ["no speculation"]
        ]
        described[name] = (including or speculating or [runs[0].setup.sources[name]])[0]
    return described


def _gains(
    question: Question, by_key: dict[tuple[str, float], Replicas], latency: str
) -> dict[str, list[dict[str, Any]]]:
    gains: dict[str, list[dict[str, Any]]] = {}
    for variant in question.variants:
        if variant.kind == "none":
            continue
        series = []
        for load in question.loads:
            mine, off = by_key[(variant.label, load)], by_key[("SD off", load)]
            values = [
                1.0 - float(row[latency]) / float(base[latency])
                for row, base in zip(mine.rows, off.rows[: len(mine.rows)], strict=True)
                if _finite(row.get(latency)) and _finite(base.get(latency)) and base[latency] > 0
            ]
            point = None
            if _finite(mine.point.get(latency)) and _finite(off.point.get(latency)):
                point = 1.0 - float(mine.point[latency]) / float(off.point[latency])
            series.append(
                {
                    "load": load_label(question, load),
                    "point": point,
                    **_interval(values),
                    "replicas": len(values),
                }
            )
        gains[variant.label] = series
    return gains


def _crossover(series: list[dict[str, Any]]) -> float | None:
    """The load where the median gain first falls from > 0 to <= 0 (linear interpolation)."""
    previous = None
    for item in series:
        gain = item["p50"]
        if gain is None:
            continue
        if previous is not None and previous["p50"] > 0 >= gain:
            x0, y0, x1, y1 = previous["load"], previous["p50"], item["load"], gain
            return float(x0 + (x1 - x0) * y0 / (y0 - y1))
        previous = item
    return None
