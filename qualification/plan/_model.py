"""The qualification plan's schema, on aisim's typed edge (``aisim.config.EdgeModel``: pydantic
v2, strict, frozen, unknown fields rejected with the allowed ones).

The plan file is validated here once, and the report works on the frozen models. ``load_plan``
turns the first validation error into one ``ConfigError`` line naming the file and the field
path (``criteria[3].metric: ...``).
"""

from __future__ import annotations

import math
import re
from typing import Annotated

from pydantic import Field, ValidationInfo, field_validator, model_validator

from aisim.config import Choice, EdgeModel, Integer, Number, edge_error
from qualification.plan._metrics import CHECKS, DATASET_CHECKS, FILE_CHECKS

_NAME = r"^[A-Za-z0-9][A-Za-z0-9._-]*$"
_ID = r"^[a-z0-9][a-z0-9._/-]*$"


class Bootstrap(EdgeModel):
    """Bootstrap settings shared by every interval in the report."""

    resamples: Annotated[int, Integer(100, 100_000)]
    confidence: Annotated[float, Number(0.5, 0.999)]
    seed: Annotated[int, Integer(0, 2**32 - 1)]
    method: Annotated[str, Choice("BCa", "percentile", "basic")]


class DatasetEntry(EdgeModel):
    drafter: Annotated[str, Choice("mtp", "eagle3", "draft_model")]
    description: str


class KnownGap(EdgeModel):
    """A criterion the project knows it fails, with the issue that tracks the gap (a strict
    expected failure, like pytest's ``xfail(strict=True)``).

    A marked criterion whose figure misses its threshold is KNOWN GAP and does not fail the
    verdict; one whose figure meets it fails the verdict ("known gap now passes: remove the
    marker"), so a marker cannot outlive its gap. A NOT RUN or broken input is judged as if
    unmarked: the marker excuses a measured miss, nothing else.
    """

    issue: Annotated[int, Integer(1, 2**31 - 1)]
    reason: str

    @field_validator("reason")
    @classmethod
    def _says_why(cls, value: str) -> str:
        if not value.strip():
            raise edge_error(f"expected a non-empty text naming the gap, got {value!r}")
        return value


class Criterion(EdgeModel):
    """One acceptance criterion: ``metric`` of ``check`` (on ``dataset`` / ``artefact`` /
    ``input`` where the check needs one) compared with ``threshold``, using the point estimate
    or the upper bound of its confidence interval. ``known_gap`` marks a criterion the project
    knows it fails (``KnownGap``)."""

    id: Annotated[str, Field(pattern=_ID, max_length=120)]
    check: str
    metric: str
    threshold: Annotated[float, Number()]
    use: Annotated[str, Choice("point", "upper_bound")]
    dataset: Annotated[str, Field(pattern=_NAME)] | None = None
    artefact: Annotated[str, Field(pattern=_NAME)] | None = None
    input: str | None = None
    required: bool = True
    rationale: Annotated[str, Field(min_length=1)]
    known_gap: KnownGap | None = None

    @field_validator("check")
    @classmethod
    def _known_check(cls, value: str) -> str:
        if value not in CHECKS:
            raise edge_error(f"unknown check {value!r}; allowed: {', '.join(CHECKS)}")
        return value

    @field_validator("metric")
    @classmethod
    def _known_metric(cls, value: str, info: ValidationInfo) -> str:
        check = info.data.get("check")
        if check is not None and value not in CHECKS[check]:
            allowed = ", ".join(CHECKS[check])
            raise edge_error(f"unknown metric {value!r} for check {check}; allowed: {allowed}")
        return value

    @field_validator("use")
    @classmethod
    def _interval_exists(cls, value: str, info: ValidationInfo) -> str:
        check, metric = info.data.get("check"), info.data.get("metric")
        known = isinstance(check, str) and isinstance(metric, str)
        if value == "upper_bound" and known and not CHECKS[str(check)][str(metric)].has_interval:
            raise edge_error(
                f"metric {metric} of check {check} has no confidence interval; use: point"
            )
        return value

    @model_validator(mode="after")
    def _threshold_can_be_met(self) -> Criterion:
        """A threshold no value of its kind can meet (or that every value meets) is a typo, not
        a criterion: errors, magnitudes and counts are >= 0; p-values and fractions in 0..1."""
        kind = CHECKS[self.check][self.metric].kind
        low, high = (0.0, 1.0) if kind in ("p_value", "fraction") else (0.0, math.inf)
        if not low <= self.threshold <= high:
            allowed = f"{low:g}..{high:g}" if math.isfinite(high) else f">= {low:g}"
            raise edge_error(
                f"threshold: metric {self.metric} (kind {kind}) needs a threshold {allowed}, "
                f"got {self.threshold!r}"
            )
        return self

    @model_validator(mode="after")
    def _inputs_match_the_check(self) -> Criterion:
        needs = {
            "dataset": self.check in DATASET_CHECKS,
            "artefact": self.check == "calibration_transfer",
            "input": self.check in FILE_CHECKS,
        }
        for field, needed in needs.items():
            given = getattr(self, field) is not None
            if needed and not given:
                raise edge_error(f"{field}: required for check {self.check}")
            if given and not needed:
                raise edge_error(f"{field}: not used by check {self.check}")
        return self


class Plan(EdgeModel):
    """A versioned set of acceptance criteria (``qualification/plan.yaml``)."""

    format: Annotated[int, Integer(1, 1)]
    name: Annotated[str, Field(pattern=_NAME)]
    version: Annotated[int, Integer(1, 1_000_000)]
    bootstrap: Bootstrap
    datasets: dict[Annotated[str, Field(pattern=_NAME)], DatasetEntry]
    criteria: Annotated[list[Criterion], Field(min_length=1)]

    @model_validator(mode="after")
    def _references_resolve(self) -> Plan:
        seen: set[str] = set()
        for index, criterion in enumerate(self.criteria):
            if criterion.id in seen:
                raise edge_error(f"criteria[{index}].id: duplicate id {criterion.id!r}")
            seen.add(criterion.id)
            if criterion.dataset is not None and criterion.dataset not in self.datasets:
                declared = ", ".join(sorted(self.datasets)) or "none"
                raise edge_error(
                    f"criteria[{index}].dataset: unknown dataset {criterion.dataset!r}; "
                    f"declared under datasets: {declared}"
                )
        return self

    def criteria_for(self, dataset: str) -> list[Criterion]:
        return [c for c in self.criteria if c.dataset == dataset]


def anchor(criterion_id: str) -> str:
    """The HTML anchor of a criterion (ids may hold '/', which anchors tolerate but URLs mind)."""
    return "criterion-" + re.sub(r"[^a-z0-9._-]", "-", criterion_id)


def finite(value: float | None) -> bool:
    return value is not None and math.isfinite(value)
