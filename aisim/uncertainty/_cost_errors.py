"""The cost-error table: how far each estimator's step prices were from measurements, sample by
sample, with where each sample came from (docs/design.md#uncertainty).

A sample is one measured / predicted ratio of a step price for one ``estimator``, one
``step_kind`` (``prefill``, ``mixed``, ``decode``, ``sd_round``) and one ``regime`` (what the
measurement covered: hardware, batch, drafter, ...). Samples that share a ``group`` were measured
together (one served run of an engine recording, one recorded dataset configuration) and are
drawn together, so a run's prices move together as they did in the evidence. A sample whose
``relative_to`` names another kind is a ratio of ratios (``sd_round`` relative to ``decode``: the
round / STP ratio's error), applied on top of that kind's factor.

The table is built from the committed evidence by ``python -m qualification.uncertainty build``
(which writes ``cost_errors.v1.json`` beside this module); other evidence can be added as rows of
the same shape (``CostErrorTable.extended``). Not compiled: it reads JSON and samples with numpy.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any, Final

from aisim.errors import ConfigError, DataIntegrityError
from aisim.fpm import FRONTEND_TERMS

SCHEMA: Final = {"name": "aisim.cost_errors", "version": 1}
STEP_KINDS: Final = ("prefill", "mixed", "decode", "sd_round")
#: The interval metrics a repeat sample can carry (``RepeatSample``): those a served run
#: measures. Goodput is not among them (the recordings serve no SLO).
REPEAT_METRICS: Final = (
    "mean_ttft_ms",
    "p90_ttft_ms",
    "mean_tpot_ms",
    "p90_tpot_ms",
    "mean_e2e_ms",
    "p90_e2e_ms",
    "request_throughput_rps",
    "output_throughput_tok_s",
)
TABLE_FILE: Final = "cost_errors.v1.json"
#: A replica draws the per-request overhead's error from its regime's samples only when the
#: engine has at least this many there (else from all the engine's samples): with fewer, a
#: 90 % interval's tails would be one or two points' (the nearest-rank 5 % and 95 % of n < 20
#: samples are their minimum and maximum). Chosen before the regime-aware draw was judged,
#: with the misses it was meant for known (docs/uncertainty.md, "The overhead's regime").
MIN_REGIME_OVERHEADS: Final = 20


def overhead_regime(users: int) -> str:
    """The regime of a closed loop of ``users`` concurrent requests, as the public GPU scored
    run groups its points (``aisim qualify public-gpu``, "By concurrency"): ``conc<=8`` (1-8:
    the time to first token is mostly the prefill and the overhead), ``conc16-64`` (9-64),
    ``conc>=128`` (above 64: requests wait behind running ones). The overhead source draws the
    error of a point's own regime (``CostErrorTable.sample_overhead``)."""
    if users <= 8:
        return "conc<=8"
    if users <= 64:
        return "conc16-64"
    return "conc>=128"


@dataclass(frozen=True)
class ErrorSample:
    """One measured / predicted ratio (``ratio`` > 0) and its provenance."""

    estimator: str
    step_kind: str
    regime: str
    group: str
    ratio: float
    source: str
    evidence_type: str
    relative_to: str | None = None
    weight_steps: int = 1
    #: Per-step scatter within the group: quantiles (0, 5, ..., 100 %) of each step's ratio
    #: divided by ``ratio`` (the group's median), or None when only a group figure is known.
    step_quantiles: tuple[float, ...] | None = None
    #: How that scatter is correlated in time (the ``drift`` source): ``(share, time_ms)`` of
    #: rho(dt) = share * exp(-dt / time_ms) between two steps dt busy milliseconds apart, or
    #: None (independent per step).
    step_correlation: tuple[float, float] | None = None

    def to_dict(self) -> dict[str, Any]:
        found = (
            {}
            if self.step_correlation is None
            else {"step_correlation": list(self.step_correlation)}
        )
        return {
            **found,
            "step_quantiles": None if self.step_quantiles is None else list(self.step_quantiles),
            "estimator": self.estimator,
            "step_kind": self.step_kind,
            "regime": self.regime,
            "group": self.group,
            "ratio": self.ratio,
            "source": self.source,
            "evidence_type": self.evidence_type,
            "relative_to": self.relative_to,
            "weight_steps": self.weight_steps,
        }


