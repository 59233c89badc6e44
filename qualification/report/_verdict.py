"""Judge the report's figures against a plan: PASS / FAIL / NOT RUN / KNOWN GAP per criterion,
and overall.

A criterion is NOT RUN when its input is absent (a dataset not in the evidence, a check that
was skipped, a results file that does not exist); a *required* criterion that is not run fails
the release. The overall verdict is PASS only when no criterion failed, every required
criterion ran, at least one dataset was scored, no dataset was refused and every dataset in the
evidence is judged by some criterion.

A criterion marked ``known_gap`` is a strict expected failure (pytest's ``xfail(strict=True)``):
a measured figure that misses the threshold is KNOWN GAP, which does not fail the verdict but is
listed in it with its issue; a figure that meets the threshold is FAIL ("known gap now passes:
remove the marker"), so a marker cannot outlive its gap. A NOT RUN or broken input is judged as
if the criterion were unmarked.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from qualification.plan import CHECKS, ENGINE_FIGURES, Criterion, Plan, anchor

PASS, FAIL, NOT_RUN, KNOWN_GAP = "PASS", "FAIL", "NOT RUN", "KNOWN GAP"

#: The reason a known-gap criterion whose figure now meets its threshold fails the verdict.
GAP_CLOSED = "known gap now passes: remove the marker"


class _Absent(Exception):
    """The criterion's input is absent: NOT RUN with this reason."""


class _Broken(Exception):
    """The input exists but gives no usable value: FAIL with this reason."""


def _dataset_section(report: dict[str, Any], name: str) -> dict[str, Any]:
    for section in report["datasets"]:
        if section["name"] == name:
            if section["status"] != "scored":
                raise _Broken(f"dataset {name} refused: {section.get('reason', '')}")
            return dict(section)
    raise _Absent(f"dataset {name} not found under {report['evidence_directory']}")


def _figure(criterion: Criterion, report: dict[str, Any], root: Path) -> dict[str, Any]:
    """``{"estimate", "low", "high", ...}`` of the criterion's metric."""
    check, metric = criterion.check, criterion.metric
    if check in ("parity", "probes"):
        result = next(c for c in report["checks"] if c["name"] == check)
        if result["status"] == "not run":
            raise _Absent(result["reason"])
        return {"estimate": float(result["failed"] + result["errors"])}
    if check == "prediction_gate":
        gate = report["prediction_gate"]
        if gate["status"] == "not run":
            raise _Absent(gate["reason"])
        return {"estimate": float(len(gate["failed_scenarios"]))}
    if check in ("rule", "calibrated_heldout"):
        section = _dataset_section(report, str(criterion.dataset))
        if check == "rule" and metric == "tost_p_value":
            tost = (section["rule"].get("tests") or {}).get("tost_config_log_ratio") or {}
            if tost.get("p_value") is None:
                raise _Broken(f"no TOST p-value: {tost.get('reason', 'test not run')}")
            return {"estimate": float(tost["p_value"])}
        statistics = section["statistics"].get(check)
        if statistics is None:
            raise _Absent(f"{check} not computed: {section['calibration'].get('reason', '')}")
        return dict(statistics["metrics"][metric])
    if check == "calibration_transfer":
        _dataset_section(report, str(criterion.dataset))
        for transfer in report["calibration_transfer"]:
            if (transfer["artefact"], transfer["dataset"]) == (
                criterion.artefact,
                criterion.dataset,
            ):
                return dict(transfer["statistics"]["metrics"][metric])
        raise _Absent(
            f"artefact {criterion.artefact} is not in the evidence's calibration directory or "
            f"does not apply to {criterion.dataset}"
        )
    if check == "interval_coverage":
        section = report.get("interval_coverage") or {"status": "not run", "reason": "absent"}
        if section["status"] != "run":
            raise _Broken(f"interval coverage not computed: {section['reason']}")
        if metric not in section["figures"]:
            raise _Absent(f"no {metric}: nothing of that evidence to judge")
        return {"estimate": float(section["figures"][metric])}
    if check == "public_gpu":
        public = report.get("public_gpu") or {"status": "not run", "reason": "no section"}
        if public["status"] != "run":
            raise _Absent(f"public GPU runs not scored: {public['reason']}")
        value = public["figures"][metric]
        if value is None:
            raise _Broken(f"no held-out points for {metric}")
        return {"estimate": float(value)}
    if check == "cost_model":
        cost = report["cost_model"]
        if cost["status"] != "run":
            raise _Broken(f"cost model not evaluated: {cost['reason']}")
        return {"estimate": float(cost["figures"][metric])}
    return _engine_figure(criterion, report, root)


