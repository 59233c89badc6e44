"""HTML for the judged parts of the report: verdict, criteria, glossary, intervals, trends.

Every figure a criterion judges links to that criterion's row (``#criterion-...``), and every
criterion row links back to the section holding its figures.
"""

from __future__ import annotations

import html
from typing import Any

from qualification.plan import CHECKS, anchor

GLOSSARY = (
    ("APE", "absolute percentage error of one prediction: |predicted - measured| / measured."),
    (
        "round-weighted",
        "a metric over every recorded SD round: a configuration with more rounds weighs more "
        "(here every configuration has the same number of rounds).",
    ),
    (
        "equal-config",
        "equal-configuration: each configuration (d, B, K) is scored once, on the median of its "
        "rounds, and configurations are averaged with equal weight.",
    ),
    ("P90", "90th percentile (linear interpolation) of the per-round APE."),
    (
        "bias",
        "mean signed relative error (predicted - measured) / measured; positive means the "
        "prediction is too high.",
    ),
    (
        "signed error by d, B, K",
        "mean configuration signed error over the configurations at one value of d (draft "
        "length), B (batch size) or K (total past KV tokens); the d-trend is the least-squares "
        "slope of configuration signed error on d.",
    ),
    (
        "F_STP",
        "the measured latency of a single-token-prediction decode pass; the published rule "
        "prices an SD round as (0.08 d + 1.25) F_STP((d + 1) B, K).",
    ),
    (
        "LOCO",
        "leave-one-configuration-out: the calibration is fitted once per configuration on all "
        "the others and scored only on the one left out (held out: never on rows it saw).",
    ),
    (
        "calibration transfer",
        "a calibration artefact fitted on one recording scored on another recording of the "
        "same target and drafter (out of recording).",
    ),
    (
        "KS",
        "two-sample Kolmogorov-Smirnov test of predicted vs measured round durations: D is the "
        "largest gap between the two empirical CDFs; a small p-value says the distributions "
        "differ.",
    ),
    (
        "TOST",
        "two one-sided t-tests that the mean configuration log ratio ln(predicted / measured) "
        "lies within +-ln(1.10); p < 0.05 shows the prediction equivalent to measurement "
        "within 10 %. 'Not shown equivalent' is not 'shown different'.",
    ),
    (
        "95 % CI",
        "bootstrap confidence interval (scipy.stats.bootstrap, BCa unless stated): "
        "configurations are resampled with replacement, all rounds of a drawn configuration "
        "kept, with a fixed seed and the stated number of resamples.",
    ),
    (
        "upper bound",
        "a criterion with use: upper_bound compares the upper end of the 95 % CI (for a "
        "signed metric the largest magnitude inside it) with the threshold: it passes only if "
        "the figure is within the threshold even at the unlucky end of the interval.",
    ),
    (
        "PASS / FAIL / NOT RUN",
        "per criterion: the compared value meets the threshold / does not, or its input is "
        "broken / its input is absent. A required criterion that is NOT RUN fails the release.",
    ),
    (
        "KNOWN GAP",
        "a criterion the plan marks known_gap (with the issue tracking it) whose measured value "
        "misses the threshold: shown with its issue and reason, it does not fail the release. "
        "The marker is strict: if the value meets the threshold the criterion FAILS (known gap "
        "now passes: remove the marker), so a marker cannot outlive its gap. A broken or absent "
        "input is judged as if the criterion were unmarked.",
    ),
    (
        "evidence types",
        "parity (frozen goldens), synthetic (generated inputs), local-measurement (this "
        "project's CPU recordings), hardware (recordings on the target GPUs).",
    ),
)


def _e(value: object) -> str:
    """``value`` as escaped HTML text; a missing value (None) reads "n/a", never "None"."""
    return html.escape("n/a" if value is None else str(value))


def _raw_table(headers: list[str], rows: list[list[str]]) -> str:
    """A table whose cells are already HTML."""
    head = "".join(f"<th>{_e(h)}</th>" for h in headers)
    body = "".join("<tr>" + "".join(f"<td>{c}</td>" for c in row) + "</tr>" for row in rows)
    return f"<table><tr>{head}</tr>{body}</table>"


