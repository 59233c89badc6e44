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

SCHEMA: Final = {"name": "aisim.cost_errors", "version": 1}
STEP_KINDS: Final = ("prefill", "mixed", "decode", "sd_round")
TABLE_FILE: Final = "cost_errors.v1.json"


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

    def to_dict(self) -> dict[str, Any]:
        return {
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

    def estimators(self) -> list[str]:
        return sorted({sample.estimator for sample in self.samples})

    def kinds(self, estimator: str) -> list[str]:
        """The step kinds with evidence for ``estimator``, in ``STEP_KINDS`` order."""
        found = {sample.step_kind for sample in self.samples if sample.estimator == estimator}
        return [kind for kind in STEP_KINDS if kind in found]

    def for_estimator(self, estimator: str) -> list[ErrorSample]:
        return [sample for sample in self.samples if sample.estimator == estimator]

    def excluding(self, source: str) -> CostErrorTable:
        """The table without the samples of ``source`` (a source id, or a folder above
        sources: ``evidence/engine/NAME`` leaves out that recording, not ``NAME-ngram``), for
        held-out calibration: fit on the rest, judge on what was left out."""

        def left_out(name: str) -> bool:
            return name == source or name.startswith((source + "/", source + "#"))

        kept = tuple(s for s in self.samples if not left_out(s.source))
        sources = {k: v for k, v in self.sources.items() if not left_out(k)}
        return CostErrorTable(kept, sources)

    def extended(self, samples: Iterable[ErrorSample]) -> CostErrorTable:
        return CostErrorTable(tuple(self.samples) + tuple(samples), dict(self.sources))

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
        rows = self.for_estimator(estimator)
        if not rows:
            return CostFactors()
        groups = sorted({s.group for s in rows})
        chosen = groups[int(rng.integers(len(groups)))]
        drawn: dict[str, ErrorSample] = {}
        for kind in self.kinds(estimator):
            of_kind = [s for s in rows if s.step_kind == kind]
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
        return CostFactors(
            factors["prefill"],
            factors["mixed"],
            factors["decode"],
            factors["sd_round"],
            tuple(kind for kind in STEP_KINDS if kind in drawn),
            noise,
            int(rng.integers(1 << 62)) if noise else 0,
        )

    def to_dict(self, about: str = "") -> dict[str, Any]:
        return {
            "schema": SCHEMA,
            "about": about,
            "sources": self.sources,
            "samples": [sample.to_dict() for sample in self.samples],
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
    return CostErrorTable(tuple(samples), sources)


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
