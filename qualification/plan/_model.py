"""The qualification plan's schema (pydantic v2, strict, unknown fields rejected).

This is the edge: the plan file is validated here once, and the report works on the frozen
models. ``load_plan`` turns the first validation error into one ``ConfigError`` line naming the
field path (``criteria[3].metric: ...``).
"""

from __future__ import annotations

import math
import re
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationInfo, field_validator, model_validator

from qualification.plan._metrics import CHECKS, DATASET_CHECKS, FILE_CHECKS

_NAME = r"^[A-Za-z0-9][A-Za-z0-9._-]*$"
_ID = r"^[a-z0-9][a-z0-9._/-]*$"


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)


class Bootstrap(_Strict):
    """Percentile-interval settings shared by every interval in the report."""

    resamples: Annotated[int, Field(ge=100, le=100_000)]
    confidence: Annotated[float, Field(gt=0.5, lt=1.0, allow_inf_nan=False)]
    seed: Annotated[int, Field(ge=0, le=2**32 - 1)]
    method: Literal["BCa", "percentile", "basic"]


class DatasetEntry(_Strict):
    drafter: Literal["mtp", "eagle3", "draft_model"]
    description: str


class Criterion(_Strict):
    """One acceptance criterion: ``metric`` of ``check`` (on ``dataset`` / ``artefact`` /
    ``input`` where the check needs one) compared with ``threshold``, using the point estimate
    or the upper bound of its confidence interval."""

    id: Annotated[str, Field(pattern=_ID, max_length=120)]
    check: str
    metric: str
    threshold: Annotated[float, Field(allow_inf_nan=False)]
    use: Literal["point", "upper_bound"]
    dataset: Annotated[str, Field(pattern=_NAME)] | None = None
    artefact: Annotated[str, Field(pattern=_NAME)] | None = None
    input: str | None = None
    required: bool = True
    rationale: Annotated[str, Field(min_length=1)]

    @field_validator("threshold", mode="before")
    @classmethod
    def _integral_threshold(cls, value: object) -> object:
        # Thresholds are numbers; YAML writes 0 for a count. Accept ints, never bools.
        return float(value) if type(value) is int else value

    @field_validator("check")
    @classmethod
    def _known_check(cls, value: str) -> str:
        if value not in CHECKS:
            raise ValueError(f"unknown check {value!r}; allowed: {', '.join(CHECKS)}")
        return value

    @field_validator("metric")
    @classmethod
    def _known_metric(cls, value: str, info: ValidationInfo) -> str:
        check = info.data.get("check")
        if check is not None and value not in CHECKS[check]:
            allowed = ", ".join(CHECKS[check])
            raise ValueError(f"unknown metric {value!r} for check {check}; allowed: {allowed}")
        return value

    @field_validator("use")
    @classmethod
    def _interval_exists(cls, value: str, info: ValidationInfo) -> str:
        check, metric = info.data.get("check"), info.data.get("metric")
        known = isinstance(check, str) and isinstance(metric, str)
        if value == "upper_bound" and known and not CHECKS[str(check)][str(metric)].has_interval:
            raise ValueError(
                f"metric {metric} of check {check} has no confidence interval; use: point"
            )
        return value

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
                raise ValueError(f"{field}: required for check {self.check}")
            if given and not needed:
                raise ValueError(f"{field}: not used by check {self.check}")
        return self


class Plan(_Strict):
    """A versioned set of acceptance criteria (``qualification/plan.yaml``)."""

    format: Literal[1]
    name: Annotated[str, Field(pattern=_NAME)]
    version: Annotated[int, Field(ge=1)]
    bootstrap: Bootstrap
    datasets: dict[Annotated[str, Field(pattern=_NAME)], DatasetEntry]
    criteria: Annotated[list[Criterion], Field(min_length=1)]

    @model_validator(mode="after")
    def _references_resolve(self) -> Plan:
        seen: set[str] = set()
        for index, criterion in enumerate(self.criteria):
            if criterion.id in seen:
                raise ValueError(f"criteria[{index}].id: duplicate id {criterion.id!r}")
            seen.add(criterion.id)
            if criterion.dataset is not None and criterion.dataset not in self.datasets:
                declared = ", ".join(sorted(self.datasets)) or "none"
                raise ValueError(
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