def _dig(mapping: Any, keys: tuple[str, ...]) -> float | None:
    for key in keys:
        mapping = mapping.get(key) if isinstance(mapping, dict) else None
    if isinstance(mapping, bool) or not isinstance(mapping, (int, float)):
        return None
    return float(mapping)


def _engine_figure(criterion: Criterion, report: dict[str, Any], root: Path) -> dict[str, Any]:
    """A figure of the committed engine recording ``criterion.input`` (a directory under the
    repository), replayed and scored by the report."""
    wanted = (root / str(criterion.input)).resolve()
    for section in report.get("engine_comparisons", []):
        if Path(section["path"]).resolve() != wanted:
            continue
        if section["status"] != "scored":
            raise _Broken(f"engine recording {section['name']} refused: {section['reason']}")
        figure = engine_figure(criterion.metric, section)
        if "estimate" not in figure:
            raise _Broken(figure["reason"])
        return figure
    raise _Absent(f"no engine recording at {criterion.input}")


def engine_figure(metric: str, section: dict[str, Any]) -> dict[str, Any]:
    """``metric`` of a scored engine recording (``section``: its ``name``, ``summary`` and
    ``noise_floor``, as ``qualification.engine.judged_figures`` gives them): ``estimate``, a
    percentage over 100, or over the noise figure for the ``*_vs_*`` metrics; or only
    ``reason`` when it cannot be computed."""
    figure_keys, noise_keys = ENGINE_FIGURES[metric]
    value = _dig(section["summary"], figure_keys)
    if value is None:
        return {"reason": f"{section['name']}: no figure {'.'.join(figure_keys)}"}
    if noise_keys is None:
        return {"estimate": value / 100}
    noise = _dig(section.get("noise_floor"), noise_keys)
    if noise is None or noise <= 0:
        return {"reason": f"{section['name']}: no repeat-noise figure (one served run?)"}
    return {"estimate": value / noise, "noise_pct": noise, "error_pct": value}


def compared_value(criterion: Criterion, figure: dict[str, Any]) -> float | None:
    """The number the threshold is applied to (see ``qualification.plan._metrics``)."""
    metric = CHECKS[criterion.check][criterion.metric]
    if criterion.use == "point":
        value = figure.get("estimate")
        if value is None:
            return None
        return abs(value) if metric.kind == "signed" else float(value)
    low, high = figure.get("low"), figure.get("high")
    if low is None or high is None:
        return None
    return max(abs(low), abs(high)) if metric.kind == "signed" else float(high)


