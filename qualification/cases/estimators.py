"""Estimator-selection suite: ``best_available`` over in-memory STP points and measured SD rounds
with every estimator preference and fallback policy: which estimator answers, which were skipped
and why, coverage, data identity, the scaling rule applied at a configured scheme's depth, and
the failures ``deny`` reports."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from aisim.config import best_available
from qualification.cases._fpm import TABLE_POINTS, decode, detailed
from qualification.cases._suite import Suite, make_cases

Row = tuple[str, dict[str, Any]]

BASE: dict[str, Any] = {"model": "Qwen/Qwen3-8B", "hardware": "h100_sxm"}
POINTS = TABLE_POINTS["grid"]
MTP3: dict[str, Any] = {"kind": "mtp", "params": {"depth": 3}}
#: Recorded whole mtp d=3 rounds for Qwen3-8B on h100 (aggregated, round scope).
MEASURED_MTP3: dict[str, Any] = {
    "identity": {
        "kind": "mtp",
        "draft_length": 3,
        "draft_identity": None,
        "timing_scope": "round",
        "role": "aggregated",
        "model": "Qwen/Qwen3-8B",
        "hardware": "h100_sxm",
    },
    "points": [
        {"batch_size": b, "total_kv_tokens": k, "latency_ms": 9.0 + 0.5 * b + 1e-5 * k}
        for b in (1, 2, 4, 8, 16)
        for k in (0, 1024, 16384, 65536)
    ],
}


def _case(config: dict[str, Any], metrics: Any, **extra: Any) -> dict[str, Any]:
    return {"config": {**BASE, **config}, "metrics": metrics, **extra}


def _rows() -> list[Row]:
    inside = decode(8, 4096)
    outside = decode(600, 4096)
    prefill = {"num_prefill_requests": 2, "sum_prefill_tokens": 1024}
    rows: list[Row] = []
    for estimator in ("auto", "table", "regression", "roofline"):
        for policy in ("deny", "allow"):
            config: dict[str, Any] = {
                "points": POINTS,
                "estimator": estimator,
                "fallback_policy": policy,
            }
            rows += [
                (f"stp/{estimator}/{policy}/inside", _case(config, inside)),
                (f"stp/{estimator}/{policy}/outside-envelope", _case(config, outside)),
                (f"stp/{estimator}/{policy}/rule-d2", _case(config, inside, draft_length=2)),
                (f"stp/{estimator}/{policy}/prefill", _case(config, prefill)),
            ]
    rows += [
        ("stp/no-data/auto", _case({}, inside)),
        ("stp/no-data/table-deny", _case({"estimator": "table"}, inside)),
        (
            "stp/no-data/table-allow",
            _case({"estimator": "table", "fallback_policy": "allow"}, inside),
        ),
        ("stp/no-data/regression-deny", _case({"estimator": "regression"}, inside)),
        ("stp/no-data/measured-deny", _case({"estimator": "measured_round"}, inside)),
        ("stp/ranks/auto", _case({"points": POINTS}, [decode(4, 1024), decode(16, 65536)])),
    ]
    for estimator in ("auto", "table", "roofline", "measured_round"):
        for policy in ("deny", "allow"):
            config = {
                "points": POINTS,
                "measured_rounds": [MEASURED_MTP3],
                "speculation": MTP3,
                "estimator": estimator,
                "fallback_policy": policy,
            }
            rows += [
                (f"sd-mtp3/{estimator}/{policy}/inside", _case(config, decode(4, 16384))),
                (
                    f"sd-mtp3/{estimator}/{policy}/outside-measured",
                    _case(config, decode(32, 16384)),
                ),
            ]
    mismatched = {**MEASURED_MTP3, "identity": {**MEASURED_MTP3["identity"], "draft_length": 2}}
    other_gpu = {**MEASURED_MTP3, "identity": {**MEASURED_MTP3["identity"], "hardware": "h200_sxm"}}
    rows += [
        (
            "sd-mtp3/measured-depth-mismatch/auto",
            _case({"measured_rounds": [mismatched], "speculation": MTP3}, decode(4, 1024)),
        ),
        (
            "sd-mtp3/measured-hardware-mismatch/auto",
            _case({"measured_rounds": [other_gpu], "speculation": MTP3}, decode(4, 1024)),
        ),
        (
            "sd-mtp3/measured-depth-mismatch/deny",
            _case(
                {
                    "measured_rounds": [mismatched],
                    "speculation": MTP3,
                    "estimator": "measured_round",
                },
                decode(4, 1024),
            ),
        ),
        (
            "sd-mtp3/table-only/auto",
            _case({"points": POINTS, "speculation": MTP3}, decode(4, 1024)),
        ),
        (
            "sd-mtp3/draft-length-rejected",
            _case({"points": POINTS, "speculation": MTP3}, decode(4, 1024), draft_length=3),
        ),
        (
            "sd-mtp3/measured-prefill",
            _case(
                {
                    "measured_rounds": [MEASURED_MTP3],
                    "speculation": MTP3,
                    "estimator": "measured_round",
                },
                prefill,
            ),
        ),
        ("error/points-not-a-list", _case({"points": {"batch_size": 1}}, inside)),
        (
            "error/point-missing-latency",
            _case({"points": [{"batch_size": 1, "total_kv_tokens": 0}]}, inside),
        ),
        (
            "error/point-negative-latency",
            _case(
                {"points": [{"batch_size": 1, "total_kv_tokens": 0, "latency_ms": -1.0}]}, inside
            ),
        ),
        (
            "error/measured-missing-identity-key",
            _case(
                {
                    "measured_rounds": [
                        {"points": MEASURED_MTP3["points"], "identity": {"kind": "mtp"}}
                    ],
                    "speculation": MTP3,
                },
                inside,
            ),
        ),
        ("error/unknown-policy", _case({"fallback_policy": "maybe"}, inside)),
        (
            "error/scheme-without-model",
            {"config": {"hardware": "h100_sxm", "speculation": MTP3}, "metrics": inside},
        ),
        ("error/table-file-missing", _case({"tables": ["/nonexistent/stp.parquet"]}, inside)),
    ]
    return rows


def evaluate(inputs: Mapping[str, Any]) -> dict[str, Any]:
    model = best_available(inputs["config"])
    return detailed(model, inputs)


SUITE = Suite(
    name="estimators",
    description="best_available: preferences, fallback deny/allow, diagnostics, measured rounds",
    cases=make_cases(_rows()),
    evaluate=evaluate,
)
