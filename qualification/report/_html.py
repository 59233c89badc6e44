"""Render the release report as one self-contained HTML page (inline CSS, PNGs as base64)."""

from __future__ import annotations

import base64
import html
from typing import Any

from qualification.calibrate import CALIBRATION_HEADERS, calibration_rows
from qualification.mape import CELL_HEADERS, cell_rows, percent, summary_rows, tost_text
from qualification.report._html_verdict import (
    cost_model_html,
    criteria_html,
    glossary_html,
    statistics_html,
    trends_html,
    verdict_html,
)

_STYLE = """
body{font-family:system-ui,sans-serif;max-width:1100px;margin:2em auto;padding:0 1em;color:#222}
table{border-collapse:collapse;margin:0.6em 0 1.2em}td,th{border:1px solid #ccc;padding:3px 8px;
font-size:13px;text-align:left}th{background:#f2f2f2}code{background:#f5f5f5;padding:0 3px}
.tag{display:inline-block;border-radius:3px;padding:0 6px;font-size:12px;color:#fff}
.synthetic{background:#7a5cc7}.parity{background:#2e7d32}.local-measurement{background:#1565c0}
.engine-measurement{background:#00796b}.hardware{background:#b35a00}
.public-measurement{background:#5d4037}
.failed,.refused{color:#b00020;font-weight:bold}
.passed{color:#2e7d32;font-weight:bold}.not-run{color:#8a6d00;font-weight:bold}
.known-gap{color:#c45100;font-weight:bold}
img{max-width:100%;border:1px solid #ddd;margin:4px}
.verdict{font-size:20px;padding:6px 10px;border:2px solid currentColor;display:inline-block}
dt{margin-top:6px}dd{margin-left:1.5em}figcaption{font-size:12px;color:#555}
"""


def _e(value: object) -> str:
    """``value`` as escaped HTML text; a missing value (None) reads "n/a", never "None"."""
    return html.escape("n/a" if value is None else str(value))


def _table(headers: list[str], rows: list[list[str]]) -> str:
    head = "".join(f"<th>{_e(h)}</th>" for h in headers)
    body = "".join("<tr>" + "".join(f"<td>{_e(c)}</td>" for c in row) + "</tr>" for row in rows)
    return f"<table><tr>{head}</tr>{body}</table>"


def _tag(evidence_type: str) -> str:
    return f'<span class="tag {_e(evidence_type)}">{_e(evidence_type)}</span>'


def _status(status: str) -> str:
    return f'<span class="{_e(status.replace(" ", "-"))}">{_e(status)}</span>'


def _image(name: str, data: bytes) -> str:
    encoded = base64.b64encode(data).decode("ascii")
    return f'<img alt="{_e(name)}" src="data:image/png;base64,{encoded}">'


def _checks(checks: list[dict[str, Any]]) -> str:
    rows = []
    for check in checks:
        counts = (
            f"{check['passed']} passed, {check['failed']} failed, {check['errors']} errors, "
            f"{check['skipped']} skipped"
            if "passed" in check
            else check.get("reason", "")
        )
        modules = "".join(
            f"<br><code>{_e(module)}</code>: {c['passed']}/{c['tests']} passed"
            + (f", {c['failed'] + c['errors']} failed" if c["failed"] + c["errors"] else "")
            for module, c in check.get("by_module", {}).items()
        )
        rows.append(
            f"<tr><td>{_e(check['name'])}</td><td>{_tag(check['evidence_type'])}</td>"
            f"<td>{_status(check['status'])}</td><td>{_e(counts)}{modules}</td>"
            f"<td><code>{_e(check['command'] or '')}</code></td></tr>"
        )
    head = "".join(f"<th>{h}</th>" for h in ("check", "evidence", "status", "result", "command"))
    return f"<table><tr>{head}</tr>{''.join(rows)}</table>"


def _figure(name: str, data: bytes, caption: str) -> str:
    return f"<figure>{_image(name, data)}<figcaption>{caption}</figcaption></figure>"


