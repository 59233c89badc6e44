"""Predict real GPU serving runs other people measured, and score the predictions.

The evidence (``evidence/public-gpu/``, its README says where each file comes from): InferenceX
runs of DeepSeek-R1 (fp8, NVFP4) on H100/H200/B200 with SGLang and TensorRT-LLM, and a vLLM
Qwen3.8-27B sweep on one B200 with and without MTP. For every point, ``replay_config`` builds
the workload as it was run (closed-loop concurrency over a shared queue, the client's length
distribution and prompt count, ignore-eos, the engine's limits, parallelism, precision, SD with
its acceptance) or refuses it with a one-line reason (counted in the report); ``run`` replays
each distinct workload once with the default cost model and scores TTFT, TPOT, throughput per
GPU and the SD gain; ``write_outputs`` writes ``public_gpu.json`` (headline, groups, SD-pair statistics,
refusals by reason), ``public_gpu.md``, the per-point errors by step kind and regime
(``public_gpu_rows.csv``), the SD pairs (``public_gpu_pairs.csv``) and one
throughput-vs-interactivity plot per GPU. Evidence type: ``public-measurement``.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any, Final

from aisim.files import atomic_write_bytes, atomic_write_text, canonical_json, check_writable
from qualification.public_gpu._acceptance_spread import FittedRateSpread, acceptance_spreads
from qualification.public_gpu._fit import DSPARK_TERM, TTFT_MAX_CONC
from qualification.public_gpu._fit_host import HOST_TERM
from qualification.public_gpu._points import load_points
from qualification.public_gpu._predict import predict, replay_figures, stderr_progress
from qualification.public_gpu._render import curve_plots, to_markdown
from qualification.public_gpu._report_section import public_gpu_html, public_gpu_section
from qualification.public_gpu._score import (
    group_stats,
    headline,
    history_ratio_groups,
    history_ratio_workloads,
    pair_stats,
    score_rows,
    sd_pairs,
)
from qualification.public_gpu._workload import Refusal, replay_config, workload_key

EVIDENCE_TYPE: Final = "public-measurement"
GROUP_KEYS: Final = ("source", "hardware", "engine", "sd", "regime", "concurrency_band")

__all__ = [
    "EVIDENCE_TYPE",
    "TTFT_MAX_CONC",
    "FittedRateSpread",
    "acceptance_spreads",
    "Refusal",
    "assemble",
    "load_fitted",
    "load_points",
    "replay_config",
    "replay_figures",
    "run",
    "stderr_progress",
    "to_markdown",
    "workload_key",
    "write_outputs",
    "public_gpu_html",
    "public_gpu_section",
]


def run(
    evidence: Path,
    select: Callable[[dict[str, Any]], bool] | None = None,
    progress: Callable[[str], None] | None = None,
) -> dict[str, Any]:
    """Predict and score every point under ``evidence`` (those ``select`` keeps)."""
    points = load_points(evidence)
    if select is not None:
        points = [point for point in points if select(point)]
    fitted = load_fitted(evidence)
    predicted, refused = predict(points, progress, request_overheads(fitted))
    return assemble(evidence, len(points), predicted, refused, fitted)


def assemble(
    evidence: Path,
    points: int,
    predicted: list[dict[str, Any]],
    refused: list[dict[str, Any]],
    fitted: dict[str, Any],
) -> dict[str, Any]:
    """The report from the predictions (``predict``'s output) and the fitted-terms artefact."""
    acceptance = {
        i
        for workloads in fitted.get("mtp_acceptance", {}).values()
        for v in workloads.values()
        for i in v["mtp_ids"]
    }
    hybrid = set(fitted.get("hybrid", {}).get("training_ids", []))
    host = fitted.get("sglang_serial_host_us_per_request", {})
    dspark = fitted.get("dspark", {})
    other = {HOST_TERM: set(host.get("ids", [])), DSPARK_TERM: set(dspark.get("training_ids", []))}
    rows = score_rows(predicted, set(fitted.get("training_ids", [])), acceptance, hybrid, other)
    pairs = sd_pairs(rows)
    reasons = Counter(entry["reason"] for entry in refused)
    from qualification.public_gpu._workload import workload_key

    distinct = len({workload_key(replay_config(p)[0]) for p in predicted})
    return {
        "evidence_type": EVIDENCE_TYPE,
        "evidence_directory": evidence.as_posix(),
        "estimator": "roofline (default terms, aisim.catalogue._costs.MEASURED_TERMS)",
        "held_out": {
            "description": (
                f"{fitted.get('protocol', 'no fitted terms')}; seen_by lists the terms that "
                "saw a point, the headline judges only points no term saw"
            ),
            "fitted_terms": {k: v for k, v in fitted.items() if k != "training_ids"},
        },
        "counts": {
            "points": points,
            "predicted": len(rows),
            "refused": len(refused),
            "distinct_replays": distinct,
        },
        "headline": headline(rows, pairs),
        "groups": {key: group_stats(rows, key) for key in GROUP_KEYS},
        "pair_stats": pair_stats(pairs),
        "history_ratio_groups": history_ratio_groups(pairs),
        "history_ratio_workloads": history_ratio_workloads(pairs),
        "pairs": pairs,
        "refused_reasons": dict(sorted(reasons.items())),
        "refused": refused,
        "rows": rows,
    }


def request_overheads(fitted: dict[str, Any]) -> dict[str, float]:
    """The fitted per-request overhead (ms) by engine: SGLang and TensorRT-LLM from the
    InferenceX fit, vLLM from the hybrid fit on the Qwen3.8-27B HumanEval half."""
    overheads = {name: float(v["ms"]) for name, v in fitted.get("request_overhead_ms", {}).items()}
    hybrid = fitted.get("hybrid", {}).get("request_overhead_ms")
    if hybrid is not None:
        overheads["vllm"] = float(hybrid["ms"])
    return overheads


def load_fitted(evidence: Path) -> dict[str, Any]:
    """The fitted-terms artefact beside the evidence (``fitted_terms.json``), or ``{}``."""
    import json

    path = evidence / "fitted_terms.json"
    if not path.is_file():
        return {}
    data: dict[str, Any] = json.loads(path.read_text("utf-8"))
    return data


#: The per-point table (``public_gpu_rows.csv``): what a point is, whether a fitted term saw
#: it, and per metric the measured value, the prediction and the signed error in percent.
ROW_COLUMNS: Final = (
    "id",
    "source",
    "hardware",
    "engine",
    "precision",
    "sd",
    "conc",
    "regime",
    "concurrency_band",
    "step_kind",
    "held_out",
)
VALUE_FIELDS: Final = (
    "median_ttft_ms",
    "mean_tpot_ms",
    "median_tpot_ms",
    "tput_per_gpu",
    "output_tput_per_gpu",
)
PAIR_COLUMNS: Final = ("mtp", "none", "sd", "source", "hardware", "engine", "conc", "regime")


def _cell(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, float):
        return f"{value:.6g}"
    return str(value)


def _csv(header: list[str], rows: list[list[Any]]) -> str:
    import csv
    import io

    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(header)
    writer.writerows([[_cell(v) for v in row] for row in rows])
    return buffer.getvalue()


def rows_csv(report: dict[str, Any]) -> str:
    header = list(ROW_COLUMNS)
    for metric in VALUE_FIELDS:
        header += [f"{metric}_measured", f"{metric}_predicted", f"{metric}_error_pct"]
    body = []
    for row in report["rows"]:
        line = [row[c] for c in ROW_COLUMNS]
        for metric in VALUE_FIELDS:
            line += [
                row["measured"].get(metric),
                row["predicted"].get(metric),
                row["error_pct"].get(metric),
            ]
        body.append(line)
    return _csv(header, body)


def pairs_csv(report: dict[str, Any]) -> str:
    header = [
        *PAIR_COLUMNS,
        "tpot_ratio_measured",
        "tpot_ratio_predicted",
        "tpot_ratio_error_pct",
        "gain_measured",
        "gain_predicted",
        "gain_error_pct",
        "none_point_seen_by_fit",
        "held_out",
        "acceptance_rate",
    ]
    body = [
        [
            *(pair[c] for c in PAIR_COLUMNS),
            pair["tpot_ratio"]["measured"],
            pair["tpot_ratio"]["predicted"],
            pair["tpot_ratio_error_pct"],
            pair["throughput_gain"]["measured"],
            pair["throughput_gain"]["predicted"],
            pair["throughput_gain_error_pct"],
            pair["none_point_seen_by_fit"],
            pair["held_out"],
            pair["acceptance_rate"],
        ]
        for pair in report["pairs"]
    ]
    return _csv(header, body)


def summary(report: dict[str, Any]) -> dict[str, Any]:
    """The written JSON: everything but the per-point rows, the pairs and the refused list
    (``public_gpu_rows.csv``, ``public_gpu_pairs.csv``; refusals are counted by reason)."""
    held_out = dict(report["held_out"])
    held_out["fitted_terms"] = {
        k: v for k, v in held_out.get("fitted_terms", {}).items() if k != "training_ids"
    }
    kept = {k: v for k, v in report.items() if k not in ("rows", "pairs", "refused")}
    return {**kept, "held_out": held_out}


def write_outputs(report: dict[str, Any], out_dir: Path, *, overwrite: bool = False) -> list[Path]:
    """``public_gpu.json``, ``public_gpu.md`` and the curve plots (refusing to clobber unless
    ``overwrite``); the paths written."""
    images = curve_plots(report)
    targets = [out_dir / "public_gpu.json", out_dir / "public_gpu.md"]
    targets += [out_dir / "public_gpu_rows.csv", out_dir / "public_gpu_pairs.csv"]
    targets += [out_dir / name for name in images]
    for target in targets:
        check_writable(target, overwrite)
    atomic_write_text(targets[0], canonical_json(summary(report)), overwrite=overwrite)
    atomic_write_text(targets[1], to_markdown(report), overwrite=overwrite)
    atomic_write_text(targets[2], rows_csv(report), overwrite=overwrite)
    atomic_write_text(targets[3], pairs_csv(report), overwrite=overwrite)
    for name, data in images.items():
        atomic_write_bytes(out_dir / name, data, overwrite=overwrite)
    return targets
