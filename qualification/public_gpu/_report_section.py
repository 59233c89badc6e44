"""The public-GPU section of the release report: the committed scored run, judged by the plan.

Replaying every public point takes minutes, so the release report reads the committed output
of ``aisim qualify public-gpu --out evidence/public-gpu/scored`` (its JSON and plots) instead of
replaying; the section says which fitted terms and which code produced it. Figures are
fractions (the plan's unit): ``public_gpu`` criteria judge them.
"""

from __future__ import annotations

import html
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any, Final

EVIDENCE_TYPE: Final = "public-measurement"
SCORED: Final = Path("public-gpu") / "scored"
COMMAND: Final = "aisim qualify public-gpu --out evidence/public-gpu/scored --overwrite"

#: plan metric -> headline key (percentages in the scored JSON).
FIGURES: Final = {
    "inferencex_tpot_median_ape": "inferencex_median_abs_tpot_error_pct",
    "inferencex_throughput_median_ape": "inferencex_median_abs_throughput_error_pct",
    "inferencex_ttft_median_ape": "inferencex_median_abs_ttft_error_pct",
    "inferencex_nosd_tpot_median_ape": "inferencex_nosd_median_abs_tpot_error_pct",
    "inferencex_nosd_throughput_median_ape": "inferencex_nosd_median_abs_throughput_error_pct",
    "history_mtp_tpot_ratio_median_ape": "history_mtp_tpot_ratio_median_abs_error_pct",
    "qwen_mtp_gain_median_ape": "qwen_mtp_gain_median_abs_error_pct",
    "qwen_dspark_gain_median_ape": "qwen_dspark_gain_median_abs_error_pct",
    "qwen_tpot_max_ape": "qwen_nosd_mtp_max_abs_tpot_error_pct",
    "qwen_throughput_max_ape": "qwen_nosd_mtp_max_abs_throughput_error_pct",
}


def public_gpu_section(evidence: Path) -> tuple[dict[str, Any], dict[str, bytes]]:
    """The section (``status`` run / not run, the headline, the judged figures) and its plots."""
    directory = evidence / SCORED
    path = directory / "public_gpu.json"
    if not path.is_file():
        return {"status": "not run", "reason": f"no scored run at {path.as_posix()}"}, {}
    report = json.loads(path.read_text("utf-8"))
    headline = report["headline"]
    figures = {
        metric: None if headline.get(key) is None else float(headline[key]) / 100.0
        for metric, key in FIGURES.items()
    }
    images = {
        f"public_gpu_{image.name}": image.read_bytes() for image in sorted(directory.glob("*.png"))
    }
    section = {
        "status": "run",
        "path": path.as_posix(),
        "evidence_type": EVIDENCE_TYPE,
        "command": COMMAND,
        "counts": report["counts"],
        "held_out": report["held_out"]["description"],
        "headline": headline,
        "refused_reasons": report["refused_reasons"],
        "groups": {key: report["groups"][key] for key in ("hardware", "engine", "sd")},
        "figures": figures,
    }
    return section, images


def public_gpu_html(
    section: dict[str, Any],
    images: dict[str, bytes],
    table: Callable[[list[str], list[list[str]]], str],
    image: Callable[[str, bytes], str],
) -> str:
    """The section's HTML, with the report's own table and image helpers."""
    title = (
        '<h2 id="public-gpu">Public GPU serving runs '
        f'<span class="tag {EVIDENCE_TYPE}">{EVIDENCE_TYPE}</span></h2>'
    )
    if section.get("status") != "run":
        return f"{title}<p>not run: {html.escape(str(section.get('reason', '')))}</p>"
    counts = section["counts"]
    parts = [
        title,
        "<p>Other people's single runs on H100/H200/B200 (evidence/public-gpu: InferenceX "
        "DeepSeek-R1 with SGLang and TensorRT-LLM; vLLM Qwen3.8-27B on B200), each replayed as "
        "it was run and predicted by the default cost model. "
        f"{counts['predicted']} points predicted, {counts['refused']} refused (counted below), "
        f"{counts['distinct_replays']} distinct replays. Held out: "
        f"{html.escape(section['held_out'])}.</p>",
        table(
            ["judged figure (held-out points)", "value"],
            [
                [metric, "n/a" if value is None else f"{100.0 * value:.1f} %"]
                for metric, value in section["figures"].items()
            ],
        ),
    ]
    for key in ("hardware", "engine", "sd"):
        rows = []
        for name, stats in section["groups"][key].items():
            tput = stats.get("tput_per_gpu") or stats.get("output_tput_per_gpu") or {}
            rows.append(
                [
                    name,
                    str(stats.get("tpot_ms", {}).get("n", 0)),
                    _pct(stats.get("median_ttft_ms", {}).get("median_abs_error_pct")),
                    _pct(stats.get("tpot_ms", {}).get("median_abs_error_pct")),
                    _pct(tput.get("median_abs_error_pct")),
                ]
            )
        parts.append(
            table(
                [
                    f"by {key}",
                    "points",
                    "TTFT median |err|",
                    "TPOT median |err|",
                    "tput median |err|",
                ],
                rows,
            )
        )
    parts.append(
        table(
            ["refused (not scored)", "points"],
            [[reason, str(n)] for reason, n in section["refused_reasons"].items()],
        )
    )
    parts.extend(image(name, data) for name, data in sorted(images.items()))
    return "\n".join(parts)


def _pct(value: Any) -> str:
    return "n/a" if value is None else f"{float(value):.1f} %"