def figure_text(metric: str, value: float | None) -> str:
    if value is None:
        return "n/a"
    kind = next((table[metric].kind for table in CHECKS.values() if metric in table), "error")
    if metric == "signed_error_slope_d":
        return f"{100 * value:+.2f} %/d"
    if metric.endswith("_vs_noise"):  # an error divided by the engine's repeat noise
        return f"{value:.2f}x the noise"
    if kind == "signed":
        return f"{100 * value:+.2f} %"
    if kind in ("error", "fraction"):
        return f"{100 * value:.2f} %"
    if kind == "p_value":
        return f"{value:.4g}"
    return f"{value:g}"


def interval_text(metric: str, low: float | None, high: float | None) -> str:
    if low is None or high is None:
        return "n/a"
    return f"[{figure_text(metric, low)}, {figure_text(metric, high)}]"


def status_html(status: str) -> str:
    css = {"PASS": "passed", "FAIL": "failed", "NOT RUN": "not-run", "KNOWN GAP": "known-gap"}[
        status
    ]
    return f'<span class="{css}">{_e(status)}</span>'


def verdict_html(report: dict[str, Any]) -> str:
    verdict, plan = report["verdict"], report["plan"]
    overall = verdict["overall"]
    lines = [
        f'<p class="verdict {"passed" if overall == "PASS" else "failed"}">Overall verdict: '
        f"{_e(overall)}</p>",
        f"<p><code>{_e(verdict['summary'])}</code></p>",
        f"<p>Plan <code>{_e(plan['name'])}</code> version {_e(plan['version'])} "
        f"(<code>{_e(plan.get('path', ''))}</code>, SHA-256 <code>{_e(plan.get('sha256', ''))}"
        f"</code>): {verdict['passed']} of {len(report['criteria'])} criteria passed; "
        f"failed: {_e(', '.join(verdict['failed']) or 'none')}; required but not run: "
        f"{_e(', '.join(verdict['required_not_run']) or 'none')}; optional, not run: "
        f"{_e(', '.join(verdict['optional_not_run']) or 'none')}.</p>",
    ]
    if verdict["known_gaps"]:
        lines.append(
            "<p>Known gaps (measured misses the plan marks with their issue; they do not fail "
            "the release, and a marker whose criterion passes does):</p><ul>"
            + "".join(
                f'<li>{status_html("KNOWN GAP")} <a href="#{_e(anchor(g["id"]))}">{_e(g["id"])}'
                f"</a>, issue {_e(g['issue'])}: {_e(g['reason'])}</li>"
                for g in verdict["known_gaps"]
            )
            + "</ul>"
        )
    if verdict["problems"]:
        lines.append(
            "<ul>"
            + "".join(f'<li class="failed">{_e(p)}</li>' for p in verdict["problems"])
            + "</ul>"
        )
    bootstrap = plan["bootstrap"]
    lines.append(
        f"<p>Intervals: {bootstrap['confidence'] * 100:g} % bootstrap, {bootstrap['resamples']} "
        f"resamples of {bootstrap['unit']}s, method {bootstrap['method']}, seed "
        f"{bootstrap['seed']}.</p>"
    )
    return "\n".join(lines)


def criteria_html(criteria: list[dict[str, Any]]) -> str:
    rows = []
    for c in criteria:
        metric = c["metric"]
        subject = c["subject"] + (f" (artefact {c['artefact']})" if c["artefact"] else "")
        link = f'<a href="#{_e(section_anchor(c))}">{_e(subject)}</a>'
        magnitude = "|x| " if c["on_magnitude"] else ""
        rows.append(
            [
                f'<span id="{_e(c["anchor"])}">{_e(c["id"])}</span>',
                _e(c["check"]),
                link,
                f"{_e(metric)}<br><small>{_e(c['metric_description'])}</small>",
                _e(c["use"].replace("_", " ")),
                f"{magnitude}{_e(c['comparison'])} {_e(figure_text(metric, c['threshold']))}",
                _e(figure_text(metric, c["estimate"])),
                _e(interval_text(metric, c["low"], c["high"])),
                _e(figure_text(metric, c["value"])),
                status_html(c["status"]) + ("" if c["required"] else " <small>(optional)</small>"),
                _e(c["reason"] or c["rationale"]),
            ]
        )
    headers = [
        "criterion",
        "check",
        "on",
        "metric",
        "uses",
        "threshold",
        "estimate",
        "95 % CI",
        "compared",
        "status",
        "reason / rationale",
    ]
    return _raw_table(headers, rows)


