"""Llama-3.1-70B prefill at TP 4 / 8 against a silicon-based reference simulator's figures.

``reference_prefill.json`` (beside this module) holds one request's prefill time (batch 1,
1k..16k prompt tokens, bf16 and fp8 GEMMs, H100 / H200 / B200, TP 4 and 8) as AISimulate
0.13.0.dev prices it from its GPU kernel tables, with how each figure was obtained. The reference
simulator is not a dependency: its figures are committed data. ``prefill_reference(estimator)``
prices the same passes with an aisim estimator and reports, per weight precision, the median
and the worst |error|, which the plan's ``cost-model/70b-tp-prefill*`` criteria judge.
"""

from __future__ import annotations

import json
import statistics
from importlib import resources
from typing import Any, Final

from aisim.config import best_available
from aisim.fpm import ForwardPassMetrics

#: The weight precisions of the reference rows, in report order.
PREFILL_WEIGHTS: Final = ("bf16", "fp8")


def load_reference_prefill() -> dict[str, Any]:
    """The committed reference figures (``reference_prefill.json`` beside this module)."""
    text = resources.files(__package__).joinpath("reference_prefill.json").read_text("utf-8")
    data: dict[str, Any] = json.loads(text)
    return data


def _config(model: str, row: dict[str, Any], estimator: str) -> dict[str, Any]:
    config: dict[str, Any] = {
        "model": model,
        "hardware": row["hardware"],
        "estimator": estimator,
        "tensor_parallel": row["tensor_parallel"],
    }
    if row["weights"] != "bf16":
        config["deployment"] = {"weights": row["weights"]}
        if row["weights"] == "fp8":
            # The reference's fp8 GEMM mode: dynamic per-tensor fp8 activations (its
            # CutlassFP8ScaledMMLinearKernel rows); vLLM's dynamic_scaled_fp8_quant.
            config["deployment"]["activation_scales"] = "tensor"
    return config


def prefill_error_percent(predicted_ms: float, reference_ms: float) -> float:
    """Signed error of a prediction against the reference, in percent of the reference."""
    return 100.0 * (predicted_ms - reference_ms) / reference_ms


def prefill_reference(
    estimator: str = "roofline", data: dict[str, Any] | None = None
) -> dict[str, Any]:
    """Every reference row priced by ``estimator`` as one prefill request of
    ``prompt_tokens`` new tokens (no cached context), with the signed error, and per weight
    precision the row count, median and worst |error| (percent) and the worst row's id."""
    data = data if data is not None else load_reference_prefill()
    model = data["reference"]["model"]
    rows: list[dict[str, Any]] = []
    models: dict[tuple[str, int, str], Any] = {}
    for row in data["rows"]:
        key = (row["hardware"], row["tensor_parallel"], row["weights"])
        if key not in models:
            models[key] = best_available(_config(model, row, estimator))
        tokens = row["prompt_tokens"]
        predicted = models[key].estimate_forward_pass_time_ms(
            ForwardPassMetrics(num_prefill_requests=1, sum_prefill_tokens=tokens)
        )
        rows.append(
            {
                "id": row["id"],
                "hardware": row["hardware"],
                "weights": row["weights"],
                "tensor_parallel": row["tensor_parallel"],
                "prompt_tokens": tokens,
                "reference_ms": row["reference_ms"],
                "predicted_ms": predicted,
                "error_percent": prefill_error_percent(predicted, row["reference_ms"]),
            }
        )
    groups: dict[str, dict[str, Any]] = {}
    for weights in PREFILL_WEIGHTS:
        chosen = [row for row in rows if row["weights"] == weights]
        if not chosen:
            continue
        worst = max(chosen, key=lambda row: abs(row["error_percent"]))
        groups[weights] = {
            "rows": len(chosen),
            "median_abs_error_percent": statistics.median(
                abs(row["error_percent"]) for row in chosen
            ),
            "max_abs_error_percent": abs(worst["error_percent"]),
            "worst": worst["id"],
        }
    reference = data["reference"]
    return {
        "estimator": estimator,
        "reference": f"{reference['tool']} {reference['version']}",
        "rows": rows,
        "groups": groups,
    }


def _cell(row: dict[str, Any] | None) -> str:
    if row is None:
        return "-"
    return f"{row['reference_ms']:.1f} / {row['predicted_ms']:.1f} ({row['error_percent']:+.1f} %)"


def prefill_markdown(result: dict[str, Any]) -> str:
    """One line per (GPU, weights, TP): reference ms / predicted ms (error) per prompt length
    (``-`` where the reference has no row), then the per-precision median and worst |error|."""
    lengths = sorted({row["prompt_tokens"] for row in result["rows"]})
    header = " | ".join(f"{length // 1024}k" for length in lengths)
    lines = [
        f"| GPU | weights | TP | {header} |",
        "|---|---|---|" + "---|" * len(lengths),
    ]
    cells: dict[tuple[str, str, int], dict[int, dict[str, Any]]] = {}
    for row in result["rows"]:
        key = (row["hardware"], row["weights"], row["tensor_parallel"])
        cells.setdefault(key, {})[row["prompt_tokens"]] = row
    for (gpu, weights, tp), by_length in cells.items():
        values = " | ".join(_cell(by_length.get(n)) for n in lengths)
        lines.append(f"| {gpu} | {weights} | {tp} | {values} |")
    lines.append("")
    for weights, group in result["groups"].items():
        lines.append(
            f"- {weights}, {group['rows']} rows: median |error| "
            f"{group['median_abs_error_percent']:.1f} %, worst "
            f"{group['max_abs_error_percent']:.1f} % ({group['worst']})"
        )
    return "\n".join(lines) + "\n"


__all__ = [
    "PREFILL_WEIGHTS",
    "load_reference_prefill",
    "prefill_error_percent",
    "prefill_markdown",
    "prefill_reference",
]
