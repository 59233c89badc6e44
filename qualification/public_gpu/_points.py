"""The measured points of evidence/public-gpu/, read into one flat shape.

Every point keeps its source (repository, path, commit; InferenceX rows also the GitHub Actions
run), what was run (hardware, engine, precision, parallelism, SD method, lengths, concurrency)
and the measured figures in ms and tokens/s:

* ``median_ttft_ms``, ``mean_tpot_ms``, ``median_tpot_ms`` (InferenceX: client-side TPOT; the
  speculators sweep: mean ITL, its TPOT), ``tput_per_gpu`` (input + output tokens/s per GPU;
  the speculators sweep: output tokens/s of its one GPU, ``output_tput_per_gpu``).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Final

from aisim.errors import DataIntegrityError

INFERENCEX_FILE: Final = "inferencex_dsr1_h100_h200_b200.json"
SPECULATORS_FILE: Final = "speculators_qwen3_8_27b_b200_vllm_sd.json"


def _read(path: Path) -> dict[str, Any]:
    try:
        data: dict[str, Any] = json.loads(path.read_text("utf-8"))
    except (OSError, ValueError) as exc:
        raise DataIntegrityError(f"{path}: cannot read the public measurements ({exc})") from exc
    return data


def _ms(value: Any) -> float | None:
    return None if value is None else 1000.0 * float(value)


def inferencex_points(evidence: Path) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """Every InferenceX row (all engines; refused ones are counted later) and the file meta."""
    path = evidence / INFERENCEX_FILE
    data = _read(path)
    rows = data.get("rows") if isinstance(data, dict) else None
    if not isinstance(rows, list):
        if not isinstance(data, dict) or "rows" not in data:
            raise DataIntegrityError(f"{path}: missing key 'rows' (the list of measured points)")
        raise DataIntegrityError(f"{path}: 'rows': expected a list, got {type(rows).__name__}")
    points = []
    for index, row in enumerate(rows):
        if not isinstance(row, dict):
            raise DataIntegrityError(
                f"{path}: rows[{index}]: expected an object, got {type(row).__name__}"
            )
        try:
            points.append(_inferencex_point(data, row))
        except KeyError as exc:
            raise DataIntegrityError(f"{path}: rows[{index}]: missing key {exc.args[0]!r}") from exc
        except (TypeError, AttributeError, ValueError) as exc:
            raise DataIntegrityError(f"{path}: rows[{index}]: malformed row ({exc})") from exc
    return points, data


def _inferencex_point(data: dict[str, Any], row: dict[str, Any]) -> dict[str, Any]:
    """One InferenceX row in the flat shape (a missing key raises ``KeyError``)."""
    metrics = row["metrics"]
    file = row["file"]
    source = data["files"][file]["source_meta"]["source"]
    tp = row["decode_tp"]
    engine = row["framework"]
    point_id = (
        f"ix-{file}-{row['source_index']}/{row['hardware']}/{engine}/{row['precision']}/"
        f"{row['spec_method']}/tp{tp}-ep{row['decode_ep']}"
        f"{'-dpa' if row['decode_dp_attention'] else ''}/{row['isl']}-{row['osl']}/"
        f"c{row['conc']}"
    )
    return {
        "id": point_id,
        "source": f"inferencex-{file}",
        "citation": {
            "repository": source["repository"],
            "path": source["path"],
            "commit": source["commit"],
            "index": row["source_index"],
            "run_url": row["run_url"],
        },
        "model": "deepseek-ai/DeepSeek-R1",
        "hardware": row["hardware"],
        "engine": engine,
        "image": row.get("image"),
        "date": row.get("date"),
        "precision": row["precision"],
        "sd": row["spec_method"],
        "tp": tp,
        "ep": row["decode_ep"],
        "dp_attention": bool(row["decode_dp_attention"]),
        "disaggregated": bool(row["disagg"]),
        "multinode": bool(row["is_multinode"]),
        "gpus": row.get("num_decode_gpu"),
        "isl": row["isl"],
        "osl": row["osl"],
        "conc": row["conc"],
        "also_in_latest": bool(row.get("also_in_latest", False)),
        "dataset": f"random {row['isl']}/{row['osl']}",
        "acceptance_length": None,
        "measured": {
            "median_ttft_ms": _ms(metrics.get("median_ttft")),
            "mean_tpot_ms": _ms(metrics.get("mean_tpot")),
            "median_tpot_ms": _ms(metrics.get("median_tpot")),
            "tput_per_gpu": metrics.get("tput_per_gpu"),
            "output_tput_per_gpu": metrics.get("output_tput_per_gpu"),
        },
    }


def speculators_points(evidence: Path) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """The Qwen3.8-27B B200 sweep (no SD, MTP k=2, DSpark k=7; the pinned diagnostic too)."""
    data = _read(evidence / SPECULATORS_FILE)
    points = []
    for point in data["points"]:
        measured = point["measured"]
        config = point["config"]
        settings = data["configs"].get(config.replace("_pinned", ""), {})
        sd = {"baseline": "none", "mtp": "mtp"}.get(config, config)
        points.append(
            {
                "id": f"spec/{config}/{point['dataset_subset']}/c{point['closed_loop_streams_N']}",
                "source": "speculators",
                "citation": dict(point["source"]),
                "model": "Qwen/Qwen3.8-27B",
                "hardware": "b200",
                "engine": "vllm",
                "image": data["engine"]["version"],
                "date": "2026-10-06",
                "precision": "bf16",
                "sd": sd,
                "num_speculative_tokens": settings.get("num_speculative_tokens", 0),
                "max_num_seqs": settings.get("max_num_seqs"),
                "max_num_batched_tokens": settings.get("max_num_batched_tokens"),
                "tp": 1,
                "ep": 1,
                "dp_attention": False,
                "disaggregated": False,
                "multinode": False,
                "gpus": 1,
                "isl": measured["mean_prompt_tokens"],
                "osl": measured["mean_output_tokens"],
                "conc": point["closed_loop_streams_N"],
                "also_in_latest": False,
                "dataset": point["dataset_subset"],
                "acceptance_length": measured.get("acceptance_length"),
                "diagnostic": config.endswith("_pinned"),
                "measured": {
                    "median_ttft_ms": measured.get("median_ttft_ms"),
                    "mean_tpot_ms": measured.get("mean_itl_ms"),
                    "median_tpot_ms": measured.get("median_itl_ms"),
                    "tput_per_gpu": None,
                    "output_tput_per_gpu": measured.get("aggregate_output_tps"),
                },
            }
        )
    return points, data


def load_points(evidence: Path) -> list[dict[str, Any]]:
    """All public points under ``evidence`` (evidence/public-gpu), InferenceX first."""
    ix, _ = inferencex_points(evidence)
    spec, _ = speculators_points(evidence)
    return ix + spec