def _dataset(
    section: dict[str, Any], images: dict[str, bytes], criteria: list[dict[str, Any]]
) -> str:
    name = section["name"]
    anchor = f'id="dataset-{_e(name)}"'
    if section["status"] != "scored":
        return f"<h2 {anchor}>{_e(name)}</h2><p>{_status('refused')}: {_e(section['reason'])}</p>"
    identity, rule = section["identity"], section["rule"]
    parts = [
        f"<h2 {anchor}>{_e(name)} {_tag(section['evidence_type'])}</h2>",
        f"<p>SHA-256 <code>{_e(section['sha256'])}</code>; {_e(identity['preset'])} target, "
        f"{_e(identity['draft_kind'])} drafter, device {_e(identity['device'].get('name'))}, "
        f"timing {_e(identity['timing'].get('metric'))} ({_e(identity['timing'].get('clock'))}), "
        f"{_e(identity['threads'])} thread(s), {_e(identity['dtype'])}.</p>",
        f"<p>Recorded with <code>{_e(section['recording_command'])}</code></p>",
        "<h3>Published rule (0.08 d + 1.25) F_STP((d+1)B, K)</h3>",
        _table(["metric", "value"], [list(r) for r in summary_rows(rule["summary"])]),
        _table(CELL_HEADERS, cell_rows(rule["cells"])),
    ]
    tests = rule.get("tests") or {}
    if tests:
        ks = tests.get("ks_predicted_vs_measured_rounds")
        lines = [tost_text(tests["tost_config_log_ratio"])]
        if ks:
            lines.insert(
                0,
                f"KS predicted vs measured rounds: D = {ks['statistic']:.4f}, "
                f"p = {ks['p_value']:.4g}",
            )
        parts.append("<ul>" + "".join(f"<li>{_e(line)}</li>" for line in lines) + "</ul>")
    statistics = section["statistics"]
    rule_links = ", ".join(
        f'<a href="#{_e(c["anchor"])}">{_e(c["id"])}</a>'
        for c in criteria
        if c["check"] == "rule" and c["subject"] == name
    )
    parts += [
        "<h4>Figures with 95 % bootstrap intervals (published rule)</h4>",
        statistics_html(statistics["rule"], "rule", name, criteria),
        "<h4>Signed error by d, B and K</h4>",
        trends_html(statistics, name, criteria),
    ]
    for image in section["images"]:
        if image in images:
            parts.append(
                _figure(image, images[image], f"{_e(image)}; criteria: {rule_links or 'none'}")
            )
    widened = section["stp_widened"]["summary"]
    parts.append(
        f"<p>For context, the unscaled F_STP((d+1)B, K): round-weighted "
        f"{_e(percent(widened['round_weighted_mape']))}, equal-config "
        f"{_e(percent(widened['equal_config_mape']))}, bias {_e(percent(widened['bias']))}.</p>"
    )
    calibration = section["calibration"]
    parts.append("<h3>Calibration (held-out; never scored on fitted rows)</h3>")
    if calibration["status"] == "fitted":
        fitted = calibration["fitted_all_rows"]
        parts += [
            f"<p>All rows: a = {fitted['a']:.4f}, b = {fitted['b']:.4f}.</p>",
            _table(CALIBRATION_HEADERS, calibration_rows(calibration)),
        ]
        if "calibrated_heldout" in statistics:
            parts += [
                "<h4>Held-out figures with 95 % bootstrap intervals</h4>",
                statistics_html(
                    statistics["calibrated_heldout"], "calibrated_heldout", name, criteria
                ),
            ]
    else:
        parts.append(f"<p>{_status('not run')}: {_e(calibration['reason'])}</p>")
    if section["anomalies"]:
        parts.append(
            "<details><summary>Anomalies recorded in the sidecar</summary><ul>"
            + "".join(f"<li>{_e(a)}</li>" for a in section["anomalies"])
            + "</ul></details>"
        )
    return "\n".join(parts)