@dataclass(frozen=True)
class RepeatSample:
    """One served run's deviation from the other runs of the same trace on the same engine and
    settings (its repeats), per measured metric: ``factors`` maps a metric of
    ``REPEAT_METRICS`` to 1 + (measured / mean over the ``repeats`` runs - 1) * sqrt(n / (n - 1))
    (the deviation from a mean of n runs that includes the run itself understates the run-to-run
    spread by sqrt((n - 1) / n)). A replica multiplies its figures by one run's factors: the
    engine's run-to-run repeat noise, which no replay input draws (when the last requests
    finish, how a tail statistic of a hundred requests falls)."""

    estimator: str
    group: str
    source: str
    evidence_type: str
    repeats: int
    factors: tuple[tuple[str, float], ...]

    def to_dict(self) -> dict[str, Any]:
        return {
            "estimator": self.estimator,
            "group": self.group,
            "source": self.source,
            "evidence_type": self.evidence_type,
            "repeats": self.repeats,
            "factors": dict(self.factors),
        }


@dataclass(frozen=True)
class FrontEndSample:
    """One engine recording's front-end terms (``terms``, in ``FRONTEND_TERMS`` order: per
    engine step, per request streaming from a step, per request before the engine sees it; ms),
    derived from its own probe (timed through the serving front end, apart from its served
    runs) against its own step table. The ``frontend`` source draws one for a replay whose
    front-end terms were measured on another recording (``CostErrorTable.sample_frontend``):
    what the front end cost beyond the step table in another recording's hour."""

    estimator: str
    group: str
    source: str
    evidence_type: str
    terms: tuple[float, float, float]

    def to_dict(self) -> dict[str, Any]:
        return {
            "estimator": self.estimator,
            "group": self.group,
            "source": self.source,
            "evidence_type": self.evidence_type,
            "terms": dict(zip(FRONTEND_TERMS, self.terms, strict=True)),
        }


@dataclass(frozen=True)
class OverheadSample:
    """One served point's error in the per-request overhead before its first token that a
    caller adds to a replay's TTFT and E2E (the public GPU fit's per-engine request overhead,
    ``evidence/public-gpu/fitted_terms.json`` ``request_overhead_ms``): measured median TTFT
    minus the prediction with that overhead, the overhead refitted without the point (leave
    its own row out), in ms; on a training point the overhead was not fitted on (above
    concurrency 8), measured minus predicted. ``regime``: the point's (``overhead_regime`` of
    its concurrency; None: unknown). The ``overhead`` source adds one of ``engine``'s to a
    replica's TTFT and E2E (``CostErrorTable.sample_overhead``)."""

    engine: str
    group: str
    source: str
    evidence_type: str
    residual_ms: float
    regime: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "engine": self.engine,
            "regime": self.regime,
            "group": self.group,
            "source": self.source,
            "evidence_type": self.evidence_type,
            "residual_ms": self.residual_ms,
        }


def repeat_factor(measured: float, mean: float, repeats: int) -> float:
    """The repeat factor of a run measuring ``measured`` where its ``repeats`` runs (itself
    included) average ``mean`` (``RepeatSample``)."""
    if repeats < 2 or not mean > 0:
        raise ValueError(f"repeat factor: needs >= 2 runs and a mean > 0, got {repeats}, {mean}")
    return 1.0 + (measured / mean - 1.0) * math.sqrt(repeats / (repeats - 1))