def judge_criterion(criterion: Criterion, report: dict[str, Any], root: Path) -> dict[str, Any]:
    metric, gap = CHECKS[criterion.check][criterion.metric], criterion.known_gap
    result: dict[str, Any] = {
        "id": criterion.id,
        "anchor": anchor(criterion.id),
        "check": criterion.check,
        "metric": criterion.metric,
        "metric_description": metric.description,
        "subject": criterion.dataset or criterion.input or criterion.check,
        "artefact": criterion.artefact,
        "threshold": criterion.threshold,
        "comparison": ">=" if metric.at_least else "<=",
        "on_magnitude": metric.kind == "signed",
        "use": criterion.use,
        "required": criterion.required,
        "rationale": criterion.rationale,
        "known_gap": None if gap is None else {"issue": gap.issue, "reason": gap.reason},
        "estimate": None,
        "low": None,
        "high": None,
        "value": None,
    }
    try:
        figure = _figure(criterion, report, root)
    except _Absent as exc:
        reason = f"input absent: {exc}"
        if criterion.required:
            reason = f"required {reason}"
        return {**result, "status": NOT_RUN, "reason": reason}
    except _Broken as exc:
        return {**result, "status": FAIL, "reason": str(exc)}
    value = compared_value(criterion, figure)
    result.update(
        estimate=figure.get("estimate"),
        low=figure.get("low"),
        high=figure.get("high"),
        value=value,
        resamples=figure.get("resamples"),
    )
    if value is None or not math.isfinite(value):
        return {**result, "status": FAIL, "reason": figure.get("reason", "no value computed")}
    passed = value >= criterion.threshold if metric.at_least else value <= criterion.threshold
    if gap is None:
        return {**result, "status": PASS if passed else FAIL, "reason": ""}
    if passed:
        return {**result, "status": FAIL, "reason": f"{GAP_CLOSED} (issue {gap.issue})"}
    return {**result, "status": KNOWN_GAP, "reason": f"issue {gap.issue}: {gap.reason}"}


def summary_line(verdict: dict[str, Any], criteria: int, plan: Plan) -> str:
    """``PASS (47/48 criteria passed, 1 known gap: ID, issue 9; plan NAME vN)``."""
    gaps = verdict["known_gaps"]
    noun = "known gap" if len(gaps) == 1 else "known gaps"
    listed = "; ".join(f"{g['id']}, issue {g['issue']}" for g in gaps)
    gap_text = f", {len(gaps)} {noun}: {listed};" if gaps else ","
    return (
        f"{verdict['overall']} ({verdict['passed']}/{criteria} criteria passed{gap_text} "
        f"plan {plan.name} v{plan.version})"
    )


def judge(
    plan: Plan, report: dict[str, Any], root: Path
) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """Every criterion's result and the overall verdict."""
    results = [judge_criterion(criterion, report, root) for criterion in plan.criteria]
    scored = [s["name"] for s in report["datasets"] if s["status"] == "scored"]
    refused = [s["name"] for s in report["datasets"] if s["status"] == "refused"]
    judged = {c.dataset for c in plan.criteria if c.dataset is not None}
    unjudged = [name for name in scored + refused if name not in judged]
    engines = report.get("engine_comparisons", [])
    engine_inputs = {
        (root / str(c.input)).resolve() for c in plan.criteria if c.check == "engine_comparison"
    }
    problems = []
    if not scored:
        problems.append(f"no dataset scored under {report['evidence_directory']}")
    problems += [f"dataset {name} refused" for name in refused]
    problems += [f"dataset {name} has no criterion in the plan" for name in unjudged]
    problems += [
        f"engine recording {e['name']} refused" for e in engines if e["status"] != "scored"
    ]
    problems += [
        f"engine recording {e['name']} has no criterion in the plan"
        for e in engines
        if Path(e["path"]).resolve() not in engine_inputs
    ]
    failed = [r["id"] for r in results if r["status"] == FAIL]
    missing = [r["id"] for r in results if r["status"] == NOT_RUN and r["required"]]
    verdict = {
        "overall": FAIL if failed or missing or problems else PASS,
        "passed": sum(r["status"] == PASS for r in results),
        "failed": failed,
        "required_not_run": missing,
        "optional_not_run": [
            r["id"] for r in results if r["status"] == NOT_RUN and not r["required"]
        ],
        "known_gaps": [
            {"id": r["id"], **r["known_gap"]} for r in results if r["status"] == KNOWN_GAP
        ],
        "problems": problems,
        "datasets_scored": scored,
        "datasets_refused": refused,
    }
    return results, {"summary": summary_line(verdict, len(results), plan), **verdict}
