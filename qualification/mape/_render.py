"""MAPE reports as markdown and PNG plots (matplotlib, Agg backend, no timestamps embedded)."""

from __future__ import annotations

import io
from typing import Any

import pandas as pd


def percent(value: float | None) -> str:
    return "n/a" if value is None else f"{100 * value:.2f} %"


def summary_rows(summary: dict[str, Any]) -> list[tuple[str, str]]:
    """(metric, value) pairs of a summary, in reading order."""
    worst = summary["worst_config"]
    reasons = "; ".join(
        f"{count} x {reason}" for reason, count in summary["unanswered_reasons"].items()
    )
    return [
        ("round-weighted MAPE", percent(summary["round_weighted_mape"])),
        ("equal-configuration MAPE", percent(summary["equal_config_mape"])),
        ("P90 round APE", percent(summary["p90_ape"])),
        (
            "worst configuration",
            "n/a" if worst is None else f"{worst['config_id']} ({percent(worst['ape'])})",
        ),
        ("bias (mean signed, rounds)", percent(summary["bias"])),
        ("bias (mean signed, configurations)", percent(summary["equal_config_bias"])),
        (
            "coverage",
            f"{summary['rounds_answered']}/{summary['rounds']} rounds, "
            f"{summary['configurations_answered']}/{summary['configurations']} configurations",
        ),
        ("unanswered", reasons or "none"),
    ]


def markdown_table(headers: list[str], rows: list[list[str]]) -> str:
    lines = ["| " + " | ".join(headers) + " |", "|" + "---|" * len(headers)]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(lines)


def cell_rows(cells: list[dict[str, Any]]) -> list[list[str]]:
    return [
        [
            cell["cell"],
            str(cell["configurations"]),
            str(cell["rounds"]),
            percent(cell["round_weighted_mape"]),
            percent(cell["equal_config_mape"]),
            percent(cell["p90_ape"]),
            "n/a"
            if cell["worst_config"] is None
            else f"{cell['worst_config']['config_id']} ({percent(cell['worst_config']['ape'])})",
            percent(cell["bias"]),
            f"{100 * cell['coverage']:.0f} %",
        ]
        for cell in cells
    ]


CELL_HEADERS = [
    "cell",
    "configs",
    "rounds",
    "round-weighted",
    "equal-config",
    "P90",
    "worst",
    "bias",
    "coverage",
]


def to_markdown(report: dict[str, Any]) -> str:
    """The whole MAPE report as GitHub-flavoured markdown."""
    dataset, estimator = report["dataset"], report["estimator"]
    parts = [
        f"# MAPE: `{estimator['name']}` on `{dataset['name']}`",
        "",
        f"{estimator['description']}. Dataset SHA-256 `{dataset['sha256']}`, evidence type "
        f"`{dataset['evidence_type']}`, timing metric `{dataset['timing_metric']}`, "
        f"{dataset['outlier_rounds']} rounds flagged as outliers (kept).",
        "",
        markdown_table(["metric", "value"], [list(row) for row in summary_rows(report["summary"])]),
        "",
        "## Cells (device x model/drafter x d)",
        "",
        markdown_table(CELL_HEADERS, cell_rows(report["cells"])),
        "",
        "## Configurations",
        "",
        markdown_table(
            ["configuration", "rounds", "measured median ms", "predicted ms", "APE", "signed"],
            [
                [
                    c["config_id"],
                    str(c["rounds"]),
                    f"{c['measured_median_ms']:.3f}",
                    "n/a" if c["predicted_ms"] is None else f"{c['predicted_ms']:.3f}",
                    percent(c["ape"]),
                    percent(c["signed_error"]),
                ]
                for c in report["configurations"]
            ],
        ),
    ]
    tests = report.get("tests")
    if tests:
        ks, tost = tests["ks_predicted_vs_measured_rounds"], tests["tost_config_log_ratio"]
        parts += ["", "## Distribution tests", ""]
        if ks:
            parts.append(
                f"- KS (predicted vs measured rounds): D = {ks['statistic']:.4f}, p = {ks['p_value']:.4g}"
            )
        parts.append(f"- {tost_text(tost)}")
    return "\n".join(parts) + "\n"


def tost_text(tost: dict[str, Any]) -> str:
    """One line: the TOST verdict on configuration log ratios."""
    margin = f"+-{100 * tost['margin']:.0f} %"
    if tost.get("equivalent") is None:
        return f"TOST within {margin}: not run ({tost.get('reason', 'no data')})"
    verdict = "equivalent" if tost["equivalent"] else "not shown equivalent"
    return (
        f"TOST (configuration log ratio within {margin}): {verdict}, p = {tost['p_value']:.4g}, "
        f"mean log ratio {tost['mean_log_ratio']:+.4f} over {tost['n']} configurations"
    )


def png_bytes(figure: Any) -> bytes:
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", dpi=100, metadata={"Software": None})
    return buffer.getvalue()


def plots(scored: pd.DataFrame, title: str) -> dict[str, bytes]:
    """``predicted_vs_measured.png`` and ``ape_by_config.png`` as PNG bytes."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    answered = scored[scored["predicted_ms"].notna()]
    result: dict[str, bytes] = {}
    figure, axis = plt.subplots(figsize=(5.5, 5))
    for d, group in answered.groupby("draft_length", sort=True):
        axis.scatter(group["measured_ms"], group["predicted_ms"], s=12, label=f"d={d}")
    if len(answered):
        low = float(min(answered["measured_ms"].min(), answered["predicted_ms"].min()))
        high = float(max(answered["measured_ms"].max(), answered["predicted_ms"].max()))
        axis.plot([low, high], [low, high], color="black", linewidth=0.8, label="y = x")
        axis.legend(fontsize=8)
    axis.set_xlabel("measured round (ms)")
    axis.set_ylabel("predicted round (ms)")
    axis.set_title(title, fontsize=9)
    figure.tight_layout()
    result["predicted_vs_measured.png"] = png_bytes(figure)
    plt.close(figure)

    configs = answered.groupby("config_id", sort=True).agg(
        measured=("measured_ms", "median"),
        predicted=("predicted_ms", "first"),
        d=("draft_length", "first"),
        b=("batch_size", "first"),
        k=("total_kv_tokens", "first"),
    )
    configs["signed"] = (configs["predicted"] - configs["measured"]) / configs["measured"]
    configs = configs.sort_values(["k", "b", "d"])
    figure, axis = plt.subplots(figsize=(8, 4))
    axis.bar(range(len(configs)), 100 * configs["signed"], color="tab:blue")
    axis.axhline(0, color="black", linewidth=0.8)
    axis.set_xticks(range(len(configs)))
    axis.set_xticklabels(list(configs.index), rotation=90, fontsize=6)
    axis.set_ylabel("signed error of median round (%)")
    axis.set_title(title, fontsize=9)
    figure.tight_layout()
    result["signed_error_by_config.png"] = png_bytes(figure)
    plt.close(figure)
    return result