@dataclass(frozen=True)
class CostFactors:
    """Multiplicative step-price factors of one replica (1.0: the price as estimated).
    ``sampled`` names the kinds a factor was drawn for (the others have no evidence)."""

    prefill: float = 1.0
    mixed: float = 1.0
    decode: float = 1.0
    sd_round: float = 1.0
    sampled: tuple[str, ...] = ()
    #: (kind, quantiles of step ratio / run ratio): each step of that kind is also multiplied by
    #: a draw from these quantiles (linear between them), seeded by ``noise_seed``.
    step_noise: tuple[tuple[str, tuple[float, ...]], ...] = ()
    noise_seed: int = 0
    #: ``(share, time_ms)``: the per-step draws are correlated in time (``PriceScale``), the
    #: run's whose scatter they draw from; None: independent per step.
    step_correlation: tuple[float, float] | None = None

    def of(self, kind: str) -> float:
        value: float = getattr(self, kind)
        return value

    def noise(self, kind: str) -> tuple[float, ...] | None:
        for name, quantiles in self.step_noise:
            if name == kind:
                return quantiles
        return None

    @property
    def is_identity(self) -> bool:
        return (
            self.prefill == self.mixed == self.decode == self.sd_round == 1.0
            and not self.step_noise
        )


@dataclass(frozen=True)
class CostErrorTable:
    """The samples, and the sources they came from (``sources``: id -> provenance record)."""

    samples: tuple[ErrorSample, ...]
    sources: dict[str, dict[str, Any]] = field(default_factory=dict)
    #: The engines' run-to-run repeat noise by estimator (``RepeatSample``).
    repeats: tuple[RepeatSample, ...] = ()
    #: Serving front ends' terms, one per recording with a probe (``FrontEndSample``).
    frontends: tuple[FrontEndSample, ...] = ()
    #: Per-request overhead errors by engine (``OverheadSample``).
    overheads: tuple[OverheadSample, ...] = ()
    #: Per estimator: its samples, their groups (sorted) and its samples by step kind (in
    #: ``STEP_KINDS`` order), made once (``_evidence``; ``sample`` runs per replica and worker).
    _by_estimator: dict[str, tuple[list[ErrorSample], list[str], dict[str, list[ErrorSample]]]] = (
        field(default_factory=dict, init=False, repr=False, compare=False)
    )

    def _evidence(
        self, estimator: str
    ) -> tuple[list[ErrorSample], list[str], dict[str, list[ErrorSample]]]:
        found = self._by_estimator.get(estimator)
        if found is None:
            rows = [sample for sample in self.samples if sample.estimator == estimator]
            groups = sorted({s.group for s in rows})
            of_kind = {kind: [s for s in rows if s.step_kind == kind] for kind in STEP_KINDS}
            found = (rows, groups, {kind: kept for kind, kept in of_kind.items() if kept})
            self._by_estimator[estimator] = found
        return found

    def estimators(self) -> list[str]:
        return sorted({sample.estimator for sample in self.samples})

    def kinds(self, estimator: str) -> list[str]:
        """The step kinds with evidence for ``estimator``, in ``STEP_KINDS`` order."""
        return list(self._evidence(estimator)[2])

    def for_estimator(self, estimator: str) -> list[ErrorSample]:
        return list(self._evidence(estimator)[0])

    def excluding(self, source: str) -> CostErrorTable:
        """The table without the samples of ``source`` (a source id, or a folder above
        sources: ``evidence/engine/NAME`` leaves out that recording, not ``NAME-ngram``), for
        held-out calibration: fit on the rest, judge on what was left out."""

        def left_out(name: str) -> bool:
            return name == source or name.startswith((source + "/", source + "#"))

        kept = tuple(s for s in self.samples if not left_out(s.source))
        sources = {k: v for k, v in self.sources.items() if not left_out(k)}
        repeats = tuple(r for r in self.repeats if not left_out(r.source))
        frontends = tuple(f for f in self.frontends if not left_out(f.source))
        overheads = tuple(o for o in self.overheads if not left_out(o.source))
        return CostErrorTable(kept, sources, repeats, frontends, overheads)

    def extended(
        self,
        samples: Iterable[ErrorSample],
        repeats: Iterable[RepeatSample] = (),
        frontends: Iterable[FrontEndSample] = (),
        overheads: Iterable[OverheadSample] = (),
    ) -> CostErrorTable:
        return CostErrorTable(
            tuple(self.samples) + tuple(samples),
            dict(self.sources),
            tuple(self.repeats) + tuple(repeats),
            tuple(self.frontends) + tuple(frontends),
            tuple(self.overheads) + tuple(overheads),
        )

    def overheads_for(self, engine: str) -> list[OverheadSample]:
        return [sample for sample in self.overheads if sample.engine == engine]

    def overheads_drawn(self, engine: str, regime: str | None = None) -> list[OverheadSample]:
        """The overhead errors a replica of ``engine`` in ``regime`` draws from: the engine's
        samples of that regime when there are at least ``MIN_REGIME_OVERHEADS``, else all the
        engine's (also when ``regime`` is None: a load that is not a closed loop)."""
        rows = self.overheads_for(engine)
        if regime is not None:
            same = [row for row in rows if row.regime == regime]
            if len(same) >= MIN_REGIME_OVERHEADS:
                return same
        return rows

    def sample_overhead(self, rng: Any, engine: str, regime: str | None = None) -> float | None:
        """One replica's per-request overhead error for ``engine`` in ``regime`` (ms): one
        point's of ``overheads_drawn``, drawn uniformly (``rng``: a numpy Generator); None when
        the engine has none."""
        rows = self.overheads_drawn(engine, regime)
        if not rows:
            return None
        return rows[int(rng.integers(len(rows)))].residual_ms

    def describe_overheads(self, engine: str, regime: str | None = None) -> dict[str, Any]:
        """The overhead errors a replica of ``engine`` in ``regime`` draws from: the regime
        asked and the one drawn from (``all``: every regime of the engine), how many points, their 5/50/95 %
        (nearest rank, ms) and sources."""
        rows = self.overheads_drawn(engine, regime)
        values = sorted(row.residual_ms for row in rows)
        own = regime is not None and sum(row.regime == regime for row in rows) == len(rows)
        return {
            "engine": engine,
            "regime": regime,
            "drawn_from": regime if own and len(rows) >= MIN_REGIME_OVERHEADS else "all",
            "samples": len(values),
            "residual_ms": {
                "p05": _quantile(values, 0.05),
                "p50": _quantile(values, 0.5),
                "p95": _quantile(values, 0.95),
            },
            "sources": sorted({row.source for row in rows}),
        }

    def frontends_for(self, estimator: str) -> list[FrontEndSample]:
        return [sample for sample in self.frontends if sample.estimator == estimator]

    def sample_frontend(self, rng: Any, estimator: str) -> tuple[float, float, float] | None:
        """One replica's front-end terms for ``estimator``: one recording's, drawn uniformly
        (``rng``: a numpy Generator); None when the estimator has none."""
        rows = self.frontends_for(estimator)
        if not rows:
            return None
        return rows[int(rng.integers(len(rows)))].terms

    def describe_frontends(self, estimator: str) -> dict[str, Any]:
        """The front-end terms a replica draws from: how many (one per recording), their
        recordings, and per term the 5/95 % (nearest rank) of their values (ms)."""
        rows = self.frontends_for(estimator)
        terms = {
            name: {
                "p05": _quantile(sorted(row.terms[index] for row in rows), 0.05),
                "p95": _quantile(sorted(row.terms[index] for row in rows), 0.95),
            }
            for index, name in enumerate(FRONTEND_TERMS)
        }
        return {
            "estimator": estimator,
            "samples": len(rows),
            "terms_ms": terms,
            "sources": sorted({row.source for row in rows}),
        }

    def repeats_for(self, estimator: str) -> list[RepeatSample]:
        return [sample for sample in self.repeats if sample.estimator == estimator]

    def describe_repeats(self, estimator: str) -> dict[str, Any]:
        """The repeat noise a replica of ``estimator`` draws from: runs, recordings, and per
        metric the 5/95 % factor (nearest rank)."""
        rows = self.repeats_for(estimator)
        metrics: dict[str, Any] = {}
        for name in REPEAT_METRICS:
            values = sorted(dict(r.factors)[name] for r in rows if name in dict(r.factors))
            if values:
                metrics[name] = {
                    "samples": len(values),
                    "p05_factor": _quantile(values, 0.05),
                    "p95_factor": _quantile(values, 0.95),
                }
        return {
            "estimator": estimator,
            "runs": len(rows),
            "sources": sorted({r.source for r in rows}),
            "metrics": metrics,
        }

    def describe_correlation(self, estimator: str) -> dict[str, Any]:
        """The step-price drift a replica of ``estimator`` draws (``step_correlation``): runs
        (groups) that carry one, and the 5/50/95 % (nearest rank) of their share and time."""
        found = {
            s.group: s.step_correlation
            for s in self.for_estimator(estimator)
            if s.step_correlation is not None
        }
        shares = sorted(value[0] for value in found.values())
        times = sorted(value[1] for value in found.values())
        return {
            "estimator": estimator,
            "runs": len(found),
            "share": [_quantile(shares, q) for q in (0.05, 0.5, 0.95)] if found else None,
            "time_ms": [_quantile(times, q) for q in (0.05, 0.5, 0.95)] if found else None,
            "sources": sorted(
                {s.source for s in self.for_estimator(estimator) if s.step_correlation}
            ),
        }

    def sample_repeat(self, rng: Any, estimator: str) -> tuple[tuple[str, float], ...]:
        """One replica's repeat factors for ``estimator``: one run's, drawn uniformly (``rng``: a
        numpy Generator); empty when the estimator has none."""
        rows = self.repeats_for(estimator)
        if not rows:
            return ()
        return rows[int(rng.integers(len(rows)))].factors

    def describe(self, estimator: str) -> dict[str, Any]:
        """Per step kind: sample count, groups, median and 5/95 % ratio (what an interval's cost
        source drew from)."""
        rows = self.for_estimator(estimator)
        kinds: dict[str, Any] = {}
        for kind in self.kinds(estimator):
            ratios = sorted(s.ratio for s in rows if s.step_kind == kind)
            relative = sorted(
                {s.relative_to for s in rows if s.step_kind == kind and s.relative_to is not None}
            )
            kinds[kind] = {
                "samples": len(ratios),
                "groups": len({s.group for s in rows if s.step_kind == kind}),
                "median_ratio": _quantile(ratios, 0.5),
                "p05_ratio": _quantile(ratios, 0.05),
                "p95_ratio": _quantile(ratios, 0.95),
                "relative_to": relative[0] if relative else None,
            }
        return {
            "estimator": estimator,
            "kinds": kinds,
            "sources": sorted({s.source for s in rows}),
        }

    def sample(self, rng: Any, estimator: str) -> CostFactors:
        """One replica's factors for ``estimator`` (``rng``: a numpy Generator).

        One group is drawn uniformly among the estimator's groups; each kind the group has
        takes the group's sample (one of them uniformly when it has several); every other kind
        with evidence is drawn uniformly from that kind's samples of any group. A kind with
        ``relative_to`` is multiplied by the factor of the kind it is relative to. Kinds without
        evidence stay 1.0 (and are not in ``sampled``)."""
        rows, groups, by_kind = self._evidence(estimator)
        if not rows:
            return CostFactors()
        chosen = groups[int(rng.integers(len(groups)))]
        drawn: dict[str, ErrorSample] = {}
        for kind, of_kind in by_kind.items():
            in_group = [s for s in of_kind if s.group == chosen]
            pool = in_group or of_kind
            drawn[kind] = pool[int(rng.integers(len(pool)))]
        factors: dict[str, float] = {}
        for kind in STEP_KINDS:
            factors[kind] = _factor(kind, drawn, 0)
        noise = tuple(
            (kind, sample.step_quantiles)
            for kind, sample in drawn.items()
            if sample.step_quantiles is not None
        )
        correlated = [
            sample.step_correlation
            for sample in drawn.values()
            if sample.step_quantiles is not None and sample.step_correlation is not None
        ]
        return CostFactors(
            factors["prefill"],
            factors["mixed"],
            factors["decode"],
            factors["sd_round"],
            tuple(kind for kind in STEP_KINDS if kind in drawn),
            noise,
            int(rng.integers(1 << 62)) if noise else 0,
            correlated[0] if correlated else None,
        )

    def to_dict(self, about: str = "") -> dict[str, Any]:
        return {
            "schema": SCHEMA,
            "about": about,
            "sources": self.sources,
            "samples": [sample.to_dict() for sample in self.samples],
            "repeat_samples": [sample.to_dict() for sample in self.repeats],
            "frontend_samples": [sample.to_dict() for sample in self.frontends],
            "overhead_samples": [sample.to_dict() for sample in self.overheads],
        }