def section_anchor(criterion: dict[str, Any]) -> str:
    if criterion["check"] in ("parity", "probes", "prediction_gate"):
        return "checks"
    if criterion["check"] == "calibration_transfer":
        return "calibration-transfer"
    if criterion["check"] == "cost_model":
        return "cost-model"
    if criterion["check"] == "public_gpu":
        return "public-gpu"
    if criterion["check"] == "engine_comparison":
        return "criteria"
    return f"dataset-{criterion['subject']}"


def glossary_html() -> str:
    return (
        "<dl>"
        + "".join(f"<dt><b>{_e(term)}</b></dt><dd>{_e(text)}</dd>" for term, text in GLOSSARY)
        + "</dl>"
    )


def _links(criteria: list[dict[str, Any]], check: str, subject: str, metric: str) -> str:
    found = [
        c
        for c in criteria
        if c["check"] == check and c["metric"] == metric and c["subject"] == subject
    ]
    return " ".join(
        f'<a href="#{_e(c["anchor"])}">{_e(c["id"])}</a> {status_html(c["status"])}' for c in found
    )


def statistics_html(
    statistics: dict[str, Any], check: str, subject: str, criteria: list[dict[str, Any]]
) -> str:
    """Every metric with its interval and the criteria that judge it."""
    rows = []
    for metric, figure in statistics["metrics"].items():
        estimate = figure_text(metric, figure.get("estimate"))
        if metric == "worst_config_ape" and figure.get("config_id"):
            estimate += f" ({figure['config_id']})"
        interval = interval_text(metric, figure.get("low"), figure.get("high"))
        if figure.get("method") and figure["method"] != "BCa":
            interval += f" ({figure['method']})"
        rows.append(
            [_e(metric), _e(estimate), _e(interval), _links(criteria, check, subject, metric)]
        )
    table = _raw_table(["metric", "estimate", "95 % CI", "judged by"], rows)
    return (
        f"<p>{statistics['configurations']} configurations, {statistics['rounds']} rounds.</p>"
        + table
    )


def trends_html(statistics: dict[str, Any], subject: str, criteria: list[dict[str, Any]]) -> str:
    """Signed error by d, B and K, published rule beside the held-out calibration."""
    rule = statistics["rule"]["signed_error_by"]
    calibrated = statistics.get("calibrated_heldout", {}).get("signed_error_by", {})
    rows = []
    for axis in ("d", "B", "K"):
        held = {row["value"]: row for row in calibrated.get(axis, [])}
        for row in rule[axis]:
            other = held.get(row["value"])
            rows.append(
                [
                    _e(axis),
                    _e(row["value"]),
                    _e(row["configurations"]),
                    _e(figure_text("bias", row["estimate"])),
                    _e(interval_text("bias", row["low"], row["high"])),
                    _e("n/a" if other is None else figure_text("bias", other["estimate"])),
                    _e(
                        "n/a"
                        if other is None
                        else interval_text("bias", other["low"], other["high"])
                    ),
                ]
            )
    headers = [
        "axis",
        "value",
        "configurations",
        "rule: mean signed error",
        "rule: 95 % CI",
        "calibrated held out",
        "calibrated: 95 % CI",
    ]
    trend = _links(criteria, "rule", subject, "signed_error_slope_d")
    return f"<p>Judged by: {trend or 'no criterion on the d-trend'}.</p>" + _raw_table(
        headers, rows
    )


def cost_model_html(cost: dict[str, Any], criteria: list[dict[str, Any]]) -> str:
    """The default cost model's judged figures and the criteria that judge them."""
    rows = [
        [
            _e(metric),
            _e(figure_text(metric, value)),
            _links(criteria, "cost_model", "cost_model", metric),
        ]
        for metric, value in cost["figures"].items()
    ]
    return _raw_table(["judged figure", "value", "judged by"], rows)