def _transfer_table(transfers: list[dict[str, Any]]) -> str:
    if not transfers:
        return "<p>none (no other recording shares an artefact's target and drafter)</p>"
    rows = []
    for item in transfers:
        calibrated, rule = item["calibrated"], item["published_rule"]
        worst = calibrated["worst_config"]
        rows.append(
            [
                item["artefact"],
                item["dataset"],
                item["evidence_type"],
                percent(calibrated["round_weighted_mape"]),
                percent(calibrated["equal_config_mape"]),
                percent(calibrated["p90_ape"]),
                "n/a" if worst is None else f"{worst['config_id']} ({percent(worst['ape'])})",
                percent(rule["round_weighted_mape"]),
                percent(rule["equal_config_mape"]),
            ]
        )
    headers = [
        "artefact",
        "dataset",
        "evidence",
        "calibrated round-weighted",
        "calibrated equal-config",
        "calibrated P90",
        "calibrated worst",
        "rule round-weighted",
        "rule equal-config",
    ]
    return _table(headers, rows)


def _gate(gate: dict[str, Any]) -> str:
    if gate["status"] != "run":
        return f"<p>Prediction gate: {_status('not run')} ({_e(gate['reason'])})</p>"
    failed = ", ".join(gate["failed_scenarios"]) or "none"
    return (
        f"<p>Prediction gate: {gate['scenarios']} scenarios of <code>"
        f"{_e(gate['scenarios_file'])}</code> ({gate['predictions']} predictions) evaluated; "
        f"scenarios raising an error: {_e(failed)}.</p>"
    )


def _cost_model(section: dict[str, Any], criteria: list[dict[str, Any]]) -> str:
    """Public figures (roofline_ideal before, roofline after) and the rule cross-check."""
    if section["status"] != "run":
        return f'<h2 id="cost-model">Default cost model</h2><p>not run: {_e(section["reason"])}</p>'
    before, after = section["public_before"], section["public_after"]
    rows = [
        [
            new["id"],
            new["quantity"],
            f"{new['measured']:.3f}",
            f"{old['predicted']:.3f} ({old['error_percent']:+.1f} %)",
            f"{new['predicted']:.3f} ({new['error_percent']:+.1f} %)",
            new["role"] + (f" (fitted {', '.join(new['seen_by'])})" if new.get("seen_by") else ""),
        ]
        for old, new in zip(before["rows"], after["rows"], strict=True)
    ]
    mape = [
        [label, f"{before[key]:.1f} %", f"{after[key]:.1f} %"]
        for key, label in (
            ("mape_percent", "all rows"),
            ("mape_held_out_percent", "held-out rows"),
            ("mape_decode_percent", "decode steps (held out)"),
            ("mape_sd_percent", "SD round / STP (held out)"),
        )
    ]
    rule = [
        [
            r["scheme"],
            r["hardware"],
            str(r["d"]),
            f"{r['rule_factor']:.2f}",
            f"{r['ratio_min']:.2f} / {r['ratio_median']:.2f} / {r['ratio_max']:.2f}",
            f"{r['median_vs_rule_percent']:+.1f} %",
            f"{r['calibrated_median']:.2f}",
            f"{r['below_widened_count']}/{r['points']}",
            str(r["over_capacity"]),
        ]
        for r in section["rulecheck"]
    ]
    return "\n".join(
        [
            '<h2 id="cost-model">Default cost model</h2>',
            cost_model_html(section, criteria),
            f"<p>{_tag('hardware')} public measurements committed with their sources "
            "(<code>qualification/public/measurements.json</code>), predicted by the pure "
            "bound <code>roofline_ideal</code> and the default <code>roofline</code>.</p>",
            _table(["figure", "quantity", "measured", "roofline_ideal", "roofline", "role"], rows),
            _table(["MAPE", "roofline_ideal", "roofline"], mape),
            "<h3>Published rule cross-check: T_SD / F_STP((d + 1) B, K) vs 0.08 d + 1.25</h3>",
            _table(
                [
                    "scheme",
                    "hardware",
                    "d",
                    "rule",
                    "min / median / max",
                    "median vs rule",
                    "median B<=8, K<=4k",
                    "below widened STP",
                    "over capacity",
                ],
                rule,
            ),
            *_prefill_reference(section.get("prefill_reference")),
        ]
    )