def _factor(kind: str, drawn: dict[str, ErrorSample], depth: int) -> float:
    sample = drawn.get(kind)
    if sample is None or depth > len(STEP_KINDS):
        return 1.0
    if sample.relative_to is None:
        return sample.ratio
    return sample.ratio * _factor(sample.relative_to, drawn, depth + 1)


def _quantile(values: list[float], q: float) -> float | None:
    """Nearest-rank (inverted CDF) quantile of sorted ``values``; None when empty."""
    if not values:
        return None
    rank = max(1, math.ceil(q * len(values)))
    return values[rank - 1]


def load_cost_errors(path: str | Path | None = None) -> CostErrorTable:
    """The committed table (``cost_errors.v1.json`` beside this module), or one at ``path``.
    A malformed file raises ``DataIntegrityError`` naming the row and field."""
    where = str(path) if path is not None else f"aisim/uncertainty/{TABLE_FILE}"
    if path is None:
        text = resources.files(__package__).joinpath(TABLE_FILE).read_text("utf-8")
    else:
        try:
            text = Path(path).read_text(encoding="utf-8")
        except OSError as exc:
            raise ConfigError(f"cost errors {where!r}: cannot read ({exc.strerror})") from None
    try:
        document = json.loads(text)
    except ValueError as exc:
        raise DataIntegrityError(f"{where}: not JSON ({exc})") from None
    if not isinstance(document, dict) or document.get("schema") != SCHEMA:
        raise DataIntegrityError(f"{where}.schema: expected {SCHEMA}")
    samples = []
    for index, row in enumerate(document.get("samples", [])):
        samples.append(_sample(row, f"{where}.samples[{index}]"))
    sources = document.get("sources", {})
    if not isinstance(sources, dict):
        raise DataIntegrityError(f"{where}.sources: expected a mapping")
    repeats = [
        _repeat(row, f"{where}.repeat_samples[{index}]")
        for index, row in enumerate(document.get("repeat_samples", []))
    ]
    frontends = [
        _frontend(row, f"{where}.frontend_samples[{index}]")
        for index, row in enumerate(document.get("frontend_samples", []))
    ]
    overheads = [
        _overhead(row, f"{where}.overhead_samples[{index}]")
        for index, row in enumerate(document.get("overhead_samples", []))
    ]
    return CostErrorTable(
        tuple(samples), sources, tuple(repeats), tuple(frontends), tuple(overheads)
    )


def _overhead(row: object, where: str) -> OverheadSample:
    if not isinstance(row, dict):
        raise DataIntegrityError(f"{where}: expected a mapping, got {type(row).__name__}")
    value = row.get("residual_ms")
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise DataIntegrityError(
            f"{where}.residual_ms: expected a finite number of ms, got {value!r}"
        )
    try:
        return OverheadSample(
            engine=str(row["engine"]),
            group=str(row["group"]),
            source=str(row["source"]),
            evidence_type=str(row["evidence_type"]),
            residual_ms=float(value),
            regime=None if row.get("regime") is None else str(row["regime"]),
        )
    except KeyError as exc:
        raise DataIntegrityError(f"{where}.{exc.args[0]}: missing") from None


def _frontend(row: object, where: str) -> FrontEndSample:
    if not isinstance(row, dict):
        raise DataIntegrityError(f"{where}: expected a mapping, got {type(row).__name__}")
    value = row.get("terms")
    if not isinstance(value, dict) or sorted(value) != sorted(FRONTEND_TERMS):
        raise DataIntegrityError(
            f"{where}.terms: expected a mapping of {', '.join(FRONTEND_TERMS)}"
        )
    numbers = []
    for name in FRONTEND_TERMS:
        number = value[name]
        if (
            isinstance(number, bool)
            or not isinstance(number, (int, float))
            or not (math.isfinite(number) and number >= 0.0)
        ):
            raise DataIntegrityError(
                f"{where}.terms.{name}: expected a finite number of ms >= 0, got {number!r}"
            )
        numbers.append(float(number))
    try:
        return FrontEndSample(
            estimator=str(row["estimator"]),
            group=str(row["group"]),
            source=str(row["source"]),
            evidence_type=str(row["evidence_type"]),
            terms=(numbers[0], numbers[1], numbers[2]),
        )
    except KeyError as exc:
        raise DataIntegrityError(f"{where}.{exc.args[0]}: missing") from None