def _prefill_reference(prefill: dict[str, Any] | None) -> list[str]:
    """Llama-3.1-70B TP 4 / 8 prefill: the reference simulator's figure next to the default's."""
    if not prefill:
        return []
    rows = [
        [
            row["hardware"],
            row["weights"],
            str(row["tensor_parallel"]),
            str(row["prompt_tokens"]),
            f"{row['reference_ms']:.1f}",
            f"{row['predicted_ms']:.1f}",
            f"{row['error_percent']:+.1f} %",
        ]
        for row in prefill["rows"]
    ]
    return [
        "<h3>Llama-3.1-70B prefill at TP 4 / 8 against a silicon-based reference simulator</h3>",
        f"<p>{_e(prefill['reference'])} (a simulator's figures from its GPU kernel tables, "
        "<code>qualification/public/reference_prefill.json</code>), one request, batch 1, "
        f"priced by <code>{_e(prefill['estimator'])}</code>.</p>",
        _table(
            ["hardware", "weights", "TP", "prompt tokens", "reference ms", "aisim ms", "error"],
            rows,
        ),
    ]


def _public_gpu_images(images: dict[str, bytes]) -> dict[str, bytes]:
    return {name: data for name, data in images.items() if name.startswith("public_gpu_")}


def render_html(report: dict[str, Any], images: dict[str, bytes]) -> str:
    """The whole page; identical inputs give identical bytes."""
    from qualification.engine import engine_html
    from qualification.public_gpu import public_gpu_html

    versions = report["versions"]
    artefacts = [
        [
            a["path"],
            a.get("status", ""),
            f"{a.get('name', '')} v{a.get('version', '')}",
            f"a={a['coefficients']['a']:.4f}, b={a['coefficients']['b']:.4f}"
            if "coefficients" in a
            else a.get("reason", ""),
        ]
        for a in report["calibration_artefacts"]
    ]
    criteria = report["criteria"]
    body = [
        "<h1>aisim release qualification report</h1>",
        f"<p>Generated {_e(report['generated_utc'])} at git revision "
        f"<code>{_e(report['git']['revision'])}</code>"
        f"{' (working tree modified)' if report['git'].get('dirty') else ''}.</p>",
        "<p>Evidence types: "
        + " ".join(
            _tag(t)
            for t in (
                "synthetic",
                "parity",
                "local-measurement",
                "engine-measurement",
                "hardware",
                "public-measurement",
            )
        )
        + " &mdash; local-measurement is this project's CPU recordings, not GPU hardware; "
        "public-measurement is other people's GPU serving runs, replayed and predicted.</p>",
        "<h2>Verdict</h2>",
        verdict_html(report),
        '<h2 id="criteria">Acceptance criteria</h2>',
        criteria_html(criteria),
        '<h2 id="glossary">Glossary</h2>',
        glossary_html(),
        '<h2 id="checks">Parity, probes and the prediction gate</h2>',
        _checks(report["checks"]),
        _gate(report["prediction_gate"]),
        *(_dataset(section, images, criteria) for section in report["datasets"]),
        engine_html(report.get("engine_comparisons", []), images, _table, _image),
        "<h2>Calibration artefacts</h2>",
        _table(["file", "status", "name", "coefficients"], artefacts)
        if artefacts
        else "<p>none</p>",
        '<h3 id="calibration-transfer">Calibration transfer: each artefact on the other '
        "recordings it applies to</h3>",
        _transfer_table(report["calibration_transfer"]),
        *(
            f"<h4>{_e(t['artefact'])} on {_e(t['dataset'])}: 95 % bootstrap intervals</h4>"
            + statistics_html(t["statistics"], "calibration_transfer", t["dataset"], criteria)
            for t in report["calibration_transfer"]
            if "statistics" in t
        ),
        _cost_model(report["cost_model"], criteria),
        public_gpu_html(report.get("public_gpu") or {}, _public_gpu_images(images), _table, _image),
        "<h2>Versions</h2>",
        _table(["package", "version"], [[k, str(v)] for k, v in versions.items()]),
        "<h2>Commands run</h2>",
        "<ul>" + "".join(f"<li><code>{_e(c)}</code></li>" for c in report["commands"]) + "</ul>",
    ]
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        f"<title>aisim release report</title><style>{_STYLE}</style></head><body>\n"
        + "\n".join(body)
        + "\n</body></html>\n"
    )