def _repeat(row: object, where: str) -> RepeatSample:
    if not isinstance(row, dict):
        raise DataIntegrityError(f"{where}: expected a mapping, got {type(row).__name__}")
    try:
        factors = row["factors"]
        if not isinstance(factors, dict):
            raise DataIntegrityError(f"{where}.factors: expected a mapping of metric to factor")
        sample = RepeatSample(
            estimator=str(row["estimator"]),
            group=str(row["group"]),
            source=str(row["source"]),
            evidence_type=str(row["evidence_type"]),
            repeats=int(row["repeats"]),
            factors=tuple((str(name), float(value)) for name, value in factors.items()),
        )
    except KeyError as exc:
        raise DataIntegrityError(f"{where}.{exc.args[0]}: missing") from None
    except (TypeError, ValueError) as exc:
        raise DataIntegrityError(f"{where}: {exc}") from None
    for name, value in sample.factors:
        if name not in REPEAT_METRICS:
            raise DataIntegrityError(
                f"{where}.factors.{name}: expected one of {', '.join(REPEAT_METRICS)}"
            )
        if not (math.isfinite(value) and value > 0.0):
            raise DataIntegrityError(
                f"{where}.factors.{name}: expected a finite number > 0, got {value}"
            )
    return sample


def _correlation(value: object, where: str) -> tuple[float, float] | None:
    """A sample's ``step_correlation``: None, or ``[share, time_ms]`` with 0 <= share <= 1 and
    time_ms > 0."""
    if value is None:
        return None
    if (
        not isinstance(value, list)
        or len(value) != 2
        or not all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in value)
        or not 0.0 <= float(value[0]) <= 1.0
        or not (math.isfinite(float(value[1])) and float(value[1]) > 0.0)
    ):
        raise DataIntegrityError(
            f"{where}.step_correlation: expected [share in 0..1, time_ms > 0], got {value!r}"
        )
    return float(value[0]), float(value[1])


def _sample(row: object, where: str) -> ErrorSample:
    if not isinstance(row, dict):
        raise DataIntegrityError(f"{where}: expected a mapping, got {type(row).__name__}")
    try:
        sample = ErrorSample(
            estimator=str(row["estimator"]),
            step_kind=str(row["step_kind"]),
            regime=str(row["regime"]),
            group=str(row["group"]),
            ratio=float(row["ratio"]),
            source=str(row["source"]),
            evidence_type=str(row["evidence_type"]),
            relative_to=None if row.get("relative_to") is None else str(row["relative_to"]),
            weight_steps=int(row.get("weight_steps", 1)),
            step_quantiles=(
                None
                if row.get("step_quantiles") is None
                else tuple(float(value) for value in row["step_quantiles"])
            ),
            step_correlation=_correlation(row.get("step_correlation"), where),
        )
    except KeyError as exc:
        raise DataIntegrityError(f"{where}.{exc.args[0]}: missing") from None
    except (TypeError, ValueError) as exc:
        raise DataIntegrityError(f"{where}: {exc}") from None
    if sample.step_kind not in STEP_KINDS:
        raise DataIntegrityError(
            f"{where}.step_kind: expected one of {', '.join(STEP_KINDS)}, got {sample.step_kind!r}"
        )
    if not (math.isfinite(sample.ratio) and sample.ratio > 0.0):
        raise DataIntegrityError(f"{where}.ratio: expected a finite number > 0, got {sample.ratio}")
    return sample
